"""Rules and Meta kernels of the comparison family: comparisons, logical and bitwise ops,
where, clamp, isnan & co.

The `check_*` / `*_dtype` functions here are device-agnostic (they read only shapes and dtypes)
and are shared with the CPU kernels (`ember.ops.cpu.comparison`), so both raise the same
PyTorch errors and agree on result shapes and dtypes.
"""
from __future__ import annotations

import warnings

from ..._core import dtype as _dt
from ..._core.tensor import Tensor, wrap_meta
from .. import rules

_COMPLEX = _dt.COMPLEX


def _shape(x):
    return x.shape if isinstance(x, Tensor) else ()


def not_implemented(kernel: str, d: _dt.dtype) -> NotImplementedError:
    """PyTorch's dispatch-macro error: '"lt_cpu" not implemented for 'ComplexFloat''."""
    return NotImplementedError(f'"{kernel}" not implemented for \'{d.c10_name}\'')


# ---------------------------------------------------------------------------------------
# rules
# ---------------------------------------------------------------------------------------
def compare_dtype(a, b, name: str, ordered: bool) -> _dt.dtype:
    """The dtype two operands are compared in; ordered comparisons refuse complex."""
    common = rules.common_dtype(a, b)
    if ordered and common.category == _COMPLEX:
        raise not_implemented(f"{name}_cpu", common)
    rules.broadcast_shapes(_shape(a), _shape(b), op=name)
    return common


def bitwise_dtype(a, b, name: str, kernel: str, allow_bool: bool = True) -> _dt.dtype:
    """Bitwise ops run on bool and integers only (shifts: integers only)."""
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"({type(a).__name__}, {type(b).__name__})")
    common = rules.common_dtype(a, b)
    if common.category > _dt.INT or (not allow_bool and common.category == _dt.BOOL):
        raise not_implemented(kernel, common)
    rules.broadcast_shapes(_shape(a), _shape(b), op=name)
    return common


def where_dtype(condition, a, b) -> tuple:
    """(result shape, result dtype) of where(condition, a, b): self/other promote, the
    condition must be bool (uint8 still works, with PyTorch's deprecation warning)."""
    cd = condition.dtype
    if cd is _dt.uint8:
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and will be removed "
                      "in a future version of PyTorch. Use a boolean condition instead.", UserWarning)
    elif cd is not _dt.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{cd.c10_name}")
    shape = rules.broadcast_shapes(condition.shape, _shape(a), _shape(b), op="where")
    return shape, rules.common_dtype(a, b)




def check_scalar_fits(v, d: _dt.dtype) -> None:
    """PyTorch converts a Scalar argument to a kernel's dtype with an overflow check
    (``Scalar::to<T>``): RuntimeError when the value does not fit."""
    if isinstance(v, bool) or d.category == _dt.BOOL:
        return
    if d.category == _dt.INT:
        if isinstance(v, (int, float)):
            info = _dt.iinfo(d)
            # c10::overflows lets integers down to -255 "fit" uint8 (they wrap); floats must be in range
            lo = -info.max if not d.is_signed and isinstance(v, int) else info.min
            ok = not v == v or lo <= v <= info.max
        else:
            return
    elif d.category == _dt.FLOAT and isinstance(v, (int, float)):
        v = float(v)
        ok = not (v == v and abs(v) != float("inf") and abs(v) > _dt.finfo(d).max)
    else:
        return
    if not ok:
        raise RuntimeError(f"value cannot be converted to type {d.c_type} without overflow")


