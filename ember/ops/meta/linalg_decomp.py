"""Meta kernels and shared rules of torch.linalg's decompositions, solvers and norms.

The CPU kernels (ember/ops/cpu/linalg_decomp.py) call the same `check_*` / `*_plan` functions,
so both devices raise PyTorch's errors and agree on result shapes and dtypes.
"""
from __future__ import annotations

from ..._core import dtype as _dt
from ..._core.tensor import wrap_meta
from .. import rules
from .linalg import SlogdetResult, QRResult, SVDResult, OldSVDResult, EighResult

_INF = float("inf")
_LOW = (_dt.float16, _dt.bfloat16)


def check_float(x, op, low_ok=False, low=None, kernel=None) -> None:
    """LAPACK-backed ops take float32/64 and complex only. PyTorch raises RuntimeError for other
    dtypes, except where its CPU kernel's dtype dispatch fails first: `low` names the kernel
    that raises NotImplementedError for half types, `kernel` the one that does for every type."""
    d = x.dtype
    if kernel is not None and (d.category < _dt.FLOAT or d in _LOW):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{d.c10_name}'")
    if d.category < _dt.FLOAT:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {d.c10_name}")
    if not low_ok and d in _LOW:
        if low is not None:
            raise NotImplementedError(f"\"{low}\" not implemented for '{d.c10_name}'")
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {d.c10_name}")


def check_matrix(x, op) -> None:
    if x.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")


def check_square(x, op) -> None:
    check_matrix(x, op)
    if x.shape[-1] != x.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are {x.shape[-2]} by "
                           f"{x.shape[-1]} matrices")


def square_float(x, op, low=None, kernel=None) -> None:
    check_square(x, op)
    check_float(x, op, low=low, kernel=kernel)


def solve_plan(A, B, left=True):
    """(vector case?, result shape) of linalg.solve."""
    square_float(A, "linalg.solve", low="lu_cpu")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{A.dtype.c10_name} and B of type {B.dtype.c10_name} instead")
    vector = B.ndim == 1 or (left and B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    n = A.shape[-1]
    if vector:
        if B.shape[-1] != n:
            raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                               f"({n}x{n} and {B.shape[-1]}x1)")
        batch = rules.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-1]), op="linalg.solve")
        return True, batch + (n,)
    if B.ndim < 2:
        raise RuntimeError("linalg.solve: The input tensor B must have at least 2 dimensions.")
    k = B.shape[-2] if left else B.shape[-1]
    if k != n:
        eq, shp = ("AX = B", f"({n}x{n} and {B.shape[-2]}x{B.shape[-1]})") if left else \
            ("XA = B", f"({B.shape[-2]}x{B.shape[-1]} and {n}x{n})")
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation {eq} {shp}")
    batch = rules.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2]), op="linalg.solve")
    return False, batch + tuple(B.shape[-2:])


QR_MODES = ("reduced", "complete", "r")


def qr_plan(A, mode):
    """(Q shape, R shape) of linalg.qr."""
    if mode not in QR_MODES:
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")
    check_matrix(A, "linalg.qr")
    check_float(A, "linalg.qr", low="geqrf_cpu")
    *batch, m, n = A.shape
    k = min(m, n)
    batch = tuple(batch)
    if mode == "complete":
        return batch + (m, m), batch + (m, n)
    if mode == "r":
        return (0,), batch + (k, n)
    return batch + (m, k), batch + (k, n)


def svd_plan(A, full_matrices, op="linalg.svd"):
    check_matrix(A, op)
    check_float(A, op, low="linalg_svd_cpu")
    *batch, m, n = A.shape
    k = min(m, n)
    batch = tuple(batch)
    if full_matrices:
        return batch + (m, m), batch + (k,), batch + (n, n)
    return batch + (m, k), batch + (k,), batch + (k, n)


def check_uplo(uplo) -> None:
    if uplo not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {uplo}")


# ---------------------------------------------------------------------------------------
# norms
# ---------------------------------------------------------------------------------------
def _fmt(ord) -> str:
    if isinstance(ord, float) and ord.is_integer():
        return str(int(ord))
    return str(ord)


