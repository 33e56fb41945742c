"""nn operators (table rows): linear layers, embedding, dropout, normalisation, padding, one_hot,
interpolation, distances, attention and losses. torch's ``F.*`` Python wrappers of them (which parse
``training=``/``inplace=``/``reduction=`` ... and call these operators) are in ember/nn/functional.py
and ember/nn/functional_loss.py."""
from __future__ import annotations

from ..registry import Op
from ..cpu import attention as cpu_attention, nn as cpu, loss as cpu_loss
from ..meta import loss as meta_loss
from ..meta import nn as meta

NN = "nn.functional"
FN = dict(variants="function")
HIDDEN = dict(variants="")  # only ember.ops.aten.<name>: PyTorch has no public binding


def _lazy(module, name):
    """A kernel that imports its module on the first call (``import ember`` loads neither CuPy nor Triton)."""
    def kernel(*args, **kwargs):
        from importlib import import_module
        return getattr(import_module(module), name)(*args, **kwargs)
    kernel.__name__ = name
    return kernel

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
       cpu=cpu_attention.scaled_dot_product_attention, meta=meta.scaled_dot_product_attention, namespace=NN,
       nondeterministic=True, **FN),    # dropout_p > 0 draws a mask (torch tags it nondeterministic_seeded)
    # the CUDA flash kernels (F.scaled_dot_product_attention picks them; no CPU kernel, as in PyTorch):
    # (output, logsumexp) without PyTorch's seven dropout/varlen values (ember/ops/meta/flash.py)
    Op("_scaled_dot_product_flash_attention(Tensor query, Tensor key, Tensor value, float dropout_p=0., "
       "bool is_causal=False, bool return_debug_mask=False, *, float? scale=None) -> (Tensor output, "
       "Tensor logsumexp)", cuda=_lazy("ember._cuda.flash_ops", "forward"),
       meta=_lazy("ember.ops.meta.flash", "forward_meta"), nondeterministic=True, **HIDDEN),   # as sdpa's row
    Op("_scaled_dot_product_flash_attention_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value, "
       "Tensor out, Tensor logsumexp, float dropout_p, bool is_causal, *, float? scale=None) -> "
       "(Tensor grad_query, Tensor grad_key, Tensor grad_value)", cuda=_lazy("ember._cuda.flash_ops", "backward"),
       meta=_lazy("ember.ops.meta.flash", "backward_meta"), **HIDDEN),
    # losses (reduction: 0 none, 1 mean, 2 sum)
    Op("cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, "
       "SymInt ignore_index=-100, float label_smoothing=0.) -> Tensor", cpu=cpu_loss.cross_entropy_loss,
       meta=meta_loss.cross_entropy_loss, **HIDDEN),
    Op("nll_loss_nd(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, SymInt ignore_index=-100) "
       "-> Tensor", cpu=cpu_loss.nll_loss_nd, meta=meta_loss.nll_loss_nd, **HIDDEN),
    Op("mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", cpu=cpu_loss.mse_loss,
       meta=meta_loss.mse_loss, **HIDDEN),
    Op("l1_loss(Tensor self, Tensor target, int reduction=1) -> Tensor", cpu=cpu_loss.l1_loss, meta=meta_loss.l1_loss,
       **HIDDEN),
    Op("smooth_l1_loss(Tensor self, Tensor target, int reduction=1, float beta=1.) -> Tensor",
       cpu=cpu_loss.smooth_l1_loss, meta=meta_loss.smooth_l1_loss, **HIDDEN),
    Op("huber_loss(Tensor self, Tensor target, int reduction=1, float delta=1.) -> Tensor",
       cpu=cpu_loss.huber_loss, meta=meta_loss.huber_loss, **HIDDEN),
    Op("binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=1) -> Tensor",
       cpu=cpu_loss.binary_cross_entropy, meta=meta_loss.binary_cross_entropy, **HIDDEN),
    Op("binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, "
       "Tensor? pos_weight=None, int reduction=1) -> Tensor", cpu=cpu_loss.binary_cross_entropy_with_logits,
       meta=meta_loss.binary_cross_entropy_with_logits, **FN),
    Op("kl_div(Tensor self, Tensor target, int reduction=1, *, bool log_target=False) -> Tensor",
       cpu=cpu_loss.kl_div, meta=meta_loss.kl_div, **FN),
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
