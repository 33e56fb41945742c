"""LayerNorm on CUDA as three row kernels, where the CPU source takes six to ten whole-array
passes forward and about twenty backward (each a CuPy launch and a full-size temporary).

- ``ln_fwd``: one block per row; the row's mean, then its biased variance (two passes over the
  row, in float32), then ``(x - mean) * rstd * w + b`` in the input's dtype.
- ``ln_bwd``: a grid of at most `_PARTS` blocks, each taking rows ``blockIdx.x, + gridDim.x, ...``:
  per row it recomputes mean and rstd (nothing is saved by the forward: the autograd formula gets
  only the inputs), writes ``dx = rstd * (g*w - mean(g*w) - xhat * mean(g*w*xhat))`` and adds
  ``g * xhat`` and ``g`` to its block's float32 partial-sum rows for dgamma and dbeta.
- ``ln_params``: sums those partial rows per column (32 columns a block) into dgamma and dbeta in
  the parameters' dtype.

float16/bfloat16/float32 inputs with parameters of the same dtype (or none); float32 math
throughout ("opmath", as ATen's CUDA layer norm). Other cases take the CPU source on CuPy.
"""
from __future__ import annotations

from math import prod

import cupy
import numpy

from .fused import PRELUDE, TAGS, kernel, rows, storage

_PARTS = 1024       # blocks of the backward kernel, so partial-sum rows of dgamma / dbeta

_SOURCE = PRELUDE + r"""
// mean and rstd of one row of N elements (every thread gets both)
__device__ void row_stats(const ELEM_T* xr, long long N, float eps, float* shared, float* mean, float* rstd) {
    float s = 0.f;
    for (long long j = threadIdx.x; j < N; j += blockDim.x) s += load_DT(xr[j]);
    float m = block_reduce<false>(s, shared) / (float)N;
    float v = 0.f;
    for (long long j = threadIdx.x; j < N; j += blockDim.x) { float d = load_DT(xr[j]) - m; v += d * d; }
    *mean = m;
    *rstd = rsqrtf(block_reduce<false>(v, shared) / (float)N + eps);
}
extern "C" __global__ void ln_fwd_DT(const ELEM_T* x, const ELEM_T* w, const ELEM_T* b, ELEM_T* y,
                                      long long N, float eps, int has_w, int has_b) {
    __shared__ float shared[32];
    const ELEM_T* xr = x + blockIdx.x * N;
    ELEM_T* yr = y + blockIdx.x * N;
    float mean, rstd;
    row_stats(xr, N, eps, shared, &mean, &rstd);
    for (long long j = threadIdx.x; j < N; j += blockDim.x) {
        float h = (load_DT(xr[j]) - mean) * rstd;
        if (has_w) h *= load_DT(w[j]);
        if (has_b) h += load_DT(b[j]);
        yr[j] = store_DT(h);
    }
}
extern "C" __global__ void ln_bwd_DT(const ELEM_T* g, const ELEM_T* x, const ELEM_T* w, ELEM_T* dx,
                                      float* part_w, float* part_b, long long n_rows, long long N, float eps,
                                      int has_w) {
    __shared__ float shared[32];
    float* pw = part_w + blockIdx.x * N;
    float* pb = part_b + blockIdx.x * N;
    for (long long j = threadIdx.x; j < N; j += blockDim.x) { pw[j] = 0.f; pb[j] = 0.f; }
    for (long long row = blockIdx.x; row < n_rows; row += gridDim.x) {
        const ELEM_T* xr = x + row * N;
        const ELEM_T* gr = g + row * N;
        float mean, rstd;
        row_stats(xr, N, eps, shared, &mean, &rstd);
        float a = 0.f, c = 0.f;
        for (long long j = threadIdx.x; j < N; j += blockDim.x) {
            float xh = (load_DT(xr[j]) - mean) * rstd, gv = load_DT(gr[j]);
            float gh = has_w ? gv * load_DT(w[j]) : gv;
            a += gh;
            c += gh * xh;
            pw[j] += gv * xh;          // only this thread touches column j of this block's rows
            pb[j] += gv;
        }
        a = block_reduce<false>(a, shared) / (float)N;
        c = block_reduce<false>(c, shared) / (float)N;
        ELEM_T* dxr = dx + row * N;
        for (long long j = threadIdx.x; j < N; j += blockDim.x) {
            float xh = (load_DT(xr[j]) - mean) * rstd, gv = load_DT(gr[j]);
            float gh = has_w ? gv * load_DT(w[j]) : gv;
            dxr[j] = store_DT(rstd * (gh - a - xh * c));
        }
    }
}
// blockDim (32, 16): column blockIdx.x * 32 + threadIdx.x, partial rows threadIdx.y, + 16, ...
extern "C" __global__ void ln_params_DT(const float* part_w, const float* part_b, ELEM_T* dw, ELEM_T* db,
                                         long long parts, long long N) {
    __shared__ float sw[16][33], sb[16][33];
    long long j = blockIdx.x * 32LL + threadIdx.x;
    float aw = 0.f, ab = 0.f;
    if (j < N)
        for (long long p = threadIdx.y; p < parts; p += blockDim.y) { aw += part_w[p * N + j]; ab += part_b[p * N + j]; }
    sw[threadIdx.y][threadIdx.x] = aw;
    sb[threadIdx.y][threadIdx.x] = ab;
    __syncthreads();
    if (threadIdx.y == 0 && j < N) {
        for (int k = 1; k < blockDim.y; ++k) { aw += sw[k][threadIdx.x]; ab += sb[k][threadIdx.x]; }
        dw[j] = store_DT(aw);
        db[j] = store_DT(ab);
    }
}
"""


