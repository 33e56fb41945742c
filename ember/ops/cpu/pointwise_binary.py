"""CPU kernels of the pointwise family: binary and ternary arithmetic (add ... lerp, addcdiv).

Operands are tensors or Python numbers (wrapped numbers, for promotion). The `binary` factory
keeps a hot path for two tensors of one ordinary dtype (or a float tensor and a Python
number); everything else goes through PyTorch's promotion, per-op dtype checks, and the
half-in-float32 computation of `cpu/pointwise.py`.
"""
from __future__ import annotations

import numpy as np

from ..._core import dtype as _dt
from ..._core.tensor import Tensor, wrap
from .. import rules
from .pointwise import _HALF, compute, data, finish, not_implemented

_F64 = np.dtype(np.float64)


def _shape(x):
    return x._data.shape if isinstance(x, Tensor) else ()


def operands(a, b, op):
    """(common dtype, a data, b data): tensors cast to the common dtype's compute type.
    Also raises PyTorch's broadcasting error before NumPy raises its ValueError."""
    common = rules.common_dtype(a, b)
    rules.broadcast_shapes(_shape(a), _shape(b), op=op)
    cnp = compute(common.np)
    return common, data(a, cnp), data(b, cnp)


def binary(ufunc, name, *, fast="fiuc", bool_ufunc=None, no_bool=None, result=None, check=None):
    """A binary kernel. Hot path: two tensors of one dtype whose kind is in `fast` (or a float
    tensor and a Python int/float). Else promotion, `check(common)` (raises for unsupported
    dtypes), then `ufunc` (or `bool_ufunc` on bools; `no_bool` is the error for bools).
    `result(common)` may change the result dtype (true division -> float)."""
    fast_float = "f" in fast

    def kernel(a, b):
        if a.__class__ is Tensor:
            x = a._data
            if b.__class__ is Tensor:
                y = b._data
                if x.dtype is y.dtype and x.dtype.kind in fast and x.dtype not in _HALF:
                    try:
                        return wrap(ufunc(x, y))
                    except ValueError:
                        rules.broadcast_shapes(x.shape, y.shape, op=name)
                        raise
            elif (b.__class__ is float or b.__class__ is int) and fast_float and x.dtype.kind == "f" \
                    and x.dtype not in _HALF:
                return wrap(ufunc(x, b))
        common, x, y = operands(a, b, name)
        if check is not None:
            check(common, a, b)
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


def _refuse(kernel_name, *categories):
    """A `check` raising NotImplementedError for the given dtype categories."""
    def check(common, a, b):
        if common.category in categories:
            raise not_implemented(kernel_name, common)
    return check


def _no_complex_runtime(op):
    def check(common, a, b):
        if common.category == _dt.COMPLEX:
            raise RuntimeError(f"{op} not implemented for complex tensors.")
    return check


def _int_checked(kernel_name):
    """bool/complex refused; integer division by zero raises like PyTorch."""
    def check(common, a, b):
        if common.category in (_dt.BOOL, _dt.COMPLEX):
            raise not_implemented(kernel_name, common)
        if common.category == _dt.INT and _has_zero(b):
            raise RuntimeError("ZeroDivisionError")
    return check


def _has_zero(b):
    if isinstance(b, Tensor):
        return bool((b._data == 0).any())
    return b == 0


def _float_result(common):
    return rules.float_dtype(common)


# ---------------------------------------------------------------------------------------
# add / sub / mul / div
# ---------------------------------------------------------------------------------------
def _check_alpha(common, alpha, op):
    if isinstance(alpha, bool):
        if common.category != _dt.BOOL:
            raise RuntimeError("Boolean alpha only supported for Boolean results.")
    elif isinstance(alpha, float) and common.category <= _dt.INT:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    elif isinstance(alpha, complex) and common.category != _dt.COMPLEX:
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex number.")


