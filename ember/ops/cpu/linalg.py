"""CPU kernels of the linear-algebra family: matrix products (matmul, mm, bmm, addmm & co, dot,
outer, tensordot, kron, cross, trace). Decompositions and norms are in linalg_decomp.py.

Shapes, dtypes and errors come from ember/ops/meta/linalg.py (shared with the Meta kernels).
Products run in ``np.matmul`` (BLAS for float32/64 and complex); float16/bfloat16 are computed
in float32 and rounded once, like PyTorch's CPU kernels accumulate in float. Integer products
wrap around like PyTorch's. Bool products raise PyTorch's NotImplementedError.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ..._core import dtype as _dt
from ..._core.tensor import wrap
from .. import rules
from ..meta import linalg as shapes
from .pointwise import ON_CUDA

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_HALF = {np.dtype(np.float16), _dt.bfloat16.np}
_BLAS = {_F32, _F64, np.dtype(np.complex64), np.dtype(np.complex128)}


def _no_bool(arr, kernel, other=None):
    """PyTorch's CPU GEMMs have no bool kernel; they return early (no error) when one operand
    (`arr`, `other`) is empty, i.e. the result is empty or the contracted size is 0."""
    if arr.dtype.kind == "b" and (other is None or (arr.size and other.size)):
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def _no_bool_add(x, y, out_shape, kernel):
    """addmm & co on bool: PyTorch's empty-K path fails while casting its Long result."""
    _no_bool(x, kernel, y)
    if x.dtype.kind == "b" and prod(out_shape):
        raise RuntimeError("result type Long can't be cast to the desired output type Bool")


def _cdt(np_dtype):
    """The dtype a product is computed in."""
    return _F32 if np_dtype in _HALF else np_dtype


def _prod(x, y, np_dtype):
    """x @ y computed in `np_dtype`'s compute type, returned in `np_dtype`."""
    c = _cdt(np_dtype)
    if x.dtype is not c:
        x = x.astype(c)
    if y.dtype is not c:
        y = y.astype(c)
    r = _matmul(x, y)
    return r if r.dtype is np_dtype else r.astype(np_dtype)


def _matmul(x, y):
    """np.matmul, with a C-contiguous (..., n, k) @ (k, m) done as one 2-D GEMM: NumPy runs one
    BLAS call per leading index there (1.7x slower for a linear layer over (8, 32, 128))."""
    if x.ndim > 2 and y.ndim == 2 and x.size and x.flags.c_contiguous:
        return np.matmul(x.reshape(-1, x.shape[-1]), y).reshape(*x.shape[:-1], y.shape[-1])
    return np.matmul(x, y)


def _scalar_for(value, d):
    """alpha/beta converted to the op's dtype the way PyTorch's kernels do (int(0.5) == 0)."""
    if d.category <= _dt.INT and not isinstance(value, bool):
        return int(value.real if isinstance(value, complex) else value)
    if d.category == _dt.FLOAT and isinstance(value, complex):
        return value.real
    return value


def _axpby(self_arr, prod, beta, alpha, np_dtype, out_shape):
    """beta * self + alpha * prod (self ignored when beta == 0, so its NaNs do not leak)."""
    d = _dt._FROM_NP[np_dtype]
    beta, alpha = _scalar_for(beta, d), _scalar_for(alpha, d)
    if np_dtype.kind == "b":
        p = prod if alpha else np.zeros(out_shape, np.bool_)
        return np.broadcast_to(self_arr, out_shape) & bool(beta) | p if beta else p.copy()
    c = _cdt(np_dtype)
    p = prod.astype(c) if prod.dtype is not c else prod
    if not (alpha == 1 and alpha.__class__ is int):
        p = p * np.asarray(alpha).astype(c)       # the scalar in the op's dtype (ints wrap like C casts)
    if beta == 0:
        r = np.broadcast_to(p, out_shape)
    else:
        s = self_arr.astype(c) if self_arr.dtype is not c else self_arr
        if not (beta == 1 and beta.__class__ is int):
            s = s * np.asarray(beta).astype(c)
        r = s + p
    return np.ascontiguousarray(np.broadcast_to(r, out_shape).astype(np_dtype, copy=False))


