"""Meta kernels of the convolution/pooling family, and the shape rules its CPU kernels share.

`conv_plan`, `pool_plan` & co check arguments with PyTorch's messages and compute output sizes
with PyTorch's formulas; the CPU kernels (ember/ops/cpu/conv.py, pool.py) call the same plans.
"""
from __future__ import annotations

from math import prod

from ..._core import dtype as _dt
from ..._core.tensor import wrap_meta
from .. import rules


def expand_param(v, nd, name, op="convolution"):
    """An int[nd] argument: one value repeated, or exactly nd values."""
    v = tuple(v)
    if len(v) == 1:
        return v * nd
    if len(v) != nd:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {nd} values to match the "
                           f"convolution dimensions, but got {name}={list(v)}")
    return v


def _sizes(shape) -> str:
    return " x ".join(str(s) for s in shape)


def conv_plan(x, w, bias, stride, padding, dilation, groups, nd, op, transposed=False, output_padding=(0,)):
    """((lo, hi) pads per dim, output shape) of a convolution; PyTorch's errors otherwise.

    `padding` is an int tuple or "same"/"valid"."""
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {op}, but got input of "
                           f"size: {list(x.shape)}")
    batched = x.ndim == nd + 2
    xs = tuple(x.shape) if batched else (1,) + tuple(x.shape)
    if w.ndim != nd + 2:
        raise RuntimeError(f"expected stride to be a single integer value or a list of {w.ndim - 2} values to match "
                           f"the convolution dimensions, but got stride={list(expand_param(stride, nd, 'stride'))}")
    stride = expand_param(stride, nd, "stride")
    dilation = expand_param(dilation, nd, "dilation")
    ks = tuple(w.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0),) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pads = tuple((d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for d, k in zip(dilation, ks))
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        padding = expand_param(padding, nd, "padding")
        pads = tuple((p, p) for p in padding)
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(lo < 0 for lo, _ in pads):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if w.shape[0] == 0:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least 1 at dimension 0, but got weight "
                           f"of size {list(w.shape)} instead")
    if w.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size {list(w.shape)} instead")
    if any(k <= 0 for k in ks):  # (PyTorch names height and width; for 1-d the height is 1)
        sizes = ((1,) + ks) if nd == 1 else ks
        raise RuntimeError("kernel size should be greater than zero, but got " + " ".join(
            f"kernel_{n}: {k}" for n, k in zip(("depth", "height", "width")[-len(sizes):], sizes)))
    if x.dtype is not w.dtype:
        raise RuntimeError(f"expected scalar type {x.dtype.c10_name} but found {w.dtype.c10_name}")
    if transposed:
        if xs[1] != w.shape[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {list(w.shape)}, expected input{list(xs)} to have "
                               f"{w.shape[0]} channels, but got {xs[1]} channels instead")
        out_ch = w.shape[1] * groups
    else:
        if xs[1] != w.shape[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {list(w.shape)}, expected input{list(xs)} to "
                               f"have {w.shape[1] * groups} channels, but got {xs[1]} channels instead")
        out_ch = w.shape[0]
    if bias is not None:
        if bias.ndim != 1 or bias.shape[0] != out_ch:
            raise RuntimeError(f"Given {'transposed=1, ' if transposed else ''}weight of size {list(w.shape)}, "
                               f"expected bias to be 1-dimensional with {out_ch} elements, but got bias of size "
                               f"{list(bias.shape)} instead")
        if bias.dtype is not x.dtype:
            raise RuntimeError(f"Input type ({_lower(x.dtype)}) and bias type ({_lower(bias.dtype)}) should be the "
                               "same")
    spatial = xs[2:]
    ek = tuple(d * (k - 1) + 1 for d, k in zip(dilation, ks))
    if transposed:
        output_padding = expand_param(output_padding, nd, "output_padding")
        for i, op_ in enumerate(output_padding):
            if op_ >= stride[i] and op_ >= dilation[i]:
                raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                                   f"output_padding={list(output_padding)} stride={list(stride)} "
                                   f"dilation={list(dilation)}")
        out = tuple((L - 1) * s - lo - hi + e + o for L, s, (lo, hi), e, o in
                    zip(spatial, stride, pads, ek, output_padding))
        if any(o <= 0 for o in out):
            raise RuntimeError(f"Given input size per channel: ({_sizes(spatial)}). Calculated output size per "
                               f"channel: ({_sizes(out)}). Output size is too small")
    else:
        padded = tuple(L + lo + hi for L, (lo, hi) in zip(spatial, pads))
        if any(p < e for p, e in zip(padded, ek)):
            raise RuntimeError(f"Calculated padded input size per channel: ({_sizes(padded)}). Kernel size: "
                               f"({_sizes(ek)}). Kernel size can't be greater than actual input size")
        out = tuple((p - e) // s + 1 for p, e, s in zip(padded, ek, stride))
    shape = (xs[0], out_ch) + out
    return pads, stride, dilation, shape if batched else shape[1:]




def _lower(d):
    return d.cpp_type


# ---------------------------------------------------------------------------------------
# pooling
# ---------------------------------------------------------------------------------------
def pool_out_size(L, k, s, p, d, ceil_mode) -> int:
    """PyTorch's pooling_output_shape."""
    num = L + 2 * p - d * (k - 1) - 1 + ((s - 1) if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= L + p:
        out -= 1
    return out


def pool_plan(x, kernel_size, stride, padding, dilation, ceil_mode, nd, op):
    """(kernel, stride, padding, dilation, output shape) of max/avg pooling."""
    name = op
    if op == "avg_pool2d" and x.ndim < 3:  # PyTorch's avg_pool2d reads size(-3) before checking
        raise IndexError(f"Dimension specified as -3 but tensor has no dimensions" if x.ndim == 0 else
                         f"Dimension out of range (expected to be in range of [{-x.ndim}, {x.ndim - 1}], but got -3)")
    ks = _pool_param(kernel_size, nd, "kernel_size", name)
    stride = ks if len(stride) == 0 else _pool_param(stride, nd, "stride", name)
    padding = _pool_param(padding, nd, "padding", name)
    dilation = _pool_param(dilation, nd, "dilation", name)
    if any(k <= 0 for k in ks):
        raise RuntimeError(f"{name}: kernel_size must be greater than zero, but got {list(ks)}")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"{name}: stride should be greater than zero, but got {list(stride)}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"{name}: dilation should be greater than zero, but got {list(dilation)}")
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input")
    if any(s == 0 for s in x.shape[-(nd + 1):]):
        raise RuntimeError(f"Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with optional 0 dim batch size for "
                           f"input, but got:{list(x.shape)}")
    for k, p, d in zip(ks, padding, dilation):
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")
    spatial = tuple(x.shape[-nd:])
    out = tuple(pool_out_size(L, k, s, p, d, ceil_mode) for L, k, s, p, d in zip(spatial, ks, stride, padding,
                                                                                  dilation))
    if any(o < 1 for o in out):
        lead = tuple(x.shape[-(nd + 1):-nd])
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, lead + spatial))}). Calculated output size: "
                           f"({'x'.join(map(str, lead + out))}). Output size is too small")
    return ks, stride, padding, dilation, tuple(x.shape[:-nd]) + out


