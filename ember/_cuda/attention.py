"""``scaled_dot_product_attention`` and ``linear`` on CUDA for float16/bfloat16 operands.

Attention: where the flash kernels apply (ember/ops/meta/flash.py: [B, H, L, D] operands, head dim
16/32/64/128) they compute it (flash_attention.py; F.scaled_dot_product_attention calls their
operator directly, so its backward reads the saved logsumexp; this operator's backward runs the
flash forward again for it). Otherwise scores = q @ k^T * scale by cuBLAS into float32, a row kernel
takes the (causal) softmax in float32 and rounds the weights to the operands' dtype, which multiply
v on cuBLAS; the backward recomputes the weights and takes the softmax's gradient in float32 in a
second row kernel. Other cases (float32/64, masks, dropout, grouped heads, broadcast batches, empty
sizes) take the math path of the CPU kernel's source.
"""
from __future__ import annotations

import math

import cupy
import numpy

from .._core import dtype as _dt
from . import blas, fused, graphs

_HALF = {numpy.dtype(numpy.float16): "half", _dt.bfloat16.np: "bf16"}

_SOURCE = fused.PRELUDE + r"""
// p[row] = softmax(s[row]) over the columns j < limit (j <= row % L when causal), 0 beyond
extern "C" __global__ void softmax_rows_DT(const float* s, unsigned short* p, long long cols, long long L, int causal) {
    __shared__ float shared[32];
    long long row = blockIdx.x;
    const float* x = s + row * cols;
    unsigned short* y = p + row * cols;
    long long limit = causal ? min(cols, row % L + 1) : cols;
    float m = NEG_INF;
    for (long long j = threadIdx.x; j < limit; j += blockDim.x) m = fmaxf(m, x[j]);
    m = block_reduce<true>(m, shared);
    float total = 0.f;
    for (long long j = threadIdx.x; j < limit; j += blockDim.x) total += expf(x[j] - m);
    float inv = 1.f / block_reduce<false>(total, shared);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) y[j] = store_DT(j < limit ? expf(x[j] - m) * inv : 0.f);
}

// ds[row] = p * (dp - sum(p * dp)) * scale: the softmax's gradient, in float32, rounded once
extern "C" __global__ void softmax_grad_rows_DT(const unsigned short* p, const float* dp, unsigned short* ds,
                                              long long cols, float scale) {
    __shared__ float shared[32];
    long long row = blockIdx.x;
    const unsigned short* a = p + row * cols;
    const float* g = dp + row * cols;
    float dot = 0.f;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) dot += load_DT(a[j]) * g[j];
    dot = block_reduce<false>(dot, shared);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
        float pj = load_DT(a[j]);
        ds[row * cols + j] = store_DT(pj * (g[j] - dot) * scale);
    }
}
"""


def _kernel(name, dtype):
    return fused.kernel(_SOURCE, name, dtype)


def fast_path(q, k, v, attn_mask, dropout_p, enable_gqa) -> bool:
    """Whether the half-precision kernels compute this call (otherwise the math path does)."""
    Q, K, V = q._data, k._data, v._data
    return (attn_mask is None and dropout_p == 0 and Q.dtype in _HALF and Q.dtype == K.dtype == V.dtype
            and Q.ndim >= 2 and Q.shape[:-2] == K.shape[:-2] == V.shape[:-2] and Q.size and K.size and V.size)


def _weights(Q, K, is_causal, scale):
    """softmax(Q K^T * scale) in Q's dtype, the row softmax taken in float32."""
    sc = 1.0 / math.sqrt(Q.shape[-1]) if scale is None else scale
    L, S = Q.shape[-2], K.shape[-2]
    scores = blas.gemm(Q, K.swapaxes(-1, -2), out_dtype=numpy.float32, alpha=sc)
    p = cupy.empty(scores.shape, Q.dtype)
    n_rows = scores.size // S
    fused.rows(_kernel("softmax_rows", Q.dtype), n_rows, S,
               (scores, p.view(numpy.uint16), numpy.int64(S), numpy.int64(L), numpy.int32(bool(is_causal))))
    return p, sc


def sdpa_forward(q, k, v, is_causal, scale):
    from .kernels import wrap_cuda
    p, _ = _weights(q._data, k._data, is_causal, scale)
    return wrap_cuda(blas.gemm(p, v._data))


def _flash(q, k, v, enable_gqa) -> bool:
    from ..ops.meta import flash
    return flash.applies(q, k, v, None, 0.0, enable_gqa)


def sdpa_backward(grad, q, k, v, is_causal, scale, enable_gqa=False):
    """(dq, dk, dv) of the fast path's forward."""
    if _flash(q, k, v, enable_gqa):
        from . import flash_ops
        out, lse = flash_ops.forward(q, k, v, 0.0, is_causal, scale=scale)
        return flash_ops.backward(grad.to(q.dtype), q, k, v, out, lse, 0.0, is_causal, scale=scale)
    return materialised_backward(grad, q, k, v, is_causal, scale)


