"""Derivatives of nn ops computed straight from NumPy products and native kernels when nobody could
see the difference (ember/ops/native.py's plain_backward: no graph recorded, no dispatch mode,
plain CPU tensors): the composed formulas in nn.py give the same values through ~4-20 more ops.

    grads = native_linear(grad, input, weight, bias, needs_grad)    # None: use the formula
"""
from __future__ import annotations

from math import prod

import numpy as np

from .. import native
from ..._core.tensor import wrap

_GEMM_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_F32, _HALF = native.F32, native.HALF


def native_linear(grad, input, weight, bias, needs_grad):
    """The three gradients of a linear layer over a (..., in) input straight from NumPy's GEMMs: the
    composed formula's products (same BLAS calls, same results) and the bias's reduction, without
    its ~6 ops (flatten, mT, matmul and the engine's sum_to); None where it does not apply."""
    if weight.ndim != 2 or input.ndim < 2 or not native.direct_backward(grad, input, weight):
        return None
    g, x, w = grad._data, input._data, weight._data
    dt = g.dtype
    if x.dtype is not dt or w.dtype is not dt or g.ndim != x.ndim:
        return None
    if dt in _HALF:     # (autocast's layers) computed in float32 and rounded once, as the formula's matmuls
        g, x, w = g.astype(_F32), x.astype(_F32), w.astype(_F32)
    elif dt not in _GEMM_DTYPES:
        return None
    rows = prod(x.shape[:-1])    # (not -1: a layer with no outputs still has a batch size)
    g2 = g.reshape(rows, g.shape[-1])
    return (_rounded(g2.dot(w).reshape(x.shape), dt) if needs_grad[0] else None,
            _rounded(g2.T.dot(x.reshape(rows, x.shape[-1])), dt) if needs_grad[1] else None,
            _rounded(np.add.reduce(g2, axis=0), dt) if bias is not None and needs_grad[2] else None)


def _rounded(arr, dt):
    """A tensor of `arr` in dtype `dt` (a float32 result of a half-precision gradient rounded once)."""
    return wrap(arr if arr.dtype is dt else arr.astype(dt))


def native_embedding(grad, weight_shape, indices, padding_idx):
    """The dense weight gradient as one index_add_rows call (ember/ops/native.py) into zeros: what
    the composed formula computes, in its order, without its four ops. None where it does not apply
    (the indices were bounds-checked by the forward, and are unchanged: autograd checks versions)."""
    if len(weight_shape) != 2 or not native.plain_backward(grad, indices):
        return None
    g, idx = grad._data, indices._data.reshape(-1)
    fn = native.kernel("index_add_rows", g.dtype)
    if fn is None or idx.dtype != np.int64 or g.size != idx.size * weight_shape[1]:
        return None
    g = np.ascontiguousarray(g).reshape(idx.size, weight_shape[1])
    if padding_idx is not None and padding_idx >= 0:    # the padding row gets no gradient
        keep = idx != padding_idx
        g, idx = g[keep], idx[keep]
    out = np.zeros(weight_shape, g.dtype)
    fn(out, g, np.ascontiguousarray(idx), 1, weight_shape[0], idx.size, weight_shape[1])
    return wrap(out)


def native_sdpa(grad, query, key, value, attn_mask, dropout_p, is_causal, scale):
    """(gq, gk, gv, None) of scaled_dot_product_attention for the CPU kernel's native case (no mask
    beyond is_causal, no dropout, float32/float64 q, k, v of one batch shape): the probabilities
    recomputed as the forward computed them, four batched products and one native softmax
    backward per row, in the formula's order; None where it does not apply."""
    if attn_mask is not None or dropout_p > 0 or not native.plain_backward(grad, query, key, value):
        return None
    from ..cpu.attention import native_probs
    g, q, k, v = grad._data, query._data, key._data, value._data
    if any(a.dtype is not q.dtype for a in (g, k, v)) or not (q.shape[:-2] == k.shape[:-2] == v.shape[:-2]):
        return None
    half = q.dtype if q.dtype in _HALF else None
    if half is not None:    # (autocast's attention) in float32, as the forward computed it, rounded once
        g, q, k, v = g.astype(_F32), q.astype(_F32), k.astype(_F32), v.astype(_F32)
    sc = (1.0 / float(np.sqrt(q.shape[-1]))) if scale is None else scale
    attn = native_probs(q, k, is_causal, sc)
    backward = native.kernel("softmax_bwd", q.dtype)
    if attn is None or backward is None:
        return None
    gv = np.matmul(attn.swapaxes(-1, -2), g)
    ga = np.matmul(g, v.swapaxes(-1, -2))
    gs = np.empty_like(attn)
    backward(ga, attn, gs, attn.size // attn.shape[-1], attn.shape[-1], False)
    gq, gk = np.matmul(gs, k), np.matmul(gs.swapaxes(-1, -2), q)
    scale_t = q.dtype.type(sc)
    gq, gk = np.multiply(gq, scale_t, out=gq), np.multiply(gk, scale_t, out=gk)
    if half is not None:
        return _rounded(gq, half), _rounded(gk, half), _rounded(gv, half), None
    return wrap(gq), wrap(gk), wrap(gv), None
