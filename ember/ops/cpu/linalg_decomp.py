"""CPU kernels of torch.linalg's decompositions, solvers and norms, on ``numpy.linalg``.

Checks, result shapes and dtypes come from ember/ops/meta/linalg_decomp.py. NumPy's LAPACK
errors become `LinAlgError` (a RuntimeError, like ``torch.linalg.LinAlgError``).
"""
from __future__ import annotations

import numpy as np

from ..._core.tensor import wrap
from ..meta import linalg_decomp as plan
from ..meta.linalg import SlogdetResult, QRResult, SVDResult, OldSVDResult, EighResult
from .linalg import _cdt, _prod, _no_bool

_INF = float("inf")


class LinAlgError(RuntimeError):
    """Raised when a matrix is singular / not positive-definite (torch.linalg.LinAlgError)."""


def _lapack(fn, op, what):
    try:
        return fn()
    except np.linalg.LinAlgError:
        raise LinAlgError(f"{op}: {what}") from None


_SINGULAR = "The diagonal element is zero, the inversion could not be completed because the input matrix is singular."


def linalg_inv(A):
    plan.square_float(A, "linalg.inv")
    a = A._data
    if a.size == 0:
        return wrap(np.empty(a.shape, a.dtype))
    return wrap(_lapack(lambda: np.linalg.inv(a), "linalg.inv", _SINGULAR).astype(a.dtype, copy=False))


def linalg_det(A):
    plan.square_float(A, "linalg.det", low="lu_cpu")
    a = A._data
    return wrap(np.asarray(np.linalg.det(a)).astype(a.dtype, copy=False))


det = linalg_det


def linalg_slogdet(A):
    plan.square_float(A, "linalg.slogdet")
    a = A._data
    sign, logabs = np.linalg.slogdet(a)
    return SlogdetResult(wrap(np.asarray(sign).astype(a.dtype, copy=False)),
                         wrap(np.asarray(logabs).astype(A.dtype.to_real().np, copy=False)))


def logdet(A):
    """log(det(A)): nan for a negative determinant, -inf for zero (complex: log of the det)."""
    plan.square_float(A, "logdet")
    a = A._data
    sign, logabs = np.linalg.slogdet(a)
    if a.dtype.kind == "c":
        r = logabs + np.log(np.where(sign == 0, 1, sign))
        r = np.where(sign == 0, -_INF, r)
    else:
        r = np.where(sign < 0, np.nan, logabs)
    return wrap(np.asarray(r).astype(a.dtype, copy=False))


def linalg_solve(A, B, left=True):
    vector, shape = plan.solve_plan(A, B, left)
    a, b = A._data, B._data
    if not left:  # X A = B  <=>  A^T X^T = B^T
        a, b = np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)
    if vector:
        b = b[..., None]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    if a.size == 0 or b.size == 0:
        x = np.zeros(batch + b.shape[-2:], a.dtype)
    else:
        x = _lapack(lambda: np.linalg.solve(a, b), "torch.linalg.solve",
                    "The solver failed because the input matrix is singular.")
    if vector:
        x = x[..., 0]
    elif not left:
        x = np.swapaxes(x, -1, -2)
    return wrap(np.ascontiguousarray(x).astype(A._data.dtype, copy=False).reshape(shape))


def linalg_cholesky(A, upper=False):
    plan.square_float(A, "linalg.cholesky", low="cholesky_cpu")
    a = A._data
    if a.size == 0:
        return wrap(np.empty(a.shape, a.dtype))
    low = _lapack(lambda: np.linalg.cholesky(a), "linalg.cholesky",
                  "The factorization could not be completed because the input is not positive-definite.")
    r = np.conj(np.swapaxes(low, -1, -2)) if upper else low
    return wrap(np.ascontiguousarray(r).astype(a.dtype, copy=False))


def cholesky(A, upper=False):
    plan.square_float(A, "cholesky", kernel="cholesky_cpu")
    return linalg_cholesky(A, upper)


def linalg_qr(A, mode="reduced"):
    qs, rs = plan.qr_plan(A, mode)
    a = A._data
    if a.size == 0:
        q = np.zeros(qs, a.dtype)
        if mode == "complete" and qs[-1]:
            q = np.broadcast_to(np.eye(qs[-1], dtype=a.dtype), qs).copy()
        return QRResult(wrap(q), wrap(np.zeros(rs, a.dtype)))
    if mode == "r":
        r = np.linalg.qr(a, mode="r")
        return QRResult(wrap(np.zeros((0,), a.dtype)), wrap(np.asarray(r).astype(a.dtype, copy=False)))
    q, r = np.linalg.qr(a, mode=mode)
    return QRResult(wrap(q.astype(a.dtype, copy=False)), wrap(r.astype(a.dtype, copy=False)))


