"""Identity, Linear, Bilinear."""
from __future__ import annotations

import math

from .. import functional as F, init
from ._common import weight_and_bias, reset_kaiming
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear", "NonDynamicallyQuantizableLinear"]


class Identity(Module):
    """Returns its input; constructor arguments are ignored."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x W^T + b, W of shape (out_features, in_features)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        weight_and_bias(self, (out_features, in_features), out_features, bias=bias, device=device, dtype=dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: kaiming_uniform_(a=sqrt(5)) weight, U(+-1/sqrt(fan_in)) bias."""
        reset_kaiming(self.weight, self.bias)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    """The Linear subclass MultiheadAttention uses for out_proj (the name shows in its repr)."""


class Bilinear(Module):
    """y = x1^T A x2 + b, A of shape (out_features, in1_features, in2_features)."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        weight_and_bias(self, (out_features, in1_features, in2_features), out_features, bias=bias,
                        device=device, dtype=dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """U(+-1/sqrt(in1_features)) for weight and bias."""
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
