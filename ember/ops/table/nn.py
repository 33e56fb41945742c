"""nn operators (table rows): linear layers, embedding, dropout, normalisation, padding, one_hot,
interpolation, distances, attention and losses; plus ``ember.nn.functional``'s Python wrappers
(torch's ``F.*`` functions that parse ``training=``/``inplace=``/``reduction=`` ... and call the
operators)."""
from __future__ import annotations

import math
import warnings

from ..registry import Op, aten
from ..cpu import nn as cpu, loss as cpu_loss
from ..meta import nn as meta

NN = "nn.functional"
FN = dict(variants="function")
HIDDEN = dict(variants="")  # only ember.ops.aten.<name>: PyTorch has no public binding

OPS = [
    Op("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", cpu=cpu.linear, meta=meta.linear,
       namespace=NN, **FN),
    Op("bilinear(Tensor input1, Tensor input2, Tensor weight, Tensor? bias=None) -> Tensor", cpu=cpu.bilinear,
       meta=meta.bilinear, **FN),
    Op("embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, "
       "bool sparse=False) -> Tensor", cpu=cpu.embedding, meta=meta.embedding, **FN),
    Op("embedding_renorm_(Tensor(a!) self, Tensor indices, float max_norm, float norm_type) -> Tensor(a!)",
       cpu=cpu.embedding_renorm_, meta=meta.embedding_renorm_, **FN),
    # dropout: random, so never CSE'd; dropout_ & co. are derived (result written into input)
    Op("dropout(Tensor input, float p, bool train) -> Tensor", cpu=cpu.dropout, meta=meta.dropout_like("dropout"),
       inplace=True, nondeterministic=True, **FN),
    Op("feature_dropout(Tensor input, float p, bool train) -> Tensor", cpu=cpu.feature_dropout,
       meta=meta.dropout_like("feature_dropout"), inplace=True, nondeterministic=True, **FN),
    Op("alpha_dropout(Tensor input, float p, bool train) -> Tensor", cpu=cpu.alpha_dropout,
       meta=meta.dropout_like("alpha_dropout"), inplace=True, nondeterministic=True, **FN),
    Op("feature_alpha_dropout(Tensor input, float p, bool train) -> Tensor", cpu=cpu.feature_alpha_dropout,
       meta=meta.dropout_like("feature_alpha_dropout"), inplace=True, nondeterministic=True, **FN),
    # normalisation
    Op("layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "
       "float eps=1e-05, bool cudnn_enable=True) -> Tensor", cpu=cpu.layer_norm, meta=meta.layer_norm, **FN),
    Op("rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor",
       cpu=cpu.rms_norm, meta=meta.rms_norm, **FN),
    Op("batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, "
       "bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor", cpu=cpu.batch_norm,
       meta=meta.batch_norm, **FN),
    Op("instance_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, "
       "bool use_input_stats, float momentum, float eps, bool cudnn_enabled) -> Tensor", cpu=cpu.instance_norm,
       meta=meta.instance_norm, **FN),
    Op("group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, "
       "bool cudnn_enabled=True) -> Tensor", cpu=cpu.group_norm, meta=meta.group_norm, **FN),
    # F.normalize is Python in PyTorch; ember gives its body one private operator
    Op("_ember_normalize(Tensor input, float p, int dim, float eps) -> Tensor", cpu=cpu.normalize,
       meta=meta.normalize, **HIDDEN),
    # distances
    Op("cosine_similarity(Tensor x1, Tensor x2, int dim=1, float eps=1e-08) -> Tensor", cpu=cpu.cosine_similarity,
       meta=meta.cosine_similarity, **FN),
    Op("pairwise_distance(Tensor x1, Tensor x2, float p=2., float eps=1e-06, bool keepdim=False) -> Tensor",
       cpu=cpu.pairwise_distance, meta=meta.pairwise_distance, **FN),
    # padding, one_hot
    Op('pad(Tensor self, SymInt[] pad, str mode="constant", float? value=None) -> Tensor', cpu=cpu.pad,
       meta=meta.pad, namespace=NN, **FN),
    Op("constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor", cpu=cpu.constant_pad_nd,
       meta=meta.constant_pad_nd, **FN),
    Op("one_hot(Tensor self, int num_classes=-1) -> Tensor", cpu=cpu.one_hot, meta=meta.one_hot, namespace=NN,
       **FN),
    # attention
    Op("scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
       "float dropout_p=0., bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor",
       cpu=cpu.scaled_dot_product_attention, meta=meta.scaled_dot_product_attention, namespace=NN,
       nondeterministic=True, **FN),    # dropout_p > 0 draws a mask (torch tags it nondeterministic_seeded)
    # losses (reduction: 0 none, 1 mean, 2 sum)
    Op("cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, "
       "SymInt ignore_index=-100, float label_smoothing=0.) -> Tensor", cpu=cpu_loss.cross_entropy_loss,
       meta=meta.cross_entropy_loss, **HIDDEN),
    Op("nll_loss_nd(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, SymInt ignore_index=-100) "
       "-> Tensor", cpu=cpu_loss.nll_loss_nd, meta=meta.nll_loss_nd, **HIDDEN),
    Op("mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", cpu=cpu_loss.mse_loss,
       meta=meta.mse_loss, **HIDDEN),
    Op("l1_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", cpu=cpu_loss.l1_loss, meta=meta.l1_loss,
       **HIDDEN),
    Op("smooth_l1_loss(Tensor self, Tensor target, int reduction=1, float beta=1.) -> Tensor",
       cpu=cpu_loss.smooth_l1_loss, meta=meta.smooth_l1_loss, **HIDDEN),
    Op("huber_loss(Tensor self, Tensor target, int reduction=1, float delta=1.) -> Tensor",
       cpu=cpu_loss.huber_loss, meta=meta.huber_loss, **HIDDEN),
    Op("binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=1) -> Tensor",
       cpu=cpu_loss.binary_cross_entropy, meta=meta.binary_cross_entropy, **HIDDEN),
    Op("binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, "
       "Tensor? pos_weight=None, int reduction=1) -> Tensor", cpu=cpu_loss.binary_cross_entropy_with_logits,
       meta=meta.binary_cross_entropy_with_logits, **FN),
    Op("kl_div(Tensor self, Tensor target, int reduction=1, *, bool log_target=False) -> Tensor",
       cpu=cpu_loss.kl_div, meta=meta.kl_div, **FN),
]

