"""Derivatives of nn functional ops: linear layers, embedding, dropout, normalisation, padding,
interpolation, distances and attention (the losses' are in losses.py).

Formulas are written with ember ops (twice differentiable where their pieces are). Dropout is
the exception: its mask is random and not recoverable from input and output, so its Autograd
kernel (installed below) computes ``input * mask / (1 - p)`` with ember ops from the same
random stream, and autograd differentiates that product.
"""
from __future__ import annotations

from math import prod

import numpy as np

from .. import native
from ..._core.dispatch import CUDA_BIT
from ..._core.tensor import wrap
from .linalg import _matmul_backward, vector_norm_backward
from .nn_direct import native_embedding, native_linear, native_sdpa
from ..registry import aten


def _e():
    import ember
    return ember


# ---------------------------------------------------------------------------------------
# linear layers, embedding
# ---------------------------------------------------------------------------------------
def _linear(grad, input, weight, bias, needs_grad):
    if grad._keys & CUDA_BIT and not _e().is_grad_enabled():     # (create_graph: the formulas below)
        from ..._cuda import attention
        fused = attention.linear_backward(grad, input, weight, bias, needs_grad)
        if fused is not None:
            return fused
    fused = native_linear(grad, input, weight, bias, needs_grad)
    if fused is not None:
        return fused
    if weight.ndim == 2 and input.ndim >= 2:  # one GEMM each, over the flattened batch
        gi = grad @ weight if needs_grad[0] else None  # e.g. not for the network's input
        # flatten, not reshape(-1, n): a layer with no outputs (n = 0) still has a batch size
        gw = grad.flatten(0, -2).mT @ input.flatten(0, -2) if needs_grad[1] else None
    else:
        gi, gwt = _matmul_backward(grad, input, weight.mT)
        gw = gwt.mT if gwt.ndim >= 2 else gwt
    return gi, gw, (None if bias is None or not needs_grad[2] else grad)


def _bilinear(grad, input1, input2, weight, bias):
    o, i, j = weight.shape
    x1, x2 = input1.reshape(-1, i), input2.reshape(-1, j)
    g = grad.reshape(-1, o)
    g1 = ((g @ weight.reshape(o, i * j)).reshape(-1, i, j) @ x2.unsqueeze(-1)).squeeze(-1)
    g2 = (x1.unsqueeze(-2) @ (g @ weight.reshape(o, i * j)).reshape(-1, i, j)).squeeze(-2)
    gw = (g.mT @ (x1.unsqueeze(-1) * x2.unsqueeze(-2)).reshape(-1, i * j)).reshape(o, i, j)
    return g1.reshape(input1.shape), g2.reshape(input2.shape), gw, (None if bias is None else grad)


def _embedding(grad, weight_shape, indices, padding_idx, scale_grad_by_freq, sparse):
    if sparse or scale_grad_by_freq:
        raise NotImplementedError("embedding backward with sparse=True or scale_grad_by_freq=True is not "
                                  "implemented in ember")
    fused = native_embedding(grad, weight_shape, indices, padding_idx)
    if fused is not None:
        return fused, None
    e = _e()
    idx = indices.reshape(-1)
    g = grad.reshape(-1, weight_shape[-1])
    if padding_idx is not None and padding_idx >= 0:  # the padding row gets no gradient
        g = g * (idx != padding_idx).unsqueeze(-1).to(g.dtype)
    return e.zeros(weight_shape, dtype=grad.dtype, device=grad.device).index_add(0, idx, g), None


# ---------------------------------------------------------------------------------------
# normalisation
# ---------------------------------------------------------------------------------------
def _norm_backward(grad_xhat, xhat, rstd, dims):
    """Input gradient of xhat = (x - mean) * rstd with mean and (biased) var over `dims`."""
    m1 = grad_xhat.mean(dims, keepdim=True)
    m2 = (grad_xhat * xhat).mean(dims, keepdim=True)
    return rstd * (grad_xhat - m1 - xhat * m2)


def _stats(x, dims, eps):
    mean = x.mean(dims, keepdim=True)
    xc = x - mean
    var = (xc * xc).mean(dims, keepdim=True)
    rstd = (var + eps).rsqrt()
    return xc * rstd, rstd


