"""CPU kernels of the comparison family: eq/ne/lt/le/gt/ge, equal, isclose/allclose, logical
and bitwise ops and shifts, where, clamp, isnan & co.

Operands are compared in PyTorch's promoted dtype, not NumPy's: a Python number is first
converted to that dtype the way C++ casts it (``uint8_tensor == 1000`` compares with 232, as
PyTorch does). Comparisons and selections are exact, so half types are not widened.
The shape/dtype rules live in `ember.ops.meta.comparison`, shared with the Meta kernels.
"""
from __future__ import annotations

import numpy as np

from ..._core import dtype as _dt
from ..._core.tensor import Tensor, wrap
from .. import rules
from ..meta import comparison as R
from .pointwise import ON_CUDA, compute

_ndarray = np.ndarray
_HALF = {np.dtype(np.float16), _dt.bfloat16.np}
_BOOL = np.dtype(np.bool_)
_FLOAT_MAX = {np.dtype(np.float32): float(np.finfo(np.float32).max), np.dtype(np.float64): float("inf")}
_PLAIN = (float, int, type(None))


def _as(x, np_dtype):
    """The ndarray of a tensor, or a Python number converted like a C++ cast, in `np_dtype`."""
    if isinstance(x, Tensor):
        arr = x._data
        return arr if arr.dtype is np_dtype else arr.astype(np_dtype)
    return np.array(x).astype(np_dtype)


def _bool_result(r) -> Tensor:
    return wrap(r if r.__class__ is _ndarray else np.asarray(r))


# ---------------------------------------------------------------------------------------
# comparisons
# ---------------------------------------------------------------------------------------
def compare(ufunc, name: str, ordered: bool = True):
    """eq/ne/lt/...: a bool tensor. Hot paths: two tensors of one dtype, or a float32/float64
    tensor and a Python number (NumPy converts the number to the array's dtype, as PyTorch)."""
    def kernel(a, b):
        x = a._data
        if b.__class__ is Tensor:
            y = b._data
            if x.dtype is y.dtype and (x.dtype.kind != "c" or not ordered):
                try:
                    return _bool_result(ufunc(x, y))
                except ValueError:
                    rules.broadcast_shapes(x.shape, y.shape, op=name)
                    raise
        elif (b.__class__ is float or b.__class__ is int) and x.dtype.kind == "f" and x.dtype not in _HALF:
            return _bool_result(ufunc(x, b))
        common = R.compare_dtype(a, b, name, ordered).np
        return _bool_result(ufunc(_as(a, common), _as(b, common)))
    kernel.__name__ = name
    return kernel


eq = compare(np.equal, "eq", ordered=False)
ne = compare(np.not_equal, "ne", ordered=False)
lt = compare(np.less, "lt")
le = compare(np.less_equal, "le")
gt = compare(np.greater, "gt")
ge = compare(np.greater_equal, "ge")


def equal(a, b) -> bool:
    """True when both have the same shape and the same values (compared after promotion)."""
    if a.shape != b.shape:
        return False
    common = _dt.promote_types(a.dtype, b.dtype).np
    return bool(np.array_equal(_as(a, common), _as(b, common)))