_UPSAMPLE = (  # (aten name, cpu kernel, spatial dims, float only, has align_corners)
    ("upsample_nearest1d", cpu.upsample_nearest1d, 1, False, False),
    ("upsample_nearest2d", cpu.upsample_nearest2d, 2, False, False),
    ("upsample_nearest3d", cpu.upsample_nearest3d, 3, False, False),
    ("_upsample_nearest_exact1d", cpu.upsample_nearest_exact1d, 1, False, False),
    ("_upsample_nearest_exact2d", cpu.upsample_nearest_exact2d, 2, False, False),
    ("_upsample_nearest_exact3d", cpu.upsample_nearest_exact3d, 3, False, False),
    ("upsample_linear1d", cpu.upsample_linear1d, 1, True, True),
    ("upsample_bilinear2d", cpu.upsample_bilinear2d, 2, True, True),
    ("upsample_trilinear3d", cpu.upsample_trilinear3d, 3, True, True),
    ("upsample_bicubic2d", cpu.upsample_bicubic2d, 2, True, True),
)
for _name, _kernel, _n, _float_only, _align in _UPSAMPLE:
    OPS.append(Op(f"{_name}.vec(Tensor input, SymInt[]? output_size, {'bool align_corners, ' if _align else ''}"
                  f"float[]? scale_factors) -> Tensor", cpu=_kernel,
                  meta=meta.upsample(_name, _n, _float_only, _align), **HIDDEN))


