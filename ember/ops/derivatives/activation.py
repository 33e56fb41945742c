"""Derivatives of activation ops (ember/ops/table/activation.py), as in PyTorch's
derivatives.yaml and its *_backward kernels, subgradients included: relu'(0) = 0,
hardtanh/relu6 pass no gradient at their boundaries, leaky_relu'(0) = negative_slope.

Formulas are written with ember ops so that double backward works. In-place overloads
(``relu_``, ``elu_`` ...) reuse the functional formula on the saved old value of ``self``.
"""
from __future__ import annotations

import math

from .. import native

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_SQRT1_2 = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_KAPPA = 0.044715


def _where(cond, a, b):
    from ... import where
    return where(cond, a, b)


def _real_only(op, self):
    if self.is_complex():
        raise NotImplementedError(f"the derivative of '{op}' for complex inputs is not implemented in ember")


def _elu_backward(grad, self, alpha, scale, input_scale):
    """elu_backward(is_result=False): scale for x > 0, alpha*scale*input_scale*exp(x*input_scale) else."""
    neg = grad * (alpha * scale * input_scale) * (self * input_scale).exp()
    return _where(self <= 0, neg, grad * scale)


def _relu(grad, result):
    fused = native.pointwise_backward("relu_bwd", grad, result)
    return _where(result <= 0, 0.0, grad) if fused is None else fused


def _gelu(grad, self, approximate):
    if self.device.type == "cuda" and native.plain_cuda_backward(grad, self):   # (create_graph, tracing: the formula)
        from ..._cuda import fused
        out = fused.gelu_backward(grad, self, approximate)
        if out is not None:
            return out
    fused = native.pointwise_backward("gelu_tanh_bwd" if approximate == "tanh" else "gelu_bwd", grad, self)
    if fused is not None:
        return fused
    x = self
    if approximate == "tanh":
        inner = _SQRT_2_OVER_PI * (x + _KAPPA * x * x * x)
        t = inner.tanh()
        left_derivative = 0.5 * (1 + t)
        right_derivative = (1 - t * t) * _SQRT_2_OVER_PI * (1 + 3 * _KAPPA * x * x)
        return grad * (left_derivative + 0.5 * x * right_derivative)
    cdf = 0.5 * (1 + (x * _SQRT1_2).erf())
    pdf = _INV_SQRT_2PI * (-0.5 * x * x).exp()
    return grad * (cdf + x * pdf)


def _silu(grad, self):
    _real_only("silu", self)
    s = self.sigmoid()
    return grad * s * (1 + self * (1 - s))


def _softplus_value(x, beta=1, threshold=20):
    from ..registry import aten
    return aten.softplus.default(x, beta, threshold)


def _mish(grad, self):
    s = self.sigmoid()
    t = _softplus_value(self).tanh()
    return grad * (t + self * s * (1 - t * t))


def _softplus(grad, self, beta, threshold):
    # z / (z + 1) with z = exp(beta * x) is sigmoid(beta * x); linear above the threshold
    bx = self * beta
    return _where(bx > threshold, grad, grad * bx.sigmoid())


def _hardtanh(grad, self, min_val, max_val):
    return _where((self <= min_val) | (self >= max_val), 0.0, grad)


def _hardswish(grad, self):
    mid = grad * (self / 3 + 0.5)
    return _where(self <= -3, 0.0, _where(self < 3, mid, grad))  # PyTorch's boundaries: 0 at -3, 1 at 3


def _shrink(grad, self, lambd):
    return _where((self >= -lambd) & (self <= lambd), 0.0, grad)


def _prelu(grad, self, weight):
    """weight has 1 or C elements (C = self.shape[1]); its gradient sums over every other dim."""
    w = weight
    if weight.numel() > 1 and self.ndim >= 2:
        w = weight.reshape([weight.numel()] + [1] * (self.ndim - 2))
    positive = self > 0
    g_self = _where(positive, grad, grad * w)
    g_w = _where(positive, 0.0, grad * self)
    if weight.numel() > 1 and self.ndim >= 2:
        dims = [0] + list(range(2, self.ndim))
        g_w = g_w.sum(dims).reshape(weight.shape)
    else:
        g_w = g_w.sum().reshape(weight.shape)
    return g_self, g_w


def _glu(grad, self, dim):
    from ... import cat
    a, b = self.chunk(2, dim)
    s = b.sigmoid()
    return cat([grad * s, grad * a * s * (1 - s)], dim)


FORMULAS = {
    "relu": _relu,
    "relu6": lambda grad, self: _hardtanh(grad, self, 0.0, 6.0),
    "leaky_relu": lambda grad, self, negative_slope: _where(self > 0, grad, grad * negative_slope),
    "elu": _elu_backward,
    "selu": lambda grad, self: _elu_backward(grad, self, _SELU_ALPHA, _SELU_SCALE, 1.0),
    "celu": lambda grad, self, alpha: _elu_backward(grad, self, alpha, 1.0, 1.0 / alpha),
    "gelu": _gelu,
    "silu": _silu,
    "mish": _mish,
    "softplus": _softplus,
    "hardtanh": _hardtanh,
    "hardsigmoid": lambda grad, self: _where((self > -3) & (self < 3), grad / 6, 0.0),
    "hardswish": _hardswish,
    "log_sigmoid": lambda grad, self: grad * (-self).sigmoid(),
    "threshold": lambda grad, self, threshold: _where(self <= threshold, 0.0, grad),
    "hardshrink": _shrink,
    "softshrink": _shrink,
    "prelu": _prelu,
    "glu": _glu,
}

NONDIFFERENTIABLE: set = set()  # every activation is differentiable