def qr(A, some=True):
    return linalg_qr(A, "reduced" if some else "complete")


def _svd(a, full, shapes):
    us, ss, vhs = shapes
    real = np.dtype(a.dtype.char.lower()) if a.dtype.kind == "c" else a.dtype
    if a.size == 0:
        u = np.broadcast_to(np.eye(us[-2], us[-1], dtype=a.dtype), us).copy()
        vh = np.broadcast_to(np.eye(vhs[-2], vhs[-1], dtype=a.dtype), vhs).copy()
        return u, np.zeros(ss, real), vh
    u, s, vh = _lapack(lambda: np.linalg.svd(a, full_matrices=full), "linalg.svd",
                       "The algorithm failed to converge because the input matrix is ill-conditioned or has too "
                       "many repeated singular values.")
    return u.astype(a.dtype, copy=False), s.astype(real, copy=False), vh.astype(a.dtype, copy=False)


def linalg_svd(A, full_matrices=True, driver=None):
    shapes = plan.svd_plan(A, full_matrices)
    u, s, vh = _svd(A._data, full_matrices, shapes)
    return SVDResult(wrap(u), wrap(s), wrap(vh))


def svd(A, some=True, compute_uv=True):
    """torch.svd: V instead of Vh; compute_uv=False gives zero-filled full-size U and V."""
    full = not some or not compute_uv
    shapes = plan.svd_plan(A, full, "linalg.svd")
    u, s, vh = _svd(A._data, full, shapes)
    v = np.ascontiguousarray(np.conj(np.swapaxes(vh, -1, -2)))
    if not compute_uv:
        u, v = np.zeros_like(u), np.zeros_like(v)
    return OldSVDResult(wrap(u), wrap(s), wrap(v))


def linalg_svdvals(A, driver=None):
    shapes = plan.svd_plan(A, False, "linalg.svd")
    a = A._data
    if a.size == 0:
        return wrap(np.zeros(shapes[1], A.dtype.to_real().np))
    s = _lapack(lambda: np.linalg.svd(a, compute_uv=False), "linalg.svd", "The algorithm failed to converge.")
    return wrap(s.astype(A.dtype.to_real().np, copy=False))


def linalg_eigh(A, UPLO="L"):
    plan.check_uplo(UPLO)
    plan.square_float(A, "linalg.eigh", kernel="linalg_eigh_cpu")
    a = A._data
    real = A.dtype.to_real().np
    if a.size == 0:
        return EighResult(wrap(np.zeros(a.shape[:-1], real)), wrap(np.zeros(a.shape, a.dtype)))
    w, v = _lapack(lambda: np.linalg.eigh(a, UPLO=UPLO.upper()), "linalg.eigh", "The algorithm failed to converge.")
    return EighResult(wrap(w.astype(real, copy=False)), wrap(v.astype(a.dtype, copy=False)))


def linalg_eigvalsh(A, UPLO="L"):
    return linalg_eigh(A, UPLO)[0]


def linalg_pinv(A, atol=None, rtol=None, hermitian=False):
    """Pseudo-inverse by SVD, singular values below max(atol, rtol * s_max) dropped (PyTorch's rule:
    rtol defaults to eps * max(m, n) when neither tolerance is given, else to 0)."""
    shape = plan.pinv_checks(A)
    a = A._data
    if a.size == 0:
        return wrap(np.zeros(shape, a.dtype))
    m, n = a.shape[-2:]
    real = A.dtype.to_real().np
    if rtol is None:
        rtol = np.finfo(real).eps * max(m, n) if atol is None else 0.0
    atol = 0.0 if atol is None else atol
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    smax = s[..., :1] if s.shape[-1] else s
    keep = s > np.maximum(atol, rtol * smax)
    sinv = np.where(keep, 1 / np.where(keep, s, 1), 0).astype(real)
    r = np.matmul(np.conj(np.swapaxes(vh, -1, -2)) * sinv[..., None, :], np.conj(np.swapaxes(u, -1, -2)))
    return wrap(np.ascontiguousarray(r).astype(a.dtype, copy=False))


