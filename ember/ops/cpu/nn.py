"""CPU kernels of the nn family: linear layers, embedding, dropout, normalisation, padding,
one_hot, interpolation, distances and attention, on NumPy.

Shape/dtype checks are shared with the Meta kernels (``ember/ops/meta/nn.py``). float16 and
bfloat16 are computed in float32 and rounded once at the end, like ATen's CPU kernels (which
accumulate in ``opmath_t``). Losses live in ``cpu/loss.py``.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ..._core import dtype as _dt
from ..._core.tensor import wrap
from ..meta import nn as meta
from .. import rules
from .linalg import _matmul
from .. import native
from .pointwise import ON_CUDA

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_HALF = {np.dtype(np.float16), _dt.bfloat16.np}


def acc(arr):
    """The array in the precision ATen computes it in (half types -> float32)."""
    return arr.astype(_F32) if arr.dtype in _HALF else arr


def opt(t):
    """ndarray of an optional tensor, in compute precision (or None)."""
    return None if t is None else acc(t._data)


def result(arr, np_dtype):
    """A new contiguous tensor of `np_dtype` from a computed array."""
    arr = np.asarray(arr)
    if arr.dtype != np_dtype:
        arr = arr.astype(np_dtype)
    elif not arr.flags.c_contiguous:  # np.ascontiguousarray would make 0-d arrays 1-d
        arr = arr.copy()
    return wrap(arr)


# ---------------------------------------------------------------------------------------
# linear, bilinear, embedding
# ---------------------------------------------------------------------------------------
def linear(x, w, b=None):
    """y = x @ w.T + b (w: [out, in] or [in])."""
    _, dt = meta.linear_rule(x, w, b)
    X, W = x._data, w._data
    if X.dtype in _HALF:
        X, W = X.astype(_F32), W.astype(_F32)
    y = _matmul(X, W.T if W.ndim == 2 else W)
    if b is not None:
        B = acc(b._data)
        if B.shape == y.shape[-1:] and y.ndim:     # a layer's [out] bias: added in place, no broadcast check
            np.add(y, B, out=y)
        else:
            y = y + B if y.ndim == 0 or np.broadcast_shapes(y.shape, B.shape) != y.shape else np.add(y, B, out=y)
    return result(y, dt.np)


def bilinear(x1, x2, w, b=None):
    """y[..., o] = sum_ij x1[..., i] w[o, i, j] x2[..., j] + b[o]."""
    _, dt = meta.bilinear_rule(x1, x2, w, b)
    y = np.einsum("...i,oij,...j->...o", acc(x1._data), acc(w._data), acc(x2._data))
    if b is not None:
        y = y + acc(b._data)
    return result(y, dt.np)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` gathered by `indices` (padding_idx only matters to the gradient)."""
    meta.embedding_rule(weight, indices)
    idx = indices._data
    n = weight._data.shape[0]
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError("embedding(): index out of range in self")
    return wrap(weight._data[idx])


def embedding_renorm_(weight, indices, max_norm, norm_type):
    """Rescale, in place, the rows of `weight` named by `indices` whose p-norm exceeds max_norm."""
    if weight.ndim != 2:
        raise RuntimeError("embedding_renorm_(): 'self' must be 2-D")
    if indices.dtype not in (_dt.int64, _dt.int32):
        raise RuntimeError("Expected tensor for argument #2 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got torch.{indices.dtype.c10_name}Tensor instead (while checking "
                           "arguments for embedding_renorm_)")
    W = weight._data
    rows = np.unique(indices._data.reshape(-1))
    if rows.size and (rows[0] < 0 or rows[-1] >= W.shape[0]):
        raise IndexError("embedding_renorm_(): index out of range in self")
    for r in rows:
        norm = float(vector_norm(acc(W[r]).astype(_F64), norm_type, None, False))
        if norm > max_norm:
            W[r] = (acc(W[r]) * (max_norm / (norm + 1e-7))).astype(W.dtype)
    weight._bump_version()
    return weight


# ---------------------------------------------------------------------------------------
# dropout
# ---------------------------------------------------------------------------------------
def _uniform(shape):
    """Uniform [0, 1) samples from ember's default generator (``ember.manual_seed`` reproduces a run),
    drawn as ``ember.rand(shape, dtype=float64)`` draws them, so that dropout's decomposition into
    ``rand`` (ember/_functorch/decompositions/nn.py) gives eager's masks under the same seed."""
    from ..._core.random import rng
    from .random import uniform01
    return uniform01(rng(None), shape, _dt.float64)


