"""Random number generators: ``ember.Generator`` and the default CPU generator.

A Generator wraps a NumPy bit generator (PCG64 by default, or Philox) and a
``numpy.random.Generator`` over it. Its values cannot match PyTorch's Mersenne Twister, but the
API does: ``manual_seed`` / ``seed`` / ``initial_seed`` / ``get_state`` / ``set_state`` (the
state is a uint8 tensor, as PyTorch's ByteTensor), and the module-level ``ember.manual_seed``,
``ember.seed``, ``ember.initial_seed``, ``ember.get_rng_state``, ``ember.set_rng_state`` act on
``default_generator``.
"""
from __future__ import annotations

import contextlib
import os

import numpy as np

from .device import device as _device

_U64 = 1 << 64
_STATE_MAGIC = b"EMBRNG1"  # so set_state can tell a state of ours from arbitrary bytes


def _check_seed(seed) -> int:
    """PyTorch's seed range: [-2**63, 2**64); negative seeds wrap to uint64."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        if hasattr(seed, "__index__"):
            seed = seed.__index__()
        else:
            raise TypeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    seed = int(seed)
    if not -(1 << 63) <= seed < _U64:
        raise ValueError("Overflow when unpacking long long")
    return seed % _U64


class Generator:
    """A source of random numbers for the random ops' ``generator=`` argument.

    >>> g = Generator().manual_seed(0)
    >>> a = ember.rand(3, generator=g)
    """

    def __init__(self, device="cpu", *, bit_generator: str = "pcg64"):
        self.device = _device(device)
        if bit_generator not in ("pcg64", "philox"):
            raise ValueError(f"Generator: unknown bit generator {bit_generator!r} (pcg64 or philox)")
        self._kind = bit_generator
        self._seed(67280421310721)  # PyTorch's default_rng_seed_val

    def _seed(self, seed: int) -> None:
        self._initial_seed = seed
        bits = np.random.PCG64(seed) if self._kind == "pcg64" else np.random.Philox(seed)
        self._rng = np.random.Generator(bits)

    def manual_seed(self, seed) -> "Generator":
        """Reset the generator to a deterministic state given by `seed`; returns self."""
        self._seed(_check_seed(seed))
        return self

    def seed(self) -> int:
        """Seed from OS entropy; returns the seed used."""
        s = int.from_bytes(os.urandom(8), "little")
        self._seed(s)
        return s

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._initial_seed

    def get_state(self):
        """The full generator state as a uint8 tensor (a copy)."""
        import pickle
        from .tensor import wrap
        payload = pickle.dumps((self._kind, self._initial_seed, self._rng.bit_generator.state))
        return wrap(np.frombuffer(_STATE_MAGIC + payload, dtype=np.uint8).copy())

    def set_state(self, new_state) -> "Generator":
        """Restore a state returned by `get_state`."""
        import pickle
        from .tensor import Tensor
        if not isinstance(new_state, Tensor) or new_state.dtype.name != "uint8":
            raise TypeError("RNG state must be a torch.ByteTensor")
        raw = np.ascontiguousarray(new_state.numpy(force=True)).tobytes()
        if not raw.startswith(_STATE_MAGIC):
            raise RuntimeError(f"Expected an ember generator state but found an input RNG state of size "
                               f"{len(raw)} that is not one")
        kind, seed, state = pickle.loads(raw[len(_STATE_MAGIC):])
        if kind != self._kind:
            raise RuntimeError(f"set_state: the state is of a {kind} generator, this one is {self._kind}")
        self._initial_seed = seed
        self._rng.bit_generator.state = state
        return self

    def __getstate__(self):
        return {"device": str(self.device), "kind": self._kind, "seed": self._initial_seed,
                "state": self._rng.bit_generator.state}

    def __setstate__(self, d):
        self.device = _device(d["device"])
        self._kind = d["kind"]
        self._seed(d["seed"])
        self._rng.bit_generator.state = d["state"]

    def __repr__(self):
        return f"<ember.Generator object at {hex(id(self))}>"


default_generator = Generator()


def rng(generator) -> np.random.Generator:
    """The NumPy generator a random kernel draws from (`generator` or the default)."""
    if generator is None:
        return default_generator._rng
    if not isinstance(generator, Generator):
        raise TypeError(f"expected an ember.Generator, got {type(generator).__name__}")
    return generator._rng


def manual_seed(seed) -> Generator:
    """Seed the default generator (``ember.manual_seed(0)``); returns it. Like PyTorch's, the
    seed goes through ``int()`` first (``manual_seed("3")`` works, ``manual_seed("a")`` is a
    ValueError)."""
    seed = int(seed)
    gen = default_generator.manual_seed(seed)
    from .. import cuda
    cuda._seed_from_cpu(seed)
    return gen


def seed() -> int:
    """Seed the default generator nondeterministically; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state as a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Restore the default generator's state from `get_rng_state()`."""
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"):
    """Context manager: the default generators' states (CPU, and CUDA's once made) are restored on exit."""
    if not enabled:
        yield
        return
    from .. import cuda
    state = get_rng_state()
    cuda_state = cuda._generator[0].get_state() if cuda._generator else None
    try:
        yield
    finally:
        set_rng_state(state)
        if cuda_state is not None:
            cuda._generator[0].set_state(cuda_state)
