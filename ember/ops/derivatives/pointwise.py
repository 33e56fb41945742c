"""Derivatives of pointwise ops (ember/ops/table/pointwise.py), of the differentiable rows of
the comparison family (where, clamp/clip) and of the creation family (fill_, zero_, complex,
polar, random sampling), following PyTorch's derivatives.yaml, subgradients included.

Broadcasting is undone by the engine (gradients are summed back to each input's shape), so
formulas are written for same-shape operands. Operands of binary ops may be Python numbers
(``x * 2``): those get no gradient, so formulas skip the work (``None``). Complex inputs follow
PyTorch's convention (the gradient is ``grad * conj(f'(z))`` for holomorphic f); formulas
that only hold for real inputs raise NotImplementedError for complex ones.
"""
from __future__ import annotations

import math

from ..._core.tensor import Tensor

_LN2, _LN10 = math.log(2.0), math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------
def _is_t(x) -> bool:
    return isinstance(x, Tensor)


def _conj(x):
    """conj(x) for complex tensors and numbers; x itself otherwise (no copy for real)."""
    if isinstance(x, Tensor):
        return x.conj() if x.is_complex() else x
    return x.conjugate() if isinstance(x, complex) else x


def _scaled(grad, alpha):
    return grad if alpha == 1 else grad * _conj(alpha)


def _zeros(grad):
    from ... import zeros_like
    return zeros_like(grad)


def _where(cond, a, b):
    from ... import where
    return where(cond, a, b)


def _real_only(op, *xs):
    """PyTorch's formula for `op` is written for real inputs here; complex ones are not supported."""
    for x in xs:
        if (_is_t(x) and x.is_complex()) or isinstance(x, complex):
            raise NotImplementedError(f"the derivative of '{op}' for complex inputs is not implemented in ember")


def _not_implemented(op):
    """PyTorch records the op but raises at backward time ("derivative for aten::x is not implemented")."""
    def formula(grad):
        raise RuntimeError(f"derivative for aten::{op} is not implemented")
    return formula


def _real_part(z):
    from ... import real
    return real(z) if _is_t(z) and z.is_complex() else z


def _imag_part(z):
    from ... import imag, zeros_like
    return imag(z) if _is_t(z) and z.is_complex() else zeros_like(z)


# ---------------------------------------------------------------------------------------
# binary arithmetic
# ---------------------------------------------------------------------------------------
def _mul(grad, self, other):
    return (grad * _conj(other) if _is_t(self) else None,
            grad * _conj(self) if _is_t(other) else None)


def _div(grad, self, other):
    ga = grad / _conj(other) if _is_t(self) else None
    gb = -grad * _conj(self / other / other) if _is_t(other) else None
    return ga, gb


def _div_mode(grad, self, other, rounding_mode):
    if rounding_mode is None:
        return _div(grad, self, other)
    return (_zeros(grad) if _is_t(self) else None), (_zeros(grad) if _is_t(other) else None)


def _remainder(grad, self, other):
    _real_only("remainder", self, other)
    return grad, (-grad * self.div(other, rounding_mode="floor") if _is_t(other) else None)


def _fmod(grad, self, other):
    _real_only("fmod", self, other)
    return grad, (-grad * self.div(other, rounding_mode="trunc") if _is_t(other) else None)


def _copysign(grad, self, other, result):
    # d/dself copysign(self, other) = result / self, with 0 where self == 0
    ratio = _where(self == 0, 0.0, result / self)
    return grad * ratio, (_zeros(grad) if _is_t(other) else None)


def _xlogy(grad, self, other):
    _real_only("xlogy", self, other)
    # xlogy(grad, other), but 0 where self == 0 and other <= 0 (PyTorch's choice at the boundary)
    ga = _where((self == 0) & (other <= 0), 0.0, grad.xlogy(other)) if _is_t(self) else None
    gb = grad * self / other if _is_t(other) else None
    return ga, gb


def _pow_self(grad, self, exponent):
    """pow_backward_self: exponent == 0 gives 0 (even at self == 0, where 0 * inf is nan)."""
    if not _is_t(exponent):
        if exponent == 0:
            return _zeros(grad)
        return grad * _conj(exponent * self ** (exponent - 1))
    return _where(exponent == 0.0, 0.0, grad * _conj(exponent * self ** (exponent - 1)))


def _pow_exponent(grad, self, exponent, result):
    """pow_backward_exponent: 0 where self == 0 and exponent >= 0 (not 0 * log(0) = nan)."""
    from ... import tensor
    _real_only("pow", exponent)
    if _is_t(self):
        _real_only("pow", self)
        return grad * _where((self == 0) & (exponent >= 0), 0.0, result * self.log())
    if self == 0:
        return grad * _where(exponent >= 0, 0.0, result * float("-inf"))
    _real_only("pow", self)
    return grad * (result * math.log(self)) if self > 0 else grad * (result * tensor(float(self)).log())


