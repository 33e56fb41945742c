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
from .gemm_padding import pads_pay, padded_size

_CUDA_TYPES = {numpy.dtype(numpy.float16): 2, _dt.bfloat16.np: 14, numpy.dtype(numpy.float32): 0}   # cudaDataType
_COMPUTE_32F, _COMPUTE_32F_FAST_TF32, _COMPUTE_64F, _DEFAULT_ALGO = 68, 77, 70, -1
_scalars: dict = {}     # (alpha, beta) -> (float32 host array cuBLAS reads them from, its two addresses)
# (alpha, beta) = (1, 0) as cuBLAS reads them: in the compute type (float64 products: double)
_ONE_ZERO_F32, _ONE_ZERO_F64 = numpy.array((1.0, 0.0), numpy.float32), numpy.array((1.0, 0.0), numpy.float64)
_ONE_ZERO_PTRS = {False: (_ONE_ZERO_F32.ctypes.data, _ONE_ZERO_F32.ctypes.data + 4),
                  True: (_ONE_ZERO_F64.ctypes.data, _ONE_ZERO_F64.ctypes.data + 8)}   # (read once: .ctypes builds an object per read)
_get_device = cupy.cuda.runtime.getDevice
_MM2D_TYPES = {**_CUDA_TYPES, numpy.dtype(numpy.float64): 1}
_libs: list = []        # (cublas, get_cublas_handle, the matmul flags), loaded on the first product


def _loaded():
    if not _libs:
        from cupy.cuda import cublas, device     # (here: loading cuBLAS needs the CUDA libraries)
        from ..backends.cuda import matmul as flags
        _libs.extend((cublas, device.get_cublas_handle, flags))
    return _libs


_F32, _F64 = numpy.dtype(numpy.float32), numpy.dtype(numpy.float64)


def _compute_type(dtype, flags):
    """cuBLAS's compute type for operands of `dtype`: float32 accumulation (TF32 tensor cores for
    float32 operands exactly when ``allow_tf32``), float64 for float64. (Against dtype objects:
    `== numpy.float64` converts the type to a dtype on every call, ~1 us on a tiny product.)"""
    if dtype == _F64:
        return _COMPUTE_64F
    return _COMPUTE_32F_FAST_TF32 if dtype == _F32 and flags.allow_tf32 else _COMPUTE_32F


def mm2d(x, y):
    """x @ y for C-contiguous 2-D `x` (M, K) and `y` (K, N) of one dtype in one cublasGemmEx
    call, or None (another dtype, an empty dim: the general paths take those)."""
    cuda_type = _MM2D_TYPES.get(x.dtype)
    (M, K), (K2, N) = x.shape, y.shape
    if cuda_type is None or K != K2 or not (M and N and K):
        return None
    if pads_pay(x.dtype, M, N, K) and y.dtype == x.dtype:
        return _padded_gemm(x, y, x.dtype, 1.0, None)
    cublas, handle, flags = _libs or _loaded()
    if x.data.device_id != _get_device():
        return None
    out = cupy.ndarray((M, N), x.dtype)
    one, zero = _ONE_ZERO_PTRS[cuda_type == 1]
    # row-major C = X @ Y is column-major C^T = Y^T @ X^T: cuBLAS gets (Y, X) and writes C^T
    cublas.gemmEx(handle(), 0, 0, N, M, K, one, y.data.ptr, cuda_type, N, x.data.ptr, cuda_type, K,
                  zero, out.data.ptr, cuda_type, N, _compute_type(x.dtype, flags), _DEFAULT_ALGO)
    return out


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


def zero_padded(a, rows, cols, memo=None):
    """2-D `a` (r, c) inside a fresh (rows, cols) array of zeros elsewhere, written in `a`'s own
    orientation (a column-major operand, a gradient's transpose, stays one: no transposing copy).
    `memo` (a dict) keeps it for another product of the same unchanged operand (a linear's
    backward pads its gradient once for dx = G @ W and dw = G^T @ X)."""
    r, c = a.shape
    if a.strides[0] == a.itemsize and a.strides[1] != a.itemsize:
        return zero_padded(a.T, cols, rows, memo).T
    key = (a.data.ptr, a.shape, a.strides, rows, cols)
    if memo is not None and key in memo:
        return memo[key]
    p = cupy.empty((rows, cols), a.dtype)
    p[:r, :c] = a
    if cols > c:
        p[:r, c:] = 0
    if rows > r:
        p[r:] = 0
    if memo is not None:
        memo[key] = p
    return p


