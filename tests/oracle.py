"""Helpers for oracle tests: run the same program in ember and PyTorch 2.13 and compare.

    check(lambda lib, x, y: lib.add(x, y, alpha=2), a, b)

`check` converts every NumPy array argument into an ember tensor and a torch tensor (same
values, same dtype; ``noncontig=True`` gives both a non-contiguous view with the same values),
runs the function with ``lib`` = ember and then torch, and asserts equal shapes, dtypes and
values (within tolerance for floating types). If torch raises, ember must raise the same
exception type, and the inputs must be unchanged afterwards.

With ``EMBER_ORACLE_DEVICE=cuda`` in the environment, every tensor `check` makes is on the GPU,
in both libraries, and so is every tensor the program makes itself (``lib.tensor(...)``; the
default device inside `check`): the same tests are the CUDA op oracle suite
(scripts/device_cuda.sh). There PyTorch runs the program on the CPU first: where it refuses, ember
on the GPU must raise the same type, and PyTorch's CUDA run is skipped, since its CUDA kernels
report bad indices with a device-side assert, which leaves the process's CUDA context unusable.
Where the CPU accepts, PyTorch on the GPU gives the values (or a CUDA-only refusal) to match.
``cpu_first=False`` skips the CPU run, for programs that index nothing (no device-side assert),
where an older PyTorch's CPU kernel refuses what its CUDA kernel and 2.13's CPU one compute.
PyTorch's CUDA sort is not stable: ``ties_along=dim`` compares a sort's (or topk's, argsort's) result
up to the order of ties there (`assert_same_up_to_ties`); everywhere else indices are compared exactly.

The device machine's PyTorch may be older than the pinned 2.13: where a probe (`torch_raises`)
shows that the installed one predates a change 2.13 made, `check_as_2_13` checks ember against
2.13's behaviour, the exception it raises, instead of the older oracle's.
"""
from __future__ import annotations

import os

import numpy as np
import torch

import ember

DEVICE = os.environ.get("EMBER_ORACLE_DEVICE", "cpu")   # where `check` puts its tensors
if DEVICE == "cuda":
    # now, not lazily: a test that seeds torch with a number CUDA's generator refuses (2**64 - 1)
    # would otherwise queue an error that fails every later CUDA call of the worker
    torch.cuda.init()
    # PyTorch's cuDNN convolutions default to TF32 (10-bit mantissa); ember's CUDA convolutions are
    # exact float32, so the reference is PyTorch's float32 result
    torch.backends.cudnn.allow_tf32 = False


class _default_device:
    """Both libraries' factories default to `device` inside (see the module docstring)."""

    def __init__(self, device):
        self.device = device

    def __enter__(self):
        # torch's default device is a TorchFunctionMode when set at all, even to "cpu": restore "none
        # set" as None, or every later torch call in the worker runs under that mode (its warnings
        # then point into torch/utils/_device.py, dynamo traces through it)
        unset = getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None) is None
        self.saved = ember.get_default_device(), None if unset else torch.get_default_device()
        ember.set_default_device(self.device)
        torch.set_default_device(self.device)

    def __exit__(self, *exc):
        ember.set_default_device(self.saved[0])
        torch.set_default_device(self.saved[1])


def _version(text):
    return tuple(int(p) for p in text.split("+")[0].split(".")[:2])


# the installed PyTorch predates 2.13 (the GPU machine's): for behaviour that cannot be probed (it
# crashes the older release's process), tests check ember against 2.13's with `check_as_2_13`
TORCH_BEFORE_2_13 = _version(torch.__version__) < (2, 13)


def torch_raises(probe, exc) -> bool:
    """Whether the installed PyTorch raises `exc` running ``probe()`` (on the CPU): does it have
    the behaviour of 2.13 that the probe exercises?"""
    try:
        with _default_device("cpu"):
            probe()
    except exc:
        return True
    except Exception:  # noqa: BLE001 - another type is an older behaviour too
        return False
    return False


