"""The fuser's extern product on CUDA (extern_blas.py's analogue): a (n-d) @ b (2-d) for float16,
bfloat16 and float32 CuPy operands of one dtype, with a's leading dims folded into the GEMM's rows
when they fold without a copy (a view), then eager's own 2-D product call (`_cuda/overrides.matmul`:
one cublasGemmEx for C-contiguous operands, blas.gemm reading transposes in place otherwise, under
the TF32 switch for float32). A C-contiguous product therefore makes eager's cuBLAS call exactly
(same bits); it runs without eager's dispatch, shape inference and batched set-up.

lowering_cublas.py calls it for the graph's matmul and linear nodes, on zero-padded operands where
an odd dim would put cuBLAS on its slow kernels (blas.PAD_ALIGN).
"""
from __future__ import annotations


def _fold(a):
    """CuPy array `a` (n-d) as 2-D (rows, last dim) when its leading dims walk one stride, else None."""
    if a.ndim == 2:
        return a
    for i in range(a.ndim - 2):
        if a.shape[i + 1] != 1 and a.strides[i] != a.strides[i + 1] * a.shape[i + 1]:
            return None
    return a.reshape(-1, a.shape[-1])      # a view: the dims walk one stride


def matmul(a, b):
    from .._cuda import overrides
    from .._cuda.kernels import wrap_cuda
    A, B = a._data, b._data
    A2 = _fold(A)
    if A2 is None:
        return wrap_cuda(overrides.matmul(A, B))
    out = overrides.matmul(A2, B)
    return wrap_cuda(out.reshape(A.shape[:-1] + (B.shape[1],)))


matmul.name = "ember_cublas_matmul"     # how plans and logs name it (wrapper.FUSER_EXTERNS)
