"""ember.nn.functional's remaining layers as compositions of ops: conv_transpose3d and conv_tbc,
embedding_bag, channel_shuffle, pdist, gumbel_softmax, local_response_norm,
multi_head_attention_forward, linear_cross_entropy and assert_int_or_pair.
"""
import math as _math
import warnings as _warnings

import numpy as _np

from ..ops.registry import export as _export

__all__ = ["conv_transpose3d", "conv_tbc", "embedding_bag", "channel_shuffle", "native_channel_shuffle", "pdist",
           "gumbel_softmax", "local_response_norm", "multi_head_attention_forward", "linear_cross_entropy",
           "assert_int_or_pair"]


def _ember():
    import ember
    return ember


def _spread(x, dim, stride):
    """Insert stride - 1 zeros between neighbours along dim (L -> (L - 1) * stride + 1)."""
    ember = _ember()
    if stride == 1:
        return x
    length = x.shape[dim]
    moved = x.movedim(dim, -1).unsqueeze(-1)
    zeros = ember.zeros(moved.shape[:-1] + (stride - 1,), dtype=x.dtype, device=x.device)
    spread = ember.cat([moved, zeros], -1).flatten(-2)[..., :(length - 1) * stride + 1]
    return spread.movedim(-1, dim)


def _conv_transpose_nd(nd, input, weight, bias, stride, padding, output_padding, groups, dilation):
    """Transposed convolution as the convolution it is the gradient of: spread the input by the
    stride, pad it by dilation*(k-1) - padding (+ output_padding on the far side), and convolve with
    the weight's in/out channels swapped per group and its kernel flipped."""
    ember = _ember()
    from . import functional as F
    expand = (lambda v: (v,) * nd if isinstance(v, int) else tuple(v))
    stride, padding, output_padding, dilation = map(expand, (stride, padding, output_padding, dilation))
    op = f"conv_transpose{nd}d"
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}: Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {op}, but got "
                           f"input of size: {list(input.shape)}")
    if weight.dim() != nd + 2:
        raise RuntimeError(f"{op}: weight should have {nd + 2} dimensions, got {weight.dim()}")
    unbatched = input.dim() == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    if x.shape[1] != weight.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {weight.shape[0]} channels, but got {x.shape[1]} channels "
                           f"instead")
    if groups <= 0 or weight.shape[0] % groups:
        raise RuntimeError("non-positive groups is not supported" if groups <= 0 else
                           f"{op}: in_channels ({weight.shape[0]}) must be divisible by groups ({groups})")
    if any(s <= 0 for s in stride) or any(d <= 0 for d in dilation) or any(p < 0 for p in padding):
        raise RuntimeError(f"{op}: stride and dilation must be positive and padding non-negative")
    if any(op_ >= s and op_ >= d for op_, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                           f"output_padding: {list(output_padding)}, stride: {list(stride)}, dilation: "
                           f"{list(dilation)}")
    kernel = weight.shape[2:]
    for d in range(nd):
        x = _spread(x, 2 + d, stride[d])
    pads = []
    for d in reversed(range(nd)):  # F.pad wants the last dim first; negative pads crop
        edge = dilation[d] * (kernel[d] - 1) - padding[d]
        pads += [edge, edge + output_padding[d]]
    x = F.pad(x, pads)
    cin, cout_g = weight.shape[:2]
    w = weight.reshape((groups, cin // groups, cout_g) + tuple(kernel)).transpose(1, 2)
    w = w.reshape((groups * cout_g, cin // groups) + tuple(kernel)).flip(list(range(2, nd + 2)))
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]
    out = conv(x, w, bias, 1, 0, dilation, groups)
    return out.squeeze(0) if unbatched else out


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """3-D transposed convolution: weight (C_in, C_out / groups, kD, kH, kW)."""
    return _conv_transpose_nd(3, input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_tbc(input, weight, bias, pad=0):
    """1-D convolution of a time-batch-channel input (T, B, C_in) with weight (k, C_in, C_out)."""
    from . import functional as F
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = F.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, pad)
    return out.permute(2, 0, 1)


_BAG_MODES = ("sum", "mean", "max")


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sum / mean / max of the embeddings of each bag: the rows of a 2-D input, or the slices of a
    1-D input that start at offsets. Empty bags (and bags of padding_idx only) give zeros."""
    ember = _ember()
    from . import functional as F
    if weight.dtype is ember.int64 and input.is_floating_point():
        _warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, "
                       "input, ...)` is deprecated, and should now be `embedding_bag(input, weight, ...)`.",
                       stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        starts = list(range(0, input.numel(), max(input.shape[1], 1))) if input.shape[1] else [0] * input.shape[0]
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        starts = [int(v) for v in offsets.tolist()]
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode not in _BAG_MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if sparse:
        raise NotImplementedError("embedding_bag(sparse=True): ember has no sparse gradients")
    if input.dtype not in (ember.int64, ember.int32) or (offsets is not None and offsets.dtype not in
                                                         (ember.int64, ember.int32)):
        raise RuntimeError("embedding_bag: expected input and offsets to be of dtype Long or Int")
    if max_norm is not None:
        with ember.no_grad():
            ember.ops.aten.embedding_renorm_.default(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")
    count = input.numel()
    if starts and starts[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {starts[0]}")
    if any(b < a for a, b in zip(starts, starts[1:])) or (starts and starts[-1] > count):
        raise RuntimeError("embedding_bag: offsets must be non-decreasing and at most the input's length")
    ends = starts[1:] + [count]
    if include_last_offset:
        starts, ends = starts[:-1], ends[:-1]
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    # (bags, longest bag) positions into input, and which of them are real, non-padding entries
    longest = max([e - s for s, e in zip(starts, ends)] + [1])
    pos = _np.array(starts, dtype=_np.int64)[:, None] + _np.arange(longest)
    real = pos < _np.array(ends, dtype=_np.int64)[:, None]
    pos = ember.from_numpy(_np.where(real, pos, 0).reshape(len(starts), longest))
    keep = ember.from_numpy(real.reshape(len(starts), longest))
    indices = input[pos] if count else ember.zeros(pos.shape, dtype=ember.int64)
    if count and (int(input.min()) < 0 or int(input.max()) >= weight.shape[0]):
        raise IndexError("index out of range in self")
    if padding_idx is not None:
        keep = keep & (indices != padding_idx)
    rows = F.embedding(indices, weight, scale_grad_by_freq=scale_grad_by_freq)   # (bags, longest, D)
    if per_sample_weights is not None and count:
        rows = rows * per_sample_weights[pos].unsqueeze(-1)
    kept = keep.unsqueeze(-1)
    if mode == "max":
        values = rows.masked_fill(~kept, float("-inf")).max(1).values
        return ember.where(keep.any(1, keepdim=True), values, 0.0)
    total = (rows * kept.to(rows.dtype)).sum(1)
    if mode == "sum":
        return total
    return total / keep.sum(1, keepdim=True).clamp_min(1).to(total.dtype)


def channel_shuffle(input, groups):
    """(N, g * k, *) -> channels reordered as (k, g): channel c*g + i is input channel i*k + c."""
    if input.dim() < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    channels = input.shape[1]
    if channels % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {channels} channels and "
                           f"{groups} groups.")
    n, rest = input.shape[0], tuple(input.shape[2:])
    return input.reshape((n, groups, channels // groups) + rest).transpose(1, 2).reshape(input.shape)


def native_channel_shuffle(input, groups):
    return channel_shuffle(input, groups)


def pdist(input, p=2):
    """The p-norm distance of every pair of rows i < j of an (N, M) input, row-major: N(N-1)/2 values."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    if not input.is_floating_point():
        raise RuntimeError(f"pdist only supports floating-point dtypes, input.dtype: {input.dtype}")
    ember = _ember()
    first, second = _np.triu_indices(input.shape[0], 1)
    first, second = (ember.from_numpy(i.astype(_np.int64)).to(input.device) for i in (first, second))
    diff = input[first] - input[second]
    return ember.linalg.vector_norm(diff, p, dim=-1)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + Gumbel noise) / tau); hard: the one-hot argmax, with the soft sample's gradient."""
    ember = _ember()
    if eps != 1e-10:
        _warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -ember.empty_like(logits).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = ember.zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """input / (k + alpha * mean of x**2 over `size` neighbouring channels) ** beta."""
    from . import functional as F
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)")
    if input.numel() == 0:
        return input
    square = (input * input).movedim(1, -1)
    padded = F.pad(square, (size // 2, (size - 1) // 2))
    div = padded.unfold(-1, size, 1).mean(-1).movedim(-1, 1)
    return input / div.mul(alpha).add(k).pow(beta)


class _AttentionWeights:
    """The attributes of a MultiheadAttention that its forward reads, from F's arguments."""

    def __init__(self, **attributes):
        self.__dict__.update(attributes)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """MultiheadAttention's forward with its weights passed in ((L, N, E) or unbatched (L, E))."""
    from .modules.transformer import _mha_forward
    if static_k is not None or static_v is not None:
        raise NotImplementedError("multi_head_attention_forward: static_k / static_v are not implemented in ember")
    if use_separate_proj_weight and (q_proj_weight is None or k_proj_weight is None or v_proj_weight is None):
        raise AssertionError("use_separate_proj_weight is True but q_proj_weight, k_proj_weight or v_proj_weight "
                             "is None")
    if not use_separate_proj_weight and in_proj_weight is None:
        raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
    if embed_dim_to_check % num_heads:
        raise AssertionError(f"embed_dim {embed_dim_to_check} not divisible by num_heads {num_heads}")
    weights = _AttentionWeights(
        num_heads=num_heads, embed_dim=embed_dim_to_check, _qkv_same_embed_dim=not use_separate_proj_weight,
        in_proj_weight=in_proj_weight, in_proj_bias=in_proj_bias, q_proj_weight=q_proj_weight,
        k_proj_weight=k_proj_weight, v_proj_weight=v_proj_weight, bias_k=bias_k, bias_v=bias_v,
        add_zero_attn=add_zero_attn, dropout=dropout_p, training=training,
        out_proj=_AttentionWeights(weight=out_proj_weight, bias=out_proj_bias))
    return _mha_forward(weights, query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights,
                        is_causal)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target). PyTorch's ``options`` select a
    batch-chunked evaluation that saves memory and gives the same values; ember computes the
    reference path for every ``options``."""
    from . import functional as F
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}")
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions (in_features), got "
                           f"{input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(classes, *out_features)}, got {tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires "
                           f"batched input, (N, {in_features}), got unbatched input with shape {tuple(input.shape)}")
    logits_shape = (*batches, classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    if out_features:
        linear_weight = linear_weight.reshape(_math.prod(out_features) * classes, in_features)
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(-1)
    logits = F.linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return F.cross_entropy(logits, target, weight=weight, reduction=reduction,
                           ignore_index=-100 if ignore_index is None else ignore_index,
                           label_smoothing=label_smoothing)


def assert_int_or_pair(arg, arg_name, message):
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))


for _name in __all__:
    _export("nn.functional", _name, globals()[_name])