# ---------------------------------------------------------------------------------------
# ember.nn.functional: PyTorch's Python wrappers
# ---------------------------------------------------------------------------------------
def _reduction(reduction, size_average=None, reduce=None):
    """The ATen reduction enum of torch's reduction= / legacy size_average= reduce= arguments."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
        warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
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
    return (aten.dropout_.default if inplace else aten.dropout.default)(input, p, training)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    return (aten.alpha_dropout_.default if inplace else aten.alpha_dropout.default)(input, p, training)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_p(p)
    return (aten.feature_alpha_dropout_.default if inplace else aten.feature_alpha_dropout.default)(
        input, p, training)


def _feature_dropout(name, batched_dims, input, p, training, inplace, strict):
    _check_p(p)
    nd = input.dim()
    if nd not in (batched_dims - 1, batched_dims):
        msg = (f"{name}: Expected {batched_dims - 1}D or {batched_dims}D input, but received a {nd}D input.")
        if strict:
            raise RuntimeError(msg)
        warnings.warn(f"{name}: Received a {nd}-D input to {name}, which is deprecated and will result in an "
                      "error in a future release.", stacklevel=3)
    unbatched = nd == batched_dims - 1 and name != "dropout2d"
    if unbatched:
        input = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
    out = (aten.feature_dropout_.default if inplace else aten.feature_dropout.default)(input, p, training)
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
    return aten.bilinear.default(input1, input2, weight, bias)


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
        aten.embedding_renorm_.default(weight, input, max_norm, norm_type)
    return aten.embedding.default(weight, input, padding_idx, scale_grad_by_freq, sparse)


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
    return aten.batch_norm.default(input, weight, bias, running_mean, running_var, training, momentum, eps, True)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    if use_input_stats:
        size = list(input.shape)
        if math.prod(size[2:]) == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")
    return aten.instance_norm.default(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                                      eps, True)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    return aten.layer_norm.default(input, normalized_shape, weight, bias, eps, True)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return aten.rms_norm.default(input, normalized_shape, weight, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    size = list(input.shape)
    _verify_batch_size([size[0] * size[1] // num_groups, num_groups] + size[2:])
    return aten.group_norm.default(input, num_groups, weight, bias, eps, True)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p along dim, eps)."""
    r = aten._ember_normalize.default(input, float(p), dim, eps)
    if out is not None:
        out.copy_(r)
        return out
    return r


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    return aten.cosine_similarity.default(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return aten.pairwise_distance.default(x1, x2, p, eps, keepdim)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims (nearest, nearest-exact, linear, bilinear, bicubic, trilinear)."""
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
    if antialias or mode in ("area", "lanczos"):
        raise NotImplementedError(f"interpolate: mode={mode!r} / antialias=True is not implemented in ember")
    nearest = {"nearest": "upsample_nearest", "nearest-exact": "_upsample_nearest_exact"}
    interp = {("linear", 3): "upsample_linear1d", ("bilinear", 4): "upsample_bilinear2d",
              ("trilinear", 5): "upsample_trilinear3d", ("bicubic", 4): "upsample_bicubic2d"}
    if mode in nearest and input.dim() in (3, 4, 5):
        op = getattr(aten, f"{nearest[mode]}{dim}d")
        return op.vec(input, output_size, scale_factors)
    if (mode, input.dim()) in interp:
        return getattr(aten, interp[(mode, input.dim())]).vec(input, output_size, align_corners, scale_factors)
    needs = {"linear": 3, "bilinear": 4, "trilinear": 5, "bicubic": 4}
    if mode in needs and input.dim() in (3, 4, 5):
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {needs[mode]}D input")
    raise NotImplementedError("Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                              f"{input.dim()}D) for the modes: nearest | linear | bilinear | bicubic | trilinear | "
                              f"lanczos | area | nearest-exact (got {mode})")


# losses -----------------------------------------------------------------------------------
def _warn_size(input, target):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have "
                      "the same size.", stacklevel=3)


def _no_weight(name, weight):
    if weight is not None:
        raise NotImplementedError(f"{name}: weight= is not implemented in ember")


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """log_softmax + nll_loss for class indices, or -sum(target * log_softmax) for probabilities."""
    return aten.cross_entropy_loss.default(input, target, weight, _reduction(reduction, size_average, reduce),
                                           ignore_index, label_smoothing)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    return aten.nll_loss_nd.default(input, target, weight, _reduction(reduction, size_average, reduce),
                                    ignore_index)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _warn_size(input, target)
    _no_weight("mse_loss", weight)
    return aten.mse_loss.default(input, target, _reduction(reduction, size_average, reduce))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _warn_size(input, target)
    _no_weight("l1_loss", weight)
    return aten.l1_loss.default(input, target, _reduction(reduction, size_average, reduce))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    _warn_size(input, target)
    enum = _reduction(reduction, size_average, reduce)
    if beta == 0.0:
        return aten.l1_loss.default(input, target, enum)
    return aten.smooth_l1_loss.default(input, target, enum, beta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    _warn_size(input, target)
    _no_weight("huber_loss", weight)
    return aten.huber_loss.default(input, target, _reduction(reduction), delta)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    enum = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    return aten.binary_cross_entropy.default(input, target, weight, enum)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    enum = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    return aten.binary_cross_entropy_with_logits.default(input, target, weight, pos_weight, enum)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL divergence; 'batchmean' divides the sum by the batch size."""
    if size_average is not None or reduce is not None:
        enum = _reduction(reduction, size_average, reduce)
    else:
        if reduction == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                          "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                          "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                          stacklevel=2)
        enum = 2 if reduction == "batchmean" else _reduction(reduction)
    out = aten.kl_div.default(input, target, enum, log_target=log_target)
    if reduction == "batchmean" and input.dim() != 0:
        out = out / input.size(0)
    return out


