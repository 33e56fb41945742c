"""linear and matmul as the fuser's own extern kernels (extern_blas.py) where they are faster than
eager's: float32/float64 operands of one dtype; every other case runs eager's kernel (an extern of
the aten op itself)."""
from __future__ import annotations

from .._core import dtype as _dt
from . import extern_blas
from .lowering import EXTERN_LOWERINGS, register

_BLAS = (_dt.float32, _dt.float64)


def _same_float(*values):
    return all(v is None or v.dtype == values[0].dtype for v in values) and values[0].dtype in _BLAS


@register("linear.default", table=EXTERN_LOWERINGS)
def linear(g, meta, x, w, b=None):
    if len(x.shape) < 2 or len(w.shape) != 2 or not _same_float(x, w, b):
        return None
    return g.extern(extern_blas.linear, [x, w, b], {}, meta)


@register("matmul.default", table=EXTERN_LOWERINGS)
def matmul(g, meta, a, b):
    if len(a.shape) < 2 or len(b.shape) != 2 or not _same_float(a, b):
        return None
    return g.extern(extern_blas.matmul, [a, b], {}, meta)