def check_as_2_13(fn, *args, raises, oracle_is_current, dtype=None, **kwargs):
    """check(fn, *args) when `oracle_is_current` (a `torch_raises` probe); else ember alone must
    raise `raises`, as PyTorch 2.13 does, with its inputs left as they were."""
    if oracle_is_current:
        return check(fn, *args, dtype=dtype, **kwargs)
    import pytest
    with device_scope():
        eargs = to_ember(args, dtype)
        before = [as_numpy(a) if isinstance(a, ember.Tensor) else None for a in eargs]
        with pytest.raises(raises) as info:
            fn(ember, *eargs)
            if DEVICE == "cuda":
                ember.cuda.synchronize()
        for a, b in zip(eargs, before):
            if b is not None:
                np.testing.assert_array_equal(as_numpy(a), b, err_msg="input modified by a failing op")
    return info.value


DTYPES = {  # ember dtype name -> torch dtype
    "bool": torch.bool, "uint8": torch.uint8, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32,
    "int64": torch.int64, "float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
    "float64": torch.float64, "complex64": torch.complex64, "complex128": torch.complex128,
}
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
INT_DTYPES = ("uint8", "int8", "int16", "int32", "int64")
ALL_DTYPES = ("bool",) + INT_DTYPES + FLOAT_DTYPES + ("complex64",)
TOL = {"float16": (1e-3, 1e-3), "bfloat16": (1e-2, 1e-2), "float32": (1e-5, 1e-6), "float64": (1e-10, 1e-12),
       "complex64": (1e-5, 1e-6), "complex128": (1e-10, 1e-12)}


def make(shape, dtype="float32", *, low=-3, high=3, seed=None):
    """A NumPy array of the given ember dtype name with values that suit it."""
    # Without a seed, draw one from NumPy's global state, which conftest seeds per test: every
    # test sees the same inputs on every run.
    rng = np.random.default_rng(seed if seed is not None else np.random.randint(2 ** 31))
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype in INT_DTYPES:
        lo = 0 if dtype == "uint8" else low
        return rng.integers(lo, high + 1, size=shape).astype(dtype)
    arr = rng.uniform(low, high, size=shape)
    if dtype.startswith("complex"):
        arr = arr + 1j * rng.uniform(low, high, size=shape)
    if dtype == "bfloat16":
        return arr.astype(np.float32)  # converted on the way in
    return arr.astype(dtype)


def lib_tensor(lib, v, dtype=None):
    """A tensor of `v` in lib (int64 / bool / float32 inferred like torch.tensor), on lib's default
    device: with EMBER_ORACLE_DEVICE=cuda the indices are on the GPU with the data, so the suite tests
    the CUDA kernels (mixing CPU indices with GPU data: tests/cuda/test_cuda_device_rules.py)."""
    arr = np.array(v)
    if arr.dtype.kind == "f":
        arr = arr.astype(np.float32)
    t = lib.from_numpy(arr).to(lib.get_default_device())
    return t if dtype is None else t.to(getattr(lib, dtype))


def device_scope():
    """Factories of both libraries default to DEVICE inside (nothing to do on the CPU)."""
    import contextlib
    return _default_device(DEVICE) if DEVICE != "cpu" else contextlib.nullcontext()


def to_ember(x, dtype=None, noncontig=False, device=None):
    if isinstance(x, np.ndarray):
        if noncontig and x.ndim >= 1:
            big = np.repeat(x, 2, axis=-1)[..., ::2] if x.ndim else x
            x = big
        t = ember.from_numpy(x) if not noncontig else ember.from_numpy(x)
        if dtype:
            t = t.to(getattr(ember, dtype))
        if (device or DEVICE) != "cpu":
            t = _on_device(t, x.ndim >= 1 and noncontig, device or DEVICE)
        return t
    if isinstance(x, (list, tuple)):
        return type(x)(to_ember(v, dtype, noncontig, device) for v in x)
    return x


def to_torch(x, dtype=None, noncontig=False, device=None):
    if isinstance(x, np.ndarray):
        if noncontig and x.ndim >= 1:
            x = np.repeat(x, 2, axis=-1)[..., ::2]
        # torch never shares ember's buffer: a failing torch op must not touch ember's input
        t = torch.from_numpy(x if noncontig and x.ndim >= 1 else x.copy())
        if dtype:
            t = t.to(DTYPES[dtype])
        if (device or DEVICE) != "cpu":
            t = _on_device(t, x.ndim >= 1 and noncontig, device or DEVICE)
        return t
    if isinstance(x, (list, tuple)):
        return type(x)(to_torch(v, dtype, noncontig, device) for v in x)
    if isinstance(x, ember.dtype):
        return DTYPES[x.name]
    return x