# ---------------------------------------------------------------------------------------
# products
# ---------------------------------------------------------------------------------------
# A 2-D product: ndarray.dot is the same GEMM as np.matmul without its gufunc set-up (~0.7 us a
# call); the CUDA variant replaces it with cuBLAS under the TF32 setting (_cuda/overrides.py).
def _mm2d(x, y):
    return x.dot(y)


def matmul(a, b):
    """torch.matmul: dot / mv / mm / batched mm with broadcast batch dims."""
    x, y = a._data, b._data
    if x.ndim == 2 and y.ndim == 2 and x.dtype is y.dtype and x.dtype in _BLAS:  # the hot path
        if x.shape[1] != y.shape[0]:
            shapes.mm_shape(a, b)
        return wrap(_mm2d(x, y))
    shape = shapes.matmul_shape(a, b)
    if x.ndim == 1 and y.ndim == 1:
        _no_bool(x, "dot")
    else:
        _no_bool(x, "addmm_impl_cpu_" if max(x.ndim, y.ndim) <= 2 else "bmm", y)
    return wrap(_prod(x, y, x.dtype).reshape(shape))


def mm(a, b):
    shapes.mm_shape(a, b)
    _no_bool(a._data, "addmm_impl_cpu_", b._data)
    return wrap(_prod(a._data, b._data, a._data.dtype))


def bmm(a, b):
    shapes.bmm_shape(a, b)
    _no_bool(a._data, "bmm", b._data)
    return wrap(_prod(a._data, b._data, a._data.dtype))


def dot(a, b):
    shapes._dot_checks(a, b)
    _no_bool(a._data, "dot")
    return wrap(np.asarray(_prod(a._data, b._data, a._data.dtype)))


def vdot(a, b):
    shapes._dot_checks(a, b, "vdot")
    _no_bool(a._data, "vdot")
    x = a._data
    return wrap(np.asarray(_prod(np.conj(x) if x.dtype.kind == "c" else x, b._data, x.dtype)))


def mv(m, v):
    shapes.mv_shape(m, v)
    shapes._same_dtype_mv(m, m, v)
    _no_bool(m._data, "addmv_impl_cpu", v._data)
    return wrap(_prod(m._data, v._data, m._data.dtype))


def addmm(self, m1, m2, beta=1, alpha=1):
    out = shapes.addmm_shape(self, m1, m2)
    _no_bool_add(m1._data, m2._data, out, "addmm_impl_cpu_")
    d = m1._data.dtype
    return wrap(_axpby(self._data, _prod(m1._data, m2._data, _cdt(d)), beta, alpha, d, out))


def addmv(self, m, v, beta=1, alpha=1):
    out = shapes.mv_shape(m, v, tuple(self.shape))
    shapes._same_dtype_mv(self, m, v)
    _no_bool_add(m._data, v._data, out, "addmv_impl_cpu")
    d = m._data.dtype
    return wrap(_axpby(self._data, _prod(m._data, v._data, _cdt(d)), beta, alpha, d, out))


def baddbmm(self, b1, b2, beta=1, alpha=1):
    out = shapes.baddbmm_shape(self, b1, b2)
    _no_bool_add(b1._data, b2._data, out, "baddbmm_with_gemm")
    d = b1._data.dtype
    return wrap(_axpby(self._data, _prod(b1._data, b2._data, _cdt(d)), beta, alpha, d, out))


def addbmm(self, b1, b2, beta=1, alpha=1):
    out = shapes.baddbmm_shape(self, b1, b2, reduce_batch=True)
    _no_bool_add(b1._data, b2._data, out, "addbmm")
    d = b1._data.dtype
    x, y = b1._data, b2._data
    # sum over the batch of b1[i] @ b2[i] is one (n, b*m) @ (b*m, p) product
    n, m, p = x.shape[1], x.shape[2], y.shape[2]
    prod = _prod(x.transpose(1, 0, 2).reshape(n, -1), y.reshape(-1, p), _cdt(d)) if x.shape[0] and m else \
        np.zeros((n, p), _cdt(d))
    return wrap(_axpby(self._data, prod, beta, alpha, d, out))


