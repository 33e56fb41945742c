"""The pooling modules beyond pooling.py's 1-D/2-D ones: MaxPool3d, AvgPool3d, the 3-D adaptive
pools, LPPool1d/2d/3d, MaxUnpool1d/2d/3d and FractionalMaxPool2d/3d (torch/nn/modules/pooling.py)."""
from __future__ import annotations

from .. import functional as F
from ._common import _single, _pair, _triple
from .module import Module
from .pooling import _MaxPoolNd, _AvgPoolNd, _AdaptivePool, _AdaptiveMaxPool

__all__ = ["MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d",
           "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "FractionalMaxPool2d", "FractionalMaxPool3d"]


class MaxPool3d(_MaxPoolNd):
    """3-D max pooling."""
    _fn = staticmethod(F.max_pool3d)


class AvgPool3d(_AvgPoolNd):
    """3-D average pooling."""
    _fn = staticmethod(F.avg_pool3d)


class AdaptiveAvgPool3d(_AdaptivePool):
    """3-D adaptive average pooling to `output_size` (None keeps that dimension)."""
    _fn = staticmethod(F.adaptive_avg_pool3d)


class AdaptiveMaxPool3d(_AdaptiveMaxPool):
    """3-D adaptive max pooling."""
    _fn = staticmethod(F.adaptive_max_pool3d)


class _LPPoolNd(Module):
    _fn = None

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return "norm_type={norm_type}, kernel_size={kernel_size}, stride={stride}, ceil_mode={ceil_mode}".format(
            **self.__dict__)

    def forward(self, input):
        return type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool1d(_LPPoolNd):
    """1-D power-average pooling: (sum over the window of x**p) ** (1/p)."""
    _fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """2-D power-average pooling."""
    _fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """3-D power-average pooling."""
    _fn = staticmethod(F.lp_pool3d)


class _MaxUnpoolNd(Module):
    _fn = None
    _expand = None

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        expand = type(self)._expand
        self.kernel_size = expand(kernel_size)
        self.stride = expand(stride if stride is not None else kernel_size)
        self.padding = expand(padding)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input, indices, output_size=None):
        return type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool1d(_MaxUnpoolNd):
    """Inverse of MaxPool1d: each value back at its recorded index, zeros elsewhere."""
    _fn, _expand = staticmethod(F.max_unpool1d), staticmethod(_single)


class MaxUnpool2d(_MaxUnpoolNd):
    """Inverse of MaxPool2d."""
    _fn, _expand = staticmethod(F.max_unpool2d), staticmethod(_pair)


class MaxUnpool3d(_MaxUnpoolNd):
    """Inverse of MaxPool3d."""
    _fn, _expand = staticmethod(F.max_unpool3d), staticmethod(_triple)


class _FractionalMaxPoolNd(Module):
    _fn = None
    _n = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False,
                 _random_samples=None):
        super().__init__()
        n, name = self._n, type(self).__name__
        expand = _pair if n == 2 else _triple
        if n == 3 and ((isinstance(kernel_size, int) and kernel_size <= 0) or
                       (isinstance(kernel_size, (tuple, list)) and not all(k > 0 for k in kernel_size))):
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")
        self.kernel_size = expand(kernel_size)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = expand(output_size) if output_size is not None else None
        self.output_ratio = expand(output_ratio) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        return type(self)._fn(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                              _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """2-D max pooling over pseudo-randomly placed windows (Graham, 2014)."""
    _fn, _n = staticmethod(F.fractional_max_pool2d), 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-D fractional max pooling."""
    _fn, _n = staticmethod(F.fractional_max_pool3d), 3
