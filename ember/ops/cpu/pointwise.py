"""CPU kernels of the pointwise family, on NumPy ufuncs.

Kernels take the op's arguments in schema order (tensors, or Python numbers where the op
accepts them) and return new tensors. dtypes follow PyTorch, not NumPy: the result dtype comes
from `rules.common_dtype` and inputs are cast to it before the ufunc runs (NumPy would make
int32 + float32 a float64). float16 and bfloat16 are computed in float32 and rounded once, as
PyTorch's CPU kernels do.
"""
from __future__ import annotations

import numpy as np

from ..._core import dtype as _dt
from ..._core.tensor import Tensor, wrap
from .. import rules
from .special_math import erf_array, erfc_array, erfinv_array

_ndarray = np.ndarray
_F32 = np.dtype(np.float32)
_HALF = {np.dtype(np.float16), _dt.bfloat16.np}
np.seterr(all="ignore")  # PyTorch does not warn on 1/0, log(0), overflow ...


def data(x, np_dtype=None):
    """The ndarray of a tensor (or the number itself), cast to `np_dtype` when given."""
    if isinstance(x, Tensor):
        arr = x._data
        if np_dtype is not None and arr.dtype is not np_dtype:
            return arr.astype(np_dtype)
        return arr
    if np_dtype is not None and isinstance(x, (int, float, bool, complex)):
        if np_dtype.kind in "iu" and isinstance(x, int) and not isinstance(x, bool):
            return np.array(x).astype(np_dtype)  # wraps out-of-range ints like a C cast
        if np_dtype.kind == "b":
            return np.bool_(x)
    return x


def compute(np_dtype):
    """The dtype a ufunc runs in: half types are computed in float32."""
    return _F32 if np_dtype in _HALF else np_dtype


def finish(arr, np_dtype) -> Tensor:
    """Wrap a ufunc result, casting back to `np_dtype` when it was computed wider."""
    if arr.__class__ is not _ndarray:
        arr = np.asarray(arr)
    if arr.dtype is not np_dtype:
        arr = arr.astype(np_dtype)
    return wrap(arr)


# ---------------------------------------------------------------------------------------
# unary
# ---------------------------------------------------------------------------------------
def unary_float(ufunc, name):
    """Math that always gives a floating result: ints and bool go to the default float dtype."""
    def kernel(x):
        arr = x._data
        if arr.dtype.kind == "f" and arr.dtype not in _HALF:  # the hot path
            return wrap(ufunc(arr))
        out_dt = rules.float_dtype(x.dtype).np
        return finish(ufunc(arr.astype(compute(out_dt))), out_dt)
    kernel.__name__ = name
    return kernel


def unary_same(ufunc, name, *, no_bool=None, int_identity=False):
    """dtype-preserving ops (neg, abs, floor ...). `int_identity`: integers come back copied."""
    def kernel(x):
        arr = x._data
        if no_bool and arr.dtype.kind == "b":
            raise RuntimeError(no_bool)
        if int_identity and arr.dtype.kind in "iub":
            return wrap(arr.copy())
        dt = arr.dtype
        return finish(ufunc(arr.astype(compute(dt)) if dt in _HALF else arr), dt)
    kernel.__name__ = name
    return kernel


def _sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a)) if a.dtype.kind != "c" else 1 / (1 + np.exp(-a))


def _rsqrt(a):
    return 1.0 / np.sqrt(a)


def _round_half_even(a):
    return np.round(a)


sigmoid = unary_float(_sigmoid, "sigmoid")
exp = unary_float(np.exp, "exp")
sqrt = unary_float(np.sqrt, "sqrt")
tanh = unary_float(np.tanh, "tanh")
rsqrt = unary_float(_rsqrt, "rsqrt")
erf = unary_float(erf_array, "erf")
erfc = unary_float(erfc_array, "erfc")
erfinv = unary_float(erfinv_array, "erfinv")