def clamp_dtype(x, lo, hi, name: str = "clamp") -> _dt.dtype:
    """Result dtype of clamp(x, lo, hi): PyTorch's promotion of all three (None skipped)."""
    if lo is None and hi is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if x.dtype.category == _COMPLEX or any(isinstance(v, Tensor) and v.dtype.category == _COMPLEX
                                          or isinstance(v, complex) for v in (lo, hi)):
        raise NotImplementedError("clamp is not supported for complex types")
    if lo is not None and hi is not None and isinstance(lo, Tensor) != isinstance(hi, Tensor):
        # PyTorch's parser takes a 0-d tensor as a Scalar, but never a number as a Tensor
        t = lo if isinstance(lo, Tensor) else hi
        if t.ndim:
            raise TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, "
                            f"{type(lo).__name__}, {type(hi).__name__}), but expected one of:\n"
                            f" * (Tensor input, Tensor min = None, Tensor max = None)\n"
                            f" * (Tensor input, Number min = None, Number max = None)")
    common = rules.common_dtype(*[v for v in (x, lo, hi) if v is not None])
    if common is _dt.bool_:  # ATen's clamp kernels have no bool version, except max/min of tensors
        if not isinstance(lo, Tensor) and not isinstance(hi, Tensor):
            kernel = "clamp_scalar_cpu" if lo is not None and hi is not None else \
                "clamp_min_scalar_cpu" if lo is not None else "clamp_max_scalar_cpu"
            raise not_implemented(kernel, common)
        if lo is not None and hi is not None:
            raise not_implemented("clamp_cpu", common)
    for v in (lo, hi):
        if v is not None and not isinstance(v, Tensor):
            check_scalar_fits(v, common)
    rules.broadcast_shapes(x.shape, _shape(lo), _shape(hi), op=name)
    return common


def isclose_check(a, b, rtol: float, atol: float) -> None:
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{a.dtype.c10_name} did not match {b.dtype.c10_name}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol:g}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol:g}")
    rules.broadcast_shapes(a.shape, b.shape, op="isclose")


def no_complex(x, message: str) -> None:
    if x.dtype.category == _COMPLEX:
        raise RuntimeError(message)


# ---------------------------------------------------------------------------------------
# Meta kernels
# ---------------------------------------------------------------------------------------
def _out(shape, dtype, *operands):
    """A pointwise result laid out like its operands (TensorIterator's rule, as on CPU)."""
    return wrap_meta(shape, dtype, rules.pointwise_strides(shape, operands))


def _bool_like(a, b):
    return _out(rules.broadcast_shapes(_shape(a), _shape(b)), _dt.bool_, a, b)


def compare(name: str, ordered: bool):
    def kernel(a, b):
        compare_dtype(a, b, name, ordered)
        return _bool_like(a, b)
    kernel.__name__ = name
    return kernel


def logical(a, b):
    rules.broadcast_shapes(a.shape, b.shape, op="logical")
    return _bool_like(a, b)


def unary_bool(x):
    return _out(x.shape, _dt.bool_, x)


def bitwise(name: str, kernel_name: str, allow_bool: bool = True):
    def kernel(a, b):
        d = bitwise_dtype(a, b, name, kernel_name, allow_bool)
        return _out(rules.broadcast_shapes(_shape(a), _shape(b)), d, a, b)
    kernel.__name__ = name
    return kernel


def bitwise_not(x):
    if x.dtype.category > _dt.INT:
        raise not_implemented("bitwise_not_cpu", x.dtype)
    return _out(x.shape, x.dtype, x)


def where(condition, a, b):
    shape, d = where_dtype(condition, a, b)
    return _out(shape, d, condition, a, b)


def clamp(x, lo=None, hi=None):
    d = clamp_dtype(x, lo, hi)
    return _out(rules.broadcast_shapes(x.shape, _shape(lo), _shape(hi)), d, x, lo, hi)


def clamp_min(x, lo):
    return clamp(x, lo, None)


def clamp_max(x, hi):
    return clamp(x, None, hi)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    isclose_check(a, b, rtol, atol)
    return _bool_like(a, b)


def isposinf(x):
    no_complex(x, "isposinf does not support complex inputs.")
    return unary_bool(x)


def isneginf(x):
    no_complex(x, "isneginf does not support complex inputs.")
    return unary_bool(x)


def signbit(x):
    if x.dtype.category == _COMPLEX:
        raise NotImplementedError("signbit is not implemented for complex tensors.")
    return unary_bool(x)


def equal(a, b):
    raise NotImplementedError("aten::equal: attempted to run this operator with Meta tensors, but there was no "
                              "fake impl or Meta kernel registered.")


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    raise RuntimeError("Tensor.item() cannot be called on meta tensors")
