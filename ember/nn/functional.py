"""ember.nn.functional: PyTorch's torch.nn.functional.

Two kinds of names live here:
  * the generated bindings of the op table's rows whose namespace is "nn.functional"
    (``F.softmax``, ``F.one_hot``, ``F.pad`` ...: ``registry.FUNCTIONS["nn.functional"]``) and the
    torch-namespace bindings F exposes too (``F.conv2d`` is ``ember.conv2d``);
  * the Python functions written below (and the losses in ``functional_loss.py``): PyTorch's own
    Python wrappers, which parse its arguments and call operators.
Every name is exported with ``registry.export``, so ``registry.public_name`` names it.
"""
import math as _math
import warnings as _warnings

from ..ops.registry import FUNCTIONS as _FUNCTIONS, OPERATORS as _OPERATORS, aten as _aten, export as _export
from .._core.dispatch import AUTOGRAD_BIT as _AUTOGRAD_BIT, CPU_BIT as _CPU_BIT, DispatchKey as _DispatchKey, \
    tls as _dispatch_tls

_AUTOGRAD_CPU = _AUTOGRAD_BIT | _CPU_BIT

_FUNCTIONALIZE_BIT = 1 << _DispatchKey.Functionalize

globals().update(_FUNCTIONS.get("nn.functional", {}))  # the rows' bindings (written by ops/registry.py)
# torch-namespace bindings that F exposes under the same name
conv1d, conv2d, conv3d = _FUNCTIONS[""]["conv1d"], _FUNCTIONS[""]["conv2d"], _FUNCTIONS[""]["conv3d"]
conv_transpose1d, conv_transpose2d = _FUNCTIONS[""]["conv_transpose1d"], _FUNCTIONS[""]["conv_transpose2d"]
adaptive_avg_pool1d = _FUNCTIONS[""]["adaptive_avg_pool1d"]
pixel_shuffle, pixel_unshuffle = _FUNCTIONS[""]["pixel_shuffle"], _FUNCTIONS[""]["pixel_unshuffle"]


# activations ------------------------------------------------------------------------------
class _Bindings:
    """``_b.relu`` is the generated binding of ``aten::relu`` (looked up once, after the table
    is registered), so the wrappers below cost one extra Python call."""

    def __getattr__(self, name):
        fn = getattr(_aten, name).default.entry
        setattr(self, name, fn)
        return fn


_b = _Bindings()


def relu(input, inplace=False):
    """max(input, 0)."""
    return _b.relu_(input) if inplace else _b.relu(input)


def relu_(input):
    return _b.relu_(input)


