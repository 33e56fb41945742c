"""Decompositions of pointwise ops (ember/ops/table/pointwise.py, comparison.py) into core pointwise ops.

Numbers stay Python numbers (the core ops take them as wrapped scalars, so type promotion is
eager's); where a formula has an exact-at-the-ends form (lerp) or a nan/inf rule (logaddexp,
xlogy, fmax), the decomposition keeps it.
"""
from __future__ import annotations

import math

from ...ops.meta.activation import check_float
from ._ops import aten, to, is_float


def _float_of(x):
    """The dtype a unary float op computes `x` in: x's own if floating, else the default dtype."""
    from ... import get_default_dtype
    return x.dtype if x.dtype.is_floating_point or x.dtype.is_complex else get_default_dtype()


def frac(self):
    check_float(self, "frac_cpu")
    return aten.sub.Tensor(self, aten.trunc.default(self))


def square(self):
    if self.dtype.name == "bool":
        self = to(self, _int64())
    return aten.mul.Tensor(self, self)


def _int64():
    from ... import int64
    return int64


def exp2(self):
    return aten.pow.Scalar(2.0, self)


def deg2rad(self):
    return aten.mul.Tensor(to(self, _float_of(self)), math.pi / 180)


def rad2deg(self):
    return aten.mul.Tensor(to(self, _float_of(self)), 180 / math.pi)


def sgn(self):
    if not self.dtype.is_complex:
        return aten.sign.default(self)
    magnitude = aten.abs.default(self)
    zero = aten.eq.Tensor(magnitude, 0)
    return aten.where.self(zero, 0, aten.div.Tensor(self, aten.where.self(zero, 1, magnitude)))


def angle(self):
    """pi for negative numbers, 0 otherwise, nan kept; atan2(imag, real) for complex ones."""
    if self.dtype.is_complex:
        return aten.atan2.default(aten.imag.default(self), aten.real.default(self))
    x = to(self, _float_of(self))
    # pi as a tensor of x's dtype: where() of two Python numbers would round it to the default dtype
    half_turn = aten.where.self(aten.lt.Tensor(x, 0), aten.full_like.default(x, math.pi), 0.0)
    return aten.where.self(aten.isnan.default(x), x, half_turn)


def positive(self):
    return self


def floor_divide(self, other):
    return aten.div.Tensor_mode(self, other, rounding_mode="floor")


def rsub(self, other, alpha=1):
    from ..._core.tensor import Tensor
    if isinstance(other, Tensor):
        return aten.sub.Tensor(other, self, alpha=alpha)
    return aten.add.Tensor(aten.mul.Tensor(self, -alpha), other)


def remainder_scalar_tensor(self, other):
    return aten.remainder.Tensor(aten.full_like.default(other, self, dtype=_scalar_result_dtype(self, other)), other)


def _scalar_result_dtype(number, tensor):
    """The dtype `number op tensor` has (a wrapped number promotes only across categories)."""
    from ... import result_type
    return result_type(number, tensor)


def copysign(self, other):
    from ..._core.tensor import Tensor
    dtype = _scalar_result_dtype(self, other) if not isinstance(other, Tensor) else None
    if dtype is None:
        from ... import result_type
        dtype = result_type(self, other)
    if not dtype.is_floating_point:
        from ... import get_default_dtype
        dtype = get_default_dtype()
    magnitude = aten.abs.default(to(self, dtype))
    negative = aten.signbit.default(other if isinstance(other, Tensor) else aten.full_like.default(self, other,
                                                                                                 dtype=dtype))
    return aten.where.self(negative, aten.neg.default(magnitude), magnitude)


def float_power(self, exponent):
    from ... import float64, complex128
    from ..._core.tensor import Tensor
    wide = complex128 if self.dtype.is_complex or (isinstance(exponent, Tensor) and exponent.dtype.is_complex) \
        else float64
    return aten.pow.Tensor_Tensor(to(self, wide), to(exponent, wide) if isinstance(exponent, Tensor) else exponent)


def float_power_(self, exponent):
    from ...ops.cpu.pointwise_binary import check_float_power_
    check_float_power_(self, exponent)
    return aten.copy_.default(self, float_power(self, exponent))


def float_power_scalar(self, exponent):
    from ... import float64
    return aten.pow.Scalar(self, to(exponent, float64))


