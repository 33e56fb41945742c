"""Decompositions of nn ops (ember/ops/table/nn.py, conv.py's pooling) into core ops.

Each runs the op's own checks (ember/ops/meta/nn.py) first, so bad input raises eager's error.
Normalisations compute mean and biased variance with core reductions and write the running
statistics back with ``copy_`` (eager updates them in place too). Dropout draws its mask with
``rand(shape, dtype=float64) < 1 - p``, the draw eager's kernel makes (ember/ops/cpu/nn.py
``_uniform``), so a seed gives eager's mask.
"""
from __future__ import annotations

import math

import numpy as np

from ...ops.meta import nn as rules
from ._ops import aten, to
from .linalg import matmul


# -- linear layers ---------------------------------------------------------------------------
def linear(input, weight, bias=None):
    rules.linear_rule(input, weight, bias)
    if input.dim() == 2 and weight.dim() == 2 and bias is not None:
        return aten.addmm.default(bias, input, aten.permute.default(weight, [1, 0]))
    out = matmul(input, aten.permute.default(weight, [1, 0]) if weight.dim() == 2 else weight)
    return out if bias is None else aten.add.Tensor(out, bias)


def bilinear(input1, input2, weight, bias=None):
    """y[n, o] = sum_ij x1[n, i] w[o, i, j] x2[n, j]: one matmul of x1 with w laid out [i, o*j]."""
    rules.bilinear_rule(input1, input2, weight, bias)
    out_features, in1, in2 = weight.shape
    lead = list(input1.shape[:-1])
    x1 = aten.reshape.default(input1, [-1, in1])
    x2 = aten.reshape.default(input2, [-1, in2])
    w = aten.reshape.default(aten.permute.default(weight, [1, 0, 2]), [in1, out_features * in2])
    t = aten.view.default(aten.mm.default(x1, w), [-1, out_features, in2])
    y = aten.sum.dim_IntList(aten.mul.Tensor(t, aten.unsqueeze.default(x2, 1)), [2])
    if bias is not None:
        y = aten.add.Tensor(y, bias)
    return aten.view.default(y, lead + [out_features])


# -- dropout -----------------------------------------------------------------------------------
def _rounded(value, dtype):
    """`value` rounded to `dtype` (eager's kernel divides by ``dtype.type(1 - p)``)."""
    return float(np.array(value, dtype=dtype.np)) if dtype.is_floating_point else value


def _keep_mask(input, p, feature):
    from ... import float64
    shape = list(input.shape)
    if feature:
        shape = shape[:2] + [1] * (len(shape) - 2)
    return aten.lt.Tensor(aten.rand.default(shape, dtype=float64, device=input.device), 1 - p)


def _dropout(op, input, p, train, feature, alpha):
    if not rules.dropout_rule(op, input, p, train):
        if not train or p == 0 or input.numel() == 0:
            return input
        return aten.full_like.default(input, 0)
    keep = _keep_mask(input, p, feature)
    if alpha:
        a_const = 1.7580993408473766
        with np.errstate(divide="ignore", invalid="ignore"):    # p > 1: nan, as eager computes it
            a = float(1.0 / np.sqrt(np.float64((a_const * a_const * p + 1) * (1 - p))))
        noise = to(keep, input.dtype)
        shift = aten.add.Tensor(aten.mul.Tensor(aten.sub.Tensor(noise, 1), a_const * a), a_const * a * p)
        return aten.add.Tensor(aten.mul.Tensor(input, aten.mul.Tensor(noise, a)), shift)
    noise = aten.div.Tensor(to(keep, input.dtype), _rounded(1 - p, input.dtype))
    return aten.mul.Tensor(input, noise)


def dropout(input, p, train):
    return _dropout("dropout", input, p, train, False, False)


def feature_dropout(input, p, train):
    return _dropout("feature_dropout", input, p, train, True, False)


def alpha_dropout(input, p, train):
    return _dropout("alpha_dropout", input, p, train, False, True)


def feature_alpha_dropout(input, p, train):
    return _dropout("feature_alpha_dropout", input, p, train, True, True)


# -- normalisation -----------------------------------------------------------------------------
def _normalized(x, dims, eps):
    """(x - mean) * rsqrt(biased var + eps) over `dims`; returns (y, mean, var) (kept dims)."""
    mean = aten.mean.dim(x, dims, True)
    centered = aten.sub.Tensor(x, mean)
    var = aten.mean.dim(aten.mul.Tensor(centered, centered), dims, True)
    return aten.mul.Tensor(centered, aten.rsqrt.default(aten.add.Tensor(var, eps))), mean, var