def _padded_gemm(x, y, out_dtype, alpha, out, memo=None):
    (M, K), N = x.shape, y.shape[1]
    Mp, Kp, Np = padded_size(M), padded_size(K), padded_size(N)
    xp = x if (Mp, Kp) == (M, K) else zero_padded(x, Mp, Kp, memo)
    yp = y if (Kp, Np) == (K, N) else zero_padded(y, Kp, Np, memo)
    full = None
    if xp._c_contiguous and yp._c_contiguous and alpha == 1.0 and out_dtype == xp.dtype:
        full = mm2d(xp, yp)     # the call overrides.matmul makes for these (so the fuser's padded product matches)
    if full is None:
        full = gemm(xp, yp, out_dtype, alpha)
    if out is None:
        return full if (Mp, Np) == (M, N) else cupy.ascontiguousarray(full[:M, :N])
    out[...] = full[:M, :N]
    return out


def gemm(x, y, out_dtype=None, alpha=1.0, beta=0.0, out=None, memo=None):
    """alpha * x @ y (+ beta * out) for stacks of matrices with broadcast batch dims, computed in
    float32 (TF32 for float32 operands under ``allow_tf32``), returned in `out_dtype` (x's dtype).
    `out` may be a view with rows apart (its last dim contiguous): cuBLAS writes it in place.
    A large 2-D half product with odd dims is computed zero-padded (gemm_padding.py; `memo`:
    `zero_padded`'s)."""
    out_dtype = x.dtype if out_dtype is None else numpy.dtype(out_dtype)
    # (2-D operands, a linear's products: no broadcasting to work out, ~10 us a call)
    batch = () if x.ndim == 2 and y.ndim == 2 else numpy.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    (M, K), N = x.shape[-2:], y.shape[-1]
    if not batch and beta == 0 and x.dtype == y.dtype == out_dtype and pads_pay(out_dtype, M, N, K):
        return _padded_gemm(x, y, out_dtype, alpha, out, memo)
    if out is None:
        out = cupy.empty(batch + (M, N), out_dtype)
    if out.size == 0:
        return out
    if K == 0:
        out[...] = 0 if beta == 0 else out * beta
        return out
    nb = len(batch)
    xa, xop, xld, xbs = _operand(x if x.shape[:-2] == batch else cupy.broadcast_to(x, batch + (M, K)), nb)
    ya, yop, yld, ybs = _operand(y if y.shape[:-2] == batch else cupy.broadcast_to(y, batch + (K, N)), nb)
    ldc, cbs = _out_layout(out, nb, M, N)
    count = int(numpy.prod(batch)) if nb else 1
    cublas, handle, flags = _libs or _loaded()
    compute = _compute_type(x.dtype, flags)
    key = (float(alpha), float(beta))
    scalars = _scalars.get(key)
    if scalars is None:     # (the addresses read once: .ctypes builds an object per read)
        held = numpy.array(key, numpy.float32)
        scalars = _scalars[key] = (held, held.ctypes.data, held.ctypes.data + 4)
    # row-major C = X @ Y is column-major C^T = Y^T @ X^T: cuBLAS gets (Y, X) and writes C^T
    cublas.gemmStridedBatchedEx(
        handle(), yop, xop, N, M, K, scalars[1],
        ya.data.ptr, _CUDA_TYPES[ya.dtype], yld, ybs, xa.data.ptr, _CUDA_TYPES[xa.dtype], xld, xbs,
        scalars[2], out.data.ptr, _CUDA_TYPES[out_dtype], ldc, cbs, count, compute, _DEFAULT_ALGO)
    return out


def _out_layout(out, batch_ndim, M, N):
    """(leading dim, batch stride) in elements of the output cuBLAS writes: C-contiguous, or rows
    apart by a stride >= N with the last dim contiguous (a padded buffer's view)."""
    if out._c_contiguous:
        return N, M * N
    s0, s1 = (s // out.itemsize for s in out.strides[-2:])
    bs = _batch_stride(out, batch_ndim) if batch_ndim else 0
    if (s1 != 1 and N > 1) or s0 < N or bs is None or (batch_ndim and bs < M * s0):
        raise ValueError(f"blas.gemm: out must have a contiguous last dim and rows apart, got strides {out.strides}")
    return s0, bs
