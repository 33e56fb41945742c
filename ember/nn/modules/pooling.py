"""Pooling modules: Max/Avg pooling (1d, 2d) and adaptive Avg/Max pooling (1d, 2d)."""
from __future__ import annotations

from .. import functional as F
from ._common import _single
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
           "AdaptiveMaxPool1d", "AdaptiveMaxPool2d"]


class _MaxPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return ("kernel_size={kernel_size}, stride={stride}, padding={padding}"
                ", dilation={dilation}, ceil_mode={ceil_mode}".format(**self.__dict__))

    def forward(self, input):
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.dilation,
                              ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool1d(_MaxPoolNd):
    """1-D max pooling."""
    _fn = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """2-D max pooling."""
    _fn = staticmethod(F.max_pool2d)


class AvgPool1d(Module):
    """1-D average pooling."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True):
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class _AvgPoolNd(Module):
    """2-D and 3-D average pooling (the 1-D module expands its arguments to tuples)."""
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input):
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                              self.count_include_pad, self.divisor_override)


class AvgPool2d(_AvgPoolNd):
    """2-D average pooling."""
    _fn = staticmethod(F.avg_pool2d)


class _AdaptivePool(Module):
    _fn = None

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"

    def forward(self, input):
        return type(self)._fn(input, self.output_size)


class _AdaptiveMaxPool(_AdaptivePool):
    def __init__(self, output_size, return_indices: bool = False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        return type(self)._fn(input, self.output_size, self.return_indices)


class AdaptiveAvgPool1d(_AdaptivePool):
    """1-D adaptive average pooling to `output_size`."""
    _fn = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptivePool):
    """2-D adaptive average pooling to `output_size` (None keeps that dimension)."""
    _fn = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveMaxPool1d(_AdaptiveMaxPool):
    """1-D adaptive max pooling."""
    _fn = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPool):
    """2-D adaptive max pooling."""
    _fn = staticmethod(F.adaptive_max_pool2d)