def _pool_param(v, nd, name, op):
    v = tuple(v)
    if len(v) == 1:
        return v * nd
    if len(v) != nd:
        raise RuntimeError(f"{op}: {name} must either be a single int, or a tuple of {nd} ints")
    return v


def adaptive_plan(x, output_size, nd, op, spatial_only=False):
    """Output shape of adaptive pooling (avg pooling accepts empty channels: `spatial_only`)."""
    output_size = _pool_param(output_size, nd, "output_size", op)
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got {list(x.shape)}")
    first = x.ndim - nd if spatial_only else 1 if x.ndim == nd + 2 else 0  # the batch dim may be empty
    for i in range(first, x.ndim):
        if x.shape[i] == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {list(x.shape)} with dimension {i} being empty")
    if any(o < 0 for o in output_size):
        raise RuntimeError(f"{op}(): elements of output_size must be greater than or equal to 0 but received "
                           f"{list(output_size)}")
    return tuple(x.shape[:-nd]) + tuple(output_size)


def fold_blocks(out_size, ks, dilation, padding, stride) -> tuple:
    return tuple((o + 2 * p - d * (k - 1) - 1) // s + 1 for o, k, d, p, s in
                 zip(out_size, ks, dilation, padding, stride))


def im2col_plan(x, kernel_size, dilation, padding, stride):
    """Output shape of im2col (F.unfold) on a 3-D or 4-D input."""
    if x.ndim not in (3, 4) or any(s == 0 for s in x.shape[-3:]):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                           f"dimensions for input, but got: {list(x.shape)}")
    ks, dil, pad, st = (_pool_param(v, 2, n, "im2col") for v, n in ((kernel_size, "kernel_size"),
                        (dilation, "dilation"), (padding, "padding"), (stride, "stride")))
    if any(k <= 0 for k in ks) or any(s <= 0 for s in st) or any(d <= 0 for d in dil) or any(p < 0 for p in pad):
        raise RuntimeError("im2col: kernel_size, stride and dilation should be greater than zero and padding "
                           f"non-negative, but got kernel_size={list(ks)} stride={list(st)} dilation={list(dil)} "
                           f"padding={list(pad)}")
    blocks = fold_blocks(x.shape[-2:], ks, dil, pad, st)
    if any(b < 1 for b in blocks):
        raise RuntimeError(f"Given input with spatial size ({x.shape[-2]}, {x.shape[-1]}), kernel_size={list(ks)}, "
                           f"dilation={list(dil)}, padding={list(pad)}, calculated shape of the array of sliding "
                           f"blocks as ({blocks[0]}, {blocks[1]}), but its components must be at least one.")
    c = x.shape[-3] * prod(ks)
    shape = ((x.shape[0],) if x.ndim == 4 else ()) + (c, prod(blocks))
    return ks, dil, pad, st, shape