def _affine(y, weight, bias, shape=None):
    if weight is not None:
        y = aten.mul.Tensor(y, weight if shape is None else aten.view.default(weight, shape))
    if bias is not None:
        y = aten.add.Tensor(y, bias if shape is None else aten.view.default(bias, shape))
    return y


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    rules.layer_norm_check(input, normalized_shape, weight, bias)
    if input.numel() == 0:
        return aten.empty_strided.default(list(input.shape), _contiguous_strides(input.shape), dtype=input.dtype)
    dims = list(range(input.dim() - len(normalized_shape), input.dim()))
    y, _, _ = _normalized(input, dims, eps)
    return _affine(y, weight, bias)


def _contiguous_strides(shape):
    from ..._core.storage import contiguous_strides
    return list(contiguous_strides(tuple(shape)))


def rms_norm(input, normalized_shape, weight=None, eps=None):
    out_dtype = rules.rms_norm_rule(input, normalized_shape, weight)
    if eps is None:
        eps = float(np.finfo(input.dtype.np).eps)
    if input.numel() == 0:
        return aten.empty_strided.default(list(input.shape), _contiguous_strides(input.shape), dtype=out_dtype)
    dims = list(range(input.dim() - len(normalized_shape), input.dim()))
    mean_square = aten.mean.dim(aten.mul.Tensor(input, input), dims, True)
    y = aten.mul.Tensor(input, aten.rsqrt.default(aten.add.Tensor(mean_square, eps)))
    return y if weight is None else aten.mul.Tensor(y, weight)


def _channel_shape(x):
    return [1, x.shape[1]] + [1] * (x.dim() - 2)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    rules.batch_norm_check(input, weight, bias, running_mean, running_var, training)
    if input.numel() == 0:
        return aten.empty_strided.default(list(input.shape), _contiguous_strides(input.shape), dtype=input.dtype)
    shape = _channel_shape(input)
    dims = [0] + list(range(2, input.dim()))
    if training:
        y, mean, var = _normalized(input, dims, eps)
        count = input.numel() // input.shape[1]
        _update_running(running_mean, running_var, aten.view.default(mean, [-1]), aten.view.default(var, [-1]),
                        count, momentum)
    else:
        mean, var = aten.view.default(running_mean, shape), aten.view.default(running_var, shape)
        y = aten.mul.Tensor(aten.sub.Tensor(input, mean), aten.rsqrt.default(aten.add.Tensor(var, eps)))
    return _affine(y, weight, bias, shape)


def _update_running(running_mean, running_var, mean, var, count, momentum):
    """running = momentum * batch + (1 - momentum) * running (the variance unbiased), in place."""
    if running_mean is not None:
        new_mean = aten.add.Tensor(aten.mul.Tensor(mean, momentum), aten.mul.Tensor(running_mean, 1 - momentum))
        aten.copy_.default(running_mean, new_mean)
    if running_var is not None:
        unbiased = aten.mul.Tensor(var, count / (count - 1)) if count > 1 else aten.full_like.default(var, math.inf)
        new_var = aten.add.Tensor(aten.mul.Tensor(unbiased, momentum), aten.mul.Tensor(running_var, 1 - momentum))
        aten.copy_.default(running_var, new_var)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    rules.instance_norm_check(input, weight, bias, running_mean, running_var, use_input_stats)
    if input.numel() == 0:
        return aten.empty_strided.default(list(input.shape), _contiguous_strides(input.shape), dtype=input.dtype)
    shape = _channel_shape(input)
    if use_input_stats:
        y, mean, var = _normalized(input, list(range(2, input.dim())), eps)
        count = input.numel() // (input.shape[0] * input.shape[1])
        # the running stats get the batch average of the per-instance updates
        _update_running(running_mean, running_var, aten.mean.dim(aten.view.default(mean, input.shape[:2]), [0]),
                        aten.mean.dim(aten.view.default(var, input.shape[:2]), [0]), count, momentum)
    else:
        mean, var = aten.view.default(running_mean, shape), aten.view.default(running_var, shape)
        y = aten.mul.Tensor(aten.sub.Tensor(input, mean), aten.rsqrt.default(aten.add.Tensor(var, eps)))
    return _affine(y, weight, bias, shape)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    rules.group_norm_check(input, num_groups, weight, bias)
    if input.numel() == 0:
        return aten.empty_strided.default(list(input.shape), _contiguous_strides(input.shape), dtype=input.dtype)
    grouped = aten.reshape.default(input, [input.shape[0], num_groups, -1])
    y, _, _ = _normalized(grouped, [2], eps)
    return _affine(aten.view.default(y, list(input.shape)), weight, bias, _channel_shape(input))