def _on_device(t, noncontig, device):
    """`t` copied to `device`, keeping a non-contiguous view non-contiguous (every other element
    of a twice-as-wide tensor, as on the CPU)."""
    if not noncontig:
        return t.to(device)
    return t.repeat_interleave(2, dim=-1).to(device)[..., ::2]


def as_numpy(x):
    """NumPy copy of an ember or torch tensor (bfloat16 widened to float32)."""
    if isinstance(x, torch.Tensor):
        x = x.detach()
        if x.dtype == torch.bfloat16:
            x = x.float()
        return x.cpu().numpy().copy()
    if x.dtype is ember.bfloat16:
        x = x.to(ember.float32)
    return np.array(x.numpy(force=True))


def assert_same(e, t, *, rtol=None, atol=None, check_dtype=True, check_stride=False, equal_nan=True):
    """ember result `e` equals torch result `t`: same structure, shape, dtype, values."""
    if isinstance(t, (tuple, list)):
        assert isinstance(e, (tuple, list)), f"expected a sequence, got {type(e)}"
        assert len(e) == len(t), f"length {len(e)} != {len(t)}"
        for a, b in zip(e, t):
            assert_same(a, b, rtol=rtol, atol=atol, check_dtype=check_dtype, check_stride=check_stride)
        return
    if isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), f"expected an ember Tensor, got {type(e).__name__}"
        assert tuple(e.shape) == tuple(t.shape), f"shape {tuple(e.shape)} != torch {tuple(t.shape)}"
        if check_dtype:
            assert e.dtype.name == str(t.dtype).replace("torch.", ""), f"dtype {e.dtype} != torch {t.dtype}"
        if check_stride:
            assert e.stride() == t.stride(), f"stride {e.stride()} != torch {t.stride()}"
        if t.device.type == "meta":
            return
        dflt = TOL.get(e.dtype.name, (0, 0))
        rtol = dflt[0] if rtol is None else rtol
        atol = dflt[1] if atol is None else atol
        ev, tv = as_numpy(e), as_numpy(t)
        if ev.dtype.kind in "biu" and tv.dtype.kind in "biu":
            np.testing.assert_array_equal(ev, tv)
        else:
            np.testing.assert_allclose(ev, tv, rtol=rtol, atol=atol, equal_nan=equal_nan)
        return
    if isinstance(t, torch.Size):
        assert tuple(e) == tuple(t)
        return
    if isinstance(t, float) and np.isnan(t):
        assert np.isnan(e)
        return
    assert e == t or (isinstance(t, float) and abs(e - t) <= 1e-6 * max(1, abs(t))), f"{e!r} != {t!r}"


def assert_same_up_to_ties(e, t, ex, tx, dim):
    """A sort-like result (values and indices, or argsort's indices alone) of input `ex` (ember) /
    `tx` (torch) along `dim` equals torch's up to the order of equal elements: the values are equal,
    each slice's indices are distinct, and ember's indices gather from ember's input the values
    torch's indices gather from torch's."""
    values = isinstance(t, tuple)
    e_idx, t_idx = (e[1], t[1]) if values else (e, t)
    if values:
        assert isinstance(e, tuple) and len(e) == len(t), f"expected (values, indices), got {type(e).__name__}"
        assert_same(e[0], t[0])
    assert tuple(e_idx.shape) == tuple(t_idx.shape), f"shape {tuple(e_idx.shape)} != torch {tuple(t_idx.shape)}"
    assert e_idx.dtype.name == str(t_idx.dtype).replace("torch.", ""), f"dtype {e_idx.dtype} != torch {t_idx.dtype}"
    if e_idx.ndim:
        ordered = np.sort(as_numpy(e_idx), axis=dim)
        assert not (np.diff(ordered, axis=dim) == 0).any(), "an index repeats within a slice"
    np.testing.assert_array_equal(as_numpy(ex.gather(dim, e_idx)), as_numpy(tx.gather(dim, t_idx)))