def _dropout(op, x, p, train, feature, alpha):
    if not meta.dropout_rule(op, x, p, train):
        if not train or p == 0 or x.numel() == 0:
            return x  # ATen returns the input itself
        return wrap(np.zeros(x._data.shape, x._data.dtype))  # p == 1: input * 0
    X = x._data
    noise_shape = X.shape[:2] + (1,) * (X.ndim - 2) if feature else X.shape
    keep = _uniform(noise_shape) < (1 - p)
    dt = X.dtype
    if alpha:
        a_const = 1.7580993408473766
        a = 1.0 / np.sqrt((a_const * a_const * p + 1) * (1 - p))
        noise = keep.astype(dt)
        b = (noise.astype(acc(X).dtype) - 1) * (a_const * a) + a_const * a * p
        return result(acc(X) * (noise.astype(acc(X).dtype) * a) + b, dt)
    noise = (keep.astype(dt) / dt.type(1 - p)).astype(dt)  # bernoulli_(1 - p).div_(1 - p), in X's dtype
    return result(acc(X) * acc(noise), dt)


def dropout(x, p, train):
    return _dropout("dropout", x, p, train, False, False)


def feature_dropout(x, p, train):
    return _dropout("feature_dropout", x, p, train, True, False)


def alpha_dropout(x, p, train):
    return _dropout("alpha_dropout", x, p, train, False, True)


def feature_alpha_dropout(x, p, train):
    return _dropout("feature_alpha_dropout", x, p, train, True, True)


# ---------------------------------------------------------------------------------------
# normalisation
# ---------------------------------------------------------------------------------------
def _affine(y, w, b, shape=None):
    """y * w + b. The callers pass a fresh `y` they own, so it is scaled and shifted in place
    (two fewer full-size temporaries) wherever that keeps its dtype and shape."""
    for operand, ufunc in ((w, np.multiply), (b, np.add)):
        if operand is None:
            continue
        v = operand if shape is None else operand.reshape(shape)
        if (isinstance(y, np.ndarray) and np.result_type(y, v) == y.dtype
                and np.broadcast_shapes(y.shape, v.shape) == y.shape):
            ufunc(y, v, out=y)
        else:
            y = ufunc(y, v)
    return y


def _native_norm(x, weight, bias, eps, row_size):
    """norm_fwd (ember/ops/native.py) on a contiguous float32/float64 input with parameters of its
    dtype: (y, per-group mean, per-group biased var) or None. `row_size`: layer_norm's normalised
    size (groups are rows); None for batch_norm over dim 1 (groups are channels)."""
    a = x._data
    w, b = opt(weight), opt(bias)
    if not a.flags.c_contiguous or any(p is not None and (p.dtype is not a.dtype or not p.flags.c_contiguous)
                                       for p in (w, b)):
        return None
    fn = native.kernel("norm_fwd", a.dtype)
    if fn is None:
        return None
    if row_size is not None:
        geometry = (a.size // row_size, 1, row_size, row_size, 0)
    else:
        spatial = a.size // (a.shape[0] * a.shape[1])
        geometry = (a.shape[1], a.shape[0], spatial, spatial, a.shape[1] * spatial)
    y, mean, var = np.empty_like(a), np.empty(geometry[0]), np.empty(geometry[0])
    fn(a, a if w is None else w, a if b is None else b, y, mean, var, *geometry, w is not None, b is not None,
       row_size is not None, float(eps))
    return y, mean, var


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    """(x - mean) / sqrt(var + eps) over the trailing `normalized_shape` dims, then affine."""
    meta.layer_norm_check(x, normalized_shape, weight, bias)
    if x.numel() == 0:
        return wrap(np.empty(x.shape, x._data.dtype))
    fused = _native_norm(x, weight, bias, eps, prod(normalized_shape))
    if fused is not None:
        return wrap(fused[0])
    X = acc(x._data)
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    mean = X.mean(axis=axes, keepdims=True)
    xc = X - mean
    var = np.mean(xc * xc, axis=axes, keepdims=True)
    y = xc * (1.0 / np.sqrt(var + X.dtype.type(eps)))
    return result(_affine(y, opt(weight), opt(bias)), x._data.dtype)


def rms_norm(x, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x**2) + eps) * weight; eps defaults to the compute dtype's epsilon."""
    out_dt = meta.rms_norm_rule(x, normalized_shape, weight)
    X = acc(x._data)
    if eps is None:
        eps = float(np.finfo(X.dtype).eps)
    if x.numel() == 0:
        return wrap(np.empty(x.shape, out_dt.np))
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    y = (X * (1.0 / np.sqrt(np.mean(X * X, axis=axes, keepdims=True) + eps))).astype(x._data.dtype)
    if weight is not None:
        y = acc(y) * acc(weight._data)
    return result(y, out_dt.np)