def logaddexp(self, other):
    """log(exp(a) + exp(b)) = max + log1p(exp(-|a - b|)); equal infinities give that infinity."""
    _check_float_pair(self, other, "logaddexp_cpu")
    big = aten.maximum.default(self, other)
    small = aten.minimum.default(self, other)
    same_inf = aten.logical_and.default(aten.isinf.default(big), aten.eq.Tensor(big, small))
    spread = aten.log1p.default(aten.exp.default(aten.sub.Tensor(small, big)))
    return aten.where.self(same_inf, big, aten.add.Tensor(big, spread))


def logaddexp2(self, other):
    """log2(2^a + 2^b) = max + log2(1 + 2^-(|a - b|))."""
    _check_float_pair(self, other, "logaddexp2_cpu")
    big = aten.maximum.default(self, other)
    small = aten.minimum.default(self, other)
    same_inf = aten.logical_and.default(aten.isinf.default(big), aten.eq.Tensor(big, small))
    spread = aten.div.Tensor(aten.log1p.default(aten.pow.Scalar(2.0, aten.sub.Tensor(small, big))), math.log(2))
    return aten.where.self(same_inf, big, aten.add.Tensor(big, spread))


def _check_float_pair(self, other, kernel):
    from ... import result_type
    common = result_type(self, other)
    if not common.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{common.c10_name}\'')


def fmax(self, other):
    """maximum, except that a nan loses to a number."""
    return aten.where.self(aten.isnan.default(other), self,
                           aten.where.self(aten.isnan.default(self), other, aten.maximum.default(self, other)))


def fmin(self, other):
    return aten.where.self(aten.isnan.default(other), self,
                           aten.where.self(aten.isnan.default(self), other, aten.minimum.default(self, other)))


def xlogy(self, other):
    """0 where self == 0 (unless other is nan), else self * log(other)."""
    from ..._core.tensor import Tensor
    if not isinstance(other, Tensor):
        other = aten.full_like.default(self, other, dtype=_scalar_result_dtype(other, self))
    product = aten.mul.Tensor(self, aten.log.default(other))
    zero = aten.where.self(aten.eq.Tensor(self, 0), 0, product)
    return aten.where.self(aten.isnan.default(other), math.nan, zero)


def xlogy_scalar_self(self, other):
    return xlogy(aten.full_like.default(other, self, dtype=_scalar_result_dtype(self, other)), other)


def lerp(self, end, weight):
    """PyTorch's two-sided form: self + w * (end - self) for |w| < 0.5, end - (end - self) * (1 - w)."""
    from ..._core.tensor import Tensor
    from ...ops.cpu.pointwise_binary import check_lerp
    if not self.dtype.is_floating_point and not self.dtype.is_complex and end.dtype == self.dtype:
        kernel = "lerp_kernel_tensor" if isinstance(weight, Tensor) else "lerp_kernel_scalar"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{self.dtype.c10_name}\'')
    check_lerp(self, end, weight)
    diff = aten.sub.Tensor(end, self)
    if isinstance(weight, Tensor):
        small = aten.lt.Tensor(aten.abs.default(weight), 0.5)
        low = aten.add.Tensor(self, aten.mul.Tensor(weight, diff))
        high = aten.sub.Tensor(end, aten.mul.Tensor(diff, aten.add.Tensor(aten.neg.default(weight), 1)))
        return aten.where.self(small, low, high)
    if abs(weight) < 0.5:
        return aten.add.Tensor(self, aten.mul.Tensor(diff, weight))
    return aten.sub.Tensor(end, aten.mul.Tensor(diff, 1 - weight))


def addcmul(self, tensor1, tensor2, value=1):
    return aten.add.Tensor(self, aten.mul.Tensor(aten.mul.Tensor(tensor1, tensor2), value))


def addcdiv(self, tensor1, tensor2, value=1):
    if not is_float(tensor1) and not is_float(tensor2) and not tensor1.dtype.is_complex:
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release addcdiv "
                           "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can "
                           "be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
                           "addcdiv behavior is just the latter implementation: (input + value * tensor1 / "
                           "tensor2), for all dtypes.")
    return aten.add.Tensor(self, aten.mul.Tensor(aten.div.Tensor(tensor1, tensor2), value))