def neg(x):
    arr = x._data
    if arr.dtype.kind == "b":
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                           "invert a mask, use the `~` or `logical_not()` operator instead.")
    return wrap(np.negative(arr))


def abs(x):
    arr = x._data
    if arr.dtype.kind == "c":
        return finish(np.abs(arr), _dt.to_real if False else x.dtype.to_real().np)
    return wrap(np.abs(arr) if arr.dtype.kind != "b" else arr.copy())


# ---------------------------------------------------------------------------------------
# binary
# ---------------------------------------------------------------------------------------
def _shape(x):
    return x._data.shape if isinstance(x, Tensor) else ()


def operands(a, b, op):
    """(common dtype, a data, b data): tensors cast to the common dtype's compute type.
    Also raises PyTorch's broadcasting error before NumPy raises its ValueError."""
    common = rules.common_dtype(a, b)
    rules.broadcast_shapes(_shape(a), _shape(b), op=op)
    cnp = compute(common.np)
    return common, data(a, cnp), data(b, cnp)


def binary(ufunc, name, *, bool_ufunc=None, no_bool=None, result=None):
    """A binary kernel: hot path for two tensors of one ordinary dtype (or a float tensor and a
    Python int/float), else promotion, then `ufunc` (or `bool_ufunc` on bools; `no_bool` is the
    error for bools). `result(common)` may change the result dtype (true division -> float)."""
    def kernel(a, b):
        if a.__class__ is Tensor:
            x = a._data
            if b.__class__ is Tensor:
                y = b._data
                if x.dtype is y.dtype and x.dtype.kind in "fiuc" and x.dtype not in _HALF and result is None:
                    try:
                        return wrap(ufunc(x, y))
                    except ValueError:
                        rules.broadcast_shapes(x.shape, y.shape, op=name)
                        raise
            elif (b.__class__ is float or b.__class__ is int) and x.dtype.kind == "f" and x.dtype not in _HALF:
                return wrap(ufunc(x, b))
        common, x, y = operands(a, b, name)
        out_dt = common if result is None else result(common)
        if common.category == _dt.BOOL:
            if no_bool:
                raise RuntimeError(no_bool)
            if bool_ufunc is not None:
                return finish(bool_ufunc(x, y), out_dt.np)
        if out_dt is not common:
            cnp = compute(out_dt.np)
            x, y = data(a, cnp), data(b, cnp)
        return finish(ufunc(x, y), out_dt.np)
    kernel.__name__ = name
    return kernel


def _check_alpha(common, alpha, op):
    if isinstance(alpha, float) and common.category <= _dt.INT:
        raise RuntimeError(f"{op}(): For integral input tensors, argument alpha must not be a floating point number.")
    if isinstance(alpha, complex) and common.category != _dt.COMPLEX:
        raise RuntimeError(f"{op}(): For non-complex input tensors, argument alpha must not be a complex number.")


_NO_BOOL_SUB = ("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                "`logical_xor()` operator instead.")
_add = binary(np.add, "add", bool_ufunc=np.logical_or)
_sub = binary(np.subtract, "sub", no_bool=_NO_BOOL_SUB)
mul = binary(np.multiply, "mul", bool_ufunc=np.logical_and)


def _scaled(b, alpha, op, a):
    """alpha * b, keeping b's dtype rules (alpha is a wrapped number)."""
    _check_alpha(rules.common_dtype(a, b), alpha, op)
    return mul(b, alpha) if isinstance(b, Tensor) else b * alpha


def add(a, b, alpha=1):
    if alpha.__class__ is int and alpha == 1:
        return _add(a, b)
    return _add(a, _scaled(b, alpha, "add", a))


def sub(a, b, alpha=1):
    if alpha.__class__ is int and alpha == 1:
        return _sub(a, b)
    return _sub(a, _scaled(b, alpha, "sub", a))


def rsub(a, b, alpha=1):
    """b - alpha * a (PyTorch's aten::rsub, behind ``2 - t``)."""
    return sub(b, a, alpha)
