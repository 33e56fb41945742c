"""Convolution and pooling operators (table rows), and torch.nn.functional's wrappers of them.

PyTorch exposes most of these both as ``torch.<name>`` and ``torch.nn.functional.<name>`` (the
same builtin): such rows live in the torch namespace and `_Alias` lists them in nn.functional
too. F-only Python functions (``return_indices=``, ``F.unfold``, None in ``output_size``...)
parse their arguments and call the operators.
"""
from collections.abc import Mapping

from ..registry import Op, OPERATORS, FUNCTIONS
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


def _op(name, *args):
    return OPERATORS[name].entry(*args)


def _stride(stride):
    return () if stride is None else stride


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """F.max_pool1d (return_indices=True gives (values, flat indices))."""
    name = "aten::max_pool1d_with_indices" if return_indices else "aten::max_pool1d"
    return _op(name, input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """F.max_pool2d (return_indices=True gives (values, flat indices into each H*W plane))."""
    name = "aten::max_pool2d_with_indices" if return_indices else "aten::max_pool2d"
    return _op(name, input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _op("aten::max_pool1d_with_indices", input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _op("aten::max_pool2d_with_indices", input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    return _op("aten::avg_pool1d", input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _op("aten::avg_pool2d", input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad,
               divisor_override)


def _output_size(output_size, input, nd):
    """None entries of an adaptive output_size keep the input's size."""
    if isinstance(output_size, int):
        return output_size
    sizes = tuple(output_size)
    return tuple(input.shape[-nd + i] if s is None else s for i, s in enumerate(sizes))


def adaptive_avg_pool2d(input, output_size):
    return _op("aten::adaptive_avg_pool2d", input, _output_size(output_size, input, 2))


def adaptive_max_pool1d(input, output_size, return_indices=False):
    out = _op("aten::adaptive_max_pool1d", input, output_size)
    return out if return_indices else out[0]


def adaptive_max_pool2d(input, output_size, return_indices=False):
    out = _op("aten::adaptive_max_pool2d", input, _output_size(output_size, input, 2))
    return out if return_indices else out[0]


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """F.unfold: sliding local blocks as columns (im2col)."""
    if input.ndim < 3:  # PyTorch reads input.shape[-3]... through a dim check
        n = max(input.ndim, 1)
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got 2)")
    if input.ndim > 4:
        raise NotImplementedError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.ndim}D)")
    return _op("aten::im2col", input, kernel_size, dilation, padding, stride)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """F.fold: columns summed back into an image (col2im)."""
    if input.ndim not in (2, 3):
        raise NotImplementedError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
                                  f"(got {input.ndim}D)")
    return _op("aten::col2im", input, output_size, kernel_size, dilation, padding, stride)


class _NNFunctional(Mapping):
    """nn.functional's Python functions, plus the torch-namespace bindings that F exposes too
    (torch.conv2d is F.conv2d). The aliases are looked up when register_all merges
    PYTHON_FUNCTIONS, i.e. after the rows above are registered."""

    def __init__(self, functions, aliases):
        self._functions, self._aliases = functions, aliases

    def __getitem__(self, name):
        return self._functions[name] if name in self._functions else FUNCTIONS[""][name]

    def __iter__(self):
        return iter(self._aliases + tuple(self._functions))

    def __len__(self):
        return len(self._aliases) + len(self._functions)


PYTHON_FUNCTIONS = {"nn.functional": _NNFunctional(
    {"max_pool1d": max_pool1d, "max_pool2d": max_pool2d, "avg_pool1d": avg_pool1d, "avg_pool2d": avg_pool2d,
     "max_pool1d_with_indices": max_pool1d_with_indices, "max_pool2d_with_indices": max_pool2d_with_indices,
     "adaptive_avg_pool2d": adaptive_avg_pool2d, "adaptive_max_pool1d": adaptive_max_pool1d,
     "adaptive_max_pool2d": adaptive_max_pool2d, "unfold": unfold, "fold": fold},
    ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "adaptive_avg_pool1d", "pixel_shuffle",
     "pixel_unshuffle"))}
