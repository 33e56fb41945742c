"""ember.nn.functional's pooling beyond the 1-D/2-D kernels: 3-D max/avg pooling, adaptive pooling
with indices (1/2/3-D), power-average (LP) pooling, fractional max pooling and max unpooling.

All of them are one composition: every output element is a reduction over a window of input
positions, so each pooling kind only computes, per spatial dimension, the window's input positions
(`(out, K)` integer arrays, worked out from shapes with NumPy); `_windows` turns them into flat
positions of the `D*H*W` plane and gathers the values `(N, C, *out, K)` with one ``gather``.
Max is ``argmax`` + ``gather`` (the gradient goes to the one chosen element, as PyTorch's kernels
do, and the chosen flat position is PyTorch's ``indices``); averages are masked sums. Autograd and
ember.compile come from the ops used; no kernel of its own.
"""
import math as _math

import numpy as _np

from ..ops.registry import export as _export

__all__ = ["max_pool3d", "max_pool3d_with_indices", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d",
           "adaptive_max_pool3d_with_indices", "adaptive_max_pool1d_with_indices",
           "adaptive_max_pool2d_with_indices", "lp_pool1d", "lp_pool2d", "lp_pool3d", "fractional_max_pool2d",
           "fractional_max_pool2d_with_indices", "fractional_max_pool3d", "fractional_max_pool3d_with_indices",
           "max_unpool1d", "max_unpool2d", "max_unpool3d"]


def _ember():
    import ember
    return ember


def _expand(value, n, op, what, allow_empty=False):
    """An int or a sequence of n ints -> tuple of n ints (PyTorch's message otherwise)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * n
    value = tuple(value)
    if allow_empty and len(value) == 0:
        return None
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise RuntimeError(f"{op}: {what} must either be a single int, or a tuple of {n} ints")
    return value


def _batched(input, nd, op):
    """(input with a batch dim, whether one was added); only (C, *spatial) or (N, C, *spatial)."""
    if input.dim() == nd + 1:
        return input.unsqueeze(0), True
    if input.dim() == nd + 2:
        return input, False
    raise RuntimeError(f"{op}: non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input, "
                       f"but got a {input.dim()}D tensor")


def _check_non_batch(input, op):
    if any(s == 0 for s in input.shape[1:]):
        raise RuntimeError(f"{op}: Expected input's non-batch dimensions to have positive length, but input has "
                           f"a shape of {list(input.shape)}")


def _windows(x, dims, fill):
    """x (N, C, *spatial); dims: per spatial dim (positions, valid) integer/bool arrays of shape
    lead + (out_d, K_d) with lead () or (N, C). Returns (values (N, C, *out, K) with `fill` at invalid
    positions, flat plane positions (lead + (*out, K)) as an int64 tensor)."""
    ember = _ember()
    nd = len(dims)
    sizes = x.shape[2:]
    lead = dims[0][0].shape[:-2]
    flat, ok = 0, True
    for d, (pos, valid) in enumerate(dims):
        out_d, k_d = pos.shape[-2:]
        shape = lead + (1,) * d + (out_d,) + (1,) * (nd - d - 1) + (1,) * d + (k_d,) + (1,) * (nd - d - 1)
        flat = flat + _np.where(valid, pos, 0).reshape(shape) * int(_np.prod(sizes[d + 1:], dtype=_np.int64))
        ok = ok & valid.reshape(shape)
    full = _np.broadcast_shapes(_np.shape(flat), _np.shape(ok))
    outs = full[len(lead):len(lead) + nd]
    flat = _np.ascontiguousarray(_np.broadcast_to(flat, full).reshape(lead + outs + (-1,)), dtype=_np.int64)
    ok = _np.broadcast_to(ok, full).reshape(flat.shape)
    n, c = x.shape[:2]
    index = ember.from_numpy(flat).to(x.device)  # constants follow the input (meta under ember.compile)
    if not lead:
        index = index.reshape((1, 1, -1))
    values = x.flatten(2).gather(2, index.reshape(index.shape[0], index.shape[1], -1).expand(n, c, -1))
    values = values.reshape((n, c) + outs + (flat.shape[-1],))
    if not ok.all():
        values = values.masked_fill(ember.from_numpy(_np.ascontiguousarray(~ok)).to(x.device), fill)
    return values, index.reshape(flat.shape)


def _window_counts(masks):
    """How many positions each output's window counts: the product over dims of per-dim counts."""
    count = _np.ones((), dtype=_np.float64)
    for mask in masks:
        count = _np.multiply.outer(count, mask.sum(-1).astype(_np.float64))
    return count