def _native_arrays(grad, input, weight):
    """(g, x, w) for a native normalisation backward: C-contiguous arrays of one float dtype (w is x
    without a weight), or None where none applies (a traced or create_graph backward, another
    dtype or layout, an empty input)."""
    tensors = (grad, input) if weight is None else (grad, input, weight)
    if not native.plain_backward(*tensors) or input.numel() == 0:
        return None
    g, x = grad._data, input._data
    w = x if weight is None else weight._data
    if g.shape != x.shape or any(a.dtype is not x.dtype or not a.flags.c_contiguous for a in (x, w)) \
            or g.dtype is not x.dtype:
        return None
    return np.ascontiguousarray(g), x, w    # g: e.g. the expanded ones of sum()'s backward


def _native_norm(grad, input, weight, bias, eps, row_size):
    """(gx, gw, gb) of layer_norm from the native norm_bwd kernel (ember/ops/native.py), or None
    where it does not apply (_native_arrays); `row_size`: the normalised size (groups are rows)."""
    arrays = _native_arrays(grad, input, weight)
    fn = None if arrays is None else native.kernel("norm_bwd", input._data.dtype)
    if fn is None:
        return None
    g, x, w = arrays
    shape = (x.size // row_size, 1, row_size, row_size, 0, row_size)
    gx, dw, db = np.empty_like(x), np.zeros(shape[-1]), np.zeros(shape[-1])
    fn(g, x, w, gx, dw, db, *shape[:5], weight is not None, True, float(eps))   # weight per row element
    return (wrap(gx), None if weight is None else wrap(dw.astype(x.dtype).reshape(weight.shape)),
            None if bias is None else wrap(db.astype(x.dtype).reshape(bias.shape)))


def _layer_norm(grad, input, normalized_shape, weight, bias, eps):
    if input._keys & CUDA_BIT and not _e().is_grad_enabled():     # (create_graph: the formula below)
        from ..._cuda import layer_norm
        fused = layer_norm.layer_norm_backward(grad, input, normalized_shape, weight, bias, eps)
        if fused is not None:
            return fused
    fused = _native_norm(grad, input, weight, bias, eps, prod(normalized_shape))
    if fused is not None:
        return fused
    dims = list(range(input.ndim - len(normalized_shape), input.ndim))
    xhat, rstd = _stats(input, dims, eps)
    gx = grad if weight is None else grad * weight
    return (_norm_backward(gx, xhat, rstd, dims), None if weight is None else grad * xhat,
            None if bias is None else grad)


def _rms_norm(grad, input, normalized_shape, weight, eps):
    dims = list(range(input.ndim - len(normalized_shape), input.ndim))
    if eps is None:
        eps = float(np.finfo(np.float64 if input.dtype.itemsize >= 8 else np.float32).eps)
    rstd = ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    gy = grad if weight is None else grad * weight
    gx = rstd * (gy - input * (rstd * rstd) * (gy * input).mean(dims, keepdim=True))
    return gx, (None if weight is None else grad * input * rstd)


def _channel(t, ndim):
    return t.reshape([1, -1] + [1] * (ndim - 2))


def _reduce_channel(t):
    return t.sum([0] + list(range(2, t.ndim)))


def _accumulated_sum(t, dims):
    """t summed over `dims` (kept, in double) as ATen's CPU batch-norm backward sums: each plane
    (the dims from 2 on, contiguous) in float or double, the planes of the batch added in double."""
    e = _e()
    if t.dtype not in (e.float32, e.float64):
        t = t.to(e.float32)
    planes = [d for d in dims if d >= 2]
    if planes:
        t = t.sum(planes, keepdim=True)
    batch = [d for d in dims if d < 2]
    return t.to(e.float64).sum(batch, keepdim=True) if batch else t.to(e.float64)


def _batch_stats(x, dims, eps):
    """xhat and rstd of batch/instance norm, as the forward computed them (it adds every term in
    double, like ATen): the mean rounded to x's dtype before centring, rstd rounded after. A float
    plane sum of x loses digits when the data sit far from zero, so the mean is taken in two passes:
    the mean of x - m0 (small, summed accurately) corrects the first estimate m0."""
    n = int(np.prod([x.shape[d] for d in dims]))
    m0 = (_accumulated_sum(x, dims) / n).to(x.dtype)
    mean = m0 + _accumulated_sum(x - m0, dims) / n
    xc = x - mean.to(x.dtype)
    rstd = (_accumulated_sum(xc * xc, dims) / n + eps).rsqrt().to(x.dtype)
    return xc * rstd, rstd


def _batch_norm_family_train(grad, input, weight, bias, eps, dims):
    """Gradients of batch norm (dims = all but the channel) or instance norm (the spatial dims) in
    training: dx = rstd * w * (g - sum(g)/n - xhat * sum(g*xhat)/n), with the two sums accumulated
    once, in double, and reused for the weight and bias gradients (ATen's algorithm)."""
    xhat, rstd = _batch_stats(input, dims, eps)
    n = int(np.prod([input.shape[d] for d in dims]))
    sum_g, sum_gx = _accumulated_sum(grad, dims), _accumulated_sum(grad * xhat, dims)
    scale = rstd if weight is None else rstd * _channel(weight, input.ndim)
    gi = scale * (grad - (sum_g / n).to(grad.dtype) - xhat * (sum_gx / n).to(grad.dtype))
    # instance norm's per-sample sums still add up over the batch for the shared weight and bias
    per_channel = (lambda s: s.to(grad.dtype).reshape(-1)) if 0 in dims else \
        (lambda s: s.sum(0).to(grad.dtype).reshape(-1))
    return (gi, None if weight is None else per_channel(sum_gx), None if bias is None else per_channel(sum_g),
            None, None)


def _native_batch_norm(grad, input, weight, bias, eps, needs_grad):
    """(gx, gw, gb) from the batch_norm_bwd kernel (ember/_inductor/native_kernels_conv.py; gx
    skipped when the input wants none), or None where it does not apply (_native_arrays)."""
    arrays = _native_arrays(grad, input, weight) if input.ndim >= 2 else None
    fn = None if arrays is None else native.kernel("batch_norm_bwd", input._data.dtype)
    if fn is None:
        return None
    g, x, w = arrays
    n, c = x.shape[:2]
    gx = np.empty_like(x) if needs_grad[0] else None
    dw, db = np.empty(c), np.empty(c)
    fn(g, x, w, x if gx is None else gx, dw, db, n, c, x.size // (n * c), weight is not None,
       gx is not None, float(eps))
    return (None if gx is None else wrap(gx), None if weight is None else wrap(dw.astype(x.dtype)),
            None if bias is None else wrap(db.astype(x.dtype)))


def _batch_norm_train(grad, input, weight, bias, eps, needs_grad):
    fused = _native_batch_norm(grad, input, weight, bias, eps, needs_grad)
    if fused is not None:
        return (*fused, None, None)
    return _batch_norm_family_train(grad, input, weight, bias, eps, [0] + list(range(2, input.ndim)))


def _batch_norm_eval(grad, input, weight, bias, running_mean, running_var, eps):
    rstd = _channel((running_var + eps).rsqrt(), input.ndim)
    xhat = (input - _channel(running_mean, input.ndim)) * rstd
    gi = grad * rstd if weight is None else grad * (rstd * _channel(weight, input.ndim))
    return gi, *_affine_grads(grad, xhat, weight, bias), None, None


def _affine_grads(grad, xhat, weight, bias):
    return (None if weight is None else _reduce_channel(grad * xhat),
            None if bias is None else _reduce_channel(grad))


def _instance_norm_train(grad, input, weight, bias, eps):
    return _batch_norm_family_train(grad, input, weight, bias, eps, list(range(2, input.ndim)))


def _install_norms():
    """batch_norm / instance_norm update their running statistics in place while computing
    batch statistics, so saving those tensors would trip the version check: the Autograd
    kernel picks a formula that does not read them (training) or one that does (eval)."""
    from ..._core.dispatch import DispatchKey
    from ..registry import OPERATORS
    from ...autograd.kernel import make_kernel, Formula
    for name, flag, train, evaluate in (("batch_norm", 5, _batch_norm_train, _batch_norm_eval),
                                        ("instance_norm", 5, _instance_norm_train, _batch_norm_eval)):
        op = OPERATORS.get(f"aten::{name}")
        if op is None or DispatchKey.Autograd in op.kernels:
            continue
        k_train, k_eval = make_kernel(op, Formula(train)), make_kernel(op, Formula(evaluate))

        def kernel(op_, keys, *args, _t=k_train, _e=k_eval, _flag=flag):
            return (_t if args[_flag] else _e)(op_, keys, *args)
        kernel.__name__ = f"autograd_{name}"
        op.register(DispatchKey.Autograd, kernel)


def _group_norm(grad, input, num_groups, weight, bias, eps):
    n = input.shape[0]
    x = input.reshape(n, num_groups, -1)
    xhat, rstd = _stats(x, [-1], eps)
    xhat = xhat.reshape(input.shape)
    gx = grad if weight is None else grad * _channel(weight, input.ndim)
    gi = _norm_backward(gx.reshape(n, num_groups, -1), xhat.reshape(n, num_groups, -1), rstd, [-1])
    gw = None if weight is None else _reduce_channel(grad * xhat)
    gb = None if bias is None else _reduce_channel(grad)
    return gi.reshape(input.shape), gw, gb


def _normalize(grad, input, p, dim, eps):
    e = _e()
    d = dim % input.ndim if input.ndim else None
    n = e.linalg.vector_norm(input, p, d, True)
    big = (n > eps).to(input.dtype)
    denom = n.clamp_min(eps)
    gx = grad / denom
    # d(denom)/dx only where the norm exceeds eps (clamp_min's gradient)
    s = (grad * input).sum(d, keepdim=True) if d is not None else (grad * input)
    gdenom = -s / (denom * denom) * big
    return gx + vector_norm_backward(gdenom, input, n, p, d, True)


# ---------------------------------------------------------------------------------------
# distances
# ---------------------------------------------------------------------------------------
def _cosine_similarity(grad, x1, x2, dim, eps):
    e = _e()
    a, b = e.broadcast_tensors(x1, x2)
    d = dim % a.ndim
    na = e.linalg.vector_norm(a, 2, d, True)
    nb = e.linalg.vector_norm(b, 2, d, True)
    ca, cb = na.clamp_min(eps), nb.clamp_min(eps)
    u, v = a / ca, b / cb
    cos = (u * v).sum(d, keepdim=True)
    g = grad.unsqueeze(d)
    # u = a / max(|a|, eps): the norm term only where |a| > eps
    ga = g * (v - u * cos * (na > eps).to(a.dtype)) / ca
    gb = g * (u - v * cos * (nb > eps).to(b.dtype)) / cb
    return ga, gb


def _pairwise_distance(grad, x1, x2, p, eps, keepdim, result):
    diff = x1 - x2 + eps
    if diff.ndim == 0:
        gd = vector_norm_backward(grad, diff, result, p, None, False)
    else:
        gd = vector_norm_backward(grad, diff, result, p, -1, keepdim)
    return gd, -gd


# ---------------------------------------------------------------------------------------
# padding, interpolation (adjoint of gathers: index_add along each dim)
# ---------------------------------------------------------------------------------------
def _gather_adjoint(g, steps):
    """Undo out = take(take(x, i0, d0), i1, d1)...: steps = [(dim, index ndarray, in_size)]."""
    e = _e()
    for d, idx, size in reversed(steps):
        shape = list(g.shape)
        shape[d] = size
        g = e.zeros(shape, dtype=g.dtype, device=g.device).index_add(d, e.from_numpy(np.asarray(idx, np.int64)).to(g.device), g)
    return g


def _constant_pad(grad, pad):
    return aten.constant_pad_nd.default(grad, [-p for p in pad], 0)


def _pad(grad, self, pad, mode):
    if mode == "constant":
        return _constant_pad(grad, pad)
    from ..cpu.nn import _pad_index
    steps = []
    for i in range(len(pad) // 2):
        d = self.ndim - 1 - i
        steps.append((d, _pad_index(mode, self.shape[d], pad[2 * i], grad.shape[d]), self.shape[d]))
    return _gather_adjoint(grad, steps)


def _upsample_nearest(name, nspatial, exact):
    def formula(grad, input, output_size, scale_factors):
        from ..meta.nn import upsample_rule
        from ..cpu.nn import _nearest_index
        shape, scales = upsample_rule(name, input, output_size, scale_factors, nspatial, False)
        steps = [(2 + k, _nearest_index(input.shape[2 + k], shape[2 + k], scales[k], exact), input.shape[2 + k])
                 for k in range(nspatial)]
        return _gather_adjoint(grad, steps)
    return formula


def _upsample_interp(name, nspatial, cubic):
    def formula(grad, input, output_size, align_corners, scale_factors):
        from ..meta.nn import upsample_rule
        from ..cpu.nn import _linear_taps
        e = _e()
        shape, scales = upsample_rule(name, input, output_size, scale_factors, nspatial, True)
        cdt = np.dtype(np.float64) if input.dtype.itemsize >= 8 else np.dtype(np.float32)
        g = grad
        for k in reversed(range(nspatial)):
            d = 2 + k
            idx, wts = _linear_taps(cdt, input.shape[d], shape[d], align_corners, scales[k], cubic)
            wshape = [1] * g.ndim
            wshape[d] = shape[d]
            out_shape = list(g.shape)
            out_shape[d] = input.shape[d]
            acc = e.zeros(out_shape, dtype=g.dtype, device=g.device)
            for i, w in zip(idx, wts):
                wt = e.from_numpy(np.ascontiguousarray(w).reshape(wshape)).to(g.device, g.dtype)
                acc = acc.index_add(d, e.from_numpy(np.asarray(i, np.int64)).to(g.device), g * wt)
            g = acc
        return g
    return formula


# ---------------------------------------------------------------------------------------
# attention
# ---------------------------------------------------------------------------------------
def _flash_attention(grads, query, key, value, dropout_p, is_causal, scale, results):
    """The backward operator on the saved output and logsumexp (no scores recomputed; logsumexp's own
    gradient is ignored, as PyTorch's). With create_graph, sdpa's formula of ops instead: the kernels'
    backward has no derivative, and PyTorch's first-order create_graph gradient works too."""
    e = _e()
    if e.is_grad_enabled():
        return _sdpa(grads[0], query, key, value, None, dropout_p, is_causal, scale, False)[:3]
    return e.ops.aten._scaled_dot_product_flash_attention_backward(grads[0], query, key, value, results[0],
                                                                   results[1], dropout_p, is_causal, scale=scale)


def _sdpa(grad, query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    e = _e()
    # (create_graph, tracing: the formula below)
    if query.device.type == "cuda" and native.plain_cuda_backward(grad, query, key, value):
        from ..._cuda import attention
        if attention.fast_path(query, key, value, attn_mask, dropout_p, enable_gqa):
            return attention.sdpa_backward(grad, query, key, value, is_causal, scale, enable_gqa) + (None,)
    fused = native_sdpa(grad, query, key, value, attn_mask, dropout_p, is_causal, scale)
    if fused is not None:
        return fused
    if dropout_p > 0:
        raise NotImplementedError("scaled_dot_product_attention backward with dropout_p > 0 is not implemented "
                                  "in ember (the dropout mask is not kept)")
    q, k, v = query, key, value
    rep = 1
    if enable_gqa and q.ndim >= 3 and k.ndim >= 3 and q.shape[-3] != k.shape[-3]:
        rep = q.shape[-3] // k.shape[-3]
        k, v = k.repeat_interleave(rep, dim=-3), v.repeat_interleave(rep, dim=-3)
    sc = (1.0 / float(np.sqrt(q.shape[-1]))) if scale is None else scale
    s = (q @ k.mT) * sc
    L, S = q.shape[-2], k.shape[-2]
    if is_causal:
        keep = e.ones(L, S, dtype=e.bool, device=q.device).tril()
        s = s.masked_fill(~keep, float("-inf"))
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == e.bool else s + attn_mask
    m = s.amax(-1, keepdim=True)
    dead = m == float("-inf")
    ex = (s - m.masked_fill(dead, 0)).exp()
    attn = ex / ex.sum(-1, keepdim=True).masked_fill(dead, 1)
    attn = attn.masked_fill(dead, 0)
    gv = attn.mT @ grad
    ga = grad @ v.mT
    gs = attn * (ga - (ga * attn).sum(-1, keepdim=True))
    gq = (gs @ k) * sc
    gk = (gs.mT @ q) * sc
    if rep > 1:  # each key/value head served `rep` query heads
        shp = list(gk.shape)
        gk = gk.reshape(shp[:-3] + [shp[-3] // rep, rep] + shp[-2:]).sum(-3)
        gv = gv.reshape(shp[:-3] + [shp[-3] // rep, rep] + list(gv.shape[-2:])).sum(-3)
    gm = None if attn_mask is None or attn_mask.dtype == e.bool else gs
    return gq, gk, gv, gm


# ---------------------------------------------------------------------------------------
# dropout: an Autograd kernel computing input * mask with ember ops
# ---------------------------------------------------------------------------------------
_ALPHA = 1.7580993408473766


def _dropout_kernel(name, feature, alpha, inplace):
    from ..._core.dispatch import _ExcludeDispatchKeyGuard, DispatchKey
    from ...autograd.kernel import _requires_grad, _check_inplace
    from ..meta.nn import dropout_rule
    from ..cpu.nn import _uniform

    def kernel(op, keys, input, p, train):
        if not _requires_grad(input):
            with _ExcludeDispatchKeyGuard(DispatchKey.Autograd):
                return op.redispatch(keys, input, p, train)
        if inplace:
            _check_inplace(op, input)
        e = _e()
        if not dropout_rule(name, input, p, train):
            if not train or p == 0 or input.numel() == 0:
                return input
            return input.mul_(0) if inplace else input * 0
        shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2) if feature else tuple(input.shape)
        keep = _uniform(shape) < (1 - p)
        np_dt = input.dtype.np  # the CPU kernel builds the noise in the input's dtype too
        if alpha:
            a = 1.0 / np.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
            scale = e.from_numpy((keep * a).astype(np_dt)).to(device=input.device, dtype=input.dtype)
            shift = e.from_numpy(((keep.astype(np_dt) - 1) * (_ALPHA * a) + _ALPHA * a * p).astype(np_dt))
            shift = shift.to(device=input.device, dtype=input.dtype)
            return input.mul_(scale).add_(shift) if inplace else input * scale + shift
        noise = (keep.astype(np_dt) / np_dt.type(1 - p)).astype(np_dt)
        # on input's device: a meta input (dynamo's example values) must not meet a CPU noise tensor
        noise = e.from_numpy(noise).to(device=input.device, dtype=input.dtype)
        return input.mul_(noise) if inplace else input * noise
    kernel.__name__ = f"autograd_{name}{'_' if inplace else ''}"
    return kernel


def _install_dropout():
    from ..._core.dispatch import DispatchKey
    from ..registry import OPERATORS
    for name, feature, alpha in (("dropout", False, False), ("feature_dropout", True, False),
                                 ("alpha_dropout", False, True), ("feature_alpha_dropout", True, True)):
        for inplace in (False, True):
            op = OPERATORS.get(f"aten::{name}{'_' if inplace else ''}")
            if op is not None and DispatchKey.Autograd not in op.kernels:
                op.register(DispatchKey.Autograd, _dropout_kernel(name, feature, alpha, inplace))


_install_dropout()
_install_norms()


FORMULAS = {
    "linear": _linear,
    "bilinear": _bilinear,
    "embedding": _embedding,
    "layer_norm": _layer_norm,
    "rms_norm": _rms_norm,
    "group_norm": _group_norm,
    "_ember_normalize": _normalize,
    "cosine_similarity": _cosine_similarity,
    "pairwise_distance": _pairwise_distance,
    "pad": _pad,
    "constant_pad_nd": lambda grad, pad: _constant_pad(grad, pad),
    "scaled_dot_product_attention": _sdpa,
    "_scaled_dot_product_flash_attention": _flash_attention,
}
for _name, _n in (("upsample_nearest", 1), ("upsample_nearest", 2), ("upsample_nearest", 3)):
    FORMULAS[f"{_name}{_n}d.vec"] = _upsample_nearest(f"{_name}{_n}d", _n, False)
    FORMULAS[f"_upsample_nearest_exact{_n}d.vec"] = _upsample_nearest(f"_upsample_nearest_exact{_n}d", _n, True)
for _name, _n, _cubic in (("upsample_linear1d", 1, False), ("upsample_bilinear2d", 2, False),
                          ("upsample_trilinear3d", 3, False), ("upsample_bicubic2d", 2, True)):
    FORMULAS[f"{_name}.vec"] = _upsample_interp(_name, _n, _cubic)

NONDIFFERENTIABLE = {"one_hot", "embedding_renorm_"}