_NO_BOOL_SUB = ("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                "`logical_xor()` operator instead.")
_NO_BOOL_SUB_ONE = ("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
                    "invert a mask, use the `~` or `logical_not()` operator instead.")


def check_sub(a, b):
    """PyTorch's sub_check (shared with Meta): no bool operand at all."""
    a_bool, b_bool = rules.dtype_of(a) is _dt.bool_, rules.dtype_of(b) is _dt.bool_
    if a_bool and b_bool:
        raise RuntimeError(_NO_BOOL_SUB)
    if a_bool or b_bool:
        raise RuntimeError(_NO_BOOL_SUB_ONE)


_add = binary(np.add, "add", bool_ufunc=np.logical_or)
_sub = binary(np.subtract, "sub", check=lambda common, a, b: check_sub(a, b))
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
    check_sub(a, b)
    return _sub(a, _scaled(b, alpha, "sub", a))


def rsub(a, b, alpha=1):
    """b - alpha * a (PyTorch's aten::rsub, behind ``2 - t``)."""
    return sub(b, a, alpha)


div = binary(np.true_divide, "div", fast="f", result=_float_result)
_ROUNDING = ("trunc", "floor")


def _trunc_divide(x, y):
    if x.dtype.kind in "iu":
        q = np.floor_divide(x, y)
        # C division truncates: floor is one too low when the signs differ and it is inexact
        fix = (np.remainder(x, y) != 0) & ((x < 0) != (y < 0))
        return q + fix.astype(q.dtype)
    return np.trunc(np.true_divide(x, y))


_div_trunc = binary(_trunc_divide, "div", fast="f", check=_int_checked("div_trunc_cpu"))
floor_divide = binary(np.floor_divide, "floor_divide", fast="f", check=_int_checked("div_floor_cpu"))
_div_floor = binary(np.floor_divide, "div", fast="f", check=_int_checked("div_floor_cpu"))


def check_rounding_mode(rounding_mode, exc=RuntimeError):
    """Shared with the Meta kernel (PyTorch's Meta kernel raises ValueError, the CPU one RuntimeError)."""
    if rounding_mode is not None and rounding_mode not in _ROUNDING:
        quoted = f"'{rounding_mode}'" if exc is RuntimeError else f"{rounding_mode}."
        raise exc(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found {quoted}")


def div_mode(a, b, rounding_mode=None):
    check_rounding_mode(rounding_mode)
    if rounding_mode is None:
        return div(a, b)
    return (_div_trunc if rounding_mode == "trunc" else _div_floor)(a, b)


remainder = binary(np.remainder, "remainder", fast="f", check=_int_checked("remainder_cpu"))
fmod = binary(np.fmod, "fmod", fast="f", check=_int_checked("fmod_cpu"))

# ---------------------------------------------------------------------------------------
# other binary math
# ---------------------------------------------------------------------------------------
atan2 = binary(np.arctan2, "atan2", fast="f", result=_float_result, check=_refuse("atan2_cpu", _dt.COMPLEX))
copysign = binary(np.copysign, "copysign", fast="f", result=_float_result,
                  check=_refuse("copysign_cpu", _dt.COMPLEX))
maximum = binary(np.maximum, "maximum", fast="fiu", check=_no_complex_runtime("maximum"))
minimum = binary(np.minimum, "minimum", fast="fiu", check=_no_complex_runtime("minimum"))
fmax = binary(np.fmax, "fmax", fast="fiu", check=_no_complex_runtime("fmax"))
fmin = binary(np.fmin, "fmin", fast="fiu", check=_no_complex_runtime("fmin"))
hypot = binary(np.hypot, "hypot", fast="f", check=_refuse("hypot_cpu", _dt.BOOL, _dt.INT, _dt.COMPLEX))
logaddexp2 = binary(np.logaddexp2, "logaddexp2", fast="f",
                    check=_refuse("logaddexp2_cpu", _dt.BOOL, _dt.INT, _dt.COMPLEX))


def _logaddexp(x, y):
    if x.dtype.kind != "c" and np.asarray(y).dtype.kind != "c":
        return np.logaddexp(x, y)
    # complex: m + log1p(exp(other - m)) around the operand with the larger real part
    x, y = np.broadcast_arrays(x, y)
    first = x.real >= y.real
    big, small = np.where(first, x, y), np.where(first, y, x)
    return big + np.log1p(np.exp(small - big))


logaddexp = binary(_logaddexp, "logaddexp", fast="f", check=_refuse("logaddexp_cpu", _dt.BOOL, _dt.INT))


def _xlogy(x, y):
    # 0 * log(y) is 0 (even for y = 0 or inf), but nan stays nan
    if not isinstance(y, np.ndarray):  # a Python number: keep x's dtype (np.log(2) is float64)
        y = np.asarray(y, dtype=x.dtype)
    out = x * np.log(y)
    return np.where((x == 0) & ~np.isnan(y), np.zeros((), out.dtype), out)


xlogy = binary(_xlogy, "xlogy", fast="f", result=_float_result, check=_refuse("xlogy_cpu", _dt.COMPLEX))


# ---------------------------------------------------------------------------------------
# powers
# ---------------------------------------------------------------------------------------
def _int_pow(x, y):
    """Integer powers; negative exponents give PyTorch's powi: 1 for base 1, +-1 for base -1,
    else 0 (NumPy would raise)."""
    y = np.asarray(y)
    neg = y < 0
    if not neg.any():
        return np.power(x, y)
    out = np.power(x, np.where(neg, 0, y).astype(y.dtype))
    one = np.ones((), out.dtype)
    odd = (np.abs(y) % 2) == 1
    special = np.where(x == 1, one, np.where(x == -1, np.where(odd, -one, one), np.zeros((), out.dtype)))
    return np.where(neg, special, out)


def _pow_check(common, a, b):
    if common.category == _dt.BOOL:
        raise not_implemented("pow", common)
    if common.category == _dt.INT and not isinstance(b, Tensor) and b < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")


def _pow_ufunc(x, y):
    if np.result_type(x, y).kind in "iu":
        return _int_pow(x, y)
    return np.power(x, y)


_pow_general = binary(_pow_ufunc, "pow", fast="", check=_pow_check)

# PyTorch's pow(tensor, scalar) special-cases these exponents (sqrt(-inf) is nan, pow(-inf, .5) inf)
_POW_SPECIAL = {
    2: lambda x: x * x, 3: lambda x: x * x * x, 0.5: np.sqrt, -0.5: lambda x: 1 / np.sqrt(x),
    -1: lambda x: 1 / x, -2: lambda x: 1 / (x * x),
}


def pow(a, b):
    """self ** exponent; the exponent may be a Python number."""
    if a.__class__ is Tensor:
        x = a._data
        if b.__class__ is float or b.__class__ is int:
            if x.dtype.kind in "fc" and x.dtype not in _HALF:
                special = _POW_SPECIAL.get(b)
                return wrap(special(x) if special is not None else np.power(x, b))
        elif b.__class__ is Tensor and b._data.dtype is x.dtype and x.dtype.kind == "f" and x.dtype not in _HALF:
            try:
                return wrap(np.power(x, b._data))
            except ValueError:
                rules.broadcast_shapes(x.shape, b._data.shape, op="pow")
                raise
    if (b.__class__ is bool or b.__class__ is int or b.__class__ is float) and (b == 0 or b == 1) \
            and isinstance(a, Tensor):
        # PyTorch: x ** 0 is ones and x ** 1 a copy, for every dtype (bool included)
        out_dt = rules.common_dtype(a, b).np
        return wrap(np.ones(a.shape, out_dt) if b == 0 else a._data.astype(out_dt))
    if (b.__class__ is float or b.__class__ is int) and b in _POW_SPECIAL and isinstance(a, Tensor):
        common = rules.common_dtype(a, b)
        if common.category >= _dt.FLOAT:
            cnp = compute(common.np)
            return finish(_POW_SPECIAL[b](a._data.astype(cnp)), common.np)
    return _pow_general(a, b)


def pow_scalar(a, exponent):
    """pow.Scalar: a Python number raised to a tensor."""
    return _pow_general(a, exponent)


def float_power_dtype(a, b) -> _dt.dtype:
    """float64, or complex128 when either operand is complex (shared with Meta)."""
    if rules.dtype_of(a).category == _dt.COMPLEX or rules.dtype_of(b).category == _dt.COMPLEX:
        return _dt.complex128
    return _dt.float64


def float_power(a, b):
    out_dt = float_power_dtype(a, b)
    rules.broadcast_shapes(_shape(a), _shape(b), op="float_power")
    return wrap(np.power(data(a, out_dt.np), data(b, out_dt.np)))


def float_power_scalar(a, exponent):
    return float_power(a, exponent)


def check_float_power_(self, exponent):
    out_dt = float_power_dtype(self, exponent)
    if self.dtype is not out_dt:
        raise RuntimeError(f"the base given to float_power_ has dtype {self.dtype.c10_name} but the operation's "
                           f"result requires dtype {out_dt.c10_name}")


def float_power_(self, exponent):
    check_float_power_(self, exponent)
    from ..registry import _copy_result
    _copy_result("float_power_", self, float_power(self, exponent), resize=False)
    return self


# ---------------------------------------------------------------------------------------
# ternary: lerp, addcmul, addcdiv
# ---------------------------------------------------------------------------------------
def check_lerp(self, end, weight):
    """dtype rules of lerp (shared with Meta): end (and a non-0-d weight) have self's dtype."""
    def name(d):
        return d.cpp_type
    if end.dtype is not self.dtype:
        raise RuntimeError(f"expected dtype {name(self.dtype)} for `end` but got dtype {name(end.dtype)}")
    if isinstance(weight, Tensor):
        if weight.ndim > 0 and weight.dtype is not self.dtype:
            raise RuntimeError(f"expected dtype {name(self.dtype)} for `weight` but got dtype {name(weight.dtype)}")
    elif isinstance(weight, complex) and not self.is_complex():
        raise RuntimeError("value cannot be converted to type float without overflow")
    rules.broadcast_shapes(self.shape, end.shape, _shape(weight), op="lerp")


def lerp(self, end, weight):
    """self + weight * (end - self), in PyTorch's two-sided form (exact at weight 0 and 1)."""
    dt = self.dtype
    if dt.category <= _dt.INT and end.dtype is dt:
        raise not_implemented("lerp_kernel_scalar" if not isinstance(weight, Tensor) else "lerp_kernel_tensor", dt)
    check_lerp(self, end, weight)
    cnp = compute(dt.np)
    s, e = self._data.astype(cnp, copy=False), end._data.astype(cnp, copy=False)
    w = weight._data.astype(cnp) if isinstance(weight, Tensor) else np.asarray(weight).astype(cnp)
    diff = e - s
    out = np.where(np.abs(w) < 0.5, s + w * diff, e - diff * (1 - w))
    return finish(out, dt.np)


_ADDCDIV_INT = ("Integer division with addcdiv is no longer supported, and in a future  release addcdiv will "
                "perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented "
                "as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
                "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the "
                "latter implementation: (input + value * tensor1 / tensor2), for all dtypes.")


def check_addcdiv(tensor1, tensor2):
    if rules.is_integral(tensor1.dtype) and rules.is_integral(tensor2.dtype):
        raise RuntimeError(_ADDCDIV_INT)




def _check_value(common, value):
    """`value` must fit the common dtype (PyTorch's checked Scalar conversion)."""
    if isinstance(value, complex) and common.category != _dt.COMPLEX:
        raise RuntimeError(f"value cannot be converted to type {common.c_type} without overflow")
    if common.category == _dt.INT and not isinstance(value, bool):
        info = np.iinfo(common.np)
        if not info.min <= value <= info.max:
            raise RuntimeError(f"value cannot be converted to type {common.c_type} without overflow")


def addcmul(self, tensor1, tensor2, value=1):
    """self + value * tensor1 * tensor2."""
    common = rules.common_dtype(self, tensor1, tensor2)
    rules.broadcast_shapes(self.shape, tensor1.shape, tensor2.shape, op="addcmul")
    if common.category == _dt.BOOL:
        raise not_implemented("addcmul_cpu_out", common)
    _check_value(common, value)
    cnp = compute(common.np)
    v = data(value, cnp)
    return finish(data(self, cnp) + v * (data(tensor1, cnp) * data(tensor2, cnp)), common.np)


def addcdiv(self, tensor1, tensor2, value=1):
    """self + value * tensor1 / tensor2 (integer tensor1 and tensor2 refused, like PyTorch)."""
    check_addcdiv(tensor1, tensor2)
    common = rules.common_dtype(self, tensor1, tensor2)
    rules.broadcast_shapes(self.shape, tensor1.shape, tensor2.shape, op="addcdiv")
    _check_value(common, value)
    cnp = compute(common.np)
    v = data(value, cnp)
    return finish(data(self, cnp) + v * (data(tensor1, cnp) / data(tensor2, cnp)), common.np)

