"""Convolutions: Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d (torch/nn/modules/conv.py)."""
from __future__ import annotations

from .. import functional as F
from ._common import _single, _pair, _triple, _reverse_repeat_tuple, weight_and_bias, reset_kaiming
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


class _ConvNd(Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            valid = {"same", "valid"}  # formatted as a set, so the order matches PyTorch's message
            if padding not in valid:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's padding for non-zero padding modes (last dimension first).
        if isinstance(padding, str):
            rp = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total = d * (k - 1)
                    rp[2 * i] = total // 2
                    rp[2 * i + 1] = total - total // 2
            self._reversed_padding_repeated_twice = rp
        else:
            self._reversed_padding_repeated_twice = _reverse_repeat_tuple(padding, 2)
        shape = (in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups)
        weight_and_bias(self, (*shape, *kernel_size), out_channels, bias=bias, device=device, dtype=dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: kaiming_uniform_(a=sqrt(5)) weight, U(+-1/sqrt(fan_in)) bias."""
        reset_kaiming(self.weight, self.bias)

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def _conv_forward(self, input, weight, bias):
        conv = _CONV[len(self.kernel_size)]
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, weight, bias, self.stride, (0,) * len(self.kernel_size), self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


def _conv_class(name, n, expand):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        _ConvNd.__init__(self, in_channels, out_channels, expand(kernel_size), expand(stride),
                         padding if isinstance(padding, str) else expand(padding), expand(dilation), False,
                         expand(0), groups, bias, padding_mode, device, dtype)
    return type(name, (_ConvNd,), {"__init__": __init__, "__module__": __name__,
                                   "__doc__": f"{n}-D convolution over an input of shape (N, C_in, *spatial)."})


Conv1d = _conv_class("Conv1d", 1, _single)
Conv2d = _conv_class("Conv2d", 2, _pair)
Conv3d = _conv_class("Conv3d", 3, _triple)
_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


class _ConvTransposeNd(_ConvNd):
    _n = 0
    _expand = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {self.__class__.__name__}')
        e = type(self)._expand
        super().__init__(in_channels, out_channels, e(kernel_size), e(stride), e(padding), e(dilation), True,
                         e(output_padding), groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size):
        if output_size is None:
            return self.output_padding
        n = self._n
        non_spatial = 2 if input.dim() == n + 2 else 1
        output_size = list(output_size)
        if len(output_size) == non_spatial + n:
            output_size = output_size[non_spatial:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.dim()}D input, output_size must have {n} or "
                             f"{non_spatial + n} elements (got {len(output_size)})")
        min_sizes = [(input.size(d + non_spatial) - 1) * self.stride[d] - 2 * self.padding[d]
                     + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(n)]
        max_sizes = [m + self.stride[d] - 1 for d, m in enumerate(min_sizes)]
        for size, lo, hi in zip(output_size, min_sizes, max_sizes):
            if size < lo or size > hi:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from "
                                 f"{min_sizes} to {max_sizes} (for an input of {input.size()[2:]})")
        return tuple(output_size[d] - min_sizes[d] for d in range(n))

    def forward(self, input, output_size=None):
        conv = {1: F.conv_transpose1d, 2: F.conv_transpose2d}.get(self._n) or F.conv_transpose3d
        output_padding = self._output_padding(input, output_size)
        return conv(input, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups,
                    self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution (padding_mode 'zeros' only, as PyTorch)."""
    _n = 1
    _expand = staticmethod(_single)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution (padding_mode 'zeros' only, as PyTorch)."""
    _n = 2
    _expand = staticmethod(_pair)


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution (padding_mode 'zeros' only, as PyTorch)."""
    _n = 3
    _expand = staticmethod(_triple)
