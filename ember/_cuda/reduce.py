"""``sum`` over the leading dims of a contiguous float16/bfloat16/float32 tensor (a bias gradient:
the batch and sequence dims of a Linear's output gradient) as two small kernels, where the CPU
source widens a half tensor to a float32 copy, reduces it with CuPy and rounds it back (three
full-size passes). The input is read once, in its own dtype; sums are float32 and round once into
the input's dtype, as PyTorch's CUDA sum.

- ``colsum``: blocks of (32 columns x 8 threads) over a chunk of rows each: grid (column tiles,
  parts); each writes its chunk's column sums to a float32 partial row.
- ``colsum_finish``: adds the partial rows per column and stores the result.
"""
from __future__ import annotations

from math import prod

import cupy
import numpy

from .fused import PRELUDE, TAGS, kernel, storage

_BLOCKS = 2048      # about this many blocks in the first kernel (16 per SM of an H100), at most

_SOURCE = PRELUDE + r"""
extern "C" __global__ void colsum_DT(const ELEM_T* x, float* part, long long M, long long N, long long chunk) {
    __shared__ float acc[8][33];
    long long j = blockIdx.x * 32LL + threadIdx.x, first = blockIdx.y * chunk;
    long long last = first + chunk < M ? first + chunk : M;
    float s = 0.f;
    if (j < N)
        for (long long r = first + threadIdx.y; r < last; r += blockDim.y) s += load_DT(x[r * N + j]);
    acc[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && j < N) {
        for (int k = 1; k < blockDim.y; ++k) s += acc[k][threadIdx.x];
        part[blockIdx.y * N + j] = s;
    }
}
extern "C" __global__ void colsum_finish_DT(const float* part, ELEM_T* out, long long parts, long long N) {
    __shared__ float acc[8][33];
    long long j = blockIdx.x * 32LL + threadIdx.x;
    float s = 0.f;
    if (j < N)
        for (long long p = threadIdx.y; p < parts; p += blockDim.y) s += part[p * N + j];
    acc[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && j < N) {
        for (int k = 1; k < blockDim.y; ++k) s += acc[k][threadIdx.x];
        out[j] = store_DT(s);
    }
}
"""


def column_sums(X, M, N):
    """The sums of the M rows of the contiguous (M, N) array `X`, in X's dtype."""
    tiles = (N + 31) // 32
    parts = max(1, min((M + 31) // 32, (_BLOCKS + tiles - 1) // tiles))
    chunk = (M + parts - 1) // parts
    parts = (M + chunk - 1) // chunk
    partial = cupy.empty((parts, N), numpy.float32)
    out = cupy.empty(N, X.dtype)
    kernel(_SOURCE, "colsum", X.dtype)((tiles, parts), (32, 8),
                                       (storage(X), partial, numpy.int64(M), numpy.int64(N), numpy.int64(chunk)))
    kernel(_SOURCE, "colsum_finish", X.dtype)((tiles,), (32, 8), (partial, storage(out), numpy.int64(parts),
                                                                  numpy.int64(N)))
    return out


def sum_dim(math_path):
    """The CUDA variant's ``sum.dim_IntList``: `column_sums` where the reduced dims are the leading
    ones of a contiguous float16/bfloat16/float32 tensor summed in its own dtype, at least 32 values
    left per row; every other sum (and every error) from `math_path`."""
    def sum_dim(self, dim, keepdim=False, dtype=None):
        X = self._data
        if X.dtype in TAGS and dim not in (None, (), []) and X.ndim >= 2 and X.size and X.flags.c_contiguous:
            from ..ops.meta import reduction as plans
            dims, shape, out_dt = plans.plan_sum(self, dim, keepdim, dtype)
            k = len(dims)
            if out_dt.np == X.dtype and k < X.ndim and sorted(dims) == list(range(k)):
                N = prod(X.shape[k:])
                if N >= 32:
                    from .kernels import wrap_cuda
                    return wrap_cuda(column_sums(X, X.size // N, N).reshape(shape))
        return math_path(self, dim, keepdim, dtype)
    return sum_dim
