"""`xp`: the NumPy namespace as the CPU kernel files use it, answered by CuPy.

The CPU kernels are written against the array API that NumPy and CuPy share (``np.where``,
``np.exp``, ``arr.astype`` ...). Their CUDA variants (`ember._cuda.kernels`) run the same source
with ``np`` bound to this module: a name CuPy has is CuPy's; a few names get a replacement (below)
because CuPy lacks them or because the CPU code applies them to host values (shapes, Python lists),
which CuPy refuses; any other name is NumPy's (dtypes, ``iinfo``, exception types).
"""
from __future__ import annotations

import contextlib
import types

import cupy
import numpy

from .._core import dtype as _dt
from . import elementwise, overrides

_HOST_TYPES = (list, tuple, int, float, bool, range, numpy.ndarray, numpy.generic)


def _host_or_device(name):
    """`name` on host values (a shape, a list of sizes) is NumPy's, on device arrays CuPy's."""
    on_device, on_host = getattr(cupy, name), getattr(numpy, name)

    def fn(a, *args, **kwargs):
        return (on_host if isinstance(a, _HOST_TYPES) else on_device)(a, *args, **kwargs)
    fn.__name__ = name
    return fn


def _asarray(a, dtype=None, order=None, **kwargs):
    # np.asarray(host value) in a kernel makes an array that meets device arrays next: put it there
    return cupy.asarray(a, dtype=dtype, order=order, **kwargs)


def _shares_memory(a, b, max_work=None):
    if isinstance(a, cupy.ndarray) and isinstance(b, cupy.ndarray):
        return cupy.shares_memory(a, b, max_work)
    return False


def _frompyfunc(fn, nin, nout):
    def per_element(*args, **kwargs):
        raise TypeError(f"np.frompyfunc({fn.__name__}) runs Python per element: it has no CUDA form")
    return per_element


def _scan(fn, a, axis):
    """Inclusive scan of an associative `fn` along `axis` in log2(n) whole-array steps
    (Hillis-Steele): CuPy's ufuncs have no ``accumulate`` beyond add and multiply."""
    out = cupy.moveaxis(a, axis, -1).copy()
    shift = 1
    while shift < out.shape[-1]:
        out[..., shift:] = fn(out[..., shift:], out[..., :-shift].copy())
        shift *= 2
    return cupy.moveaxis(out, -1, axis)


_PY_SCALARS = frozenset((int, float, bool, complex))


class _Ufunc:
    """A CuPy ufunc with the methods the CPU kernels call on NumPy's (``np.maximum.accumulate``,
    ``np.minimum.reduce``, ``np.add.at`` ...), where CuPy's own are missing. Called on Python
    numbers only (``np.sqrt(head_dim)``), it is NumPy's: host math stays on the host. Called on
    operands `elementwise` takes (same shape and dtype, contiguous), one direct kernel launch."""

    __slots__ = ("fn", "name", "host", "direct")
    _REDUCE = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min", "fmax": "nanmax",
               "fmin": "nanmin", "logical_and": "all", "logical_or": "any"}
    _ACCUMULATE = {"add": "cumsum", "multiply": "cumprod"}

    def __init__(self, name):
        self.fn, self.name, self.host = getattr(cupy, name), name, getattr(numpy, name, None)
        self.direct = elementwise.direct(name)   # same-shape contiguous operands: one raw launch

    def __call__(self, *args, **kwargs):
        direct = self.direct
        if direct is not None:
            out = direct(args, kwargs)
            if out is not None:
                return out
        if args[0].__class__ in _PY_SCALARS and (len(args) == 1 or args[1].__class__ in _PY_SCALARS) \
                and self.host is not None and "out" not in kwargs:
            return self.host(*args, **kwargs)
        return self.fn(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.fn, name)

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False):
        if self.name == "add" and axis is None and dtype is None and out is None and not keepdims:
            total = elementwise.sum_all(a)    # small arrays: one launch, no CuPy reduction set-up
            if total is not None:
                return total
        return getattr(cupy, self._REDUCE[self.name])(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims) \
            if dtype is not None and self.name in ("add", "multiply") else \
            getattr(cupy, self._REDUCE[self.name])(a, axis=axis, out=out, keepdims=keepdims)

    def accumulate(self, a, axis=0, dtype=None):
        if self.name in self._ACCUMULATE:
            return getattr(cupy, self._ACCUMULATE[self.name])(a, axis=axis, dtype=dtype)
        return _scan(self.fn, a if dtype is None else a.astype(dtype), axis)

    def outer(self, a, b):
        a, b = cupy.asarray(a), cupy.asarray(b)
        return self.fn(a.reshape(a.shape + (1,) * b.ndim), b)

    def at(self, a, indices, values=None):
        if self.name != "add" or a.dtype.kind == "c":   # CuPy's atomics: no product, no complex sums,
            _at_in_rounds(self.fn, a, indices, values)   # max/min not for every dtype
            return
        import cupyx
        scatter = cupyx.scatter_add
        if a.dtype in _SCATTER_DTYPES:
            scatter(a, indices, values)
            return
        wide = a.astype(numpy.float32 if a.dtype.kind in "fc" else numpy.int64)   # int8, bool, bfloat16 ...
        scatter(wide, indices, values if not isinstance(values, cupy.ndarray) else values.astype(wide.dtype))
        a[...] = wide.astype(a.dtype)


