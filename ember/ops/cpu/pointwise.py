"""CPU kernels of the pointwise family, on NumPy ufuncs: shared helpers and unary math.
(Binary and ternary arithmetic live in `cpu/pointwise_binary.py`.)

Kernels take the op's arguments in schema order (tensors, or Python numbers where the op
accepts them) and return new tensors. dtypes follow PyTorch, not NumPy: the result dtype comes
from `rules.common_dtype` and inputs are cast to it before the ufunc runs (NumPy would make
int32 + float32 a float64). float16 and bfloat16 are computed in float32 and rounded once, as
PyTorch's CPU kernels do.

dtype support follows PyTorch's CPU kernels: where PyTorch's kernel is not compiled for a dtype
it raises NotImplementedError('"<kernel>" not implemented for \'<Type>\''), and so do we. Meta
kernels (like PyTorch's) do not make that check.
"""
from __future__ import annotations

import math

import numpy as np

from ..._core import dtype as _dt
from ..._core.tensor import Tensor, wrap
from .. import rules
from .special_math import erf_array, erfc_array, erfinv_array

# True in this file's CUDA variant (ember/_cuda/kernels.py compiles it with ``numpy`` bound to CuPy's
# namespace): where PyTorch's CUDA kernels compute differently from its CPU ones, so do ember's
ON_CUDA = np.__name__ != "numpy"

_ndarray = np.ndarray
_F32 = np.dtype(np.float32)
_HALF = {np.dtype(np.float16), _dt.bfloat16.np}
np.seterr(all="ignore")  # PyTorch does not warn on 1/0, log(0), overflow ...



def not_implemented(kernel: str, d: _dt.dtype) -> NotImplementedError:
    """PyTorch's error for a dtype its CPU kernel is not compiled for."""
    return NotImplementedError(f'"{kernel}" not implemented for \'{d.c10_name}\'')


def data(x, np_dtype=None):
    """The ndarray of a tensor (or the number itself), cast to `np_dtype` when given."""
    if isinstance(x, Tensor):
        arr = x._data
        if np_dtype is not None and arr.dtype is not np_dtype:
            return arr.astype(np_dtype)
        return arr
    if np_dtype is not None and np_dtype.kind in "iub" and isinstance(x, (int, float, bool)):
        return np.array(x).astype(np_dtype)  # a C cast: wraps ints, truncates value=0.5 on ints
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
def unary_float(ufunc, name, *, complex_error=None):
    """Math that always gives a floating result: ints and bool go to the default float dtype.
    `complex_error(dtype)` builds the exception for complex inputs (None: complex is fine)."""
    def kernel(x):
        arr = x._data
        if arr.dtype.kind == "f" and arr.dtype not in _HALF:  # the hot path
            return wrap(ufunc(arr))
        if complex_error is not None and arr.dtype.kind == "c":
            raise complex_error(x.dtype)
        out_dt = rules.float_dtype(x.dtype).np
        return finish(ufunc(arr.astype(compute(out_dt))), out_dt)
    kernel.__name__ = name
    return kernel


def _vml_error(name):
    return lambda d: not_implemented(f"{name}_vml_cpu", d)


def unary_rounding(ufunc, name):
    """floor/ceil/round/trunc: floats rounded, integers copied, bool and complex refused."""
    def kernel(x):
        arr = x._data
        kind = arr.dtype.kind
        if kind in "iu":
            return wrap(arr.copy())
        if kind == "b" or kind == "c":
            raise not_implemented(f"{name}_vml_cpu" if kind == "b" else f"{name}_cpu", x.dtype)
        dt = arr.dtype
        return finish(ufunc(arr.astype(_F32) if dt in _HALF else arr), dt)
    kernel.__name__ = name
    return kernel


def _sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def _rsqrt(a):
    return 1.0 / np.sqrt(a)


def _reciprocal(a):
    return 1.0 / a


def _deg2rad(a):
    return a * np.asarray(math.pi / 180, a.dtype)


def _rad2deg(a):
    return a * np.asarray(180 / math.pi, a.dtype)