def col2im_plan(x, output_size, kernel_size, dilation, padding, stride):
    """Output shape of col2im (F.fold) on a 2-D or 3-D input."""
    if x.ndim not in (2, 3) or any(s == 0 for s in x.shape[-2:]):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(x.shape)}")
    out, ks, dil, pad, st = (_pool_param(v, 2, n, "col2im") for v, n in ((output_size, "output_size"),
                             (kernel_size, "kernel_size"), (dilation, "dilation"), (padding, "padding"),
                             (stride, "stride")))
    if any(k <= 0 for k in ks) or any(s <= 0 for s in st) or any(d <= 0 for d in dil) or any(p < 0 for p in pad):
        raise RuntimeError("col2im: kernel_size, stride and dilation should be greater than zero and padding "
                           f"non-negative, but got kernel_size={list(ks)} stride={list(st)} dilation={list(dil)} "
                           f"padding={list(pad)}")
    K = prod(ks)
    if x.shape[-2] % K:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={x.shape[-2]} and kernel_size=({ks[0]}, {ks[1]})")
    blocks = fold_blocks(out, ks, dil, pad, st)
    if any(b < 1 for b in blocks) or prod(blocks) != x.shape[-1]:
        raise RuntimeError(f"Given output_size=({out[0]}, {out[1]}), kernel_size=({ks[0]}, {ks[1]}), "
                           f"dilation=({dil[0]}, {dil[1]}), padding=({pad[0]}, {pad[1]}), stride=({st[0]}, {st[1]}), "
                           f"expected size of input's dimension 2 to match the calculated number of sliding blocks "
                           f"{blocks[0]} * {blocks[1]} = {prod(blocks)}, but got input.size(2)={x.shape[-1]}.")
    shape = ((x.shape[0],) if x.ndim == 3 else ()) + (x.shape[-2] // K,) + out
    return out, ks, dil, pad, st, blocks, shape


def pixel_shuffle_plan(x, r, op="pixel_shuffle"):
    if x.ndim < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input with {x.ndim} "
                           "dimension(s)")
    if r <= 0:
        raise RuntimeError(f"{op} expects a positive {'upscale' if op == 'pixel_shuffle' else 'downscale'}_factor, "
                           f"but got {r}")
    *lead, c, h, w = x.shape
    if op == "pixel_shuffle":
        if c % (r * r):
            raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
                               f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
        return tuple(lead) + (c // (r * r), h * r, w * r)
    if h % r or w % r:
        which, size = ("height", h) if h % r else ("width", w)
        raise RuntimeError(f"pixel_unshuffle expects {which} to be divisible by downscale_factor, but "
                           f"input.size({-2 if which == 'height' else -1})={size} is not divisible by {r}")
    return tuple(lead) + (c * r * r, h // r, w // r)


# ---------------------------------------------------------------------------------------
# meta kernels
# ---------------------------------------------------------------------------------------
def _conv_meta(nd, op):
    def kernel(x, w, bias=None, stride=(1,), padding=(0,), dilation=(1,), groups=1):
        return wrap_meta(conv_plan(x, w, bias, stride, padding, dilation, groups, nd, op)[3], x.dtype)
    return kernel


conv1d, conv2d, conv3d = _conv_meta(1, "conv1d"), _conv_meta(2, "conv2d"), _conv_meta(3, "conv3d")


def _conv_t_meta(nd, op):
    def kernel(x, w, bias=None, stride=(1,), padding=(0,), output_padding=(0,), groups=1, dilation=(1,)):
        return wrap_meta(conv_plan(x, w, bias, stride, padding, dilation, groups, nd, op, True, output_padding)[3],
                         x.dtype)
    return kernel


conv_transpose1d, conv_transpose2d = _conv_t_meta(1, "conv_transpose1d"), _conv_t_meta(2, "conv_transpose2d")


def _max_pool_meta(nd, op, indices):
    def kernel(x, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
        shape = pool_plan(x, kernel_size, stride, padding, dilation, ceil_mode, nd, op)[4]
        out = wrap_meta(shape, x.dtype)
        return (out, wrap_meta(shape, _dt.int64)) if indices else out
    return kernel


max_pool1d = _max_pool_meta(1, "max_pool1d", False)
max_pool2d = _max_pool_meta(2, "max_pool2d", False)
max_pool1d_with_indices = _max_pool_meta(1, "max_pool1d", True)
max_pool2d_with_indices = _max_pool_meta(2, "max_pool2d", True)


def avg_pool1d(x, kernel_size, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True):
    return wrap_meta(pool_plan(x, kernel_size, stride, padding, (1,), ceil_mode, 1, "avg_pool1d")[4], x.dtype)


def avg_pool2d(x, kernel_size, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return wrap_meta(pool_plan(x, kernel_size, stride, padding, (1,), ceil_mode, 2, "avg_pool2d")[4], x.dtype)


def adaptive_avg_pool1d(x, output_size):
    return wrap_meta(adaptive_plan(x, output_size, 1, "adaptive_avg_pool1d", True), x.dtype)


def adaptive_avg_pool2d(x, output_size):
    return wrap_meta(adaptive_plan(x, output_size, 2, "adaptive_avg_pool2d", True), x.dtype)


def adaptive_max_pool1d(x, output_size):
    shape = adaptive_plan(x, output_size, 1, "adaptive_max_pool1d")
    return wrap_meta(shape, x.dtype), wrap_meta(shape, _dt.int64)


def adaptive_max_pool2d(x, output_size):
    shape = adaptive_plan(x, output_size, 2, "adaptive_max_pool2d")
    return wrap_meta(shape, x.dtype), wrap_meta(shape, _dt.int64)


def im2col(x, kernel_size, dilation, padding, stride):
    return wrap_meta(im2col_plan(x, kernel_size, dilation, padding, stride)[4], x.dtype)


def col2im(x, output_size, kernel_size, dilation, padding, stride):
    return wrap_meta(col2im_plan(x, output_size, kernel_size, dilation, padding, stride)[6], x.dtype)


def pixel_shuffle(x, upscale_factor):
    return wrap_meta(pixel_shuffle_plan(x, upscale_factor), x.dtype)


def pixel_unshuffle(x, downscale_factor):
    return wrap_meta(pixel_shuffle_plan(x, downscale_factor, "pixel_unshuffle"), x.dtype)