def _batch_norm(X, w, b, rm, rv, training, momentum, eps):
    """Batch norm on compute-precision arrays, channel dim 1. Returns (y, new_rm, new_rv)."""
    c = X.shape[1]
    axes = (0,) + tuple(range(2, X.ndim))
    bshape = (1, c) + (1,) * (X.ndim - 2)
    new_rm = new_rv = None
    if training:
        # ATen's CPU kernel sums the batch statistics in acc_type (double for float): a float32 sum
        # over the strided N*H*W elements of a channel lost up to ~10x more (issue 20's DCGAN).
        # The mean is rounded to X's dtype before centring, as ATen's saved mean is.
        n = X.size // c  # callers pass non-empty X
        mean = (_channel_sums(X) / n).astype(X.dtype)
        xc = X - mean.reshape(bshape)
        var = _channel_sums(xc * xc) / n
        if rm is not None:  # blended in double too, rounded once when stored
            new_rm = momentum * mean.astype(_F64) + (1 - momentum) * rm
        if rv is not None:
            unbiased = var * (n / (n - 1)) if n > 1 else np.full_like(var, np.inf)
            new_rv = momentum * unbiased + (1 - momentum) * rv
    else:
        mean, var = rm.reshape(-1), rv.reshape(-1)
        xc = X - mean.reshape(bshape).astype(X.dtype)
    invstd = (1.0 / np.sqrt(var + eps)).astype(X.dtype)
    y = xc * invstd.reshape(bshape)
    return _affine(y, w, b, bshape), new_rm, new_rv


def _channel_sums(A):
    """Per-channel sums of (N, C, ...) `A`, every element added in double as ATen's forward does
    (einsum casts in blocks: no float64 copy of A, and faster than NumPy's strided reduction)."""
    return np.einsum("ncl->c", A.reshape(A.shape[0], A.shape[1], -1), dtype=_F64)


def _store(t, arr):
    """Write `arr` into tensor `t` in place (running statistics) and bump its version."""
    np.copyto(t._data, arr.reshape(t._data.shape), casting="unsafe")
    t._bump_version()