exp = unary_float(np.exp, "exp")
exp2 = unary_float(np.exp2, "exp2")
expm1 = unary_float(np.expm1, "expm1")
log = unary_float(np.log, "log")
log2 = unary_float(np.log2, "log2")
log10 = unary_float(np.log10, "log10")
log1p = unary_float(np.log1p, "log1p")
sqrt = unary_float(np.sqrt, "sqrt")
rsqrt = unary_float(_rsqrt, "rsqrt")
sin = unary_float(np.sin, "sin")
cos = unary_float(np.cos, "cos")
tan = unary_float(np.tan, "tan")
asin = unary_float(np.arcsin, "asin")
acos = unary_float(np.arccos, "acos")
atan = unary_float(np.arctan, "atan")
sinh = unary_float(np.sinh, "sinh")
cosh = unary_float(np.cosh, "cosh")
tanh = unary_float(np.tanh, "tanh")
asinh = unary_float(np.arcsinh, "asinh")
acosh = unary_float(np.arccosh, "acosh")
atanh = unary_float(np.arctanh, "atanh")
sigmoid = unary_float(_sigmoid, "sigmoid")
reciprocal = unary_float(_reciprocal, "reciprocal")
erf = unary_float(erf_array, "erf", complex_error=_vml_error("erf"))
erfc = unary_float(erfc_array, "erfc", complex_error=_vml_error("erfc"))
erfinv = unary_float(erfinv_array, "erfinv", complex_error=lambda d: not_implemented("erfinv_cpu", d))
deg2rad = unary_float(_deg2rad, "deg2rad",
                      complex_error=lambda d: RuntimeError("deg2rad is not supported for complex tensors."))
rad2deg = unary_float(_rad2deg, "rad2deg",
                      complex_error=lambda d: RuntimeError("rad2deg is not supported for complex tensors."))

floor = unary_rounding(np.floor, "floor")
ceil = unary_rounding(np.ceil, "ceil")
trunc = unary_rounding(np.trunc, "trunc")
round = unary_rounding(np.rint, "round")  # rint: half to even, like PyTorch's nearbyint


def round_decimals(x, decimals):
    """round(x, decimals=d): nearbyint(x * 10^d) / 10^d (d < 0: nearbyint(x / 10^-d) * 10^-d)."""
    arr = x._data
    if arr.dtype.kind not in "f" and x.dtype is not _dt.bfloat16:
        raise not_implemented("round_cpu", x.dtype)
    dt = arr.dtype
    a = arr.astype(_F32) if dt in _HALF else arr
    scale = np.asarray(10.0 ** (decimals if decimals >= 0 else -decimals), a.dtype)
    scaled = a / scale if decimals < 0 else a * scale
    if ON_CUDA and dt in _HALF:
        # PyTorch's CUDA kernel (not its CPU one) rounds x * 10^d (x / 10^-d) to the half dtype
        # before nearbyint: 0.35 rounds to 0.4 in bfloat16, float16 overflows to inf past 65504
        scaled = scaled.astype(dt).astype(_F32)
    out = np.rint(scaled) * scale if decimals < 0 else np.rint(scaled) / scale
    return finish(out, dt)


NEG_BOOL = ("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, "
            "use the `~` or `logical_not()` operator instead.")


def check_not_bool(x, message):
    """Shared with the Meta kernels: neg/positive refuse bool tensors with RuntimeError."""
    if x.dtype is _dt.bool_:
        raise RuntimeError(message)


def neg(x):
    arr = x._data
    if arr.dtype.kind == "b":
        raise RuntimeError(NEG_BOOL)
    return wrap(np.negative(arr))


def positive(x):
    """Returns `x` itself, as PyTorch does."""
    check_not_bool(x, "The `+` operator, on a bool tensor is not supported.")
    return x


def abs(x):
    arr = x._data
    if arr.dtype.kind == "b":
        raise not_implemented("abs_cpu", x.dtype)
    return wrap(np.abs(arr))  # complex: NumPy gives the real dtype, like PyTorch


def abs_(x):
    """In-place abs: complex tensors are refused (the result would be real)."""
    if x._data.dtype.kind == "c":
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    from ..registry import _copy_result
    _copy_result("abs_", x, abs(x), resize=False)
    return x


def frac(x):
    arr = x._data
    if arr.dtype.kind != "f" and x.dtype is not _dt.bfloat16:
        raise not_implemented("frac_cpu", x.dtype)
    dt = arr.dtype
    a = arr.astype(_F32) if dt in _HALF else arr
    return finish(a - np.trunc(a), dt)