def _lowest(dtype):
    return float("-inf") if dtype.is_floating_point else int(_np.iinfo(dtype.name).min)


def _max_of_windows(x, dims, return_indices):
    values, flat = _windows(x, dims, _lowest(x.dtype))
    choice = values.argmax(-1, keepdim=True)
    out = values.gather(-1, choice).squeeze(-1)
    if not return_indices:
        return out
    return out, flat.expand(values.shape).gather(-1, choice).squeeze(-1)


# sliding windows ---------------------------------------------------------------------------------
def _pool_output_size(length, k, s, p, d, ceil_mode):
    """PyTorch's pooling_output_shape."""
    out = (length + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= length + p:
        out -= 1
    return out


def _sliding(x, op, kernel_size, stride, padding, dilation, ceil_mode):
    """Per spatial dim (positions, valid, in_padded_region) for a sliding-window pool."""
    nd = x.dim() - 2
    k = _expand(kernel_size, nd, op, "kernel_size")
    s = _expand(stride, nd, op, "stride", allow_empty=True) or k
    p = _expand(padding, nd, op, "padding")
    d = _expand(dilation, nd, op, "dilation")
    if any(v <= 0 for v in k):
        raise RuntimeError(f"{op}: kernel_size must be greater than zero, but got {k}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"{op}: stride should not be zero")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"{op}: dilation must be greater than zero, but got {d}")
    if any(pi > ((ki - 1) * di + 1) // 2 for ki, pi, di in zip(k, p, d)):
        raise RuntimeError(f"{op}: pad should be at most half of effective kernel size, but got pad={p}, "
                           f"kernel_size={k} and dilation={d}")
    sizes = tuple(x.shape[2:])
    outs = [_pool_output_size(L, *args, ceil_mode) for L, args in zip(sizes, zip(k, s, p, d))]
    if any(o < 1 for o in outs):
        raise RuntimeError(f"{op}: Given input size: ({'x'.join(map(str, x.shape[1:]))}). Calculated output size: "
                           f"({'x'.join(map(str, [x.shape[1]] + outs))}). Output size is too small")
    dims = []
    for L, o, ki, si, pi, di in zip(sizes, outs, k, s, p, d):
        pos = _np.arange(o)[:, None] * si - pi + _np.arange(ki)[None, :] * di
        dims.append((pos, (pos >= 0) & (pos < L), pos < L + pi))
    return dims


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """3-D max pooling over (N, C, D, H, W) or (C, D, H, W); return_indices gives flat D*H*W positions."""
    x, added = _batched(input, 3, "max_pool3d")
    _check_non_batch(x, "max_pool3d")
    dims = _sliding(x, "max_pool3d", kernel_size, () if stride is None else stride, padding, dilation, ceil_mode)
    out = _max_of_windows(x, [(pos, valid) for pos, valid, _ in dims], return_indices)
    if added:
        out = tuple(t.squeeze(0) for t in out) if return_indices else out.squeeze(0)
    return out


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """3-D average pooling; the divisor counts padding (count_include_pad) but never the ceil_mode overhang."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"avg_pool3d\" not implemented for '{input.dtype}'")
    x, added = _batched(input, 3, "avg_pool3d")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("avg_pool3d: divisor must be not zero")
    dims = _sliding(x, "avg_pool3d", kernel_size, () if stride is None else stride, padding, 1, ceil_mode)
    values, _ = _windows(x, [(pos, valid) for pos, valid, _ in dims], 0.0)
    total = values.sum(-1)
    if divisor_override is not None:
        out = total / divisor_override
    else:
        count = _window_counts([padded if count_include_pad else valid for _, valid, padded in dims])
        out = total / _ember().from_numpy(count).to(total.device, total.dtype)
    return out.squeeze(0) if added else out


# adaptive ----------------------------------------------------------------------------------------
def _adaptive(x, output_size, op):
    nd = x.dim() - 2
    if isinstance(output_size, int):
        output_size = (output_size,) * nd
    output_size = tuple(x.shape[2 + i] if o is None else o for i, o in enumerate(output_size))
    if len(output_size) != nd:
        raise RuntimeError(f"{op}(): internal error: output_size.size() must be {nd}")
    if any(o < 0 for o in output_size):
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 but received "
                           f"{output_size}")
    dims = []
    for L, o in zip(x.shape[2:], output_size):
        i = _np.arange(o)
        start, end = (i * L) // o, -((-(i + 1) * L) // o)
        k = int((end - start).max()) if o else 1
        pos = start[:, None] + _np.arange(k)[None, :]
        dims.append((pos, pos < end[:, None]))
    return dims


def _adaptive_batched(input, nd, op):
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got {list(input.shape)}")
    return _batched(input, nd, op)


def adaptive_avg_pool3d(input, output_size):
    """Averages over PyTorch's adaptive windows [floor(i*L/o), ceil((i+1)*L/o)) per dim (None keeps a dim)."""
    x, added = _adaptive_batched(input, 3, "adaptive_avg_pool3d")
    dims = _adaptive(x, output_size, "adaptive_avg_pool3d")
    values, _ = _windows(x, dims, 0.0)
    count = _window_counts([valid for _, valid in dims])
    out = values.sum(-1) / _ember().from_numpy(count).to(values.device, values.dtype)
    return out.squeeze(0) if added else out


def _adaptive_max(input, output_size, nd, return_indices):
    op = f"adaptive_max_pool{nd}d"
    x, added = _adaptive_batched(input, nd, op)
    _check_non_batch(x, op)
    out = _max_of_windows(x, _adaptive(x, output_size, op), return_indices)
    if added:
        out = tuple(t.squeeze(0) for t in out) if return_indices else out.squeeze(0)
    return out


def adaptive_max_pool3d(input, output_size, return_indices=False):
    return _adaptive_max(input, output_size, 3, return_indices)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max(input, output_size, 3, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    from . import functional as F
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    from . import functional as F
    return F.adaptive_max_pool2d(input, output_size, return_indices=True)


# power-average pooling ----------------------------------------------------------------------------
def _lp_pool(avg_pool, nd, input, norm_type, kernel_size, stride, ceil_mode):
    """(sum over the window of x**p) ** (1/p), written as PyTorch does: from an average pool."""
    ember = _ember()
    k = (kernel_size,) * nd if isinstance(kernel_size, int) else tuple(kernel_size)
    pooled = avg_pool(input.pow(norm_type), k, stride if stride is not None else k, 0, ceil_mode)
    return (pooled.sign() * ember.relu(pooled.abs())).mul(_math.prod(k)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    from . import functional as F
    return _lp_pool(F.avg_pool1d, 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    from . import functional as F
    return _lp_pool(F.avg_pool2d, 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(avg_pool3d, 3, input, norm_type, kernel_size, stride, ceil_mode)


# fractional max pooling ---------------------------------------------------------------------------
def _fractional(nd, input, kernel_size, output_size, output_ratio, return_indices, _random_samples):
    """Windows of size kernel_size starting at PyTorch's pseudo-random interval boundaries:
    start_i = int((i + u) * a) - int(u * a), a = (L - k) / (out - 1), the last at L - k, with u drawn
    per (sample, channel, dim) (or given as _random_samples, shape (N, C, nd), W first for 2-D)."""
    ember = _ember()
    op = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    x, added = _batched(input, nd, op)
    k = _expand(kernel_size, nd, op, "kernel_size")
    sizes = tuple(x.shape[2:])
    if output_size is None:
        # PyTorch's 2-D function takes len() of the ratio (so a bare number is its TypeError)
        if nd == 2 and len(output_ratio) > 2:
            raise ValueError("fractional_max_pool2d requires output_ratio to either be a single Int or tuple of "
                             "Ints.")
        ratio = (output_ratio,) * nd if isinstance(output_ratio, (int, float)) else tuple(output_ratio)
        output_size = tuple(int(L * r) for L, r in zip(sizes, ratio))
    outs = _expand(output_size, nd, op, "output_size")
    names = ("width", "height") if nd == 2 else ("time", "height", "width")
    for L, o, ki, name in zip(sizes, outs, k, names if nd == 3 else names[::-1]):
        if o + ki - 1 > L:
            raise RuntimeError(f"{op}(): pool {name} {ki} too large relative to input {name} {L}")
    n, c = x.shape[:2]
    if _random_samples is None:
        _random_samples = ember.rand(n, c, nd, dtype=x.dtype)
    samples = _np.asarray(_random_samples.detach().numpy(), dtype=_np.float32 if x.dtype.itemsize <= 4 else
                          _np.float64)
    if samples.shape != (n, c, nd):
        raise RuntimeError(f"{op}(): expected _random_samples of shape {(n, c, nd)}, got {samples.shape}")
    order = [1, 0] if nd == 2 else [0, 1, 2]  # which sample column drives each spatial dim (2-D: W first)
    dims = []
    for d, (L, o, ki) in enumerate(zip(sizes, outs, k)):
        u = samples[..., order[d]][..., None]
        if o > 1:
            alpha = samples.dtype.type(L - ki) / samples.dtype.type(o - 1)
            i = _np.arange(o - 1, dtype=samples.dtype)
            starts = ((i + u) * alpha).astype(_np.int64) - (u * alpha).astype(_np.int64)
            starts = _np.concatenate([starts, _np.full((n, c, 1), L - ki)], axis=-1)
        else:
            starts = _np.full((n, c, 1), L - ki)
        pos = starts[..., None] + _np.arange(ki)
        dims.append((pos, _np.ones(pos.shape, dtype=bool)))
    out = _max_of_windows(x, dims, return_indices)
    if added:
        out = tuple(t.squeeze(0) for t in out) if return_indices else out.squeeze(0)
    return out


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    return _fractional(2, input, kernel_size, output_size, output_ratio, return_indices, _random_samples)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return _fractional(2, input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    return _fractional(3, input, kernel_size, output_size, output_ratio, return_indices, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return _fractional(3, input, kernel_size, output_size, output_ratio, True, _random_samples)


# max unpooling ------------------------------------------------------------------------------------
def _unpool(nd, input, indices, kernel_size, stride, padding, output_size):
    """Scatter each value to its recorded flat position in a zero (N, C, *output_size) tensor."""
    ember = _ember()
    op = f"max_unpool{nd}d"
    k = _expand(kernel_size, nd, op, "kernel_size")
    s = k if stride is None else _expand(stride, nd, op, "stride")
    p = _expand(padding, nd, op, "padding")
    if indices.dtype is not ember.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {indices.dtype}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}")
    x, added = _batched(input, nd, op)
    spatial = x.shape[2:]
    default = [(L - 1) * si - 2 * pi + ki for L, si, pi, ki in zip(spatial, s, p, k)]
    if output_size is None:
        output_size = default
    output_size = list(output_size)[-nd:]
    if len(output_size) != nd:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has a "
                         f"length of '{len(output_size)}'")
    for o, dflt, si in zip(output_size, default, s):
        if not dflt - si < o < dflt + si:
            raise ValueError(f"invalid output_size \"{output_size}\" (dim {len(output_size)} must be between "
                             f"{[d - si for d in default]} and {[d + si for d in default]})")
    plane = _math.prod(output_size)
    idx = indices.unsqueeze(0) if added else indices
    flat = idx.flatten(2)
    if flat.numel() and (int(flat.min()) < 0 or int(flat.max()) >= plane):
        bad = int(flat.max()) if int(flat.max()) >= plane else int(flat.min())
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(map(str, output_size))}")
    n, c = x.shape[:2]
    out = ember.zeros((n, c, plane), dtype=x.dtype, device=x.device).scatter(2, flat, x.flatten(2))
    out = out.reshape((n, c, *output_size))
    return out.squeeze(0) if added else out


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _unpool(3, input, indices, kernel_size, stride, padding, output_size)


for _name in __all__:
    _export("nn.functional", _name, globals()[_name])
