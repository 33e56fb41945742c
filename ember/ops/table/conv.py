"""Convolution and pooling operators (table rows).

PyTorch exposes most of these both as ``torch.<name>`` and ``torch.nn.functional.<name>`` (the
same builtin): such rows live in the torch namespace and ember/nn/functional.py names them in
nn.functional too. F-only Python functions (``return_indices=``, ``F.unfold``, None in
``output_size``...) are there as well: they parse their arguments and call these operators.
"""
from ..registry import Op
from ..cpu import conv as cpu, pool as cpu_pool
from ..meta import conv as meta

F = dict(variants="function")
NNF = dict(variants="function", namespace="nn.functional")
NN = dict(variants="function", namespace="_nn")   # torch._C._nn: reached through F's Python functions

OPS = [
    Op("conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], SymInt[1] padding=[0], "
       "SymInt[1] dilation=[1], SymInt groups=1) -> Tensor", cpu=cpu.conv1d, meta=meta.conv1d, **F),
    Op("conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], str padding=\"valid\", "
       "SymInt[1] dilation=[1], SymInt groups=1) -> Tensor", cpu=cpu.conv1d, meta=meta.conv1d, **F),
    Op("conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], "
       "SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor", cpu=cpu.conv2d, meta=meta.conv2d, **F),
    Op("conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], "
       "str padding=\"valid\", SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor", cpu=cpu.conv2d,
       meta=meta.conv2d, **F),
    Op("conv3d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], "
       "SymInt[3] padding=[0, 0, 0], SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor", cpu=cpu.conv3d,
       meta=meta.conv3d, **F),
    Op("conv3d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], "
       "str padding=\"valid\", SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor", cpu=cpu.conv3d,
       meta=meta.conv3d, **F),
    Op("conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], "
       "SymInt[1] padding=[0], SymInt[1] output_padding=[0], SymInt groups=1, SymInt[1] dilation=[1]) -> Tensor",
       cpu=cpu.conv_transpose1d, meta=meta.conv_transpose1d, **F),
    Op("conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], "
       "SymInt[2] padding=[0, 0], SymInt[2] output_padding=[0, 0], SymInt groups=1, SymInt[2] dilation=[1, 1]) "
       "-> Tensor", cpu=cpu.conv_transpose2d, meta=meta.conv_transpose2d, **F),
    # pooling
    Op("max_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], int[1] dilation=[1], "
       "bool ceil_mode=False) -> Tensor", cpu=cpu_pool.max_pool1d, meta=meta.max_pool1d, **F),
    Op("max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, "
       "bool ceil_mode=False) -> Tensor", cpu=cpu_pool.max_pool2d, meta=meta.max_pool2d, **F),
    Op("max_pool1d_with_indices(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], "
       "int[1] dilation=[1], bool ceil_mode=False) -> (Tensor, Tensor)", cpu=cpu_pool.max_pool1d_with_indices,
       meta=meta.max_pool1d_with_indices, **F),
    Op("max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
       "int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)", cpu=cpu_pool.max_pool2d_with_indices,
       meta=meta.max_pool2d_with_indices, **NN),
    Op("avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], bool ceil_mode=False, "
       "bool count_include_pad=True) -> Tensor", cpu=cpu_pool.avg_pool1d, meta=meta.avg_pool1d, **F),
    Op("avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, "
       "bool count_include_pad=True, int? divisor_override=None) -> Tensor", cpu=cpu_pool.avg_pool2d,
       meta=meta.avg_pool2d, **NNF),
    Op("adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor", cpu=cpu_pool.adaptive_avg_pool1d,
       meta=meta.adaptive_avg_pool1d, **F),
    Op("adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor", cpu=cpu_pool.adaptive_avg_pool2d,
       meta=meta.adaptive_avg_pool2d, **NN),
    Op("adaptive_max_pool1d(Tensor self, int[1] output_size) -> (Tensor, Tensor)", cpu=cpu_pool.adaptive_max_pool1d,
       meta=meta.adaptive_max_pool1d, **F),
    Op("adaptive_max_pool2d(Tensor self, int[2] output_size) -> (Tensor, Tensor)", cpu=cpu_pool.adaptive_max_pool2d,
       meta=meta.adaptive_max_pool2d, **NN),
    # im2col / col2im (F.unfold / F.fold) and pixel shuffle
    Op("im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor",
       cpu=cpu.im2col, meta=meta.im2col, **NN),
    Op("col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] dilation, int[2] padding, "
       "int[2] stride) -> Tensor", cpu=cpu.col2im, meta=meta.col2im, **NN),
    Op("pixel_shuffle(Tensor self, int upscale_factor) -> Tensor", cpu=cpu.pixel_shuffle, meta=meta.pixel_shuffle,
       **F),
    Op("pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor", cpu=cpu.pixel_unshuffle,
       meta=meta.pixel_unshuffle, **F),
]