def norm_dtypes(x, dtype, op):
    """(compute dtype, result dtype); `dtype` must widen the input without narrowing."""
    check_float(x, op, low_ok=True)
    if dtype is not None:
        if dtype.category < _dt.FLOAT:
            raise RuntimeError(f"{op}: dtype should be floating point or complex. Got {dtype.c10_name}")
        if _dt.promote_types(x.dtype, dtype) is not dtype:
            raise RuntimeError(f"{op}: the dtype of the input ({x.dtype.c10_name}) should be convertible "
                               f"without narrowing to the specified dtype ({dtype.c10_name})")
        return dtype, dtype.to_real()
    return x.dtype, x.dtype.to_real()


def vector_norm_plan(x, ord, dim, keepdim, dtype):
    """(dims, result shape, compute dtype, result dtype) of linalg.vector_norm."""
    if isinstance(ord, complex):
        raise RuntimeError("linalg.vector_norm: Expected a non-complex scalar as the order of norm.")
    cdt, rdt = norm_dtypes(x, dtype, "linalg.vector_norm")
    dims = rules.reduction_dims(dim, x.ndim, "linalg.vector_norm")
    if x.ndim == 0:
        dims = ()
    if ord < 0 or ord == _INF:
        if dim is None and x.numel() == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {_fmt(ord)} norm on an empty tensor because "
                               "the operation does not have an identity")
        for d in dims:
            if x.shape[d] == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {_fmt(ord)} norm on the dimension {d}"
                                   "because this dimension is empty and the operation does not have an identity")
    shape = rules.reduced_shape(tuple(x.shape), dims, keepdim) if x.ndim else ()
    return dims, shape, cdt, rdt


MATRIX_ORDS = ("fro", "nuc", _INF, -_INF, 1, -1, 2, -2)


def matrix_norm_plan(x, ord, dim, keepdim, dtype):
    """(dims, result shape, compute dtype, result dtype) of linalg.matrix_norm."""
    check_matrix(x, "linalg.matrix_norm")
    cdt, rdt = norm_dtypes(x, dtype, "linalg.matrix_norm")
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(str(d) for d in dim)}")
    dims = tuple(rules.wrap_dim(d, x.ndim, "linalg.matrix_norm") for d in dim)
    if dims[0] == dims[1]:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    if ord not in MATRIX_ORDS or isinstance(ord, bool):
        raise RuntimeError(f"linalg.matrix_norm: Order {_fmt(ord)} not supported.")
    if ord in ("nuc", 2, -2) and x.dtype in _LOW:
        raise RuntimeError(f"linalg.matrix_norm: Low precision dtypes not supported. Got {x.dtype.c10_name}")
    if ord in (-1, -2, -_INF):  # PyTorch reduces with amin, which refuses an empty reduced dim
        empty = {-1: (dims[1],), -_INF: (dims[0],), -2: dims}[ord]
        if any(x.shape[d] == 0 for d in empty):
            raise IndexError("amin(): Expected reduction dim 0 to have non-zero size.")
    shape = rules.reduced_shape(tuple(x.shape), dims, keepdim)
    return dims, shape, cdt, rdt


def norm_route(x, ord, dim):
    """linalg.norm: ("vector" | "matrix", ord, dim) to delegate to."""
    if dim is not None:
        if len(dim) == 1:
            if isinstance(ord, str):
                raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim[0]}")
            return "vector", 2 if ord is None else ord, dim
        if len(dim) == 2:
            if ord is None:  # the Frobenius norm is a vector 2-norm over both dims
                for d in dim:
                    rules.wrap_dim(d, x.ndim)
            return "matrix", "fro" if ord is None else ord, dim
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dim)}")
    if ord is None:
        return "vector", 2, None
    if x.ndim not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                           f"Got {x.ndim}D.")
    if x.ndim == 1 and not isinstance(ord, str):
        return "vector", ord, None
    return "matrix", ord, (-2, -1)


# ---------------------------------------------------------------------------------------
# meta kernels
# ---------------------------------------------------------------------------------------
def _like(x, shape=None, dtype=None):
    return wrap_meta(tuple(x.shape) if shape is None else shape, dtype or x.dtype)