def _pow(grad, self, exponent, result):
    ga = _pow_self(grad, self, exponent) if _is_t(self) else None
    gb = _pow_exponent(grad, self, exponent, result) if _is_t(exponent) else None
    return ga, gb


def _pow_scalar(grad, self, exponent, result):
    return _pow_exponent(grad, self, exponent, result)  # `self` is a Scalar: one Tensor argument


def _maximum(grad, self, other):
    _real_only("maximum", self, other)
    half = _where(self == other, grad / 2, grad)
    return _where(self < other, 0.0, half), _where(self > other, 0.0, half)


def _minimum(grad, self, other):
    _real_only("minimum", self, other)
    half = _where(self == other, grad / 2, grad)
    return _where(self > other, 0.0, half), _where(self < other, 0.0, half)


def _fmax(grad, self, other):
    # the value of `self` is taken where self >= other or other is nan
    take_self = (self >= other) | other.isnan()
    return _where(take_self, grad, 0.0), _where(take_self, 0.0, grad)


def _fmin(grad, self, other):
    take_self = (self <= other) | other.isnan()
    return _where(take_self, grad, 0.0), _where(take_self, 0.0, grad)


def _atan2(grad, self, other):
    _real_only("atan2", self, other)
    # at the origin atan2 is singular: PyTorch's gradient is 0 there, not 0 * (1 / 0) = nan
    denom = self * self + other * other
    recip = _where(denom == 0, 0.0, denom.reciprocal())
    return grad * other * recip, grad * -self * recip


def _hypot(grad, self, other, result):
    return grad * self / result, grad * other / result


def _logaddexp(grad, self, other):
    return grad / ((other - self).exp() + 1), grad / ((self - other).exp() + 1)


def _logaddexp2(grad, self, other):
    return grad / ((other - self).exp2() + 1), grad / ((self - other).exp2() + 1)


def _lerp_scalar(grad, weight):
    return grad * _conj(1 - weight), grad * _conj(weight)


def _lerp_tensor(grad, self, end, weight):
    return grad * _conj(1 - weight), grad * _conj(weight), grad * _conj(end - self)


def _addcmul(grad, tensor1, tensor2, value):
    return grad, grad * _conj(tensor2 * value), grad * _conj(tensor1 * value)


def _addcdiv(grad, tensor1, tensor2, value):
    return grad, grad * _conj(value / tensor2), -grad * _conj(value * tensor1 / (tensor2 * tensor2))


# ---------------------------------------------------------------------------------------
# unary ops with a case analysis
# ---------------------------------------------------------------------------------------
def _abs(grad, self):
    return grad * self.sgn()  # sgn(0) = 0: abs'(0) = 0; complex: grad * z / |z|


def _sgn(grad, self):
    _real_only("sgn", self)  # PyTorch's complex sgn backward is not ported
    return _zeros(grad)


def _angle(grad, self):
    if not self.is_complex():
        return _zeros(self)
    return _where(self == 0.0, 0.0, grad * self / self.abs().pow(2) * 1j)


def _real(grad, self):
    return grad


def _imag(grad, self):
    return grad * 1j


def _complex(grad, real, imag):
    return _real_part(grad), _imag_part(grad)


def _polar(grad, abs, result):
    g = _conj(grad)
    return _real_part(g * result.sgn()), _real_part(g * result * 1j)


def _erfinv(grad, result):
    return grad * (0.5 * math.sqrt(math.pi)) * (result * result).exp()


# ---------------------------------------------------------------------------------------
# clamp / clip / where (comparison family)
# ---------------------------------------------------------------------------------------
def _clamp(grad, self, min=None, max=None):
    """clamp_backward + clamp_backward_min_max: the boundary passes the gradient to self;
    when min > max the result is max, whose gradient is then grad everywhere."""
    _real_only("clamp", self)
    has_min, has_max = min is not None, max is not None
    if has_min and has_max:
        g_self = _where((self >= min) & (self <= max), grad, 0.0)
        g_min = _where((self < min) & (min < max), grad, 0.0) if _is_t(min) else None
        g_max = _where((self > max) | (max < min), grad, 0.0) if _is_t(max) else None
    elif has_min:
        g_self = _where(self >= min, grad, 0.0)
        g_min = _where(self < min, grad, 0.0) if _is_t(min) else None
        g_max = None
    elif has_max:
        g_self = _where(self <= max, grad, 0.0)
        g_min, g_max = None, _where(self > max, grad, 0.0) if _is_t(max) else None
    else:
        g_self, g_min, g_max = grad, None, None
    return g_self, g_min, g_max


