"""Pointwise operators: unary math, binary arithmetic, powers, lerp/addcmul/addcdiv, and the
complex helpers (conj, angle, real/imag views).

Python-number operands of binary ops are accepted through ``numbers_as_tensors`` instead of
separate ``.Scalar`` overload rows (the kernel gets the number as a wrapped number). Overloads
that put the number first (``pow.Scalar``, ``remainder.Scalar_Tensor`` ...) are their own rows.
"""
from ..registry import Op
from ..cpu import pointwise as cpu
from ..cpu import pointwise_binary as cpub
from ..meta import pointwise as meta

BINARY = dict(inplace=True, out=True, numbers_as_tensors=True)
UNARY = dict(inplace=True, out=True)
T = "(Tensor self) -> Tensor"

# name -> (cpu kernel, meta kernel) for the `name(Tensor self) -> Tensor` ops with name_ and out=
_UNARY = {
    "neg": (cpu.neg, meta.neg), "negative": (cpu.neg, meta.neg),
    "exp": (cpu.exp, meta.unary_float), "exp2": (cpu.exp2, meta.unary_float),
    "expm1": (cpu.expm1, meta.unary_float), "log": (cpu.log, meta.unary_float),
    "log2": (cpu.log2, meta.unary_float), "log10": (cpu.log10, meta.unary_float),
    "log1p": (cpu.log1p, meta.unary_float), "sqrt": (cpu.sqrt, meta.unary_float),
    "rsqrt": (cpu.rsqrt, meta.unary_float), "sin": (cpu.sin, meta.unary_float),
    "cos": (cpu.cos, meta.unary_float), "tan": (cpu.tan, meta.unary_float),
    "asin": (cpu.asin, meta.unary_float), "acos": (cpu.acos, meta.unary_float),
    "atan": (cpu.atan, meta.unary_float), "arcsin": (cpu.asin, meta.unary_float),
    "arccos": (cpu.acos, meta.unary_float), "arctan": (cpu.atan, meta.unary_float),
    "sinh": (cpu.sinh, meta.unary_float), "cosh": (cpu.cosh, meta.unary_float),
    "tanh": (cpu.tanh, meta.unary_float), "asinh": (cpu.asinh, meta.unary_float),
    "acosh": (cpu.acosh, meta.unary_float), "atanh": (cpu.atanh, meta.unary_float),
    "arcsinh": (cpu.asinh, meta.unary_float), "arccosh": (cpu.acosh, meta.unary_float),
    "arctanh": (cpu.atanh, meta.unary_float), "sigmoid": (cpu.sigmoid, meta.unary_float),
    "erf": (cpu.erf, meta.unary_float), "erfc": (cpu.erfc, meta.unary_float),
    "erfinv": (cpu.erfinv, meta.unary_float), "reciprocal": (cpu.reciprocal, meta.unary_float),
    "deg2rad": (cpu.deg2rad, meta.deg2rad), "rad2deg": (cpu.rad2deg, meta.rad2deg),
    "floor": (cpu.floor, meta.unary_same), "ceil": (cpu.ceil, meta.unary_same),
    "trunc": (cpu.trunc, meta.unary_same), "fix": (cpu.trunc, meta.unary_same),
    "frac": (cpu.frac, meta.unary_same), "sign": (cpu.sign, meta.unary_same),
    "sgn": (cpu.sgn, meta.unary_same), "square": (cpu.square, meta.square),
    "conj_physical": (cpu.conj_physical, meta.unary_same),
}

# name -> (cpu kernel, meta kernel, numbers accepted, in-place form) for `name(Tensor self, Tensor other)`
_BINARY = {
    "floor_divide": (cpub.floor_divide, meta.floor_divide, True, True),
    "atan2": (cpub.atan2, meta.binary_float, False, True), "arctan2": (cpub.atan2, meta.binary_float, False, True),
    "maximum": (cpub.maximum, meta.binary, False, False), "minimum": (cpub.minimum, meta.binary, False, False),
    "fmax": (cpub.fmax, meta.binary, False, False), "fmin": (cpub.fmin, meta.binary, False, False),
    "hypot": (cpub.hypot, meta.binary, False, True),
    "logaddexp": (cpub.logaddexp, meta.binary, False, False),
    "logaddexp2": (cpub.logaddexp2, meta.binary, False, False),
}

_ALPHA = "(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
_MODE = "(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor"