def materialised_backward(grad, q, k, v, is_causal, scale):
    """(dq, dk, dv) of sdpa_forward: the weights recomputed, the softmax's gradient in a row kernel."""
    from .kernels import wrap_cuda
    Q, K, V, G = q._data, k._data, v._data, grad._data
    if G.dtype != Q.dtype:
        G = G.astype(Q.dtype)
    p, sc = _weights(Q, K, is_causal, scale)
    dv = blas.gemm(p.swapaxes(-1, -2), G)
    dp = blas.gemm(G, V.swapaxes(-1, -2), out_dtype=numpy.float32)
    S = p.shape[-1]
    ds = cupy.empty(p.shape, Q.dtype)
    fused.rows(_kernel("softmax_grad_rows", Q.dtype), p.size // S, S,
               (p.view(numpy.uint16), dp, ds.view(numpy.uint16), numpy.int64(S), numpy.float32(sc)))
    del dp
    dq = blas.gemm(ds, K)
    dk = blas.gemm(ds.swapaxes(-1, -2), Q)
    return wrap_cuda(dq), wrap_cuda(dk), wrap_cuda(dv)


def sdpa(math_path):
    """The CUDA variant's ``scaled_dot_product_attention``: the kernels above where they apply."""
    def scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                     enable_gqa=False):
        if fast_path(q, k, v, attn_mask, dropout_p, enable_gqa):
            from ..ops.meta import nn as meta
            meta.sdpa_rule(q, k, v, attn_mask, is_causal, enable_gqa)   # its errors first
            if _flash(q, k, v, enable_gqa):
                from . import flash_ops
                return flash_ops.forward(q, k, v, 0.0, is_causal, scale=scale)[0]
            return sdpa_forward(q, k, v, is_causal, scale)
        return math_path(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return scaled_dot_product_attention


def linear(math_path):
    """The CUDA variant's ``linear``: half operands in one cuBLAS GEMM over the flattened batch,
    the bias added by the GEMM (beta = 1) so the result is rounded once, as PyTorch's addmm."""
    def linear(x, w, b=None):
        X, W = x._data, w._data
        if graphs.captures_underway[0] and graphs.is_current_stream_capturing():
            return math_path(x, w, b)      # its matmul takes graphs.captured_matmul (CuPy refuses cuBLAS here)
        if not (X.dtype in _HALF and W.dtype == X.dtype and W.ndim == 2 and X.ndim >= 2 and X.size and W.size
                and (b is None or b._data.dtype == X.dtype)):
            return math_path(x, w, b)
        from ..ops.meta import nn as meta
        from .kernels import wrap_cuda
        meta.linear_rule(x, w, b)
        X2 = X.reshape(-1, X.shape[-1])
        out = cupy.empty((X2.shape[0], W.shape[0]), X.dtype)
        if b is not None:
            out[...] = b._data
        blas.gemm(X2, W.T, alpha=1.0, beta=0.0 if b is None else 1.0, out=out)
        return wrap_cuda(out.reshape(X.shape[:-1] + (W.shape[0],)))
    return linear


def linear_backward(grad, x, w, b, needs_grad):
    """(dx, dw, db) of the half ``linear`` above straight from cuBLAS on the flattened batch (dx = G @ W,
    dw = G^T @ X: the transpose is cuBLAS's operand flag, not a copy) and db from the column-sum
    kernels: three launches and no dispatcher calls, where the formula makes about eight (flatten,
    transpose, matmul, the bias's sum and reshape). None where the forward took the math path."""
    G, X, W = grad._data, x._data, w._data
    if (graphs.captures_underway[0] and graphs.is_current_stream_capturing()) or not (
            X.dtype in _HALF and G.dtype == W.dtype == X.dtype and W.ndim == 2 and X.ndim >= 2 and X.size and W.size
            and G.shape == X.shape[:-1] + (W.shape[0],) and (b is None or b._data.dtype == X.dtype)):
        return None
    from .kernels import wrap_cuda
    from .reduce import column_sums
    G2 = cupy.ascontiguousarray(G).reshape(-1, W.shape[0])
    padded = {}     # G2 zero-padded once for both products where its dims are odd (a tied LM head)
    dx = wrap_cuda(blas.gemm(G2, W, memo=padded).reshape(X.shape)) if needs_grad[0] else None
    dw = wrap_cuda(blas.gemm(G2.T, X.reshape(-1, X.shape[-1]), memo=padded)) if needs_grad[1] else None
    db = wrap_cuda(column_sums(G2, G2.shape[0], G2.shape[1])) if b is not None and needs_grad[2] else None
    return dx, dw, db