def addr(self, v1, v2, beta=1, alpha=1):
    out = shapes.addr_shape(self, v1, v2)
    common = rules.common_dtype(self, v1, v2)
    for name, v in (("beta", beta), ("alpha", alpha)):
        if common is not _dt.bool_ and isinstance(v, bool):
            raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
        if common.category <= _dt.INT and common is not _dt.bool_ and isinstance(v, float):
            raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating point number.")
    d = common.np
    c = _cdt(d)
    prod = np.multiply.outer(v1._data.astype(c), v2._data.astype(c)) if d.kind != "b" else \
        np.logical_and.outer(v1._data, v2._data)
    return wrap(_axpby(self._data.astype(d, copy=False), prod, beta, alpha, d, out))


def outer(a, b):
    shapes.outer_shape(a, b)
    d = rules.common_dtype(a, b).np
    if d.kind == "b":
        return wrap(np.logical_and.outer(a._data, b._data))
    c = _cdt(d)
    return wrap(np.multiply.outer(a._data.astype(c, copy=False), b._data.astype(c, copy=False)).astype(d, copy=False))


def inner(a, b):
    shape = shapes.inner_shape(a, b)
    if a.ndim == 0 or b.ndim == 0:
        d = rules.common_dtype(a, b).np
        c = _cdt(d)
        if d.kind == "b":
            return wrap(np.logical_and(a._data, b._data))
        return wrap(np.multiply(a._data.astype(c), b._data.astype(c)).astype(d, copy=False))
    x, y = a._data, b._data
    _no_bool(x, "dot" if x.ndim == 1 and y.ndim == 1 else "addmm_impl_cpu_")
    c = _cdt(x.dtype)
    r = np.tensordot(x.astype(c, copy=False), y.astype(c, copy=False), axes=([-1], [-1]))
    return wrap(np.asarray(r).astype(x.dtype, copy=False).reshape(shape))


def tensordot(a, b, dims_a, dims_b):
    shape, da, db = shapes.tensordot_shape(a, b, dims_a, dims_b)
    x, y = a._data, b._data
    _no_bool(x, "addmm_impl_cpu_")
    # size-1 contracted dims broadcast against the other operand (PyTorch sums the other one)
    for i, j in zip(da, db):
        if x.shape[i] != y.shape[j]:
            if x.shape[i] == 1:
                y = y.sum(axis=j, keepdims=True)
            else:
                x = x.sum(axis=i, keepdims=True)
    c = _cdt(x.dtype)
    r = np.tensordot(x.astype(c, copy=False), y.astype(c, copy=False), axes=(list(da), list(db)))
    return wrap(np.asarray(r).astype(a._data.dtype, copy=False).reshape(shape))


def kron(a, b):
    d = rules.common_dtype(a, b).np
    c = _cdt(d)
    x, y = a._data.astype(c, copy=False), b._data.astype(c, copy=False)
    if d.kind == "b":
        return wrap(np.kron(x.astype(np.uint8), y.astype(np.uint8)).astype(np.bool_))
    return wrap(np.ascontiguousarray(np.kron(x, y)).astype(d, copy=False).reshape(shapes.kron_shape(a, b)))


def _cross(a, b, dim, op):
    shape, dim = shapes.cross_dim(a, b, dim, op)
    _no_bool(a._data, "cross")
    d = a._data.dtype
    c = _cdt(d)
    x = np.broadcast_to(a._data, shape).astype(c, copy=False)
    y = np.broadcast_to(b._data, shape).astype(c, copy=False)
    x0, x1, x2 = np.moveaxis(x, dim, 0)
    y0, y1, y2 = np.moveaxis(y, dim, 0)
    r = np.stack([x1 * y2 - x2 * y1, x2 * y0 - x0 * y2, x0 * y1 - x1 * y0], axis=dim)
    return wrap(r.astype(d, copy=False))


def cross(a, b, dim=None):
    return _cross(a, b, dim, "cross")


def linalg_cross(a, b, dim=-1):
    return _cross(a, b, dim, "linalg.cross")


def trace(x):
    shapes.trace_checks(x)
    arr = x._data
    if not ON_CUDA:      # PyTorch's CUDA trace (a diagonal sum) takes bool; its CPU kernel does not
        _no_bool(arr, "trace")
    out = shapes.trace_dtype(x.dtype).np
    c = _cdt(out)
    return wrap(np.asarray(np.trace(arr.astype(c, copy=False))).astype(out, copy=False))