# hot ops whose bindings call the CPU kernel straight when only the CPU key is set (see Op)
_DIRECT = {"neg", "exp"}

OPS = [
    *[Op(name + T, cpu=c, meta=m, direct_binding=name in _DIRECT, **UNARY) for name, (c, m) in _UNARY.items()],
    *[Op(f"{name}(Tensor self, Tensor other) -> Tensor", cpu=c, meta=m, inplace=ip, out=True,
         numbers_as_tensors=numbers) for name, (c, m, numbers, ip) in _BINARY.items()],
    Op("abs" + T, cpu=cpu.abs, meta=meta.unary_real, out=True),
    Op("abs_(Tensor(a!) self) -> Tensor(a!)", cpu=cpu.abs_, meta=meta.abs_),
    Op("positive(Tensor(a) self) -> Tensor(a)", cpu=cpu.positive, meta=meta.positive),
    Op("round" + T, cpu=cpu.round, meta=meta.unary_same, **UNARY),
    Op("round.decimals(Tensor self, *, int decimals) -> Tensor", cpu=cpu.round_decimals, meta=meta.unary_same,
       **UNARY),
    Op("angle" + T, cpu=cpu.angle, meta=meta.angle, out=True),
    Op("nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor",
       cpu=cpu.nan_to_num, meta=meta.unary_same, **UNARY),
    Op("conj(Tensor(a) self) -> Tensor(a)", cpu=cpu.conj, meta=meta.conj),
    Op("resolve_conj(Tensor(a) self) -> Tensor(a)", cpu=cpu.resolve_conj, meta=meta.resolve_conj),
    Op("real(Tensor(a) self) -> Tensor(a)", cpu=cpu.real, meta=meta.real, variants="function"),
    Op("imag(Tensor(a) self) -> Tensor(a)", cpu=cpu.imag, meta=meta.imag, variants="function"),

    Op("add.Tensor" + _ALPHA, cpu=cpub.add, meta=meta.add, direct_binding=True, **BINARY),
    Op("sub.Tensor" + _ALPHA, cpu=cpub.sub, meta=meta.sub, direct_binding=True, **BINARY),
    Op("subtract.Tensor" + _ALPHA, cpu=cpub.sub, meta=meta.sub, **BINARY),
    Op("rsub.Tensor" + _ALPHA, cpu=cpub.rsub, meta=meta.rsub, numbers_as_tensors=True),
    Op("mul.Tensor(Tensor self, Tensor other) -> Tensor", cpu=cpub.mul, meta=meta.binary, direct_binding=True,
       **BINARY),
    Op("multiply.Tensor(Tensor self, Tensor other) -> Tensor", cpu=cpub.mul, meta=meta.binary, **BINARY),
    Op("div.Tensor(Tensor self, Tensor other) -> Tensor", cpu=cpub.div, meta=meta.binary_float,
       direct_binding=True, **BINARY),
    Op("div.Tensor_mode" + _MODE, cpu=cpub.div_mode, meta=meta.div_mode, **BINARY),
    Op("divide.Tensor(Tensor self, Tensor other) -> Tensor", cpu=cpub.div, meta=meta.binary_float, **BINARY),
    Op("divide.Tensor_mode" + _MODE, cpu=cpub.div_mode, meta=meta.div_mode, **BINARY),
    Op("true_divide.Tensor(Tensor self, Tensor other) -> Tensor", cpu=cpub.div, meta=meta.binary_float, **BINARY),
    Op("remainder.Tensor(Tensor self, Tensor other) -> Tensor", cpu=cpub.remainder, meta=meta.binary, **BINARY),
    Op("remainder.Scalar_Tensor(Scalar self, Tensor other) -> Tensor", cpu=cpub.remainder, meta=meta.binary,
       variants="function"),
    Op("fmod.Tensor(Tensor self, Tensor other) -> Tensor", cpu=cpub.fmod, meta=meta.binary, **BINARY),
    Op("copysign.Tensor(Tensor self, Tensor other) -> Tensor", cpu=cpub.copysign, meta=meta.binary_float, **BINARY),
    Op("xlogy.Tensor(Tensor self, Tensor other) -> Tensor", cpu=cpub.xlogy, meta=meta.binary_float, **BINARY),
    Op("xlogy.Scalar_Self(Scalar self, Tensor other) -> Tensor", cpu=cpub.xlogy, meta=meta.binary_float,
       variants="function"),
    Op("pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor", cpu=cpub.pow, meta=meta.pow, **BINARY),
    Op("pow.Scalar(Scalar self, Tensor exponent) -> Tensor", cpu=cpub.pow_scalar, meta=meta.pow,
       variants="function", out=True),
    Op("float_power.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor", cpu=cpub.float_power,
       meta=meta.float_power, out=True, numbers_as_tensors=True),
    Op("float_power.Scalar(Scalar self, Tensor exponent) -> Tensor", cpu=cpub.float_power_scalar,
       meta=meta.float_power, variants="function", out=True),
    Op("float_power_.Tensor(Tensor(a!) self, Tensor exponent) -> Tensor(a!)", cpu=cpub.float_power_,
       meta=meta.float_power_, variants="method", numbers_as_tensors=True),
    Op("lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor", cpu=cpub.lerp, meta=meta.lerp,
       inplace=True, out=True),
    Op("lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor", cpu=cpub.lerp, meta=meta.lerp,
       inplace=True, out=True),
    Op("addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor", cpu=cpub.addcmul,
       meta=meta.ternary, inplace=True, out=True),
    Op("addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor", cpu=cpub.addcdiv,
       meta=meta.addcdiv, inplace=True, out=True),
]