def linalg_inv(A):
    square_float(A, "linalg.inv")
    return _like(A)


def linalg_det(A):
    square_float(A, "linalg.det", low="lu_cpu")
    return _like(A, tuple(A.shape[:-2]))


def det(A):
    square_float(A, "linalg.det", low="lu_cpu")
    return _like(A, tuple(A.shape[:-2]))


def logdet(A):
    square_float(A, "logdet")
    return _like(A, tuple(A.shape[:-2]))


def linalg_slogdet(A):
    square_float(A, "linalg.slogdet")
    b = tuple(A.shape[:-2])
    return SlogdetResult(_like(A, b), _like(A, b, A.dtype.to_real()))


def linalg_solve(A, B, left=True):
    return _like(A, solve_plan(A, B, left)[1])


def linalg_cholesky(A, upper=False):
    square_float(A, "linalg.cholesky", low="cholesky_cpu")
    return _like(A)


def cholesky(A, upper=False):
    square_float(A, "cholesky", kernel="cholesky_cpu")
    return _like(A)


def linalg_qr(A, mode="reduced"):
    q, r = qr_plan(A, mode)
    return QRResult(_like(A, q), _like(A, r))


def qr(A, some=True):
    return linalg_qr(A, "reduced" if some else "complete")


def linalg_svd(A, full_matrices=True, driver=None):
    u, s, vh = svd_plan(A, full_matrices)
    return SVDResult(_like(A, u), _like(A, s, A.dtype.to_real()), _like(A, vh))


def svd(A, some=True, compute_uv=True):
    u, s, vh = svd_plan(A, not some or not compute_uv, "linalg.svd")
    v = vh[:-2] + (vh[-1], vh[-2])
    return OldSVDResult(_like(A, u), _like(A, s, A.dtype.to_real()), _like(A, v))


def linalg_svdvals(A, driver=None):
    s = svd_plan(A, False, "linalg.svd")[1]
    return _like(A, s, A.dtype.to_real())


def linalg_eigh(A, UPLO="L"):
    check_uplo(UPLO)
    square_float(A, "linalg.eigh", kernel="linalg_eigh_cpu")
    return EighResult(_like(A, tuple(A.shape[:-1]), A.dtype.to_real()), _like(A))


def linalg_eigvalsh(A, UPLO="L"):
    check_uplo(UPLO)
    square_float(A, "linalg.eigh", kernel="linalg_eigh_cpu")
    return _like(A, tuple(A.shape[:-1]), A.dtype.to_real())


def pinv_checks(A):
    if A.ndim < 2 or A.dtype.category < _dt.FLOAT or A.dtype in _LOW:
        raise RuntimeError(f"linalg.pinv({A.dtype.c10_name}{{{list(A.shape)}}}): expected a tensor with 2 or "
                           "more dimensions of float, double, cfloat or cdouble types")
    return tuple(A.shape[:-2]) + (A.shape[-1], A.shape[-2])


def linalg_pinv(A, atol=None, rtol=None, hermitian=False):
    return _like(A, pinv_checks(A))


def matrix_power_checks(A, n):
    check_square(A, "linalg.matrix_power")
    if n < 0:
        square_float(A, "linalg.inv")


def linalg_matrix_power(A, n):
    matrix_power_checks(A, n)
    return _like(A)


def linalg_vector_norm(x, ord=2, dim=None, keepdim=False, dtype=None):
    _, shape, _, rdt = vector_norm_plan(x, ord, dim, keepdim, dtype)
    return wrap_meta(shape, rdt)


def linalg_matrix_norm(x, ord="fro", dim=(-2, -1), keepdim=False, dtype=None):
    _, shape, _, rdt = matrix_norm_plan(x, ord, dim, keepdim, dtype)
    return wrap_meta(shape, rdt)


def linalg_norm(x, ord=None, dim=None, keepdim=False, dtype=None):
    kind, ord, dim = norm_route(x, ord, dim)
    if kind == "vector":
        return linalg_vector_norm(x, ord, dim, keepdim, dtype)
    return linalg_matrix_norm(x, ord, dim, keepdim, dtype)