def relu6(input, inplace=False):
    """min(max(input, 0), 6)."""
    return _b.hardtanh_(input, 0.0, 6.0) if inplace else _b.relu6(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    if inplace:
        return _b.leaky_relu_(input, negative_slope)
    return _b.leaky_relu(input, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return _b.leaky_relu_(input, negative_slope)


def elu(input, alpha=1.0, inplace=False):
    return _b.elu_(input, alpha) if inplace else _b.elu(input, alpha)


def elu_(input, alpha=1.0):
    return _b.elu_(input, alpha)


def selu(input, inplace=False):
    return _b.selu_(input) if inplace else _b.selu(input)


def selu_(input):
    return _b.selu_(input)


def celu(input, alpha=1.0, inplace=False):
    return _b.celu_(input, alpha) if inplace else _b.celu(input, alpha)


def celu_(input, alpha=1.0):
    return _b.celu_(input, alpha)


def silu(input, inplace=False):
    """input * sigmoid(input)."""
    return _b.silu_(input) if inplace else _b.silu(input)


def mish(input, inplace=False):
    """input * tanh(softplus(input))."""
    return _b.mish_(input) if inplace else _b.mish(input)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """clamp(input, min_val, max_val); min_val > max_val is a ValueError (checked in Python)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace:
        return _b.hardtanh_(input, min_val, max_val)
    return _b.hardtanh(input, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return _b.hardtanh_(input, min_val, max_val)


def hardsigmoid(input, inplace=False):
    return _b.hardsigmoid_(input) if inplace else _b.hardsigmoid(input)


def hardswish(input, inplace=False):
    return _b.hardswish_(input) if inplace else _b.hardswish(input)


def threshold(input, threshold, value, inplace=False):
    """input <= threshold ? value : input."""
    if inplace:
        return _b.threshold_(input, threshold, value)
    return _b.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    return _b.threshold_(input, threshold, value)


def hardshrink(input, lambd=0.5, *, out=None):
    return _b.hardshrink(input, lambd) if out is None else _aten.hardshrink.out(input, lambd, out=out)


def prelu(input, weight):
    return _b.prelu(input, weight)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU; in eval mode (training=False) a leaky_relu with slope (lower + upper) / 2."""
    if training:
        raise NotImplementedError("rrelu: training=True (random negative slopes) is not implemented")
    return leaky_relu(input, (lower + upper) / 2, inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)


def _torch_rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return rrelu(input, lower, upper, training)


def _torch_rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return rrelu(input, lower, upper, training, inplace=True)


def softsign(input):
    """input / (1 + |input|) (a Python composite in PyTorch too)."""
    return input / (input.abs() + 1)


def tanhshrink(input):
    """input - tanh(input) (a Python composite in PyTorch too)."""
    return input - input.tanh()


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


# pooling, unfold / fold -------------------------------------------------------------------
def _op(name, *args):
    return _OPERATORS[name].entry(*args)


def _stride(stride):
    return () if stride is None else stride


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """F.max_pool1d (return_indices=True gives (values, flat indices))."""
    name = "aten::max_pool1d_with_indices" if return_indices else "aten::max_pool1d"
    return _op(name, input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """F.max_pool2d (return_indices=True gives (values, flat indices into each H*W plane))."""
    if not return_indices and _records_grad(input):
        # as ATen's max_pool2d under autograd: the backward needs the indices, so compute them once
        # here rather than again in the formula (grad_fn is MaxPool2DWithIndicesBackward, as PyTorch's)
        return _op("aten::max_pool2d_with_indices", input, kernel_size, _stride(stride), padding, dilation,
                   ceil_mode)[0]
    name = "aten::max_pool2d_with_indices" if return_indices else "aten::max_pool2d"
    return _op(name, input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def _records_grad(t):
    """A plain eager CPU tensor whose op autograd records (no dispatch mode, no fx Proxy, not under
    ember.compile: traces keep the op they were given)."""
    from .._core.tensor import Tensor
    from ..compiler import is_compiling
    return (not is_compiling() and isinstance(t, Tensor) and t._keys == _AUTOGRAD_CPU
            and not _dispatch_tls.include & ~(1 << _DispatchKey.Profiler) and not _dispatch_tls.exclude & _AUTOGRAD_BIT)


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


# dropout, embedding, normalisation, distances, interpolate, attention ----------------------
def _reduction(reduction, size_average=None, reduce=None):
    """The ATen reduction enum of torch's reduction= / legacy size_average= reduce= arguments."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
        _warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
                      "instead.", stacklevel=3)
    if reduction == "elementwise_mean":
        return 1
    enum = {"none": 0, "mean": 1, "sum": 2}.get(reduction)
    if enum is None:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return enum


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1/(1-p) (training only)."""
    _check_p(p)
    return (_aten.dropout_.default if inplace else _aten.dropout.default)(input, p, training)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    return (_aten.alpha_dropout_.default if inplace else _aten.alpha_dropout.default)(input, p, training)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    return (_aten.feature_alpha_dropout_.default if inplace else _aten.feature_alpha_dropout.default)(
        input, p, training)


def _feature_dropout(name, batched_dims, input, p, training, inplace, strict):
    _check_p(p)
    nd = input.dim()
    if nd not in (batched_dims - 1, batched_dims):
        msg = (f"{name}: Expected {batched_dims - 1}D or {batched_dims}D input, but received a {nd}D input.")
        if strict:
            raise RuntimeError(msg)
        _warnings.warn(f"{name}: Received a {nd}-D input to {name}, which is deprecated and will result in an "
                      "error in a future release.", stacklevel=3)
    unbatched = nd == batched_dims - 1 and name != "dropout2d"
    if unbatched:
        input = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
    out = (_aten.feature_dropout_.default if inplace else _aten.feature_dropout.default)(input, p, training)
    if unbatched:
        out = out.squeeze_(0) if inplace else out.squeeze(0)
    return out


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout("dropout1d", 3, input, p, training, inplace, True)


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout("dropout2d", 4, input, p, training, inplace, False)


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout("dropout3d", 5, input, p, training, inplace, False)


def bilinear(input1, input2, weight, bias=None):
    return _aten.bilinear.default(input1, input2, weight, bias)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """weight[input]; max_norm renormalises the looked-up rows of weight in place first."""
    if padding_idx is not None:
        if padding_idx > 0 and padding_idx >= weight.size(0):
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            if padding_idx < -weight.size(0):
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.size(0) + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        _aten.embedding_renorm_.default(weight, input, max_norm, norm_type)
    return _aten.embedding.default(weight, input, padding_idx, scale_grad_by_freq, sparse)


def _verify_batch_size(size):
    prod = size[0]
    for s in size[2:]:
        prod *= s
    if prod == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {list(size)}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalise over all dims but 1; training updates running_mean/var in place."""
    if training:
        _verify_batch_size(list(input.shape))
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    if training and running_mean is not None and running_mean._keys & _FUNCTIONALIZE_BIT:
        return _batch_norm_update_as_ops(input, running_mean, running_var, weight, bias, momentum, eps)
    return _aten.batch_norm.default(input, weight, bias, running_mean, running_var, training, momentum, eps, True)


def _batch_norm_update_as_ops(input, running_mean, running_var, weight, bias, momentum, eps):
    """Training batch norm with running statistics being functionalised (FunctionalTensors): the
    kernel writes them behind the dispatcher's back, so here the update is made of ops that
    functionalisation turns into new values (and make_fx records), as PyTorch's
    ``running_mean.mul_(1 - m).add_(m * mean)``. (Statistics from outside the functionalised
    program are written by the kernel, as PyTorch's functionalize leaves native_batch_norm.)"""
    from ..autograd.grad_mode import no_grad
    out = _aten.batch_norm.default(input, weight, bias, None, None, True, momentum, eps, True)
    dims = [0] + list(range(2, input.ndim))
    with no_grad():
        running_mean.mul_(1 - momentum).add_(input.mean(dims) * momentum)
        if running_var is not None:
            running_var.mul_(1 - momentum).add_(input.var(dims, correction=1) * momentum)
    return out


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    if use_input_stats:
        size = list(input.shape)
        if _math.prod(size[2:]) == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")
    return _aten.instance_norm.default(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                                      eps, True)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _aten.layer_norm.default(input, normalized_shape, weight, bias, eps, True)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return _aten.rms_norm.default(input, normalized_shape, weight, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    size = list(input.shape)
    _verify_batch_size([size[0] * size[1] // num_groups, num_groups] + size[2:])
    return _aten.group_norm.default(input, num_groups, weight, bias, eps, True)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p along dim, eps)."""
    r = _aten._ember_normalize.default(input, float(p), dim, eps)
    if out is not None:
        out.copy_(r)
        return out
    return r


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    return _aten.cosine_similarity.default(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return _aten.pairwise_distance.default(x1, x2, p, eps, keepdim)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area)."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        scale_factors = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError("Input and output must have the same number of spatial dimensions, but got input "
                                 f"with spatial dimensions of {list(input.shape[2:])} and output size of {size}. "
                                 "Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                                 "(o1, o2, ...,oK) format.")
            if not all(isinstance(s, int) for s in size):
                raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                                f"Tuple[int, int, int], but got size with types {[type(s) for s in size]}")
            output_size = list(size)
        else:
            output_size = [size] * dim
    elif scale_factor is not None:
        output_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError("Input and scale_factor must have the same number of spatial dimensions, but got "
                                 f"input with spatial dimensions of {list(input.shape[2:])} and scale_factor of "
                                 f"shape {scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                                 "format and scale_factor in (s1, s2, ...,sK) format.")
            scale_factors = list(scale_factor)
        else:
            scale_factors = [scale_factor] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor:
        output_size = [int(input.size(i + 2) * scale_factors[i]) for i in range(dim)]
        scale_factors = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a "
                         "4-D tensor as input")
    if antialias or mode == "lanczos":
        raise NotImplementedError(f"interpolate: mode={mode!r} / antialias=True is not implemented in ember")
    if mode == "area" and input.dim() in (3, 4, 5):  # PyTorch's area mode is adaptive average pooling
        from .functional_pool import adaptive_avg_pool3d
        pool = {3: adaptive_avg_pool1d, 4: adaptive_avg_pool2d, 5: adaptive_avg_pool3d}[input.dim()]
        return pool(input, output_size)
    nearest = {"nearest": "upsample_nearest", "nearest-exact": "_upsample_nearest_exact"}
    interp = {("linear", 3): "upsample_linear1d", ("bilinear", 4): "upsample_bilinear2d",
              ("trilinear", 5): "upsample_trilinear3d", ("bicubic", 4): "upsample_bicubic2d"}
    if mode in nearest and input.dim() in (3, 4, 5):
        op = getattr(_aten, f"{nearest[mode]}{dim}d")
        return op.vec(input, output_size, scale_factors)
    if (mode, input.dim()) in interp:
        return getattr(_aten, interp[(mode, input.dim())]).vec(input, output_size, align_corners, scale_factors)
    needs = {"linear": 3, "bilinear": 4, "trilinear": 5, "bicubic": 4}
    if mode in needs and input.dim() in (3, 4, 5):
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {needs[mode]}D input")
    raise NotImplementedError("Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                              f"{input.dim()}D) for the modes: nearest | linear | bilinear | bicubic | trilinear | "
                              f"lanczos | area | nearest-exact (got {mode})")


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """F.scaled_dot_product_attention. With dropout in a graph that needs gradients it is written
    with ops (softmax, dropout, matmul), so the dropout mask is kept for backward by dropout's own
    autograd; otherwise it is the one fused operator."""
    import ember
    if query.device.type == "cuda":
        from ..ops.meta import flash
        if flash.applies(query, key, value, attn_mask, dropout_p, enable_gqa):
            # the flash kernels, as PyTorch's sdpa on CUDA: the output and logsumexp are what the
            # backward (eager, or AOT autograd's graph) reads instead of recomputing the scores
            return _aten._scaled_dot_product_flash_attention.default(query, key, value, 0.0, is_causal,
                                                                      scale=scale)[0]
    op = _aten.scaled_dot_product_attention.default
    if not (dropout_p > 0 and ember.is_grad_enabled() and any(t.requires_grad for t in (query, key, value))):
        return op(query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
    q, k, v = query, key, value
    if enable_gqa and q.ndim >= 3 and k.shape[-3] != q.shape[-3]:
        rep = q.shape[-3] // k.shape[-3]
        k, v = k.repeat_interleave(rep, dim=-3), v.repeat_interleave(rep, dim=-3)
    factor = 1.0 / _math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q @ k.mT) * factor
    if is_causal:
        keep = ember.ones(q.shape[-2], k.shape[-2], dtype=ember.bool, device=q.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    if attn_mask is not None:
        scores = scores.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype is ember.bool else scores + attn_mask
    weights = ember.nn.functional.dropout(ember.softmax(scores, dim=-1), dropout_p, training=True)
    return weights @ v

for _fn in (conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, adaptive_avg_pool1d,
           pixel_shuffle, pixel_unshuffle, relu, relu_, relu6, leaky_relu, leaky_relu_, elu, elu_,
           selu, selu_, celu, celu_, silu, mish, hardtanh, hardtanh_, hardsigmoid, hardswish,
           threshold, threshold_, hardshrink, prelu, rrelu, rrelu_, softsign, tanhshrink, sigmoid,
           tanh, max_pool1d, max_pool2d, max_pool1d_with_indices, max_pool2d_with_indices, avg_pool1d,
           avg_pool2d, adaptive_avg_pool2d, adaptive_max_pool1d, adaptive_max_pool2d, unfold, fold,
           dropout, alpha_dropout, feature_alpha_dropout, dropout1d, dropout2d, dropout3d, bilinear,
           embedding, batch_norm, instance_norm, layer_norm, rms_norm, group_norm, normalize,
           cosine_similarity, pairwise_distance, interpolate, scaled_dot_product_attention,):
    _export("nn.functional", _fn.__name__, _fn)
_export("", "rrelu", _torch_rrelu)
_export("", "rrelu_", _torch_rrelu_)

from .functional_loss import *  # noqa: E402,F401,F403  (the losses; they use _reduction above)


# F's less common families (3-D and fractional pooling, the margin losses, sampling grids ...)
# are files of their own, loaded on the first access to any name they define, so ``import ember``
# stays small; each file's __all__ says what it defines.
_LAZY_FAMILIES = ("functional_pool", "functional_margin_losses", "functional_ctc", "functional_sampling",
                  "functional_misc")


def __getattr__(name):
    if name.startswith("__"):  # probes like __path__ / __wrapped__ load nothing
        raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
    import importlib
    for family in _LAZY_FAMILIES:
        module = importlib.import_module(f"{__package__}.{family}")
        globals().update({n: getattr(module, n) for n in module.__all__})
    if name in globals():
        return globals()[name]
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")


def __dir__():
    import importlib
    names = set(globals())
    for family in _LAZY_FAMILIES:
        names.update(importlib.import_module(f"{__package__}.{family}").__all__)
    return sorted(names)