def round_decimals(self, decimals=0):
    check_float(self, "round_cpu")
    scale = 10.0 ** abs(decimals)
    if decimals < 0:
        return aten.mul.Tensor(aten.round.default(aten.div.Tensor(self, scale)), scale)
    return aten.div.Tensor(aten.round.default(aten.mul.Tensor(self, scale)), scale)


def nan_to_num(self, nan=None, posinf=None, neginf=None):
    if not is_float(self):
        return aten.clone.default(self)
    from ... import finfo
    info = finfo(self.dtype)
    result = aten.where.self(aten.isnan.default(self), 0.0 if nan is None else nan, self)
    result = aten.where.self(isposinf(self), info.max if posinf is None else posinf, result)
    return aten.where.self(isneginf(self), info.min if neginf is None else neginf, result)


def isposinf(self):
    if not is_float(self):
        return aten.full_like.default(self, False, dtype=_bool())
    return aten.eq.Tensor(self, math.inf)


def isneginf(self):
    if not is_float(self):
        return aten.full_like.default(self, False, dtype=_bool())
    return aten.eq.Tensor(self, -math.inf)


def _bool():
    from ... import bool as bool_
    return bool_


def isfinite(self):
    if not is_float(self) and not self.dtype.is_complex:
        return aten.full_like.default(self, True, dtype=_bool())
    return aten.logical_not.default(aten.logical_or.default(aten.isinf.default(self), aten.isnan.default(self)))


def isreal(self):
    if not self.dtype.is_complex:
        return aten.full_like.default(self, True, dtype=_bool())
    return aten.eq.Tensor(aten.imag.default(self), 0)


def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    if self.dtype != other.dtype:
        raise RuntimeError(f"{self.dtype} did not match {other.dtype}")
    equal = aten.eq.Tensor(self, other)
    if equal_nan and is_float(self):
        equal = aten.logical_or.default(equal, aten.logical_and.default(aten.isnan.default(self),
                                                                        aten.isnan.default(other)))
    if self.dtype.name == "bool":
        return equal
    distance = aten.abs.default(aten.sub.Tensor(self, other))
    allowed = aten.add.Tensor(aten.mul.Tensor(aten.abs.default(other), rtol), atol)
    finite = aten.logical_and.default(isfinite(self), isfinite(other)) if is_float(self) else None
    near = aten.le.Tensor(distance, allowed)
    if finite is not None:
        near = aten.logical_and.default(near, finite)
    return aten.logical_or.default(equal, near)


def clamp_min(self, min):
    return aten.clamp.default(self, min)


def clamp_max(self, max):
    return aten.clamp.default(self, None, max)


def clamp_min_tensor(self, min):
    return aten.clamp.Tensor(self, min)


def clamp_max_tensor(self, max):
    return aten.clamp.Tensor(self, None, max)


def max_other(self, other):
    return aten.maximum.default(self, other)


def min_other(self, other):
    return aten.minimum.default(self, other)


DECOMPOSITIONS = {
    "frac": frac, "square": square, "exp2": exp2, "deg2rad": deg2rad, "rad2deg": rad2deg, "sgn": sgn,
    "positive": positive, "angle": angle, "floor_divide": floor_divide, "rsub.Tensor": rsub,
    "remainder.Scalar_Tensor": remainder_scalar_tensor, "copysign.Tensor": copysign,
    "float_power.Tensor_Tensor": float_power, "float_power.Scalar": float_power_scalar,
    "float_power_.Tensor": float_power_,
    "logaddexp": logaddexp, "logaddexp2": logaddexp2, "fmax": fmax, "fmin": fmin,
    "xlogy.Tensor": xlogy, "xlogy.Scalar_Self": xlogy_scalar_self, "lerp.Scalar": lerp, "lerp.Tensor": lerp,
    "addcmul": addcmul, "addcdiv": addcdiv, "round.decimals": round_decimals, "nan_to_num": nan_to_num,
    "isposinf": isposinf, "isneginf": isneginf, "isfinite": isfinite, "isreal": isreal, "isclose": isclose,
    "clamp_min": clamp_min, "clamp_max": clamp_max, "clamp_min.Tensor": clamp_min_tensor,
    "clamp_max.Tensor": clamp_max_tensor, "max.other": max_other, "min.other": min_other,
}
