"""Meta kernels of the nn family, and the shape/dtype rules the CPU kernels share with them.

Every ``*_rule`` function checks its op's arguments the way ATen does (same exception types,
messages naming the op and argument) and returns the output's shape and dtype; the CPU
kernels in ``ember/ops/cpu/nn.py`` call the same rule before computing (the losses': ``meta/loss.py``), so a
Meta tensor and a CPU tensor always agree. Checks that need the data (index bounds, values in
[0, 1]) live in the CPU kernels only.
"""
from __future__ import annotations

from ..._core import dtype as _dt
from ..._core.tensor import Tensor, wrap_meta
from .. import rules

_HALF_TYPES = (_dt.float16, _dt.bfloat16)
REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def not_implemented(op: str, d) -> NotImplementedError:
    """ATen's dispatch error for a dtype a kernel was not compiled for."""
    return NotImplementedError(f'"{op}" not implemented for \'{d.c10_name}\'')


def require_float(op: str, *tensors) -> None:
    for t in tensors:
        if t is not None and t.dtype.category != _dt.FLOAT:
            raise not_implemented(op, t.dtype)


def check_param_dtype(op: str, x: Tensor, *params) -> None:
    """Norm parameters share the input's dtype, or are float32 for a half/bfloat16 input."""
    for p in params:
        if p is None or p.dtype is x.dtype:
            continue
        if x.dtype in _HALF_TYPES and p.dtype in (_dt.float32, x.dtype):
            continue
        raise RuntimeError(f"{op}(): mixed dtype (CPU): expected parameter to be of dtype {x.dtype.c10_name} or "
                           f"Float, but got {p.dtype.c10_name}")


# ---------------------------------------------------------------------------------------
# linear, bilinear, embedding
# ---------------------------------------------------------------------------------------
def linear_rule(x, w, b):
    X, W = x._data, w._data
    xs, ws = X.shape, W.shape
    if len(ws) == 2 and xs and xs[-1] == ws[1] and X.dtype == W.dtype and X.dtype.kind != "b" and (
            b is None or (b._data.shape == ws[:1] and b._data.dtype == X.dtype)):
        # the common case, read off the arrays (a layer's [out, in] weight and [out] bias, one dtype):
        # the checks below could not fail; ~40% of a small layer's forward on the CPU
        return xs[:-1] + ws[:1], x.dtype
    if x.ndim == 0 or w.ndim == 0:
        raise RuntimeError(f"linear(): both arguments to matmul need to be at least 1D, but they are {x.ndim}D "
                           f"and {w.ndim}D")
    if w.ndim > 2:
        raise RuntimeError(f"linear(): t() expects a tensor with <= 2 dimensions, but weight is {w.ndim}D")
    for t, name in ((w, "weight"), (b, "bias")):
        if t is not None and t.dtype is not x.dtype:
            raise RuntimeError(f"linear(): expected input and {name} to have the same dtype, but got: "
                               f"{x.dtype.c10_name} != {t.dtype.c10_name}")
    if x.dtype is _dt.bool_:
        raise not_implemented("addmm_impl_cpu_", x.dtype)
    in_features = w.shape[-1]
    if x.shape[-1] != in_features:
        rows = 1
        for s in x.shape[:-1]:
            rows *= s
        wt = "x".join(str(s) for s in reversed(w.shape)) if w.ndim == 2 else f"{in_features}"
        raise RuntimeError(f"linear(): mat1 and mat2 shapes cannot be multiplied ({rows}x{x.shape[-1]} and {wt})")
    shape = tuple(x.shape[:-1]) + ((w.shape[0],) if w.ndim == 2 else ())
    if b is not None and rules.broadcast_shapes(shape, b.shape, op="linear") != shape:
        raise RuntimeError(f"linear(): the bias of shape {list(b.shape)} can't be broadcast to the output "
                           f"shape {list(shape)}")
    return shape, x.dtype