# torch.kl_div / torch.binary_cross_entropy_with_logits: PyTorch's Python bindings default
# reduction to 0 ('none'), not the schema's Mean; mirror that quirk.
def _torch_kl_div(input, target, reduction=0, *, log_target=False):
    return aten.kl_div.default(input, target, reduction, log_target=log_target)


def _torch_bce_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    return aten.binary_cross_entropy_with_logits.default(input, target, weight, pos_weight, reduction)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """F.scaled_dot_product_attention. With dropout in a graph that needs gradients it is written
    with ops (softmax, dropout, matmul), so the dropout mask is kept for backward by dropout's own
    autograd; otherwise it is the one fused operator."""
    import ember
    op = aten.scaled_dot_product_attention.default
    if not (dropout_p > 0 and ember.is_grad_enabled() and any(t.requires_grad for t in (query, key, value))):
        return op(query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
    q, k, v = query, key, value
    if enable_gqa and q.ndim >= 3 and k.shape[-3] != q.shape[-3]:
        rep = q.shape[-3] // k.shape[-3]
        k, v = k.repeat_interleave(rep, dim=-3), v.repeat_interleave(rep, dim=-3)
    factor = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q @ k.mT) * factor
    if is_causal:
        keep = ember.ones(q.shape[-2], k.shape[-2], dtype=ember.bool).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    if attn_mask is not None:
        scores = scores.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype is ember.bool else scores + attn_mask
    weights = ember.nn.functional.dropout(ember.softmax(scores, dim=-1), dropout_p, training=True)
    return weights @ v


PYTHON_FUNCTIONS = {"": {"kl_div": _torch_kl_div, "binary_cross_entropy_with_logits": _torch_bce_with_logits},
                    NN: {
    "dropout": dropout, "alpha_dropout": alpha_dropout, "feature_alpha_dropout": feature_alpha_dropout,
    "dropout1d": dropout1d, "dropout2d": dropout2d, "dropout3d": dropout3d, "bilinear": bilinear,
    "embedding": embedding, "batch_norm": batch_norm, "instance_norm": instance_norm, "layer_norm": layer_norm,
    "rms_norm": rms_norm, "group_norm": group_norm, "normalize": normalize, "cosine_similarity": cosine_similarity,
    "pairwise_distance": pairwise_distance, "interpolate": interpolate, "cross_entropy": cross_entropy,
    "nll_loss": nll_loss, "mse_loss": mse_loss, "l1_loss": l1_loss, "smooth_l1_loss": smooth_l1_loss,
    "huber_loss": huber_loss, "binary_cross_entropy": binary_cross_entropy,
    "binary_cross_entropy_with_logits": binary_cross_entropy_with_logits, "kl_div": kl_div,
    "scaled_dot_product_attention": scaled_dot_product_attention,
}}