def _sign_real(a):
    # PyTorch's (0 < a) - (a < 0): nan and -0.0 give 0
    return (a > 0).astype(a.dtype) - (a < 0).astype(a.dtype)


def sign(x):
    arr = x._data
    kind = arr.dtype.kind
    if kind == "c":
        raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex numbers. Please "
                                  "use torch.sgn instead.")
    if kind == "b":
        return wrap(arr.copy())
    dt = arr.dtype
    a = arr.astype(_F32) if dt in _HALF else arr
    return finish(_sign_real(a), dt)


def sgn(x):
    """sign for real tensors; x / |x| (0 at 0) for complex ones."""
    arr = x._data
    if arr.dtype.kind != "c":
        return sign(x)
    mag = np.abs(arr)
    safe = np.where(mag == 0, 1, mag).astype(mag.dtype)
    return finish(np.where(mag == 0, 0, arr / safe), arr.dtype)


def square(x):
    """x * x; bool squares to int64 (PyTorch computes pow(x, 2))."""
    arr = x._data
    if arr.dtype.kind == "b":
        return wrap(arr.astype(np.int64))
    dt = arr.dtype
    a = arr.astype(_F32) if dt in _HALF else arr
    return finish(a * a, dt)


def angle(x):
    """Argument of complex numbers; for reals pi where x < 0, 0 elsewhere, nan kept."""
    arr = x._data
    if arr.dtype.kind == "c":
        return wrap(np.angle(arr))
    out_dt = rules.float_dtype(x.dtype).np
    a = arr.astype(compute(out_dt))
    out = np.where(a < 0, np.asarray(math.pi, a.dtype), np.asarray(0, a.dtype))
    if a.dtype.kind == "f":
        out = np.where(np.isnan(a), a, out)
    return finish(out, out_dt)


def nan_to_num(x, nan=None, posinf=None, neginf=None):
    """nan -> `nan` (0), +inf -> `posinf` (the dtype's max), -inf -> `neginf` (the dtype's min);
    integer and bool tensors are copied."""
    arr = x._data
    kind = arr.dtype.kind
    if kind in "biu":
        return wrap(arr.copy())
    if kind == "c":
        return wrap(_nan_to_num_real(arr.real, nan, posinf, neginf)
                    + 1j * _nan_to_num_real(arr.imag, nan, posinf, neginf).astype(arr.dtype))
    return wrap(_nan_to_num_real(arr, nan, posinf, neginf))


def _nan_to_num_real(a, nan, posinf, neginf):
    dt = a.dtype
    if dt == _dt.bfloat16.np:
        import ml_dtypes
        fi = ml_dtypes.finfo(dt)
    else:
        fi = np.finfo(dt)
    w = a.astype(_F32) if dt in _HALF else a
    fill = lambda v, d: np.asarray(d if v is None else v).astype(dt).astype(w.dtype)  # noqa: E731
    out = np.where(np.isnan(w), fill(nan, 0.0), w)
    out = np.where(w == np.inf, fill(posinf, fi.max), out)
    return np.where(w == -np.inf, fill(neginf, fi.min), out).astype(dt)


# ---------------------------------------------------------------------------------------
# complex views and conjugation
# ---------------------------------------------------------------------------------------
def conj(x):
    """Real tensors: `x` itself. Complex tensors: a conjugated COPY (ember has no lazy
    conjugate bit, so unlike PyTorch the result does not alias `x`)."""
    if x._data.dtype.kind != "c":
        return x
    return wrap(np.conj(x._data))


def conj_physical(x):
    arr = x._data
    return wrap(np.conj(arr) if arr.dtype.kind == "c" else arr.copy())


def resolve_conj(x):
    return x  # ember never has a pending conjugation


def _part_view(x, part):
    """The real (0) or imaginary (1) part of a complex tensor, as a view sharing storage."""
    arr = x._data
    view = arr.real if part == 0 else arr.imag  # NumPy's real/imag are strided views
    out = wrap(view)
    out._version_counter = x._shared_version_counter()
    return out


def real(x):
    if x._data.dtype.kind != "c":
        return x
    return _part_view(x, 0)


def imag(x):
    check_complex_for_imag(x)
    return _part_view(x, 1)


def check_complex_for_imag(x):
    if not x.is_complex():
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")

