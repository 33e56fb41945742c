"""Special functions and number theory, pointwise: the gamma family (lgamma, digamma, polygamma,
mvlgamma), i0, sinc, logit, the regularized incomplete gamma functions, gcd/lcm, heaviside,
nextafter, ldexp and frexp (kernels: ember/ops/cpu/special_functions.py; derivatives:
ember/ops/derivatives/special_functions.py).

mvlgamma, logit and ldexp are written with ember ops (``composite=``) as ATen writes them, so
autograd, fake tensors and the compiler see the ops they are made of.
"""
from __future__ import annotations

import math

from ..registry import Op
from ..cpu import special_functions as cpu
from ..meta import pointwise as meta
from ..meta import special_functions as meta_sf

UNARY = dict(inplace=True, out=True)
BINARY = dict(inplace=True, out=True, numbers_as_tensors=True)


def _floating(x):
    from ... import get_default_dtype
    return x if x.is_floating_point() or x.is_complex() else x.to(get_default_dtype())


def mvlgamma(self, p):
    """log of the multivariate gamma function: sum_i lgamma(x - i/2) + p(p-1)/4 log(pi)."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    from ... import arange
    x = _floating(self)
    args = x.unsqueeze(-1) - arange(p, dtype=x.dtype) * 0.5
    return args.lgamma().sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


def logit(self, eps=None):
    """log(x / (1 - x)), x clamped to [eps, 1 - eps] first when eps >= 0 (a negative eps: no clamp)."""
    x = _floating(self)
    if eps is not None and eps >= 0:
        x = x.clamp(eps, 1 - eps)
    return (x / (1 - x)).log()


def ldexp(self, other):
    """self * 2**other."""
    from ... import pow
    return self * pow(2.0, other)


def polygamma_(self, n):
    """Tensor.polygamma_(n): the in-place form puts self first (polygamma(n, self) does not)."""
    from ... import polygamma
    return self.copy_(polygamma(n, self))


OPS = [
    Op("lgamma(Tensor self) -> Tensor", cpu=cpu.lgamma, meta=meta.unary_float, **UNARY),
    Op("digamma(Tensor self) -> Tensor", cpu=cpu.digamma, meta=meta.unary_float, **UNARY),
    Op("polygamma(int n, Tensor self) -> Tensor", cpu=cpu.polygamma, meta=meta_sf.polygamma, out=True,
       variants="function"),
    Op("mvlgamma(Tensor self, int p) -> Tensor", composite=mvlgamma, **UNARY),
    Op("i0(Tensor self) -> Tensor", cpu=cpu.i0, meta=meta.unary_float, **UNARY),
    Op("sinc(Tensor self) -> Tensor", cpu=cpu.sinc, meta=meta.unary_float, **UNARY),
    Op("logit(Tensor self, float? eps=None) -> Tensor", composite=logit, **UNARY),
    Op("igamma(Tensor self, Tensor other) -> Tensor", cpu=cpu.igamma, meta=meta.binary_float, **BINARY),
    Op("igammac(Tensor self, Tensor other) -> Tensor", cpu=cpu.igammac, meta=meta.binary_float, **BINARY),
    Op("gcd(Tensor self, Tensor other) -> Tensor", cpu=cpu.gcd, meta=meta.binary, **BINARY),
    Op("lcm(Tensor self, Tensor other) -> Tensor", cpu=cpu.lcm, meta=meta.binary, **BINARY),
    Op("heaviside(Tensor self, Tensor values) -> Tensor", cpu=cpu.heaviside, meta=meta.binary, inplace=True,
       out=True),
    Op("nextafter(Tensor self, Tensor other) -> Tensor", cpu=cpu.nextafter, meta=meta.binary, **BINARY),
    Op("ldexp.Tensor(Tensor self, Tensor other) -> Tensor", composite=ldexp, **BINARY),
    Op("frexp.Tensor(Tensor self) -> (Tensor mantissa, Tensor exponent)", cpu=cpu.frexp, meta=meta_sf.frexp,
       out=True),
]

def _alias(target):
    """torch.special's name for an op of this table: a composite calling it (aten's special_* are too)."""
    def composite(*args):
        import ember
        return getattr(ember, target)(*args)
    composite.__name__ = target
    return composite


# aten::special_<name> -> (schema arguments, the ember op it calls)
_SPECIAL = {
    "digamma": ("(Tensor self)", "digamma"), "psi": ("(Tensor self)", "digamma"),
    "polygamma": ("(int n, Tensor self)", "polygamma"), "i0": ("(Tensor self)", "i0"),
    "sinc": ("(Tensor self)", "sinc"), "logit": ("(Tensor self, float? eps=None)", "logit"),
    "multigammaln": ("(Tensor self, int p)", "mvlgamma"), "gammaln": ("(Tensor self)", "lgamma"),
    "gammainc": ("(Tensor self, Tensor other)", "igamma"), "gammaincc": ("(Tensor self, Tensor other)", "igammac"),
}
OPS += [Op(f"special_{name}{arguments} -> Tensor", composite=_alias(target), namespace="special", python_name=name,
           variants="function") for name, (arguments, target) in _SPECIAL.items()]

PYTHON_METHODS = {
    "polygamma": lambda self, n: _polygamma(n, self), "polygamma_": polygamma_,
}


def _polygamma(n, self):
    from ... import polygamma
    return polygamma(n, self)