def bilinear_rule(x1, x2, w, b):
    if x1.ndim != x2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {x1.ndim} and {x2.ndim}")
    if x1.ndim == 0:
        raise RuntimeError("bilinear(): inputs must be at least 1-D")
    if x1.shape[:-1] != x2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {list(x1.shape)} and "
                           f"{list(x2.shape)}")
    if w.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D, got {w.ndim}-D")
    if x1.shape[-1] != w.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {x1.shape[-1]} but "
                           f"expected {w.shape[1]}")
    if x2.shape[-1] != w.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {x2.shape[-1]} but "
                           f"expected {w.shape[2]}")
    if b is not None and (b.ndim != 1 or b.shape[0] != w.shape[0]):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {b.shape[-1] if b.ndim else 1} "
                           f"but expected {w.shape[0]}")
    dts = {t.dtype for t in (x1, x2, w, b) if t is not None}
    if len(dts) > 1:
        raise RuntimeError("bilinear(): expected all arguments to have the same dtype, but got "
                           + ", ".join(sorted(d.c10_name for d in dts)))
    if x1.dtype is _dt.bool_:
        raise not_implemented("addmm_impl_cpu_", x1.dtype)
    return tuple(x1.shape[:-1]) + (w.shape[0],), x1.dtype


def embedding_rule(weight, indices):
    if weight.ndim != 2:
        raise RuntimeError("embedding(): 'weight' must be 2-D")
    if indices.dtype not in (_dt.int64, _dt.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {_tensor_type_name(indices.dtype)} instead (while checking "
                           "arguments for embedding)")
    return tuple(indices.shape) + (weight.shape[1],), weight.dtype


def _tensor_type_name(d) -> str:
    return f"torch.{d.c10_name}Tensor"


def linear(x, w, b=None):
    return wrap_meta(*linear_rule(x, w, b))


def bilinear(x1, x2, w, b=None):
    return wrap_meta(*bilinear_rule(x1, x2, w, b))


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return wrap_meta(*embedding_rule(weight, indices))


def embedding_renorm_(weight, indices, max_norm, norm_type):
    return weight


# ---------------------------------------------------------------------------------------
# dropout
# ---------------------------------------------------------------------------------------
def dropout_rule(op, x, p, train):
    """True when the op draws a mask (else it returns its input, or zeros for p == 1)."""
    if not train or p == 0 or x.numel() == 0 or p == 1:
        return False
    if x.dtype.category == _dt.COMPLEX:
        raise not_implemented("bernoulli_tensor_cpu_p_", x.dtype)
    if x.dtype.category != _dt.FLOAT:
        raise RuntimeError(f"{op}(): result type Float can't be cast to the desired output type {x.dtype.c10_name}")
    if op.startswith("feature") and x.ndim < 2:
        raise RuntimeError(f"{op}(): Feature dropout requires at least 2 dimensions in the input")
    return True


def dropout_like(op):
    def kernel(x, p, train):
        dropout_rule(op, x, p, train)
        if not train or p == 0 or x.numel() == 0:
            return x
        return wrap_meta(x.shape, x.dtype)
    kernel.__name__ = op
    return kernel


# ---------------------------------------------------------------------------------------
# normalisation
# ---------------------------------------------------------------------------------------
def layer_norm_rule(op, x, normalized_shape, weight, bias=None):
    ns = tuple(normalized_shape)
    if len(ns) < 1:
        raise RuntimeError(f"{op}(): Expected normalized_shape to be at least 1-dimensional, i.e., containing at "
                           f"least one element, but got normalized_shape = {list(ns)}")
    if weight is not None and tuple(weight.shape) != ns:
        raise RuntimeError(f"{op}(): Expected weight to be of same shape as normalized_shape, but got weight of "
                           f"shape {list(weight.shape)} and normalized_shape = {list(ns)}")
    if bias is not None and tuple(bias.shape) != ns:
        raise RuntimeError(f"{op}(): Expected bias to be of same shape as normalized_shape, but got bias of "
                           f"shape {list(bias.shape)} and normalized_shape = {list(ns)}")
    if x.ndim < len(ns) or tuple(x.shape[x.ndim - len(ns):]) != ns:
        raise RuntimeError(f"{op}(): Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*{''.join(', ' + str(s) for s in ns)}], but got input of size{list(x.shape)}")


def layer_norm_check(x, normalized_shape, weight, bias):
    layer_norm_rule("layer_norm", x, normalized_shape, weight, bias)
    require_float("LayerNormKernelImpl", x)
    check_param_dtype("layer_norm", x, weight, bias)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    layer_norm_check(x, normalized_shape, weight, bias)
    return wrap_meta(x.shape, x.dtype)


def rms_norm_rule(x, normalized_shape, weight):
    layer_norm_rule("rms_norm", x, normalized_shape, weight)
    if x.dtype.category not in (_dt.FLOAT, _dt.COMPLEX):
        raise not_implemented("rms_norm", x.dtype)
    return x.dtype


def rms_norm(x, normalized_shape, weight=None, eps=None):
    return wrap_meta(x.shape, rms_norm_rule(x, normalized_shape, weight))


def batch_norm_check(x, weight, bias, running_mean, running_var, training):
    if x.ndim < 2:
        raise IndexError(f"batch_norm(): Dimension out of range (expected to be in range of [{-max(x.ndim, 1)}, "
                         f"{max(x.ndim, 1) - 1}], but got 1)")
    c = x.shape[1]
    for t, name in ((running_mean, "running_mean"), (running_var, "running_var")):
        if t is not None:
            if t.numel() != c:
                raise RuntimeError(f"batch_norm(): {name} should contain {c} elements not {t.numel()}")
        elif not training:
            raise RuntimeError(f"batch_norm(): {name} must be defined in evaluation mode")
    for t, name in ((weight, "weight"), (bias, "bias")):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"batch_norm(): {name} should contain {c} elements not {t.numel()}")
    if x.numel() == 0:
        return
    require_float("batch_norm", x)
    check_param_dtype("batch_norm", x, weight, bias, running_mean, running_var)


def batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    batch_norm_check(x, weight, bias, running_mean, running_var, training)
    return wrap_meta(x.shape, x.dtype)


def instance_norm_check(x, weight, bias, running_mean, running_var, use_input_stats):
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("instance_norm(): Expected running_mean and running_var to be defined when "
                           "use_input_stats is false")
    if x.ndim < 2:
        raise IndexError(f"instance_norm(): Dimension out of range (expected to be in range of "
                         f"[{-max(x.ndim, 1)}, {max(x.ndim, 1) - 1}], but got 1)")
    n, c = x.shape[0], x.shape[1]
    for t, name in ((running_mean, "running_mean"), (running_var, "running_var"), (weight, "weight"),
                    (bias, "bias")):
        if t is not None and t.numel() * n != n * c:
            raise RuntimeError(f"instance_norm(): {name} should contain {n * c} elements not {t.numel() * n}")
    if x.numel():
        require_float("batch_norm", x)
        check_param_dtype("instance_norm", x, weight, bias, running_mean, running_var)


def instance_norm(x, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    instance_norm_check(x, weight, bias, running_mean, running_var, use_input_stats)
    return wrap_meta(x.shape, x.dtype)


def group_norm_check(x, num_groups, weight, bias):
    if x.ndim < 2:
        raise RuntimeError(f"group_norm(): Expected at least 2 dimensions for input tensor but received {x.ndim}")
    c = x.shape[1]
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError(f"group_norm(): Expected number of channels in input to be divisible by num_groups, "
                           f"but got input of shape {list(x.shape)} and num_groups={num_groups}")
    for t, name in ((weight, "weight"), (bias, "bias")):
        if t is not None and (t.ndim != 1 or t.numel() != c):
            raise RuntimeError(f"group_norm(): Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {list(t.shape)} and input of shape "
                               f"{list(x.shape)}")
    require_float("GroupNormKernelImpl", x)
    check_param_dtype("group_norm", x, weight, bias)


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    group_norm_check(x, num_groups, weight, bias)
    return wrap_meta(x.shape, x.dtype)


# ---------------------------------------------------------------------------------------
# distances
# ---------------------------------------------------------------------------------------
def cosine_similarity_rule(x1, x2, dim):
    common = rules.common_dtype(x1, x2)
    if common.category != _dt.FLOAT:
        raise RuntimeError(f"cosine_similarity(): expected common dtype to be floating point, yet common dtype "
                           f"is {common.c10_name}")
    shape = rules.broadcast_shapes(x1.shape, x2.shape, op="cosine_similarity")
    d = rules.wrap_dim(dim, len(shape), "cosine_similarity")
    return shape, d, tuple(s for i, s in enumerate(shape) if i != d), common


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    _, _, out, dt = cosine_similarity_rule(x1, x2, dim)
    return wrap_meta(out, dt)


def pairwise_distance_rule(x1, x2, keepdim):
    d1, d2 = x1.dtype, x2.dtype
    if d1 is _dt.bool_ and d2 is _dt.bool_:
        raise RuntimeError("pairwise_distance(): Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    diff_dt = rules.float_dtype(rules.common_dtype(x1, x2))  # x1 - x2 + eps: eps is a wrapped float
    shape = rules.broadcast_shapes(x1.shape, x2.shape, op="pairwise_distance")
    ndim = max(x1.ndim, x2.ndim)
    d = rules.wrap_dim(ndim - 1, len(shape), "pairwise_distance")
    out = rules.reduced_shape(shape, (d,) if shape else (), keepdim)
    return shape, d, out, diff_dt, diff_dt.to_real()


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    _, _, out, _, dt = pairwise_distance_rule(x1, x2, keepdim)
    return wrap_meta(out, dt)


# ---------------------------------------------------------------------------------------
# padding, one_hot, interpolation
# ---------------------------------------------------------------------------------------
def constant_pad_rule(x, pad):
    if len(pad) % 2:
        raise RuntimeError(f"constant_pad_nd(): Length of pad must be even but instead it equals {len(pad)}")
    n = len(pad) // 2
    if n > x.ndim:
        raise RuntimeError(f"constant_pad_nd(): Length of pad should be no more than twice the number of "
                           f"dimensions of the input. Pad length is {len(pad)}while the input has {x.ndim}"
                           f"dimensions.")
    shape = list(x.shape)
    for i in range(n):
        d = x.ndim - 1 - i
        new = shape[d] + pad[2 * i] + pad[2 * i + 1]
        if new < 0:
            raise RuntimeError(f"constant_pad_nd(): The input size {shape[d]}, plus negative padding {pad[2 * i]} "
                               f"and {pad[2 * i + 1]} resulted in a negative output size, which is invalid. Check "
                               f"dimension {d} of your input.")
        shape[d] = new
    return tuple(shape)


_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad_rule(x, pad, mode, value):
    """The output shape of ``pad`` and the error checks of every mode."""
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"pad(): Unrecognised padding mode {mode}")
    if len(pad) % 2:
        raise RuntimeError("pad(): Padding length must be divisible by 2")
    if len(pad) > 2 * x.ndim:
        raise RuntimeError(f"pad(): Padding length should be less than or equal to two times the input dimension "
                           f"but got padding length {len(pad)} and input of dimension {x.ndim}")
    if mode == "constant":
        return constant_pad_rule(x, pad)
    if value is not None and value != 0:
        raise RuntimeError(f'pad(): Padding mode "{mode}" doesn\'t take in value argument')
    n = len(pad) // 2
    if n not in (1, 2, 3) or x.ndim not in (n + 1, n + 2):
        raise NotImplementedError("pad(): Only 2D, 3D, 4D, 5D padding with non-constant padding are supported "
                                  "for now")
    if mode != "circular" and x.dtype is _dt.bool_:
        raise not_implemented(("reflection" if mode == "reflect" else "replication") + f"_pad{n}d", x.dtype)
    shape = list(x.shape)
    nonpadded = x.ndim - n
    if mode != "circular" and any(s == 0 for s in shape[max(nonpadded, 1):]) or \
            (mode != "circular" and nonpadded == 1 and shape[0] == 0):
        raise RuntimeError(f"pad(): Expected {n + 1}D or {n + 2}D (batch mode) tensor with possibly 0 batch size and "
                           f"other non-zero dimensions for input, but got: {list(x.shape)}")
    for i in range(n):
        d = x.ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        size = shape[d]
        if mode == "reflect" and (lo >= size or hi >= size):
            raise RuntimeError(f"pad(): Argument #{4 + 2 * i}: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({lo}, {hi}) at dimension {d} of input "
                               f"{list(x.shape)}")
        if mode == "circular" and (lo > size or hi > size):
            raise RuntimeError("pad(): Padding value causes wrapping around more than once.")
        new = size + lo + hi
        if mode == "circular" and new < 0:
            raise RuntimeError("pad(): Negative padding value is resulting in an empty dimension")
        if mode != "circular" and new < 1:
            raise RuntimeError(f"pad(): input (W: {size}) is too small. Calculated output W: {new}")
        shape[d] = new
    return tuple(shape)


def pad(x, pad, mode="constant", value=None):
    return wrap_meta(pad_rule(x, pad, mode, value), x.dtype)


def constant_pad_nd(x, pad, value=0):
    return wrap_meta(constant_pad_rule(x, pad), x.dtype)


def one_hot_check(x, num_classes):
    if x.dtype is not _dt.int64:
        raise RuntimeError("one_hot(): one_hot is only applicable to index tensor of type LongTensor.")
    if x.numel() == 0 and num_classes <= 0:
        raise RuntimeError("one_hot(): Can not infer total number of classes from empty tensor.")


def one_hot(x, num_classes=-1):
    one_hot_check(x, num_classes)
    if num_classes < 0:
        raise RuntimeError("one_hot(): Tensor.item() cannot be called on meta tensors")
    return wrap_meta(tuple(x.shape) + (num_classes,), _dt.int64)


def upsample_rule(op, x, output_size, scale_factors, nspatial, float_only):
    """(output shape, per-dim scales or None) of an upsample_*.vec op, with ATen's checks."""
    if output_size is not None and scale_factors is not None:
        raise RuntimeError(f"{op}(): Must specify exactly one of output_size and scale_factors")
    if x.ndim != nspatial + 2:
        raise RuntimeError(f"{op}(): Expected {nspatial + 2}D input, but got input of size {list(x.shape)}")
    spatial = tuple(x.shape[2:])
    if output_size is not None:
        if len(output_size) != nspatial:
            raise RuntimeError(f"{op}(): It is expected output_size equals to {nspatial}, but got size "
                               f"{len(output_size)}")
        out, scales = tuple(output_size), (None,) * nspatial
    elif scale_factors is not None:
        if len(scale_factors) != nspatial:
            raise RuntimeError(f"{op}(): It is expected scale_factors equals to {nspatial}, but got size "
                               f"{len(scale_factors)}")
        out = tuple(int(s * f) for s, f in zip(spatial, scale_factors))
        scales = tuple(scale_factors)
    else:
        raise RuntimeError(f"{op}(): Must specify exactly one of output_size and scale_factors")
    if any(s <= 0 for s in spatial) or any(s <= 0 for s in out):
        raise RuntimeError(f"{op}(): Input and output sizes should be greater than 0, but got input "
                           f"{list(spatial)} output {list(out)}")
    if x.numel() == 0 and x.shape[1] == 0:
        raise RuntimeError(f"{op}(): Non-empty {nspatial + 2}D data tensor expected but got a tensor with sizes "
                           f"{list(x.shape)}")
    if x.dtype.category != _dt.FLOAT and not (x.dtype is _dt.uint8 and not float_only):
        raise not_implemented(op, x.dtype)
    return tuple(x.shape[:2]) + out, scales


def upsample(op, nspatial, float_only, align=False):
    if align:
        def kernel(x, output_size, align_corners, scale_factors):
            return wrap_meta(upsample_rule(op, x, output_size, scale_factors, nspatial, float_only)[0], x.dtype)
    else:
        def kernel(x, output_size, scale_factors):
            return wrap_meta(upsample_rule(op, x, output_size, scale_factors, nspatial, float_only)[0], x.dtype)
    kernel.__name__ = op
    return kernel


# ---------------------------------------------------------------------------------------
# attention
# ---------------------------------------------------------------------------------------
def sdpa_rule(q, k, v, mask, is_causal, enable_gqa):
    if not (q.dtype is k.dtype is v.dtype):
        raise RuntimeError(f"scaled_dot_product_attention(): Expected query, key, and value to have the same dtype, "
                         f"but got query.dtype: {q.dtype} key.dtype: {k.dtype} and value.dtype: {v.dtype} instead.")
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise RuntimeError(f"scaled_dot_product_attention(): Expected query, key, and value to all be  at least 2 "
                         f"dimensional, but got query.dim: {q.ndim} key.dim: {k.ndim} and value.dim: {v.ndim} "
                         f"instead.")
    if mask is not None and mask.ndim < 2 and q.ndim == k.ndim == v.ndim == 4:  # the fused 4-D path's error
        raise IndexError(f"scaled_dot_product_attention(): Dimension out of range (expected to be in range of "
                         f"[{-max(mask.ndim, 1)}, {max(mask.ndim, 1) - 1}], but got -2)")
    if mask is not None and mask.dtype not in (_dt.bool_, _dt.float32, q.dtype):
        raise RuntimeError(f"scaled_dot_product_attention(): Expected attn_mask dtype to be bool or float or to "
                           f"match query dtype, but got attn_mask.dtype: {mask.dtype} and  query.dtype: {q.dtype} "
                           f"instead.")
    if q.dtype.category == _dt.COMPLEX:
        raise not_implemented("baddbmm_cpu", q.dtype)
    if q.dtype.category != _dt.FLOAT:
        raise RuntimeError(f"scaled_dot_product_attention(): expected query, key and value to be floating point, "
                           f"but got {q.dtype.c10_name}")
    if is_causal and mask is not None:
        raise RuntimeError("scaled_dot_product_attention(): Explicit attn_mask should not be set when "
                           "is_causal=True")
    if q.shape[-1] != k.shape[-1]:
        raise RuntimeError(f"scaled_dot_product_attention(): query and key must have the same embedding size, "
                           f"got {q.shape[-1]} and {k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention(): key and value must have the same sequence length, "
                           f"got {k.shape[-2]} and {v.shape[-2]}")
    kb, vb = tuple(k.shape[:-2]), tuple(v.shape[:-2])
    if enable_gqa and q.ndim >= 3 and k.ndim >= 3 and q.shape[-3] != k.shape[-3]:
        hq, hk = q.shape[-3], k.shape[-3]
        if hk == 0 or hq % hk or v.shape[-3] != hk:
            raise RuntimeError("scaled_dot_product_attention(): number of heads in key and value must divide the "
                               "number of heads in query")
        kb = kb[:-1] + (hq,)
        vb = vb[:-1] + (hq,)
    batch = rules.broadcast_shapes(tuple(q.shape[:-2]), kb, vb, op="scaled_dot_product_attention")
    if mask is not None:
        rules.broadcast_shapes(tuple(mask.shape), batch + (q.shape[-2], k.shape[-2]),
                               op="scaled_dot_product_attention")
    return batch + (q.shape[-2], v.shape[-1]), q.dtype


def scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    return wrap_meta(*sdpa_rule(q, k, v, attn_mask, is_causal, enable_gqa))


def normalize(x, p, dim, eps):
    if x.dtype.category not in (_dt.FLOAT, _dt.COMPLEX):
        raise RuntimeError(f"normalize(): linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {x.dtype.c10_name}")
    rules.wrap_dim(dim, x.ndim, "normalize")
    return wrap_meta(x.shape, x.dtype)
