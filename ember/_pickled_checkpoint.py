"""Whole-object checkpoints (``ember.save(model)``) and the weights-only allowlist
(``ember.serialization.safe_globals`` / ``add_safe_globals``).

``ember.save`` writes its safe format whenever it can; an object tree holding an ``nn.Module``
(which the safe format cannot describe) is written here instead, as PyTorch pickles it::

    PICKLE_MAGIC (8) | tensor blob length u64 | tensor blob | pickle

The tensors go out of band, as one ordinary safe checkpoint of a list (so shared storage, tied
weights and Parameters round-trip exactly as in ``ember.save``), and the pickle refers to them by
index. Unpickling can run code, so ``ember.load`` reads this layout only when told the file is
trusted — ``weights_only=False``, as in PyTorch 2.13. With the default ``weights_only=True`` the
pickle is read by an unpickler that resolves only allowlisted globals (a few containers and ember
value types, plus what ``add_safe_globals`` / ``safe_globals`` name) and raises PyTorch's
``pickle.UnpicklingError`` for anything else, naming the global and both ways out.
"""
from __future__ import annotations

import collections
import contextlib
import io
import pickle
import struct

from ._core.tensor import Tensor
from .serialization import PICKLE_MAGIC, save as _save_safe, _load as _load_safe

_LENGTH = struct.Struct("<Q")
_user_safe_globals: list = []


def _default_safe_globals() -> dict:
    from ._core.device import device
    from ._core.tensor import Size
    from ._core import dtype
    allowed = (collections.OrderedDict, set, frozenset, slice, complex, device, Size, dtype._dtype_by_name)
    return {_global_name(g): g for g in allowed}


def _global_name(obj) -> str:
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[1], str):  # (obj, "module.name")
        return obj[1]
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', '?')}"


def _allowed(name: str):
    for g in _user_safe_globals:
        if _global_name(g) == name:
            return g[0] if isinstance(g, tuple) else g
    return _default_safe_globals().get(name)


# -- the allowlist API of ember.serialization ------------------------------------------------
def add_safe_globals(safe_globals) -> None:
    """Allow these classes/functions (or ``(obj, "module.name")`` pairs) in weights-only loads."""
    _user_safe_globals.extend(safe_globals)


def get_safe_globals() -> list:
    return list(_user_safe_globals)


def clear_safe_globals() -> None:
    _user_safe_globals.clear()


@contextlib.contextmanager
def safe_globals(safe_globals):
    """Allow `safe_globals` for weights-only loads inside the block only."""
    saved = list(_user_safe_globals)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _user_safe_globals[:] = saved


# -- writing and reading
def holds_module(obj, depth: int = 0) -> bool:
    """Whether `obj` is, or a list/tuple/dict inside it holds, an nn.Module (what takes this format)."""
    from .nn.modules.module import Module
    if isinstance(obj, Module):
        return True
    if depth > 100 or not isinstance(obj, (list, tuple, dict)):
        return False
    return any(holds_module(v, depth + 1) for v in (obj.values() if isinstance(obj, dict) else obj))


class _Pickler(pickle.Pickler):
    def __init__(self, out, protocol):
        super().__init__(out, protocol)
        self.tensors, self.index = [], {}

    def persistent_id(self, obj):
        if not isinstance(obj, Tensor):
            return None
        if id(obj) not in self.index:
            self.index[id(obj)] = len(self.tensors)
            self.tensors.append(obj)
        return self.index[id(obj)]


def dumps(obj, protocol) -> bytes:
    """The whole checkpoint as bytes (built before the file is opened: a failing pickle writes nothing)."""
    pickled = io.BytesIO()
    pickler = _Pickler(pickled, protocol or pickle.DEFAULT_PROTOCOL)
    pickler.dump(obj)
    blob = io.BytesIO()
    _save_safe(pickler.tensors, blob)
    return b"".join((PICKLE_MAGIC, _LENGTH.pack(blob.tell()), blob.getvalue(), pickled.getvalue()))


_WEIGHTS_ONLY_FAILED = (
    "Weights only load failed. This file can still be loaded, to do so you have two options, do those steps only "
    "if you trust the source of the checkpoint. \n\t(1) ember.load's default is weights_only=True. Re-running "
    "`ember.load` with `weights_only` set to `False` will likely succeed, but it can result in arbitrary code "
    "execution. Do it only if you got the file from a trusted source.\n\t(2) Alternatively, to load with "
    "`weights_only=True` please check the recommended steps in the following error message.\n\t"
    "WeightsUnpickler error: Unsupported global: GLOBAL {0} was not an allowed global by default. Please use "
    "`ember.serialization.add_safe_globals([{0}])` or the `ember.serialization.safe_globals([{0}])` context "
    "manager to allowlist this global if you trust this class/function.")


class _Unpickler(pickle.Unpickler):
    def __init__(self, data, tensors, weights_only: bool):
        super().__init__(io.BytesIO(data))
        # only an explicit False opts in to unpickling code: None (PyTorch's "use the default") stays safe
        self.tensors, self.weights_only = tensors, weights_only is not False

    def persistent_load(self, pid):
        if type(pid) is not int or not 0 <= pid < len(self.tensors):
            raise pickle.UnpicklingError(f"ember.load: bad tensor reference {pid!r} in a pickled checkpoint")
        return self.tensors[pid]

    def find_class(self, module, name):
        if not self.weights_only:
            return super().find_class(module, name)
        found = _allowed(f"{module}.{name}")
        if found is None:
            raise pickle.UnpicklingError(_WEIGHTS_ONLY_FAILED.format(f"{module}.{name}"))
        return found


def load(fh, name: str, map_location, weights_only: bool):
    """Read the rest of a pickled checkpoint whose PICKLE_MAGIC has been read from `fh`."""
    head = fh.read(_LENGTH.size)
    if len(head) != _LENGTH.size:
        raise RuntimeError(f"ember.load: {name}: truncated checkpoint: the header is incomplete")
    (blob_len,) = _LENGTH.unpack(head)
    blob = fh.read(blob_len)
    if len(blob) != blob_len:
        raise RuntimeError(f"ember.load: {name}: truncated checkpoint: expected {blob_len} bytes of tensors")
    tensors = _load_safe(io.BytesIO(blob), name, map_location, whole_file=True)
    return _Unpickler(fh.read(), tensors, weights_only).load()