def batch_norm(x, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    """Batch norm over dim 1; in training the running stats are updated in place (unbiased var)."""
    meta.batch_norm_check(x, weight, bias, running_mean, running_var, training)
    if x.numel() == 0:
        return wrap(np.empty(x.shape, x._data.dtype))
    rm, rv = opt(running_mean), opt(running_var)
    fused = _native_norm(x, weight, bias, eps, None) if training and x.ndim >= 2 else None
    if fused is not None:   # running statistics from the kernel's batch statistics, as _batch_norm does
        y, mean, var = fused
        n = x.numel() // x.shape[1]
        new_rm = None if rm is None else (momentum * mean + (1 - momentum) * rm).astype(rm.dtype)
        new_rv = None if rv is None else (momentum * (var * (n / (n - 1)) if n > 1 else np.full_like(var, np.inf))
                                          + (1 - momentum) * rv).astype(rv.dtype)
    else:
        y, new_rm, new_rv = _batch_norm(acc(x._data), opt(weight), opt(bias), rm, rv, training, momentum, eps)
    copies = ON_CUDA and _cudnn_batch_norm(x, weight, bias, running_mean, running_var, eps, cudnn_enabled)
    if new_rm is not None and not (copies and not running_mean.is_contiguous()):
        _store(running_mean, new_rm)
    if new_rv is not None and not (copies and not running_var.is_contiguous()):
        _store(running_var, new_rv)
    return result(y, x._data.dtype)


def _cudnn_batch_norm(x, weight, bias, running_mean, running_var, eps, cudnn_enabled):
    """Whether PyTorch's CUDA batch_norm takes cuDNN (_batch_norm_impl_index's conditions), which it
    hands contiguous copies of the running statistics: non-contiguous ones are then not updated."""
    half_types = (_dt.float16, _dt.bfloat16)
    return bool(cudnn_enabled) and x.ndim >= 3 and weight is not None and bias is not None \
        and (running_mean is None) == (running_var is None) and eps >= 1e-5 \
        and _dt.bfloat16 not in (x.dtype, weight.dtype) and (x.dtype not in half_types or weight.dtype is _dt.float32)


def instance_norm(x, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    """Batch norm of the (1, N*C, ...) reshaped input; running stats get the batch's average."""
    meta.instance_norm_check(x, weight, bias, running_mean, running_var, use_input_stats)
    if x.numel() == 0:
        return wrap(np.empty(x.shape, x._data.dtype))
    n, c = x.shape[0], x.shape[1]
    X = acc(x._data).reshape((1, n * c) + tuple(x.shape[2:]))
    rep = [None if t is None else np.tile(acc(t._data).reshape(-1), n) for t in (weight, bias, running_mean,
                                                                                  running_var)]
    y, new_rm, new_rv = _batch_norm(X, *rep, use_input_stats, momentum, eps)
    if running_mean is not None and new_rm is not None:
        _store(running_mean, new_rm.reshape(n, c).mean(axis=0))
    if running_var is not None and new_rv is not None:
        _store(running_var, new_rv.reshape(n, c).mean(axis=0))
    return result(y.reshape(x.shape), x._data.dtype)


def group_norm(x, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    """Normalise each group of C/num_groups channels (with all spatial dims) of each sample."""
    meta.group_norm_check(x, num_groups, weight, bias)
    if x.numel() == 0:
        return wrap(np.empty(x.shape, x._data.dtype))
    X = acc(x._data)
    g = X.reshape(X.shape[0], num_groups, -1)
    mean = g.mean(axis=-1, keepdims=True)
    xc = g - mean
    var = np.mean(xc * xc, axis=-1, keepdims=True)
    y = (xc * (1.0 / np.sqrt(var + X.dtype.type(eps)))).reshape(X.shape)
    return result(_affine(y, opt(weight), opt(bias), (1, X.shape[1]) + (1,) * (X.ndim - 2)), x._data.dtype)


# ---------------------------------------------------------------------------------------
# norms and distances
# ---------------------------------------------------------------------------------------
def vector_norm(a, p, axis, keepdims):
    """linalg.vector_norm on an ndarray (real result)."""
    a = np.abs(a)
    if p == 2:
        return np.sqrt(np.sum(a * a, axis=axis, keepdims=keepdims))
    if p == 1:
        return np.sum(a, axis=axis, keepdims=keepdims)
    if p == np.inf:
        return np.max(a, axis=axis, keepdims=keepdims, initial=0) if a.size else np.zeros(
            np.sum(a, axis=axis, keepdims=keepdims).shape, a.dtype)
    if p == -np.inf:
        return np.min(a, axis=axis, keepdims=keepdims)
    if p == 0:
        return np.sum(a != 0, axis=axis, keepdims=keepdims).astype(a.dtype)
    return np.sum(a ** p, axis=axis, keepdims=keepdims) ** (1.0 / p)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum((x1 / max(|x1|, eps)) * (x2 / max(|x2|, eps)), dim) after broadcasting."""
    shape, d, _, dt = meta.cosine_similarity_rule(x1, x2, dim)
    cnp = acc(np.empty(0, dt.np)).dtype
    a = np.broadcast_to(x1._data.astype(cnp, copy=False), shape)
    b = np.broadcast_to(x2._data.astype(cnp, copy=False), shape)
    na = np.maximum(vector_norm(a, 2, d, True), cnp.type(eps))
    nb = np.maximum(vector_norm(b, 2, d, True), cnp.type(eps))
    return result(np.sum((a / na) * (b / nb), axis=d), dt.np)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """norm(x1 - x2 + eps, p) over the last dim."""
    shape, d, out, diff_dt, dt = meta.pairwise_distance_rule(x1, x2, keepdim)
    cnp = acc(np.empty(0, diff_dt.np)).dtype
    sub_dt = rules.common_dtype(x1, x2)
    if sub_dt.category <= _dt.INT:  # x1 - x2 wraps in the integer dtype before eps makes it float
        diff = np.subtract(x1._data, x2._data, dtype=sub_dt.np).astype(cnp) + cnp.type(eps)
    else:
        diff = x1._data.astype(cnp) - x2._data.astype(cnp) + cnp.type(eps)
    if not diff.ndim:
        return result(vector_norm(diff, p, None, False), dt.np)
    return result(vector_norm(diff, p, d, keepdim), dt.np)


def normalize(x, p, dim, eps):
    """x / max(norm_p(x, dim), eps)  (the body of F.normalize)."""
    if x.dtype.category not in (_dt.FLOAT, _dt.COMPLEX):
        raise RuntimeError(f"normalize(): linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {x.dtype.c10_name}")
    d = rules.wrap_dim(dim, x.ndim, "normalize")
    X = acc(x._data)
    n = vector_norm(X, p, d if X.ndim else None, True)
    return result(X / np.maximum(n, n.dtype.type(eps)), x._data.dtype)


# ---------------------------------------------------------------------------------------
# padding and one_hot
# ---------------------------------------------------------------------------------------
def constant_pad_nd(x, pad, value=0):
    shape = meta.constant_pad_rule(x, pad)
    X = x._data
    out = np.empty(shape, X.dtype)
    out[...] = np.array(value).astype(X.dtype) if X.dtype.kind != "b" else bool(value)
    src, dst = [slice(None)] * X.ndim, [slice(None)] * X.ndim
    for i in range(len(pad) // 2):
        d = X.ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        src[d] = slice(max(-lo, 0), X.shape[d] - max(-hi, 0))
        dst[d] = slice(max(lo, 0), max(lo, 0) + max(X.shape[d] - max(-lo, 0) - max(-hi, 0), 0))
    out[tuple(dst)] = X[tuple(src)]  # empty when negative pads crop everything
    return wrap(out)


def _pad_index(mode, size, lo, new):
    i = np.arange(new) - lo
    if mode == "reflect":
        i = np.abs(i)
        return np.where(i >= size, 2 * (size - 1) - i, i)
    if mode == "replicate":
        return np.clip(i, 0, size - 1)
    # circular: negative pads crop first, then the cropped part wraps around (ATen's order)
    hi = new - size - lo
    start, kept = max(-lo, 0), size - max(-lo, 0) - max(-hi, 0)
    return np.mod(np.arange(new) - max(lo, 0), max(kept, 1)) + start


def pad(x, pad, mode="constant", value=None):
    """F.pad: constant (negative pads crop), reflect, replicate, circular."""
    shape = meta.pad_rule(x, pad, mode, value)
    if mode == "constant":
        return constant_pad_nd(x, pad, 0.0 if value is None else value)
    out = x._data
    for i in range(len(pad) // 2):
        d = x.ndim - 1 - i
        if out.shape[d] == 0 or shape[d] == 0:
            out = np.empty(out.shape[:d] + (shape[d],) + out.shape[d + 1:], out.dtype)
            continue
        out = np.take(out, _pad_index(mode, x.shape[d], pad[2 * i], shape[d]), axis=d)
    return result(out, x._data.dtype)


def one_hot(x, num_classes=-1):
    meta.one_hot_check(x, num_classes)
    idx = x._data
    if idx.size == 0:
        return wrap(np.empty(idx.shape + (num_classes,), np.int64))
    if idx.min() < 0:
        raise RuntimeError("one_hot(): Class values must be non-negative.")
    top = int(idx.max())
    if num_classes == -1:
        num_classes = top + 1
    elif num_classes <= top:
        raise RuntimeError("one_hot(): Class values must be smaller than num_classes.")
    out = np.zeros(idx.shape + (num_classes,), np.int64)
    np.put_along_axis(out, idx[..., None], 1, axis=-1)
    return wrap(out)


# ---------------------------------------------------------------------------------------
# interpolation (ATen's UpSample.h coordinate rules, in ATen's opmath precision)
# ---------------------------------------------------------------------------------------
def _scale(cdt, in_size, out_size, align_corners, scale):
    if align_corners:
        return cdt.type(in_size - 1) / cdt.type(out_size - 1) if out_size > 1 else cdt.type(0)
    if scale is not None and scale > 0:
        return cdt.type(1.0 / scale)
    return cdt.type(in_size) / cdt.type(out_size)


def _nearest_index(in_size, out_size, scale, exact):
    if not exact and out_size == in_size:
        return np.arange(out_size)
    if not exact and out_size == 2 * in_size:
        return np.arange(out_size) >> 1
    s = _scale(np.dtype(np.float32), in_size, out_size, False, scale)
    dst = np.arange(out_size)
    src = (dst + 0.5) * np.float64(s) if exact else dst.astype(np.float32) * s
    return np.minimum(np.floor(src.astype(np.float32)).astype(np.int64), in_size - 1)


def _linear_taps(cdt, in_size, out_size, align_corners, scale, cubic):
    """(indices, weights): lists of per-output-position taps along one dim."""
    s = _scale(cdt, in_size, out_size, align_corners, scale)
    dst = np.arange(out_size).astype(cdt)
    if align_corners:
        src = s * dst
    else:
        src = s * (dst + cdt.type(0.5)) - cdt.type(0.5)
        if not cubic:
            src = np.maximum(src, cdt.type(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
    t = np.clip(src - i0.astype(cdt), 0, 1).astype(cdt)
    if not cubic:
        return [i0, np.minimum(i0 + 1, in_size - 1)], [1 - t, t]
    A = cdt.type(-0.75)

    def c1(v):  # |v| <= 1
        return ((A + 2) * v - (A + 3)) * v * v + 1

    def c2(v):  # 1 < |v| < 2
        return ((A * v - 5 * A) * v + 8 * A) * v - 4 * A

    idx = [np.clip(i0 - 1 + j, 0, in_size - 1) for j in range(4)]
    return idx, [c2(t + 1), c1(t), c1(1 - t), c2(2 - t)]


def _upsample_nearest(op, nspatial, exact):
    def kernel(x, output_size, scale_factors):
        shape, scales = meta.upsample_rule(op, x, output_size, scale_factors, nspatial, False)
        out = x._data
        for k in range(nspatial):
            d = 2 + k
            out = np.take(out, _nearest_index(x.shape[d], shape[d], scales[k], exact), axis=d)
        return result(out, x._data.dtype)
    kernel.__name__ = op
    return kernel


def _upsample_interp(op, nspatial, cubic):
    def kernel(x, output_size, align_corners, scale_factors):
        shape, scales = meta.upsample_rule(op, x, output_size, scale_factors, nspatial, True)
        out = acc(x._data)
        cdt = out.dtype
        for k in range(nspatial):
            d = 2 + k
            idx, wts = _linear_taps(cdt, x.shape[d], shape[d], align_corners, scales[k], cubic)
            wshape = (1,) * d + (shape[d],) + (1,) * (out.ndim - d - 1)
            acc_ = None
            for i, w in zip(idx, wts):
                term = np.take(out, i, axis=d) * w.reshape(wshape)
                acc_ = term if acc_ is None else acc_ + term
            out = acc_
        return result(out, x._data.dtype)
    kernel.__name__ = op
    return kernel


upsample_nearest1d = _upsample_nearest("upsample_nearest1d", 1, False)
upsample_nearest2d = _upsample_nearest("upsample_nearest2d", 2, False)
upsample_nearest3d = _upsample_nearest("upsample_nearest3d", 3, False)
upsample_nearest_exact1d = _upsample_nearest("_upsample_nearest_exact1d", 1, True)
upsample_nearest_exact2d = _upsample_nearest("_upsample_nearest_exact2d", 2, True)
upsample_nearest_exact3d = _upsample_nearest("_upsample_nearest_exact3d", 3, True)
upsample_linear1d = _upsample_interp("upsample_linear1d", 1, False)
upsample_bilinear2d = _upsample_interp("upsample_bilinear2d", 2, False)
upsample_trilinear3d = _upsample_interp("upsample_trilinear3d", 3, False)
upsample_bicubic2d = _upsample_interp("upsample_bicubic2d", 2, True)