def _at_in_rounds(fn, a, indices, values):
    """``fn.at(a, indices, values)`` without atomics: each round combines every distinct target with
    its earliest remaining value, so a repeated target takes its values in index order, as NumPy's
    (a product's rounding included); as many rounds as the most repeated target."""
    work = a if a.flags.c_contiguous else cupy.ascontiguousarray(a)
    flat = work.reshape(-1)
    positions = cupy.arange(a.size).reshape(a.shape)[indices]
    values = cupy.broadcast_to(cupy.asarray(values), positions.shape).reshape(-1)
    positions = positions.reshape(-1)
    while positions.size:
        targets, first = cupy.unique(positions, return_index=True)
        flat[targets] = fn(flat[targets], values[first])
        rest = cupy.ones(positions.size, dtype=bool)
        rest[first] = False
        positions, values = positions[rest], values[rest]
    if work is not a:
        a[...] = work


_SCATTER_DTYPES = {numpy.dtype(t) for t in (numpy.int32, numpy.int64, numpy.uint32, numpy.uint64, numpy.float16,
                                            numpy.float32, numpy.float64)}


def _with_initial(name, combine):
    """np.max / np.min with ``initial=`` (CuPy's have none): `initial` joins the reduction."""
    reduce = getattr(cupy, name)

    def fn(a, axis=None, out=None, keepdims=False, initial=None):
        if initial is None:
            return reduce(a, axis=axis, out=out, keepdims=keepdims)
        if a.size == 0:
            shape = numpy.max(numpy.empty(a.shape, numpy.bool_), axis=axis, keepdims=keepdims, initial=False).shape
            return cupy.full(shape, initial, a.dtype)
        return combine(reduce(a, axis=axis, keepdims=keepdims), cupy.asarray(initial, a.dtype))
    fn.__name__ = name
    return fn


def _joining(name):
    """np.concatenate / np.stack of device arrays mixed with host lists (``[[True], a[1:] != a[:-1]]``)."""
    join = getattr(cupy, name)

    def fn(arrays, *args, **kwargs):
        return join([a if isinstance(a, cupy.ndarray) else cupy.asarray(a) for a in arrays], *args, **kwargs)
    fn.__name__ = name
    return fn


def _contracts(subscripts, n_operands) -> bool:
    """Whether an einsum sums an index shared by two operands (PyTorch computes that with bmm)."""
    inputs, _, output = subscripts.replace(" ", "").replace("...", "").partition("->")
    terms = inputs.split(",")
    shared = {c for c in set(inputs) - {","} if sum(c in t for t in terms) > 1}
    kept = set(output) if _ else {c for c in set(inputs) if inputs.count(c) == 1}
    return n_operands > 1 and bool(shared - kept)