def _rounded(arr, np_dtype):
    """Round an intermediate to `np_dtype`, so half-precision steps round as PyTorch's do."""
    return arr.astype(np_dtype) if arr.dtype is not np_dtype else arr


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|a - b| <= atol + rtol * |b|, or a == b; each step in PyTorch's dtypes (ATen's isclose:
    floats keep their dtype, rounding each step; integers and bool go to the default float)."""
    R.isclose_check(a, b, rtol, atol)
    d = a.dtype
    x, y = a._data, b._data
    close = np.asarray(x == y)
    if equal_nan and d.category >= _dt.FLOAT:
        close = close | (np.isnan(x) & np.isnan(y))
    if rtol == 0 and atol == 0:
        return wrap(close)
    if d.category <= _dt.INT:  # integers and bool are compared in the default float dtype
        d = _dt.get_default_dtype()
        x, y = x.astype(d.np), y.astype(d.np)
    tol_dt = rules.float_dtype(d)                      # rtol * other: a wrapped double
    tol_np, tol_real = tol_dt.np, tol_dt.to_real().np
    scaled = _rounded(rtol * y.astype(compute(tol_np)), tol_np)
    allowed = _rounded(atol + np.abs(scaled).astype(compute(tol_real)), tol_real)
    cnp = compute(d.np)
    actual = _rounded(np.abs(_rounded(x.astype(cnp) - y.astype(cnp), d.np)), d.to_real().np)
    cmp_np = _dt.promote_types(_dt._FROM_NP[actual.dtype], tol_dt.to_real()).np
    within = (actual.astype(cmp_np) <= allowed.astype(cmp_np)) & np.isfinite(actual)
    return wrap(np.asarray(close | within))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """isclose(...).all() as a Python bool."""
    return bool(np.all(isclose(a, b, rtol, atol, equal_nan)._data))


# ---------------------------------------------------------------------------------------
# logical
# ---------------------------------------------------------------------------------------
def _truth(arr):
    return arr if arr.dtype is _BOOL else arr != 0


def logical(ufunc, name: str):
    """logical_and/or/xor: any dtypes, nonzero is true, a bool result."""
    def kernel(a, b):
        x, y = a._data, b._data
        rules.broadcast_shapes(x.shape, y.shape, op=name)
        return _bool_result(ufunc(_truth(x), _truth(y)))
    kernel.__name__ = name
    return kernel


logical_and = logical(np.logical_and, "logical_and")
logical_or = logical(np.logical_or, "logical_or")
logical_xor = logical(np.logical_xor, "logical_xor")


def logical_not(x):
    return _bool_result(np.logical_not(_truth(x._data)))


# ---------------------------------------------------------------------------------------
# bitwise and shifts
# ---------------------------------------------------------------------------------------
def bitwise(ufunc, name: str, kernel_name: str):
    """bitwise_and/or/xor on bool and integers (either operand may be a Python number)."""
    def kernel(a, b):
        if a.__class__ is Tensor and b.__class__ is Tensor:
            x, y = a._data, b._data
            if x.dtype is y.dtype and x.dtype.kind in "biu":
                try:
                    return wrap(np.asarray(ufunc(x, y)))
                except ValueError:
                    rules.broadcast_shapes(x.shape, y.shape, op=name)
                    raise
        d = R.bitwise_dtype(a, b, name, kernel_name).np
        return wrap(np.asarray(ufunc(_as(a, d), _as(b, d))))
    kernel.__name__ = name
    return kernel


bitwise_and = bitwise(np.bitwise_and, "bitwise_and", "bitwise_and_cpu")
bitwise_or = bitwise(np.bitwise_or, "bitwise_or", "bitwise_or_cpu")
bitwise_xor = bitwise(np.bitwise_xor, "bitwise_xor", "bitwise_xor_cpu")


def bitwise_not(x):
    arr = x._data
    if arr.dtype is _BOOL:
        return wrap(np.logical_not(arr))
    if arr.dtype.kind not in "iu":
        raise R.not_implemented("bitwise_not_cpu", x.dtype)
    return wrap(np.invert(arr))


def _shift_operands(a, b, name, kernel_name):
    d = R.bitwise_dtype(a, b, name, kernel_name, allow_bool=False).np
    x, y = _as(a, d), _as(b, d)
    bits = d.itemsize * 8
    bad = (y < 0) | (y >= bits) if d.kind == "i" else y >= bits
    return d, x, y, bits, bad


def bitwise_left_shift(a, b):
    """a << b in the promoted integer dtype; shifts < 0 or >= the bit width give 0 (ATen's rule),
    and bits shifted out are dropped (computed on the unsigned view, as C++ does)."""
    d, x, y, bits, bad = _shift_operands(a, b, "bitwise_left_shift", "lshift_cpu")
    unsigned = np.dtype(f"u{d.itemsize}")
    shift = np.where(bad, 0, y).astype(unsigned)
    out = np.left_shift(x.view(unsigned) if x.ndim else x.astype(unsigned), shift).astype(d)
    return wrap(np.asarray(np.where(bad, np.zeros((), d), out)))


def bitwise_right_shift(a, b):
    """a >> b, arithmetic for signed types; shifts < 0 or too wide shift by the whole width
    (sign fill for signed types, 0 for unsigned), as ATen's rshift kernel."""
    d, x, y, bits, bad = _shift_operands(a, b, "bitwise_right_shift", "rshift_cpu")
    if d.kind == "i":
        out = np.right_shift(x, np.where(bad, bits - 1, y).astype(d))
    else:
        out = np.where(bad, np.zeros((), d), np.right_shift(x, np.where(bad, 0, y).astype(d)))
    return wrap(np.asarray(out).astype(d, copy=False))


# ---------------------------------------------------------------------------------------
# where, clamp
# ---------------------------------------------------------------------------------------
def where(condition, a, b):
    """condition ? a : b, broadcast over all three; a and b promote like a binary op."""
    c = condition._data
    if c.dtype is _BOOL and a.__class__ is Tensor:
        x = a._data
        if b.__class__ is Tensor and x.dtype is b._data.dtype:
            try:
                return wrap(np.where(c, x, b._data))
            except ValueError:
                pass  # the broadcasting error, raised below in PyTorch's words
        elif (b.__class__ is float or b.__class__ is int) and x.dtype in _FLOAT_MAX:
            try:  # a float tensor and a Python number: the tensor's dtype
                return wrap(np.where(c, x, np.array(b, x.dtype)))
            except ValueError:
                pass
    _, d = R.where_dtype(condition, a, b)
    if c.dtype is not _BOOL:
        c = c.astype(_BOOL)
    return wrap(np.asarray(np.where(c, _as(a, d.np), _as(b, d.np))))


def clamp(x, lo=None, hi=None):
    """min(max(x, lo), hi) in the promoted dtype of all three; NaN propagates (bounds too)."""
    arr = x._data
    fmax = _FLOAT_MAX.get(arr.dtype)
    if fmax is not None and lo.__class__ in _PLAIN and hi.__class__ in _PLAIN and (lo is not None or hi is not None) \
            and (lo is None or -fmax <= lo <= fmax) and (hi is None or -fmax <= hi <= fmax):
        # the hot path: a float32/float64 tensor and Python bounds (NumPy keeps the array's dtype)
        if lo is not None:
            arr = np.maximum(arr, lo)
        return wrap(np.asarray(np.minimum(arr, hi) if hi is not None else arr))
    d = R.clamp_dtype(x, lo, hi).np
    arr = _as(x, d)
    bound = lo if hi is None else hi if lo is None else None
    if ON_CUDA and bound.__class__ is float and bound != bound:
        # PyTorch's CUDA clamp_min/clamp_max kernels for a number bound use fmax/fmin: a NaN bound is
        # ignored (both bounds with a NaN fill NaN, on either device)
        return wrap(np.array(arr, copy=True))
    if lo is not None:
        arr = np.maximum(arr, _as(lo, d))
    if hi is not None:
        arr = np.minimum(arr, _as(hi, d))
    return wrap(np.asarray(arr))


def clamp_min(x, lo):
    return clamp(x, lo, None)


def clamp_max(x, hi):
    return clamp(x, None, hi)


# ---------------------------------------------------------------------------------------
# classification: isnan, isinf ...
# ---------------------------------------------------------------------------------------
def _float_test(ufunc, name, default=False):
    """A float test (isnan ...): integers and bool are never NaN/inf."""
    def kernel(x):
        arr = x._data
        if arr.dtype.kind in "biu":
            return wrap(np.full(arr.shape, default, dtype=_BOOL))
        return _bool_result(ufunc(arr))
    kernel.__name__ = name
    return kernel


isnan = _float_test(np.isnan, "isnan")
isinf = _float_test(np.isinf, "isinf")
isfinite = _float_test(np.isfinite, "isfinite", default=True)


def isposinf(x):
    R.no_complex(x, "isposinf does not support complex inputs.")
    arr = x._data
    if arr.dtype.kind in "biu":
        return wrap(np.zeros(arr.shape, _BOOL))
    return _bool_result(arr == np.inf)


def isneginf(x):
    R.no_complex(x, "isneginf does not support complex inputs.")
    arr = x._data
    if arr.dtype.kind in "biu":
        return wrap(np.zeros(arr.shape, _BOOL))
    return _bool_result(arr == -np.inf)


def isreal(x):
    arr = x._data
    if arr.dtype.kind == "c":
        return _bool_result(arr.imag == 0)
    return wrap(np.ones(arr.shape, _BOOL))


def signbit(x):
    arr = x._data
    kind = arr.dtype.kind
    if kind == "c":
        raise NotImplementedError("signbit is not implemented for complex tensors.")
    if kind == "b" or kind == "u":
        return wrap(np.zeros(arr.shape, _BOOL))
    if kind == "i":
        return _bool_result(arr < 0)
    return _bool_result(np.signbit(arr))