def normalize(input, p, dim, eps):
    from .reduction import linalg_vector_norm
    if not input.dtype.is_floating_point and not input.dtype.is_complex:
        raise RuntimeError(f"normalize(): linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {input.dtype.c10_name}")
    norm = linalg_vector_norm(input, p, [dim] if input.dim() else None, True)
    return aten.div.Tensor(input, aten.clamp.default(norm, eps))


def cosine_similarity(x1, x2, dim=1, eps=1e-08):
    shape, d, _, dtype = rules.cosine_similarity_rule(x1, x2, dim)
    from .reduction import linalg_vector_norm
    a = aten.expand.default(to(x1, dtype), list(shape))
    b = aten.expand.default(to(x2, dtype), list(shape))
    na = aten.clamp.default(linalg_vector_norm(a, 2, [d], True), eps)
    nb = aten.clamp.default(linalg_vector_norm(b, 2, [d], True), eps)
    return aten.sum.dim_IntList(aten.mul.Tensor(aten.div.Tensor(a, na), aten.div.Tensor(b, nb)), [d])


def pairwise_distance(x1, x2, p=2.0, eps=1e-06, keepdim=False):
    shape, d, _, diff_dtype, dtype = rules.pairwise_distance_rule(x1, x2, keepdim)
    from .reduction import linalg_vector_norm
    diff = aten.add.Tensor(to(aten.sub.Tensor(x1, x2), diff_dtype), eps)
    if diff.dim() == 0:
        return to(linalg_vector_norm(diff, p), dtype)
    return to(linalg_vector_norm(diff, p, [d], keepdim), dtype)


