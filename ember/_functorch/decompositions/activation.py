"""Decompositions of activations (ember/ops/table/activation.py) into core pointwise ops.

Each checks its input as the eager kernel does, through the op's own rule in
ember/ops/meta/activation.py (a float-only activation refuses an integer tensor with eager's
NotImplementedError), then writes ATen's formula: gelu's erf and tanh forms, elu's expm1 branch,
log_sigmoid's stable min(x, 0) - log1p(exp(-|x|)).
"""
from __future__ import annotations

import math

from ...ops.meta import activation as rules
from ._ops import aten

_SQRT1_2 = math.sqrt(0.5)
_GELU_BETA = math.sqrt(2.0 / math.pi)
_GELU_KAPPA = 0.044715
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def hardtanh(self, min_val=-1, max_val=1):
    min_val, max_val = rules.hardtanh_limits(self, min_val, max_val)
    return aten.clamp.default(self, min_val, max_val)


def relu6(self):
    return hardtanh(self, 0, 6)


def threshold(self, threshold, value):
    rules.check_threshold(self, threshold, value)
    return aten.where.self(aten.le.Tensor(self, threshold), aten.full_like.default(self, value), self)


def leaky_relu(self, negative_slope=0.01):
    rules.check_float(self, "leaky_relu_cpu")
    return aten.where.self(aten.gt.Tensor(self, 0), self, aten.mul.Tensor(self, negative_slope))


def elu(self, alpha=1, scale=1, input_scale=1):
    rules.check_float(self, "elu_cpu")
    negative = aten.mul.Tensor(aten.expm1.default(aten.mul.Tensor(self, input_scale)), alpha * scale)
    return aten.where.self(aten.gt.Tensor(self, 0), aten.mul.Tensor(self, scale), negative)


def selu(self):
    return elu(self, _SELU_ALPHA, _SELU_SCALE, 1)


def celu(self, alpha=1.0):
    return elu(self, alpha, 1, rules.check_celu(alpha))


def gelu(self, approximate="none"):
    rules.check_gelu(self, approximate)
    if approximate == "tanh":
        cube = aten.mul.Tensor(aten.mul.Tensor(self, self), self)
        inner = aten.mul.Tensor(aten.add.Tensor(self, aten.mul.Tensor(cube, _GELU_KAPPA)), _GELU_BETA)
        return aten.mul.Tensor(aten.mul.Tensor(self, 0.5), aten.add.Tensor(aten.tanh.default(inner), 1))
    cdf = aten.add.Tensor(aten.erf.default(aten.mul.Tensor(self, _SQRT1_2)), 1)
    return aten.mul.Tensor(aten.mul.Tensor(self, 0.5), cdf)


def silu(self):
    rules.check_float(self, "silu_cpu", True)
    return aten.mul.Tensor(self, aten.sigmoid.default(self))


def softplus(self, beta=1, threshold=20):
    rules.check_float(self, "softplus_cpu")
    scaled = aten.mul.Tensor(self, beta)
    soft = aten.div.Tensor(aten.log1p.default(aten.exp.default(scaled)), beta)
    return aten.where.self(aten.gt.Tensor(scaled, threshold), self, soft)


def mish(self):
    rules.check_float(self, "mish_cpu")
    return aten.mul.Tensor(self, aten.tanh.default(aten.log1p.default(aten.exp.default(self))))


def hardsigmoid(self):
    rules.check_float(self, "hardsigmoid_cpu")
    return aten.div.Tensor(aten.clamp.default(aten.add.Tensor(self, 3), 0, 6), 6)


def hardswish(self):
    rules.check_float(self, "hardswish_cpu")
    return aten.div.Tensor(aten.mul.Tensor(self, aten.clamp.default(aten.add.Tensor(self, 3), 0, 6)), 6)


def log_sigmoid(self):
    rules.check_float(self, "log_sigmoid_cpu")
    tail = aten.log1p.default(aten.exp.default(aten.neg.default(aten.abs.default(self))))
    return aten.sub.Tensor(aten.clamp.default(self, None, 0), tail)


def hardshrink(self, lambd=0.5):
    rules.check_float(self, "hardshrink_cpu")
    inside = aten.logical_and.default(aten.ge.Tensor(self, -lambd), aten.le.Tensor(self, lambd))
    return aten.where.self(inside, 0, self)


def softshrink(self, lambd=0.5):
    rules.check_softshrink(self, lambd)
    shrunk = aten.where.self(aten.lt.Tensor(self, -lambd), aten.add.Tensor(self, lambd), aten.mul.Tensor(self, 0))
    return aten.where.self(aten.gt.Tensor(self, lambd), aten.sub.Tensor(self, lambd), shrunk)


def prelu(self, weight):
    shape = rules.prelu_weight_shape(self, weight)
    w = aten.view.default(weight, list(shape)) if tuple(weight.shape) != tuple(shape) else weight
    return aten.where.self(aten.gt.Tensor(self, 0), self, aten.mul.Tensor(w, self))


def glu(self, dim=-1):
    dim = rules.glu_dim(self, dim)
    half = self.shape[dim] // 2
    a = aten.slice.Tensor(self, dim, 0, half)
    b = aten.slice.Tensor(self, dim, half, 2 * half)
    return aten.mul.Tensor(a, aten.sigmoid.default(b))


DECOMPOSITIONS = {
    "hardtanh": hardtanh, "relu6": relu6, "threshold": threshold, "leaky_relu": leaky_relu, "elu": elu,
    "selu": selu, "celu": celu, "gelu": gelu, "silu": silu, "softplus": softplus, "mish": mish,
    "hardsigmoid": hardsigmoid, "hardswish": hardswish, "log_sigmoid": log_sigmoid, "hardshrink": hardshrink,
    "softshrink": softshrink, "prelu": prelu, "glu": glu,
}
