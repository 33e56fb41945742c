"""Half-precision GEMMs through cuBLAS (``cublasGemmStridedBatchedEx``), as PyTorch's CUDA GEMMs:
float16/bfloat16 operands, float32 accumulation, one rounding into the output dtype.

CuPy's ``matmul`` runs 2-D bfloat16 products on cuBLAS but sends batched ones to its integer
fallback (which cannot name bfloat16), so every half product of the CUDA kernels comes here. An
operand is passed to cuBLAS as it lies in memory wherever its last two dims are row- or column-
contiguous and its batch dims collapse to one stride (``k.mT``, broadcast batches): no copies.
"""
from __future__ import annotations

import cupy
import numpy

from .._core import dtype as _dt

_CUDA_TYPES = {numpy.dtype(numpy.float16): 2, _dt.bfloat16.np: 14, numpy.dtype(numpy.float32): 0}   # cudaDataType
_COMPUTE_32F, _COMPUTE_32F_FAST_TF32, _DEFAULT_ALGO = 68, 77, -1
_scalars: dict = {}     # (alpha, beta) -> float32 host array cuBLAS reads them from


def _batch_stride(a, batch_ndim):
    """One element stride that walks all batch dims of `a` in order, or None."""
    stride, span = None, None
    for size, s in zip(reversed(a.shape[:batch_ndim]), reversed(a.strides[:batch_ndim])):
        if size == 1:
            continue
        if stride is None:
            stride, span = s, s * size
        elif s == span or (s == 0 and stride == 0):
            span = s * size
        else:
            return None
    return 0 if stride is None else stride // a.itemsize


def _operand(a, batch_ndim):
    """(array, cuBLAS op, leading dim, batch stride) of a row-major (r, c) matrix stack `a`, read
    by cuBLAS (column-major) as its transpose: op N when rows are contiguous, op T when columns are."""
    r, c = a.shape[-2:]
    s0, s1 = (s // a.itemsize for s in a.strides[-2:])
    bs = _batch_stride(a, batch_ndim)
    if bs is not None:
        if (s1 == 1 or c == 1) and s0 >= max(1, c):
            return a, 0, s0, bs
        if (s0 == 1 or r == 1) and s1 >= max(1, r):
            return a, 1, s1, bs
    a = cupy.ascontiguousarray(a)
    return a, 0, max(1, c), (r * c if batch_ndim else 0)


def gemm(x, y, out_dtype=None, alpha=1.0, beta=0.0, out=None):
    """alpha * x @ y (+ beta * out) for stacks of matrices with broadcast batch dims, computed in
    float32 (TF32 for float32 operands under ``allow_tf32``), returned in `out_dtype` (x's dtype)."""
    out_dtype = numpy.dtype(out_dtype or x.dtype)
    batch = numpy.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    (M, K), N = x.shape[-2:], y.shape[-1]
    if out is None:
        out = cupy.empty(batch + (M, N), out_dtype)
    if out.size == 0:
        return out
    if K == 0:
        out[...] = 0 if beta == 0 else out * beta
        return out
    nb = len(batch)
    xa, xop, xld, xbs = _operand(cupy.broadcast_to(x, batch + (M, K)), nb)
    ya, yop, yld, ybs = _operand(cupy.broadcast_to(y, batch + (K, N)), nb)
    count = int(numpy.prod(batch)) if nb else 1
    compute = _COMPUTE_32F
    if x.dtype == numpy.float32:
        from ..backends.cuda import matmul as flags
        compute = _COMPUTE_32F_FAST_TF32 if flags.allow_tf32 else _COMPUTE_32F
    key = (float(alpha), float(beta))
    scalars = _scalars.get(key)
    if scalars is None:
        scalars = _scalars[key] = numpy.array(key, numpy.float32)
    from cupy.cuda import cublas, device     # (here: loading cuBLAS needs the CUDA libraries)
    # row-major C = X @ Y is column-major C^T = Y^T @ X^T: cuBLAS gets (Y, X) and writes C^T
    cublas.gemmStridedBatchedEx(
        device.get_cublas_handle(), yop, xop, N, M, K, scalars.ctypes.data,
        ya.data.ptr, _CUDA_TYPES[ya.dtype], yld, ybs, xa.data.ptr, _CUDA_TYPES[xa.dtype], xld, xbs,
        scalars.ctypes.data + 4, out.data.ptr, _CUDA_TYPES[out_dtype], N, M * N, count, compute, _DEFAULT_ALGO)
    return out