def _no_integer_gemm(name, product, kernel):
    """cuBLAS multiplies floating and complex matrices only: PyTorch's CUDA products refuse the
    rest, except where an operand is empty (nothing to multiply) or nothing is contracted."""
    def fn(*args, **kwargs):
        arrays = [a for a in args if isinstance(a, cupy.ndarray)]
        if arrays and all(a.size for a in arrays) and arrays[0].dtype.kind in "biu" and (
                name != "einsum" or _contracts(args[0], len(arrays))) and (
                name != "tensordot" or kwargs.get("axes", args[2] if len(args) > 2 else 2) != 0):
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dt._FROM_NP[arrays[0].dtype].c10_name}'")
        return product(*args, **kwargs)
    fn.__name__ = name
    return fn


def _where(condition, x=None, y=None):
    """np.where with a Python number beside an array keeps the array's dtype when the number is of
    its kind or lower (NumPy's weak scalars; CuPy would widen bfloat16 by a float to float32).
    bfloat16 operands are selected as their bits: CuPy's where has no bfloat16 loop (float32 comes out)."""
    if x is None:
        return cupy.where(condition)
    if x.__class__ in _PY_SCALARS and isinstance(y, cupy.ndarray) and _weak_fits(x, y.dtype):
        x = cupy.asarray(x, y.dtype)
    elif y.__class__ in _PY_SCALARS and isinstance(x, cupy.ndarray) and _weak_fits(y, x.dtype):
        y = cupy.asarray(y, x.dtype)
    if getattr(x, "dtype", None) == _BFLOAT16 and getattr(y, "dtype", None) == _BFLOAT16:
        return cupy.where(condition, cupy.asarray(x).view(numpy.uint16),
                          cupy.asarray(y).view(numpy.uint16)).view(_BFLOAT16)
    return cupy.where(condition, x, y)


_BFLOAT16 = _dt.bfloat16.np


def _weak_fits(number, dtype) -> bool:
    kinds = {bool: "biufc", int: "iufc", float: "fc", complex: "c"}[number.__class__]
    return ("f" if dtype == _BFLOAT16 else dtype.kind) in kinds


_REPLACEMENTS = {
    "where": _where,
    **{name: _joining(name) for name in ("concatenate", "stack", "hstack", "vstack")},
    "einsum": _no_integer_gemm("einsum", cupy.einsum, "baddbmm_cuda"),
    "tensordot": _no_integer_gemm("tensordot", cupy.tensordot, "addmm_cuda"),
    "seterr": lambda **kwargs: {},                      # CuPy never warns on 1/0
    "errstate": lambda **kwargs: contextlib.nullcontext(),
    "asarray": _asarray,
    "shares_memory": _shares_memory,
    "frompyfunc": _frompyfunc,
    "ndarray": cupy.ndarray,
    **{name: _with_initial(name, cupy.maximum) for name in ("max", "amax")},
    **{name: _with_initial(name, cupy.minimum) for name in ("min", "amin")},
    "matmul": _no_integer_gemm("matmul", overrides.matmul, "addmm_cuda"),   # cuBLAS under the TF32 switch
    # applied to shapes and size lists as often as to arrays
    **{name: _host_or_device(name) for name in ("prod", "cumprod", "argsort", "broadcast_shapes")},
}


class _ArrayModule(types.ModuleType):
    def __init__(self, name, device_module, host_module, replacements):
        super().__init__(name)
        self._device, self._host, self._replacements = device_module, host_module, replacements

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = self._replacements.get(name)
        if value is None:
            value = getattr(self._device, name, None)
            if isinstance(value, cupy.ufunc):
                value = _Ufunc(name)
        if value is None:
            value = getattr(self._host, name)
        setattr(self, name, value)   # resolved once
        return value


xp = _ArrayModule("ember._cuda.xp", cupy, numpy, _REPLACEMENTS)
xp.linalg = _ArrayModule("ember._cuda.xp.linalg", cupy.linalg, numpy.linalg, {})