def check(fn, *args, dtype=None, noncontig=False, rtol=None, atol=None, check_dtype=True, check_stride=False,
          ties_along=None, cpu_first=True, **kwargs):
    """Run fn(lib, *args) with lib=torch and lib=ember and compare (see module docstring).

    Returns the ember result. If torch raises, asserts ember raises the same type and that
    ember's inputs were not modified. ``ties_along=dim``: fn sorts its first argument along dim
    without asking for stability; on CUDA, where PyTorch's order of ties is unspecified, the
    result is compared up to it.
    """
    compare = dict(rtol=rtol, atol=atol, check_dtype=check_dtype, check_stride=check_stride,
                   ties_along=ties_along if DEVICE == "cuda" else None)
    if DEVICE != "cpu":
        return _check_on_device(fn, args, dtype, noncontig, kwargs, cpu_first, **compare)
    targs = to_torch(args, dtype, noncontig)
    eargs = to_ember(args, dtype, noncontig)
    return _compare(fn, targs, eargs, kwargs, **compare)


def _check_on_device(fn, args, dtype, noncontig, kwargs, cpu_first, **compare):
    cpu_refusal = None
    try:
        if cpu_first:
            with _default_device("cpu"):
                fn(torch, *to_torch(args, dtype, noncontig, "cpu"), **kwargs)
    except Exception as texc:  # noqa: BLE001 - the type is what is compared
        cpu_refusal = texc
    with _default_device(DEVICE):
        eargs = to_ember(args, dtype, noncontig)
        return _compare(fn, None if cpu_refusal else to_torch(args, dtype, noncontig), eargs, kwargs,
                        refusal=cpu_refusal, **compare)


def _compare(fn, targs, eargs, kwargs, *, refusal=None, rtol=None, atol=None, check_dtype=True, check_stride=False,
             ties_along=None):
    before = [as_numpy(a).copy() if isinstance(a, ember.Tensor) else None for a in eargs]
    try:
        if refusal is not None:
            raise refusal
        expected = fn(torch, *targs, **kwargs)
    except Exception as texc:  # torch refuses: so must we, with the same type
        try:
            fn(ember, *eargs, **kwargs)
            if DEVICE == "cuda":    # errors the device finds (indices) are raised where the host synchronises
                ember.cuda.synchronize()
        except type(texc) as eexc:
            for a, b in zip(eargs, before):
                if b is not None:
                    np.testing.assert_array_equal(as_numpy(a), b, err_msg="input modified by a failing op")
            return eexc
        except Exception as other:
            raise AssertionError(f"torch raised {type(texc).__name__}: {texc}; ember raised "
                                 f"{type(other).__name__}: {other}") from other
        raise AssertionError(f"torch raised {type(texc).__name__}: {texc}; ember did not raise")
    got = fn(ember, *eargs, **kwargs)
    if ties_along is not None:
        assert_same_up_to_ties(got, expected, eargs[0], targs[0], ties_along)
        return got
    assert_same(got, expected, rtol=rtol, atol=atol, check_dtype=check_dtype, check_stride=check_stride)
    return got


def check_raises(fn, *args, exc=None, match=None, **kwargs):
    """Both libraries raise the same exception type (and ember's message matches `match`)."""
    import re
    err = check(fn, *args, **kwargs)
    assert isinstance(err, Exception), "expected both libraries to raise"
    if exc is not None:
        assert isinstance(err, exc)
    if match is not None:
        assert re.search(match, str(err)), f"message {str(err)!r} does not match {match!r}"
    return err


def module_pair(build, dtype="float32", seed=0):
    """(torch module, ember module) from ``build(nn)`` run with each library's ``nn``, in `dtype`,
    with torch's initial parameters and buffers copied into ember (so both compute the same thing)."""
    torch.manual_seed(seed)
    tmodule = build(torch.nn).to(DTYPES[dtype])
    emodule = build(ember.nn).to(getattr(ember, dtype))
    emodule.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy()) for k, v in tmodule.state_dict().items()})
    return tmodule, emodule


# native eager kernels vs PyTorch (tests/ops/test_native_kernels*.py): float32 kernels may differ by a
# few ulps (libmvec, other summation orders), float64 ones barely
NATIVE_TOL = {"float32": dict(rtol=2e-5, atol=2e-5), "float64": dict(rtol=1e-10, atol=1e-10)}