def _clamp_scalar(grad, self, min=None, max=None):
    return _clamp(grad, self, min, max)[0]


def _clamp_min(grad, self, min):
    g_self, g_min, _ = _clamp(grad, self, min, None)
    return g_self, g_min


def _clamp_max(grad, self, max):
    g_self, _, g_max = _clamp(grad, self, None, max)
    return g_self, g_max


def _where_self(grad, condition):
    return None, _where(condition, grad, 0.0), _where(condition, 0.0, grad)


# ---------------------------------------------------------------------------------------
# the table
# ---------------------------------------------------------------------------------------
_UNARY_FORMULAS = {
    "neg": lambda grad: -grad,
    "exp": lambda grad, result: grad * _conj(result),
    "exp2": lambda grad, result: grad * _conj(result * _LN2),
    "expm1": lambda grad, result: grad * _conj(result + 1),
    "log": lambda grad, self: grad / _conj(self),
    "log2": lambda grad, self: grad / _conj(self * _LN2),
    "log10": lambda grad, self: grad / _conj(self * _LN10),
    "log1p": lambda grad, self: grad / _conj(self + 1),
    "sqrt": lambda grad, result: grad / _conj(2 * result),
    "rsqrt": lambda grad, result: -0.5 * grad * _conj(result * result * result),
    "sin": lambda grad, self: grad * _conj(self.cos()),
    "cos": lambda grad, self: grad * -_conj(self.sin()),
    "tan": lambda grad, result: grad * _conj(1 + result * result),
    "asin": lambda grad, self: grad * _conj((1 - self * self).rsqrt()),
    "acos": lambda grad, self: grad * -_conj((1 - self * self).rsqrt()),
    "atan": lambda grad, self: grad / _conj(self * self + 1),
    "sinh": lambda grad, self: grad * _conj(self.cosh()),
    "cosh": lambda grad, self: grad * _conj(self.sinh()),
    "tanh": lambda grad, result: grad * _conj(1 - result * result),
    "asinh": lambda grad, self: grad * _conj((self * self + 1).rsqrt()),
    "acosh": lambda grad, self: grad * _conj((self * self - 1).rsqrt()),
    "atanh": lambda grad, self: grad / _conj(1 - self * self),
    "sigmoid": lambda grad, result: grad * _conj(result * (1 - result)),
    "erf": lambda grad, self: grad * _TWO_OVER_SQRT_PI * (-self * self).exp(),
    "erfc": lambda grad, self: grad * -_TWO_OVER_SQRT_PI * (-self * self).exp(),
    "erfinv": _erfinv,
    "reciprocal": lambda grad, result: -grad * _conj(result * result),
    "deg2rad": lambda grad: grad * (math.pi / 180.0),
    "rad2deg": lambda grad: grad * (180.0 / math.pi),
    "square": lambda grad, self: grad * _conj(2 * self),
    "frac": lambda grad: grad,
    "conj_physical": lambda grad: grad.conj(),
    "sgn": _sgn,
}
# aliases are their own aten operators: same formula
for _alias, _target in {"negative": "neg", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
                        "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh"}.items():
    _UNARY_FORMULAS[_alias] = _UNARY_FORMULAS[_target]
# piecewise constant: zero gradient everywhere (PyTorch's subgradient choice)
for _name in ("floor", "ceil", "trunc", "fix", "round", "round.decimals", "sign"):
    _UNARY_FORMULAS[_name] = lambda grad: _zeros(grad)