def linalg_pinv_rcond(A, rcond, hermitian=False):
    return linalg_pinv(A, 0.0, rcond, hermitian)


def linalg_matrix_power(A, n):
    """Repeated squaring with the product kernels (integers allowed for n >= 0, like PyTorch)."""
    plan.matrix_power_checks(A, n)
    a = A._data
    if n < 0:
        a = linalg_inv(A)._data
        n = -n
    _no_bool(a, "addmm_impl_cpu_") if n > 1 else None
    d = a.dtype
    result = np.broadcast_to(np.eye(a.shape[-1], dtype=d), a.shape).copy() if n == 0 else None
    base = a
    while n:
        if n & 1:
            result = base.copy() if result is None else _prod(result, base, d)
        n >>= 1
        if n:
            base = _prod(base, base, d)
    return wrap(np.ascontiguousarray(result))


# ---------------------------------------------------------------------------------------
# norms
# ---------------------------------------------------------------------------------------
def _abs_in(x, cdt):
    """|x| computed in `cdt`'s real compute type (half types in float32)."""
    a = x._data
    c = _cdt(cdt.np)
    if a.dtype is not c:
        a = a.astype(c)
    return np.abs(a)


def _vector_norm(a, ord, axis, keepdim):
    if ord == 2:
        return np.sqrt(np.sum(a * a, axis=axis, keepdims=keepdim))
    if ord == _INF:
        return np.max(a, axis=axis, keepdims=keepdim)
    if ord == -_INF:
        return np.min(a, axis=axis, keepdims=keepdim)
    if ord == 0:
        return np.sum(a != 0, axis=axis, keepdims=keepdim).astype(a.dtype)
    if ord == 1:
        return np.sum(a, axis=axis, keepdims=keepdim)
    return np.sum(a ** ord, axis=axis, keepdims=keepdim) ** (1.0 / ord)


def linalg_vector_norm(x, ord=2, dim=None, keepdim=False, dtype=None):
    dims, shape, cdt, rdt = plan.vector_norm_plan(x, ord, dim, keepdim, dtype)
    a = _abs_in(x, cdt)
    if a.ndim == 0:
        r = _vector_norm(a.reshape(1), ord, 0, False)
    else:
        r = _vector_norm(a, ord, dims, keepdim)
    return wrap(np.asarray(r).astype(rdt.np, copy=False).reshape(shape))


def linalg_matrix_norm(x, ord="fro", dim=(-2, -1), keepdim=False, dtype=None):
    dims, shape, cdt, rdt = plan.matrix_norm_plan(x, ord, dim, keepdim, dtype)
    d0, d1 = dims
    if ord == "fro":
        a = _abs_in(x, cdt)
        r = np.sqrt(np.sum(a * a, axis=dims))
    elif ord in ("nuc", 2, -2):
        arr = x._data
        c = _cdt(cdt.np)
        m = np.moveaxis(arr.astype(c, copy=False), (d0, d1), (-2, -1))
        s = np.linalg.svd(m, compute_uv=False) if m.size else np.zeros(m.shape[:-2] + (min(m.shape[-2:]),))
        if ord == "nuc":
            r = s.sum(-1)
        elif s.shape[-1] == 0:
            r = np.zeros(s.shape[:-1])
        else:
            r = s.max(-1) if ord == 2 else s.min(-1)
    else:
        a = _abs_in(x, cdt)
        inner, outer = (d0, d1) if abs(ord) == 1 else (d1, d0)
        sums = np.sum(a, axis=inner, keepdims=True)
        red = np.max if ord > 0 else np.min
        if sums.shape[outer]:
            r = red(sums, axis=outer, keepdims=True)
        else:  # max over nothing: PyTorch gives 0 here (negative orders raised in the plan)
            r = np.zeros(sums.shape[:outer] + (1,) + sums.shape[outer + 1:], sums.dtype)
        r = np.squeeze(r, axis=dims)
    r = np.asarray(r)
    if keepdim:
        r = np.expand_dims(r, tuple(sorted(dims)))
    return wrap(r.astype(rdt.np, copy=False).reshape(shape))


def linalg_norm(x, ord=None, dim=None, keepdim=False, dtype=None):
    kind, ord, dim = plan.norm_route(x, ord, dim)
    if kind == "vector":
        return linalg_vector_norm(x, ord, dim, keepdim, dtype)
    return linalg_matrix_norm(x, ord, dim, keepdim, dtype)