def pad(self, pad, mode="constant", value=None):
    """constant: constant_pad_nd; reflect, replicate, circular: index_select with an index built
    from arange (ATen's decompositions do the same)."""
    shape = rules.pad_rule(self, pad, mode, value)
    if mode == "constant":
        return aten.constant_pad_nd.default(self, list(pad), 0.0 if value is None else value)
    from ... import int64
    out = self
    for i in range(len(pad) // 2):
        d = self.dim() - 1 - i
        size, new, lo = self.shape[d], shape[d], pad[2 * i]
        if size == 0 or new == 0:
            return aten.empty_strided.default(list(shape), _contiguous_strides(shape), dtype=self.dtype)
        position = aten.arange.start_step(-lo, new - lo, 1, dtype=int64, device=self.device)
        if mode == "reflect":
            position = aten.abs.default(position)
            position = aten.where.self(aten.ge.Tensor(position, size),
                                       aten.sub.Tensor(aten.full_like.default(position, 2 * (size - 1)), position),
                                       position)
        elif mode == "replicate":
            position = aten.clamp.default(position, 0, size - 1)
        else:   # circular: negative pads crop first, the kept part wraps around
            hi = new - size - lo
            start, kept = max(-lo, 0), size - max(-lo, 0) - max(-hi, 0)
            shifted = aten.arange.start_step(-max(lo, 0), new - max(lo, 0), 1, dtype=int64, device=self.device)
            position = aten.add.Tensor(aten.remainder.Tensor(shifted, max(kept, 1)), start)
        out = aten.index_select.default(out, d, position)
    return out


# -- attention ---------------------------------------------------------------------------------
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(q @ k^T * scale + mask) @ v; rows masked everywhere give zeros (ATen's math path)."""
    rules.sdpa_rule(query, key, value, attn_mask, is_causal, enable_gqa)
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3 and query.shape[-3] != key.shape[-3]:
        from .shape import repeat_interleave
        repeats = query.shape[-3] // key.shape[-3]
        key = repeat_interleave(key, repeats, key.dim() - 3)
        value = repeat_interleave(value, repeats, value.dim() - 3)
    embed = query.shape[-1]
    factor = (1.0 / math.sqrt(embed) if embed else math.inf) if scale is None else scale
    k_t = aten.permute.default(key, list(range(key.dim() - 2)) + [key.dim() - 1, key.dim() - 2])
    scores = aten.mul.Tensor(matmul(query, k_t), factor)
    if is_causal:
        from ... import int64
        rows, cols = query.shape[-2], key.shape[-2]
        row = aten.unsqueeze.default(aten.arange.start_step(0, rows, 1, dtype=int64, device=query.device), -1)
        col = aten.arange.start_step(0, cols, 1, dtype=int64, device=query.device)
        scores = aten.where.self(aten.le.Tensor(aten.sub.Tensor(col, row), 0), scores, -math.inf)
    if attn_mask is not None:
        if attn_mask.dtype.name == "bool":
            scores = aten.where.self(attn_mask, scores, -math.inf)
        else:
            scores = aten.add.Tensor(scores, to(attn_mask, scores.dtype))
    high = aten.amax.default(scores, [-1], True)
    dead = aten.eq.Tensor(high, -math.inf)
    exps = aten.exp.default(aten.sub.Tensor(scores, aten.where.self(dead, 0, high)))
    total = aten.sum.dim_IntList(exps, [-1], True)
    attn = aten.where.self(dead, 0, aten.div.Tensor(exps, aten.where.self(dead, 1, total)))
    if dropout_p > 0:
        from ... import float64
        keep = aten.lt.Tensor(aten.rand.default(list(attn.shape), dtype=float64, device=attn.device), 1 - dropout_p)
        attn = aten.div.Tensor(aten.mul.Tensor(attn, keep), _rounded(1 - dropout_p, attn.dtype))
    return matmul(attn, value)


# -- pooling: 1-d through the 2-d kernels, plain max pools through their with-indices form ------
def _one(v, default=None):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v[0] if v else default


def max_pool2d(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return aten.max_pool2d_with_indices.default(self, kernel_size, stride, padding, dilation, ceil_mode)[0]


def max_pool1d_with_indices(self, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    if self.dim() not in (2, 3):
        from ._ops import eager_error
        eager_error(aten.max_pool1d_with_indices.default, self, kernel_size, stride, padding, dilation, ceil_mode)
    k = _one(kernel_size)
    s = _one(stride, k)
    values, indices = aten.max_pool2d_with_indices.default(
        aten.unsqueeze.default(self, -2), [1, k], [1, s], [0, _one(padding, 0)], [1, _one(dilation, 1)], ceil_mode)
    return aten.squeeze.dims(values, [values.dim() - 2]), aten.squeeze.dims(indices, [indices.dim() - 2])


def max_pool1d(self, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    return max_pool1d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)[0]


def avg_pool1d(self, kernel_size, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True):
    if self.dim() not in (2, 3):
        from ._ops import eager_error
        eager_error(aten.avg_pool1d.default, self, kernel_size, stride, padding, ceil_mode, count_include_pad)
    k = _one(kernel_size)
    pooled = aten.avg_pool2d.default(aten.unsqueeze.default(self, -2), [1, k], [1, _one(stride, k)],
                                     [0, _one(padding, 0)], ceil_mode, count_include_pad)
    return aten.squeeze.dims(pooled, [pooled.dim() - 2])


def adaptive_avg_pool1d(self, output_size):
    if self.dim() not in (2, 3):
        from ._ops import eager_error
        eager_error(aten.adaptive_avg_pool1d.default, self, output_size)
    pooled = aten.adaptive_avg_pool2d.default(aten.unsqueeze.default(self, -2), [1, _one(output_size)])
    return aten.squeeze.dims(pooled, [pooled.dim() - 2])


def adaptive_max_pool1d(self, output_size):
    if self.dim() not in (2, 3):
        from ._ops import eager_error
        eager_error(aten.adaptive_max_pool1d.default, self, output_size)
    values, indices = aten.adaptive_max_pool2d.default(aten.unsqueeze.default(self, -2), [1, _one(output_size)])
    return aten.squeeze.dims(values, [values.dim() - 2]), aten.squeeze.dims(indices, [indices.dim() - 2])


DECOMPOSITIONS = {
    "linear": linear, "bilinear": bilinear, "dropout": dropout, "feature_dropout": feature_dropout,
    "alpha_dropout": alpha_dropout, "feature_alpha_dropout": feature_alpha_dropout, "layer_norm": layer_norm,
    "rms_norm": rms_norm, "batch_norm": batch_norm, "instance_norm": instance_norm, "group_norm": group_norm,
    "_ember_normalize": normalize, "cosine_similarity": cosine_similarity, "pairwise_distance": pairwise_distance,
    "pad": pad, "scaled_dot_product_attention": scaled_dot_product_attention, "max_pool2d": max_pool2d,
    "max_pool1d": max_pool1d, "max_pool1d_with_indices": max_pool1d_with_indices, "avg_pool1d": avg_pool1d,
    "adaptive_avg_pool1d": adaptive_avg_pool1d, "adaptive_max_pool1d": adaptive_max_pool1d,
}
