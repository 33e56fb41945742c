"""Derivatives of the special-function ops (ember/ops/table/special_functions.py), following
PyTorch's derivatives.yaml. mvlgamma, logit and ldexp are composites: autograd differentiates
the ops they are made of."""
from __future__ import annotations

import math

from .pointwise import _not_implemented, _zeros


def _polygamma(n, x):
    from ... import polygamma
    return polygamma(n, x)


def _sinc(grad, self):
    from ... import where
    px = self * math.pi
    slope = (px * px.cos() - px.sin()) / (px * self)
    return grad * where(self == 0, 0.0, slope)


def _igamma_other(sign):
    """d/dx P(a, x) = x^(a-1) e^-x / gamma(a); PyTorch has no derivative for a."""
    def formula(grad, self, other):
        if self.requires_grad:
            raise RuntimeError("derivative for aten::igamma is not implemented: the gradient of the "
                               "incomplete gamma function with respect to its first argument")
        density = ((self - 1) * other.log() - other - self.lgamma()).exp()
        return None, sign * grad * density
    return formula


FORMULAS = {
    "lgamma": lambda grad, self: grad * self.digamma(),
    "digamma": lambda grad, self: grad * _polygamma(1, self),
    "polygamma": lambda grad, n, self: grad * _polygamma(n + 1, self),
    "i0": _not_implemented("i0"),   # needs i1, which ember does not have yet
    "sinc": _sinc,
    "igamma": _igamma_other(1.0),
    "igammac": _igamma_other(-1.0),
    "heaviside": _not_implemented("heaviside"),
    "nextafter": lambda grad, self, other: (grad * (self != other), _zeros(grad)),   # PyTorch's: the step is ignored
    "frexp.Tensor": lambda grads, results: grads[0] / results[1].exp2(),
}

NONDIFFERENTIABLE = {"gcd", "lcm"}

# the counting family (ember/ops/table/counting.py)
FORMULAS.update({
    "index_reduce": _not_implemented("index_reduce"),   # PyTorch has one; ember's is not written yet
})
NONDIFFERENTIABLE |= {"bincount", "histogram.bin_ct", "histogram.bins_tensor", "nonzero_static"}