FORMULAS = {
    **_UNARY_FORMULAS,
    "abs": _abs,
    "positive": lambda grad: grad,
    "angle": _angle,
    "nan_to_num": lambda grad, self: _where(self.isfinite(), grad, 0.0),
    "conj": lambda grad: grad.conj(),
    "resolve_conj": lambda grad: grad,
    "real": _real,
    "imag": _imag,

    # a Python-number `other` gets a gradient that the engine drops (cheaper than saving `other`)
    "add.Tensor": lambda grad, alpha: (grad, _scaled(grad, alpha)),
    "sub.Tensor": lambda grad, alpha: (grad, -_scaled(grad, alpha)),
    "subtract.Tensor": lambda grad, alpha: (grad, -_scaled(grad, alpha)),
    "rsub.Tensor": lambda grad, alpha: (-_scaled(grad, alpha), grad),
    "mul.Tensor": _mul,
    "multiply.Tensor": _mul,
    "div.Tensor": _div,
    "divide.Tensor": _div,
    "true_divide.Tensor": _div,
    "div.Tensor_mode": _div_mode,
    "divide.Tensor_mode": _div_mode,
    "remainder.Tensor": _remainder,
    "remainder.Scalar_Tensor": _not_implemented("remainder"),
    "floor_divide": _not_implemented("floor_divide"),
    "fmod.Tensor": _fmod,
    "copysign.Tensor": _copysign,
    "xlogy.Tensor": _xlogy,
    "xlogy.Scalar_Self": lambda grad, self, other: grad * self / other,
    "pow.Tensor_Tensor": _pow,
    "pow.Scalar": _pow_scalar,
    "float_power.Tensor_Tensor": _pow,
    "float_power.Scalar": _pow_scalar,
    "float_power_.Tensor": _pow,
    "atan2": _atan2,
    "arctan2": _atan2,
    "maximum": _maximum,
    "minimum": _minimum,
    "fmax": _fmax,
    "fmin": _fmin,
    "hypot": _hypot,
    "logaddexp": _logaddexp,
    "logaddexp2": _logaddexp2,
    "lerp.Scalar": _lerp_scalar,
    "lerp.Tensor": _lerp_tensor,
    "addcmul": _addcmul,
    "addcdiv": _addcdiv,

    # comparison family
    "where.self": _where_self,
    "clamp.Tensor": _clamp,
    "clamp": _clamp_scalar,
    "clip.Tensor": _clamp,
    "clip": _clamp_scalar,
    "clamp_min.Tensor": _clamp_min,
    "clamp_min": lambda grad, self, min: _clamp(grad, self, min, None)[0],
    "clamp_max.Tensor": _clamp_max,
    "clamp_max": lambda grad, self, max: _clamp(grad, self, None, max)[0],

    # creation family: overwriting or sampling passes no gradient to the old values
    "fill_.Scalar": lambda grad: _zeros(grad),
    "fill_.Tensor": lambda grad: (_zeros(grad), grad.sum()),
    "zero_": lambda grad: _zeros(grad),
    "complex": _complex,
    "polar": _polar,
    "normal.Tensor_float": lambda grad: _zeros(grad),
    "normal.float_Tensor": lambda grad: _zeros(grad),
    "normal.Tensor_Tensor": lambda grad: (_zeros(grad), _zeros(grad)),
    "bernoulli": lambda grad: _zeros(grad),
    "bernoulli.p": _not_implemented("bernoulli"),
    "uniform_": lambda grad: _zeros(grad),
    "normal_": lambda grad: _zeros(grad),
    "bernoulli_.float": lambda grad: _zeros(grad),
    "bernoulli_.Tensor": lambda grad: (_zeros(grad), None),
    "exponential_": lambda grad: _zeros(grad),
    "geometric_": lambda grad: _zeros(grad),
    "log_normal_": lambda grad: _zeros(grad),
    "cauchy_": lambda grad: _zeros(grad),
    "random_.from": lambda grad: _zeros(grad),
    "random_.to": lambda grad: _zeros(grad),
    "random_": lambda grad: _zeros(grad),
}

_COMPARE = ("eq", "ne", "lt", "le", "gt", "ge", "not_equal", "less", "less_equal", "greater", "greater_equal")
NONDIFFERENTIABLE = {
    # comparison family: boolean or integer results
    *(f"{name}.Tensor" for name in _COMPARE),
    "equal", "isclose", "allclose", "logical_and", "logical_or", "logical_xor", "logical_not",
    "bitwise_and.Tensor", "bitwise_or.Tensor", "bitwise_xor.Tensor", "bitwise_not",
    "bitwise_left_shift.Tensor", "bitwise_right_shift.Tensor",
    "isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal", "signbit",
    # creation family: new tensors that do not depend on the values of their inputs
    "zeros", "ones", "empty.memory_format", "full", "empty_strided", "scalar_tensor",
    "zeros_like", "ones_like", "empty_like", "full_like",
    "new_zeros", "new_ones", "new_empty", "new_full", "new_empty_strided",
    "arange", "arange.start", "arange.start_step", "eye", "eye.m", "tril_indices", "triu_indices",
    # PyTorch records no gradient for linspace/logspace with tensor endpoints either
    "linspace", "linspace.Tensor_Scalar", "linspace.Scalar_Tensor", "linspace.Tensor_Tensor",
    "logspace", "logspace.Tensor_Scalar", "logspace.Scalar_Tensor", "logspace.Tensor_Tensor",
    "rand", "rand.generator", "randn", "randn.generator", "randint", "randint.generator", "randint.low",
    "randint.low_generator", "randperm", "randperm.generator", "normal.float_float", "multinomial",
    "rand_like", "rand_like.generator", "randn_like", "randn_like.generator", "randint_like",
    "randint_like.low_dtype", "randint_like.generator", "randint_like.low_generator_dtype",
}
