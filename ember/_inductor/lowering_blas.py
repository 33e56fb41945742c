"""linear and matmul as the fuser's own extern kernels where they are faster than eager's: on the CPU
extern_blas.py for float32/float64 operands of one dtype, on CUDA lowering_cublas.py (cuBLAS, odd
half products padded); every other case runs eager's kernel (an extern of the aten op itself)."""
from __future__ import annotations

from .._core import dtype as _dt
from . import extern_blas, lowering_cublas
from .lowering import EXTERN_LOWERINGS, register

_BLAS = (_dt.float32, _dt.float64)


def _same_float(g, *values):
    # extern_blas computes on host arrays: a CUDA graph keeps ember's CUDA matmul (cuBLAS)
    return g.device == "cpu" and all(v is None or v.dtype == values[0].dtype for v in values) and values[0].dtype in _BLAS


@register("linear.default", table=EXTERN_LOWERINGS)
def linear(g, meta, x, w, b=None):
    if g.device == "cuda":
        return lowering_cublas.linear(g, meta, x, w, b)
    if len(x.shape) < 2 or len(w.shape) != 2 or not _same_float(g, x, w, b):
        return None
    return g.extern(extern_blas.linear, [x, w, b], {}, meta)


@register("matmul.default", table=EXTERN_LOWERINGS)
def matmul(g, meta, a, b):
    if g.device == "cuda":
        return lowering_cublas.matmul(g, meta, a, b)
    if len(a.shape) < 2 or len(b.shape) != 2 or not _same_float(g, a, b):
        return None
    return g.extern(extern_blas.matmul, [a, b], {}, meta)