def _arrays(x, weight, bias, normalized_shape):
    """(x, w, b) as contiguous CuPy arrays and the row length, or None where the kernels do not apply."""
    X = x._data
    n = prod(normalized_shape)
    if X.dtype not in TAGS or X.size == 0 or n == 0:
        return None
    params = [None if p is None else p._data for p in (weight, bias)]
    if any(p is not None and (p.dtype != X.dtype or p.size != n) for p in params):
        return None
    X, W, B = (None if a is None else cupy.ascontiguousarray(a) for a in (X, *params))
    return X, W, B, n


def layer_norm(math_path):
    """The CUDA variant's ``layer_norm``: `ln_fwd` for float16/bfloat16/float32 with parameters of
    the input's dtype; other cases run `math_path` (the CPU source on CuPy)."""
    def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
        from ..ops.meta import nn as meta
        meta.layer_norm_check(x, normalized_shape, weight, bias)
        arrays = _arrays(x, weight, bias, normalized_shape)
        if arrays is None:
            return math_path(x, normalized_shape, weight, bias, eps, cudnn_enable)
        from .kernels import wrap_cuda
        X, W, B, n = arrays
        y = cupy.empty(X.shape, X.dtype)
        rows(kernel(_SOURCE, "ln_fwd", X.dtype), X.size // n, n,
             (storage(X), storage(X if W is None else W), storage(X if B is None else B), storage(y),
              numpy.int64(n), numpy.float32(eps), numpy.int32(W is not None), numpy.int32(B is not None)))
        return wrap_cuda(y)
    return layer_norm


def layer_norm_backward(grad, x, normalized_shape, weight, bias, eps):
    """(dx, dweight, dbias) of ``layer_norm`` from `ln_bwd` and `ln_params`, or None where the
    kernels do not apply (the autograd formula then computes them with ember ops)."""
    arrays = _arrays(x, weight, bias, normalized_shape)
    G = grad._data
    if arrays is None or G.dtype != x._data.dtype or G.shape != x._data.shape:
        return None
    from .kernels import wrap_cuda
    X, W, _, n = arrays
    G = cupy.ascontiguousarray(G)        # e.g. the expanded ones of sum()'s backward
    n_rows = X.size // n
    parts = min(n_rows, _PARTS)
    dx = cupy.empty(X.shape, X.dtype)
    partial_w, partial_b = cupy.empty((parts, n), numpy.float32), cupy.empty((parts, n), numpy.float32)
    threads = 128 if n <= 512 else 256 if n <= 2048 else 1024
    kernel(_SOURCE, "ln_bwd", X.dtype)((parts,), (threads,), (
        storage(G), storage(X), storage(X if W is None else W), storage(dx), partial_w, partial_b,
        numpy.int64(n_rows), numpy.int64(n), numpy.float32(eps), numpy.int32(W is not None)))
    if weight is None and bias is None:
        return wrap_cuda(dx), None, None
    # made in the parameters' shapes (not reshaped views): AccumulateGrad may keep them as .grad
    dw, db = (cupy.empty(n if p is None else p.shape, X.dtype) for p in (weight, bias))
    kernel(_SOURCE, "ln_params", X.dtype)(((n + 31) // 32,), (32, 16), (
        partial_w, partial_b, storage(dw), storage(db), numpy.int64(parts), numpy.int64(n)))
    return wrap_cuda(dx), None if weight is None else wrap_cuda(dw), None if bias is None else wrap_cuda(db)