# ---------------------------------------------------------------------------------------
# div/divide with and without rounding_mode: a direct choice between the two overloads'
# bindings (the generic overload resolver would cost ~1 us on ``a / b``)
# ---------------------------------------------------------------------------------------
def _mode_choice(key, with_out):
    cache = []

    def bindings():
        from ..registry import _OVERLOADS_BY_NAME
        cache.extend(fn for _, fn in _OVERLOADS_BY_NAME[key])
        return cache

    if with_out:
        def div(input, other, *, rounding_mode=None, out=None):
            plain, mode = cache or bindings()
            if rounding_mode is None:
                return plain(input, other) if out is None else plain(input, other, out=out)
            return mode(input, other, rounding_mode=rounding_mode, out=out)
    else:
        def div(self, other, *, rounding_mode=None):
            plain, mode = cache or bindings()
            if rounding_mode is None:
                return plain(self, other)
            return mode(self, other, rounding_mode=rounding_mode)
    div.__name__ = key[1]
    div.__ember_overloads__ = key     # registry.ops_of(div): the overloads it chooses between
    div.__doc__ = f"{key[1]}(input, other, *, rounding_mode=None): true division, or rounded 'trunc'/'floor'."
    return div


def _float_power(input, exponent, *, out=None):
    """float_power: the out= tensor must have the result dtype exactly (float64/complex128)."""
    from ..overloads import _resolver
    from ..registry import _OVERLOADS_BY_NAME
    if out is not None:
        need = cpub.float_power_dtype(input, exponent)
        if out.dtype is not need:
            raise RuntimeError(f"the output given to float_power has dtype {out.dtype.c10_name} but the "
                               f"operation's result requires dtype {need.c10_name}")
    return _resolver("float_power", _OVERLOADS_BY_NAME[("", "float_power")])(input, exponent, out=out)


def _real(self):
    """The real part: a view of a complex tensor (strides doubled), `self` for real tensors."""
    from ..registry import aten
    return aten.real.default(self)


def _imag(self):
    """The imaginary part of a complex tensor, as a view; RuntimeError for real tensors."""
    from ..registry import aten
    return aten.imag.default(self)


def _set_part(getter):
    def setter(self, value):
        getter(self).copy_(value if hasattr(value, "_data") else _full_like_part(getter(self), value))
    return setter


def _full_like_part(part, value):
    from ..._core.tensor import wrap
    import numpy as np
    return wrap(np.asarray(value))


def _is_conj(self):
    return False  # ember never has a lazy conjugation


PYTHON_FUNCTIONS = {"": {name: _mode_choice(("", name), True) for name in ("div", "divide")}}
PYTHON_FUNCTIONS[""]["float_power"] = _float_power
PYTHON_FUNCTIONS[""].update({name + "_": _mode_choice(("", name + "_"), False) for name in ("div", "divide")})
PYTHON_METHODS = {
    **{name: _mode_choice(("Tensor", name), False) for name in ("div", "divide", "div_", "divide_")},
    "real": property(_real, _set_part(_real)), "imag": property(_imag, _set_part(_imag)), "is_conj": _is_conj,
}
