"""Oracle tests of the linear-algebra family: products, einsum, decompositions, norms."""
import numpy as np
import pytest
import torch

import ember
from oracle import check, make, ALL_DTYPES

LOOSE = {"float16": (1e-2, 1e-2), "bfloat16": (3e-2, 3e-2), "float32": (1e-4, 1e-5), "complex64": (1e-4, 1e-5)}


def tol(dtype):
    r = LOOSE.get(dtype)
    return dict(rtol=r[0], atol=r[1]) if r else {}


def spd(n, batch=(), dtype="float64", seed=0):
    """A well-conditioned symmetric positive-definite matrix (batch)."""
    a = make(batch + (n, n), dtype, seed=seed)
    if dtype.startswith("complex"):
        return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)


def wellcond(shape, dtype="float64", seed=0):
    a = make(shape, dtype, seed=seed)
    return (a + 4 * shape[-1] * np.eye(shape[-1])).astype(dtype)


# ---------------------------------------------------------------------------------------
# matmul and friends
# ---------------------------------------------------------------------------------------
MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
                 ((5, 2, 3), (3,)), ((3,), (5, 3, 4)), ((2, 3), (5, 3, 4)), ((2, 1, 2, 3), (5, 3, 4)),
                 ((0, 3), (3, 4)), ((2, 0), (0, 4)), ((5, 0, 3), (3, 2)), ((0,), (0,))]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_matmul(sa, sb, dtype):
    check(lambda lib, a, b: lib.matmul(a, b), make(sa, dtype, seed=1), make(sb, dtype, seed=2), **tol(dtype))


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES[:9])
def test_matmul_operator_noncontig_meta(sa, sb):
    a, b = make(sa, seed=1), make(sb, seed=2)
    check(lambda lib, a, b: a @ b, a, b, **tol("float32"))
    check(lambda lib, a, b: lib.matmul(a, b), a, b, noncontig=True, **tol("float32"))
    check(lambda lib, a, b: a.to("meta") @ b.to("meta"), a, b)
    check(lambda lib, a, b: lib.matmul(a, b, out=lib.empty(0)), a, b, **tol("float32"))


@pytest.mark.parametrize("sa,sb", [((2, 3), (4, 5)), ((), (3,)), ((3,), ()), ((3,), (4,)), ((2, 3), (4,)),
                                   ((3,), (4, 2)), ((2, 2, 3), (3, 4, 2)), ((2, 3, 4), (2, 5, 6)),
                                   ((2, 3, 4), (5, 6)), ((2, 3, 4), (5,)), ((4,), (2, 5, 6))])
@pytest.mark.parametrize("meta", [False, True])
def test_matmul_errors(sa, sb, meta):
    fn = (lambda lib, a, b: lib.matmul(a.to("meta"), b.to("meta"))) if meta else (lambda lib, a, b: a @ b)
    check(fn, make(sa), make(sb))


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (3,)), ((2, 3), (3, 2)), ((2, 2, 3), (2, 3, 2))])
def test_matmul_mixed_dtypes_raise(sa, sb):
    check(lambda lib, a, b: lib.matmul(a, b.to(lib.float64)), make(sa), make(sb))
    check(lambda lib, a, b: lib.matmul(a, b.to(lib.int64)), make(sa), make(sb))


def test_matmul_bool_meta_ok():
    check(lambda lib, a, b: lib.matmul(a.to("meta"), b.to("meta")), make((2, 3), "bool"), make((3, 2), "bool"))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_mm_bmm_mv_dot(dtype):
    t = tol(dtype)
    check(lambda lib, a, b: lib.mm(a, b), make((2, 3), dtype), make((3, 4), dtype, seed=1), **t)
    check(lambda lib, a, b: a.mm(b), make((0, 3), dtype), make((3, 4), dtype, seed=1), **t)
    check(lambda lib, a, b: lib.bmm(a, b), make((2, 2, 3), dtype), make((2, 3, 4), dtype, seed=1), **t)
    check(lambda lib, a, b: lib.mv(a, b), make((2, 3), dtype), make((3,), dtype, seed=1), **t)
    check(lambda lib, a, b: lib.dot(a, b), make((5,), dtype), make((5,), dtype, seed=1), **t)
    check(lambda lib, a, b: a.vdot(b), make((5,), dtype), make((5,), dtype, seed=1), **t)
    check(lambda lib, a, b: lib.inner(a, b), make((2, 3), dtype), make((4, 3), dtype, seed=1), **t)
    check(lambda lib, a, b: lib.trace(a), make((3, 4), dtype), make((1,), dtype), cpu_first=False, **t)


@pytest.mark.parametrize("fn,sa,sb", [
    ("mm", (2, 3), (4, 5)), ("mm", (3,), (3, 2)), ("mm", (2, 3), (3,)), ("bmm", (2, 3), (3, 4)),
    ("bmm", (2, 3, 4), (3, 4, 5)), ("bmm", (2, 3, 4), (2, 5, 5)), ("mv", (3, 2), (3,)), ("mv", (3,), (3,)),
    ("dot", (3,), (4,)), ("dot", (3, 2), (3,)), ("vdot", (3,), (4,)), ("inner", (2, 3), (4,)),
    ("outer", (2, 3), (3,)), ("ger", (3,), (2, 2)), ("trace", (3,), (3,)), ("kron", (2,), (3,)),
])
def test_product_shape_errors(fn, sa, sb):
    if fn == "trace":
        check(lambda lib, a, b: lib.trace(a), make(sa), make(sb))
        check(lambda lib, a, b: lib.trace(a.to("meta")), make(sa), make(sb))
        return
    check(lambda lib, a, b: getattr(lib, fn)(a, b), make(sa), make(sb))
    check(lambda lib, a, b: getattr(lib, fn)(a.to("meta"), b.to("meta")), make(sa), make(sb))


@pytest.mark.parametrize("fn,sa,sb", [("mm", (2, 3), (3, 2)), ("bmm", (2, 2, 3), (2, 3, 2)), ("mv", (2, 3), (3,)),
                                      ("dot", (3,), (3,)), ("vdot", (3,), (3,)), ("inner", (2, 3), (3,)),
                                      ("tensordot", (2, 3), (3, 4)), ("cross", (2, 3), (2, 3))])
def test_product_dtype_mismatch(fn, sa, sb):
    check(lambda lib, a, b: getattr(lib, fn)(a, b.to(lib.float64)), make(sa), make(sb))
    check(lambda lib, a, b: getattr(lib, fn)(a.to(lib.int64), b), make(sa), make(sb))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_outer_kron_promote(dtype):
    t = tol(dtype)
    check(lambda lib, a, b: lib.outer(a, b), make((3,), dtype), make((4,), dtype, seed=1), **t)
    check(lambda lib, a, b: lib.ger(a, b), make((3,), dtype), make((0,), dtype), **t)
    check(lambda lib, a, b: lib.outer(a, b), make((3,), dtype), make((4,), "float32"), **t)
    check(lambda lib, a, b: lib.kron(a, b), make((2, 3), dtype), make((3, 2), dtype, seed=1), **t)
    check(lambda lib, a, b: lib.kron(a, b), make((2, 3), dtype), make((4,), "int64", seed=1), **t)
    check(lambda lib, a, b: lib.kron(a.to("meta"), b.to("meta")), make((2, 3), dtype), make((4,), "float64"))
    check(lambda lib, a, b: lib.inner(a, b), make((), dtype), make((4,), "int64"), **t)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("fn", ["addmm", "addmv", "baddbmm", "addbmm", "addr"])
def test_add_products(fn, dtype):
    shapes = {"addmm": ((2, 4), (2, 3), (3, 4)), "addmv": ((2,), (2, 3), (3,)), "baddbmm": ((2, 2, 4), (2, 2, 3),
              (2, 3, 4)), "addbmm": ((2, 4), (3, 2, 3), (3, 3, 4)), "addr": ((2, 3), (2,), (3,))}[fn]
    args = [make(s, dtype, seed=i) for i, s in enumerate(shapes)]
    t = tol(dtype)
    check(lambda lib, c, a, b: getattr(lib, fn)(c, a, b), *args, **t)
    if dtype != "bool":
        ab = (2, 3) if dtype.startswith(("float", "bfloat", "complex")) else (2, -1)
        check(lambda lib, c, a, b: getattr(lib, fn)(c, a, b, beta=ab[0], alpha=ab[1]), *args, **t)
        check(lambda lib, c, a, b: getattr(c, fn)(a, b, beta=0), *args, **t)
        check(lambda lib, c, a, b: getattr(c, fn + "_")(a, b, alpha=2), *args, **t)
        check(lambda lib, c, a, b: getattr(lib, fn)(c[..., :1], a, b), *args, **t)   # self broadcasts
    check(lambda lib, c, a, b: getattr(lib, fn)(c.to("meta"), a.to("meta"), b.to("meta")), *args)


def test_add_products_scalars_and_errors():
    c, a, b = make((2, 4)), make((2, 3)), make((3, 4))
    check(lambda lib, c, a, b: lib.addmm(c, a, b, beta=0.5, alpha=1.5), c.astype("int64"), a.astype("int64"),
          b.astype("int64"))
    check(lambda lib, c, a, b: lib.addmm(c, a, b), make((3, 4)), a, b)                 # self does not expand
    check(lambda lib, c, a, b: lib.addmm(c, a, b), c.astype("float64"), a, b)         # dtype mismatch
    check(lambda lib, c, a, b: lib.addmm(c, a, b), c, a, make((4, 4)))
    check(lambda lib, c, a, b: lib.addmm(c, a, b, out=lib.empty(0)), c, a, b, **tol("float32"))
    check(lambda lib, c, a, b: lib.addr(c, a, b, beta=0.5), make((2, 3), "int64"), make((2,), "int64"),
          make((3,), "int64"))
    check(lambda lib, c, a, b: lib.addr(c, a, b, beta=True), make((2, 3)), make((2,)), make((3,)))
    check(lambda lib, c, a, b: lib.addr(c, a, b, beta=2), make((2, 3), "bool"), make((2,), "bool"),
          make((3,), "bool"))
    check(lambda lib, c, a, b: lib.addr(c, a, b), make((2, 3), "int64"), make((2,), "float64"), make((3,), "int32"))
    check(lambda lib, c, a, b: lib.addmv(c, a, b), make((4,)), make((3, 2)), make((2,)))
    check(lambda lib, c, a, b: lib.baddbmm(c, a, b), make((4, 3)), make((2, 3, 4)), make((2, 4, 3)))
    check(lambda lib, c, a, b: lib.addbmm(c, a, b), make((3, 3), "float64"), make((2, 3, 4)), make((2, 4, 3)))
    # beta == 0 ignores nan in self
    nan = np.full((2, 4), np.nan, np.float32)
    check(lambda lib, c, a, b: lib.addmm(c, a, b, beta=0), nan, a, b, **tol("float32"))


@pytest.mark.parametrize("dtype", ["int64", "float32", "float64", "complex64", "bool", "float16"])
def test_cross(dtype):
    t = tol(dtype)
    check(lambda lib, a, b: lib.cross(a, b, dim=1), make((2, 3), dtype), make((2, 3), dtype, seed=1), **t)
    check(lambda lib, a, b: lib.linalg.cross(a, b), make((4, 3), dtype), make((1, 3), dtype, seed=1), **t)
    check(lambda lib, a, b: lib.linalg.cross(a, b, dim=0), make((3, 2), dtype), make((3, 2), dtype, seed=1), **t)
    check(lambda lib, a, b: lib.linalg.cross(a.to("meta"), b.to("meta")), make((4, 3), dtype), make((4, 3), dtype))


def test_cross_errors():
    check(lambda lib, a, b: lib.linalg.cross(a, b), make((2, 4)), make((2, 4)))
    check(lambda lib, a, b: lib.cross(a, b, dim=0), make((2, 3)), make((2, 3)))
    check(lambda lib, a, b: lib.linalg.cross(a, b), make((2, 3)), make((3,)))
    check(lambda lib, a, b: lib.linalg.cross(a, b, dim=2), make((2, 3)), make((2, 3)))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_trace(dtype):
    # cpu_first=False: PyTorch's CPU trace refuses float16 before 2.13; its CUDA trace computes it
    check(lambda lib, a: lib.trace(a), make((4, 3), dtype), cpu_first=False, **tol(dtype))
    check(lambda lib, a: a.trace(), make((0, 3), dtype), cpu_first=False)
    check(lambda lib, a: a.to("meta").trace(), make((3, 3), dtype))
    check(lambda lib, a: lib.trace(a), make((4, 3), dtype), noncontig=True, cpu_first=False, **tol(dtype))


# ---------------------------------------------------------------------------------------
# einsum / tensordot
# ---------------------------------------------------------------------------------------
EINSUM = [("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
          ("i,i->", [(5,), (5,)]), ("i,j->ij", [(3,), (2,)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]),
          ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]), ("...ij,...jk", [(5, 2, 3), (3, 4)]),
          ("b...,b...->b", [(2, 3, 4), (2, 3, 4)]), ("ij,j", [(2, 3), (1,)]), ("ijk,kj->i", [(2, 3, 4), (4, 3)]),
          ("i j , j k -> i k", [(2, 3), (3, 4)]), ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 5)]),
          ("...->...", [(2, 3)]), ("Ab,bC->AC", [(2, 3), (3, 4)]), ("ij,ij->ij", [(2, 3), (2, 3)]),
          ("bij,bjk->bik", [(2, 3, 4), (1, 4, 5)]), ("...i,...i->...", [(0, 3), (0, 3)])]


@pytest.mark.parametrize("eq,shapes", EINSUM)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "complex64", "bool", "float16", "int8"])
def test_einsum(eq, shapes, dtype):
    arrays = [make(s, dtype, seed=i) for i, s in enumerate(shapes)]
    check(lambda lib, *ts: lib.einsum(eq, *ts), *arrays, **tol(dtype))
    if dtype == "float32":
        check(lambda lib, *ts: lib.einsum(eq, list(ts)), *arrays, noncontig=True, **tol(dtype))
        check(lambda lib, *ts: lib.einsum(eq, *[t.to("meta") for t in ts]), *arrays)


def test_einsum_view_and_sublist():
    x = make((2, 3))
    v = check(lambda lib, x: lib.einsum("ij->ji", x), x, check_stride=True)
    e = ember.from_numpy(x)
    assert ember.einsum("ii->i", e.reshape(3, 2)[:2]).data_ptr() == e.data_ptr()
    assert v.shape == (3, 2)
    check(lambda lib, a, b: lib.einsum(a, [0, 1], b, [1, 2], [0, 2]), make((2, 3)), make((3, 4)), **tol("float32"))
    check(lambda lib, a, b: lib.einsum(a, [Ellipsis, 1], b, [1, 2]), make((5, 2, 3)), make((3, 4)),
          **tol("float32"))


@pytest.mark.parametrize("eq,shapes", [("ij,jk", [(2, 3), (4, 4)]), ("ij,jk->ik", [(2, 3)]), ("ii", [(2, 3)]),
                                       ("ij->k", [(2, 3)]), ("ij->ii", [(2, 3)]), ("i1", [(2, 3)]),
                                       ("ij", [(2, 3, 4)]), ("ij", [(2, 3), (3,)]), ("ijk...", [(2, 3)])])
def test_einsum_errors(eq, shapes):
    check(lambda lib, *ts: lib.einsum(eq, *ts), *[make(s) for s in shapes])
    check(lambda lib, *ts: lib.einsum(eq, *[t.to("meta") for t in ts]), *[make(s) for s in shapes])
    check(lambda lib, a, b: lib.einsum("ij,jk", a, b.to(lib.float64)), make((2, 3)), make((3, 4)))


@pytest.mark.parametrize("dims,sa,sb", [(2, (2, 3, 4), (3, 4, 5)), (1, (2, 3), (3, 4)), (0, (2,), (3,)),
                                        (([1, 0], [0, 1]), (3, 4, 5), (4, 3, 2)), (([2], [0]), (2, 3, 4), (4, 5)),
                                        ((1, 0), (2, 3), (3, 5)), (([1], [0]), (2, 1), (3, 5))])
@pytest.mark.parametrize("dtype", ["float32", "int64", "complex64", "float16"])
def test_tensordot(dims, sa, sb, dtype):
    check(lambda lib, a, b: lib.tensordot(a, b, dims), make(sa, dtype), make(sb, dtype, seed=1), **tol(dtype))
    check(lambda lib, a, b: lib.tensordot(a.to("meta"), b.to("meta"), dims), make(sa, dtype), make(sb, dtype))


def test_tensordot_errors():
    check(lambda lib, a, b: lib.tensordot(a, b, 1), make((2, 3)), make((4, 4)))
    check(lambda lib, a, b: lib.tensordot(a, b, -1), make((2, 3)), make((3, 4)))
    check(lambda lib, a, b: lib.tensordot(a, b, ([0], [0, 1])), make((2, 3)), make((2, 3)))
    check(lambda lib, a, b: lib.tensordot(a, b, 1), make((2, 3), "bool"), make((3, 4), "bool"))


# ---------------------------------------------------------------------------------------
# decompositions and solvers
# ---------------------------------------------------------------------------------------
LA_DTYPES = ["float32", "float64", "complex64"]


@pytest.mark.parametrize("dtype", LA_DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (0, 0), (2, 0, 0), (1, 1)])
def test_inv_det_slogdet(shape, dtype):
    a = wellcond(shape, dtype)
    t = tol(dtype)
    check(lambda lib, a: lib.linalg.inv(a), a, **t)
    check(lambda lib, a: lib.inverse(a), a, noncontig=True, **t)
    check(lambda lib, a: lib.linalg.det(a), a, **t)
    check(lambda lib, a: a.det(), a, **t)
    check(lambda lib, a: tuple(lib.linalg.slogdet(a)), a, **t)
    check(lambda lib, a: lib.slogdet(a).logabsdet, a, **t)
    for fn in ("inv", "det", "slogdet"):
        check(lambda lib, a: getattr(lib.linalg, fn)(a.to("meta")), a)


def test_logdet():
    check(lambda lib, a: lib.logdet(a), wellcond((2, 3, 3)))
    check(lambda lib, a: lib.logdet(a), -wellcond((3, 3)))        # negative determinant -> nan
    check(lambda lib, a: lib.logdet(a), np.zeros((3, 3)))         # -inf


@pytest.mark.parametrize("fn", ["inv", "det", "slogdet", "cholesky", "qr", "svd", "svdvals", "eigh", "eigvalsh",
                                "pinv"])
@pytest.mark.parametrize("dtype", ["int64", "bool", "float16", "bfloat16"])
def test_decomposition_dtype_errors(fn, dtype):
    check(lambda lib, a: getattr(lib.linalg, fn)(a), spd(3, (), "float32"), dtype=dtype)


@pytest.mark.parametrize("fn", ["inv", "det", "slogdet", "cholesky", "eigh", "eigvalsh"])
def test_decomposition_shape_errors(fn):
    check(lambda lib, a: getattr(lib.linalg, fn)(a), make((3, 4)))
    check(lambda lib, a: getattr(lib.linalg, fn)(a), make((3,)))
    check(lambda lib, a: getattr(lib.linalg, fn)(a.to("meta")), make((3, 4)))


def test_singular_raises_linalg_error():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError):
            lib.linalg.inv(lib.ones(3, 3))
        with pytest.raises(RuntimeError):
            lib.linalg.cholesky(-lib.ones(2, 2))
    with pytest.raises(ember.linalg.LinAlgError):
        ember.linalg.solve(ember.ones(3, 3), ember.ones(3))


@pytest.mark.parametrize("sa,sb,left", [((3, 3), (3,), True), ((3, 3), (3, 2), True), ((2, 3, 3), (2, 3), True),
                                        ((2, 3, 3), (3, 4), True), ((3, 3), (2, 3, 1), True),
                                        ((3, 3), (2, 3), False), ((2, 3, 3), (2, 4, 3), False)])
@pytest.mark.parametrize("dtype", LA_DTYPES)
def test_solve(sa, sb, left, dtype):
    # (* 1: PyTorch returns a conjugate view for complex left=False, which NumPy cannot read)
    check(lambda lib, a, b: lib.linalg.solve(a, b, left=left) * 1, wellcond(sa, dtype), make(sb, dtype),
          **tol(dtype))
    check(lambda lib, a, b: lib.linalg.solve(a.to("meta"), b.to("meta"), left=left), wellcond(sa, dtype),
          make(sb, dtype))


def test_solve_errors():
    check(lambda lib, a, b: lib.linalg.solve(a, b), wellcond((3, 3), "float32"), make((3,), "float64"))
    check(lambda lib, a, b: lib.linalg.solve(a, b), wellcond((3, 3), "float32"), make((4,)))
    check(lambda lib, a, b: lib.linalg.solve(a, b), wellcond((3, 3), "float32"), make((4, 2)))
    check(lambda lib, a, b: lib.linalg.solve(a, b), make((3, 4)), make((3,)))


@pytest.mark.parametrize("dtype", LA_DTYPES)
@pytest.mark.parametrize("batch", [(), (2,)])
def test_cholesky(batch, dtype):
    a = spd(4, batch, dtype)
    check(lambda lib, a: lib.linalg.cholesky(a), a, **tol(dtype))
    check(lambda lib, a: lib.linalg.cholesky(a, upper=True), a, **tol(dtype))
    check(lambda lib, a: lib.cholesky(a), a, **tol(dtype))
    check(lambda lib, a: lib.linalg.cholesky(a.to("meta")), a)


def _qr_invariants(lib, a, mode):
    q, r = lib.linalg.qr(a, mode=mode)
    if mode == "r":
        return q.shape, r.abs()
    return lib.matmul(q, r), r.abs(), q.shape


@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3), (0, 3)])
@pytest.mark.parametrize("dtype", LA_DTYPES)
def test_qr(shape, mode, dtype):
    a = make(shape, dtype)
    check(lambda lib, a: _qr_invariants(lib, a, mode), a, **tol(dtype))
    check(lambda lib, a: tuple(x.shape for x in lib.linalg.qr(a.to("meta"), mode=mode)), a)
    check(lambda lib, a: tuple(x.shape for x in lib.qr(a, some=mode != "complete")), a)


def test_qr_errors():
    check(lambda lib, a: lib.linalg.qr(a, mode="x"), make((3, 3)))
    check(lambda lib, a: lib.linalg.qr(a), make((3,)))


def _svd_invariants(lib, a, full):
    u, s, vh = lib.linalg.svd(a, full_matrices=full)
    k = s.shape[-1]
    rec = lib.einsum("...ik,...k,...kj->...ij", u[..., :k], s.to(u.dtype), vh[..., :k, :])
    return rec, s, u.shape, vh.shape


@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3), (0, 3)])
@pytest.mark.parametrize("dtype", LA_DTYPES)
def test_svd(shape, full, dtype):
    a = make(shape, dtype)
    t = tol(dtype)
    check(lambda lib, a: _svd_invariants(lib, a, full), a, **t)
    check(lambda lib, a: lib.linalg.svdvals(a), a, **t)
    check(lambda lib, a: tuple(x.shape for x in lib.svd(a, some=not full)) + (lib.svd(a, some=not full)[1],), a, **t)
    check(lambda lib, a: lib.svd(a, compute_uv=False)[:2] + (lib.svd(a, compute_uv=False)[2].shape,), a, **t)
    check(lambda lib, a: tuple((x.shape, str(x.dtype)[-7:]) for x in lib.linalg.svd(a.to("meta"),
                                                                                    full_matrices=full)), a)


@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("dtype", LA_DTYPES)
def test_eigh(uplo, dtype):
    a = spd(4, (2,), dtype)
    t = tol(dtype)
    check(lambda lib, a: lib.linalg.eigvalsh(a, UPLO=uplo), a, **t)
    check(lambda lib, a: lib.linalg.eigh(a, UPLO=uplo)[0], a, **t)
    if dtype != "complex64":
        def rec(lib, a):
            w, v = lib.linalg.eigh(a, UPLO=uplo)
            return lib.einsum("...ik,...k,...jk->...ij", v, w, v), v.abs()
        check(rec, a, **t)
    check(lambda lib, a: tuple((x.shape, str(x.dtype)[-7:]) for x in lib.linalg.eigh(a.to("meta"))), a)
    check(lambda lib, a: lib.linalg.eigh(a, UPLO="X"), a)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3), (0, 3)])
@pytest.mark.parametrize("dtype", LA_DTYPES)
def test_pinv(shape, dtype):
    a = make(shape, dtype)
    t = tol(dtype)
    check(lambda lib, a: lib.linalg.pinv(a), a, **t)
    check(lambda lib, a: lib.linalg.pinv(a, rtol=0.5), a, **t)
    check(lambda lib, a: lib.pinverse(a), a, **t)
    check(lambda lib, a: lib.linalg.pinv(a.to("meta")), a)


@pytest.mark.parametrize("n", [0, 1, 2, 3, -1, -2])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "float16"])
def test_matrix_power(n, dtype):
    a = make((2, 3, 3), dtype) if n >= 0 or dtype not in ("float32", "float64") else wellcond((2, 3, 3), dtype)
    check(lambda lib, a: lib.linalg.matrix_power(a, n), a, **tol(dtype))
    check(lambda lib, a: a.matrix_power(n), a, **tol(dtype))
    check(lambda lib, a: lib.linalg.matrix_power(a.to("meta"), n), a)


# ---------------------------------------------------------------------------------------
# norms
# ---------------------------------------------------------------------------------------
INF = float("inf")


@pytest.mark.parametrize("ord", [2, 1, 0, INF, -INF, 3, 0.5, -1])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (None, True), (1, False), ((0, 2), True), (-1, False)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "float16", "bfloat16"])
def test_vector_norm(ord, dim, keepdim, dtype):
    x = make((2, 3, 4), dtype)
    check(lambda lib, x: lib.linalg.vector_norm(x, ord, dim, keepdim), x, **tol(dtype))
    check(lambda lib, x: lib.linalg.vector_norm(x.to("meta"), ord, dim, keepdim), x)


def test_vector_norm_edge_cases():
    check(lambda lib, x: lib.linalg.vector_norm(x), make(()))
    check(lambda lib, x: lib.linalg.vector_norm(x, dim=0), make(()))
    check(lambda lib, x: lib.linalg.vector_norm(x, 3), make((2, 3)), noncontig=True)
    check(lambda lib, x: lib.linalg.vector_norm(x), make((0, 3)))
    check(lambda lib, x: lib.linalg.vector_norm(x, INF, dim=1), make((0, 3)))
    for ord in (-1, INF):
        check(lambda lib, x: lib.linalg.vector_norm(x, ord), make((0,)))
        check(lambda lib, x: lib.linalg.vector_norm(x, ord, dim=0), make((0, 3)))
    check(lambda lib, x: lib.linalg.vector_norm(x), make((3,), "int64"))
    check(lambda lib, x: lib.linalg.vector_norm(x, dtype=lib.float64), make((3,)))
    check(lambda lib, x: lib.linalg.vector_norm(x, dtype=lib.float32), make((3,), "float64"))
    check(lambda lib, x: lib.linalg.vector_norm(x, dim=(0, 0)), make((2, 3)))
    check(lambda lib, x: lib.linalg.vector_norm(x, dim=2), make((2, 3)))


@pytest.mark.parametrize("ord", ["fro", "nuc", INF, -INF, 1, -1, 2, -2])
@pytest.mark.parametrize("shape,dim", [((3, 4), (-2, -1)), ((2, 3, 4), (0, 2)), ((2, 3, 4), (2, 1))])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "float16"])
def test_matrix_norm(ord, shape, dim, dtype):
    x = make(shape, dtype)
    for keepdim in (False, True):
        check(lambda lib, x: lib.linalg.matrix_norm(x, ord, dim, keepdim), x, **tol(dtype))
    check(lambda lib, x: lib.linalg.matrix_norm(x.to("meta"), ord, dim), x)


@pytest.mark.parametrize("ord", ["fro", "nuc", INF, 1, -1, 2, -2, 3, "abc"])
@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (3,)])
def test_matrix_norm_edge_cases(ord, shape):
    check(lambda lib, x: lib.linalg.matrix_norm(x, ord), make(shape))
    check(lambda lib, x: lib.linalg.matrix_norm(x, 2, dim=(0, 0)), make((3, 3)))
    check(lambda lib, x: lib.linalg.matrix_norm(x), make((3, 3), "int64"))


@pytest.mark.parametrize("ord,dim", [(None, None), (None, 1), (None, (0, 1)), (2, None), ("fro", None),
                                     ("nuc", None), (INF, (1, 0)), (1, (1,)), ("nuc", (0,)), (None, (0, 1, 2))])
@pytest.mark.parametrize("shape", [(3, 4), (4,), (2, 3, 4)])
def test_linalg_norm(ord, dim, shape):
    x = make(shape)
    check(lambda lib, x: lib.linalg.norm(x, ord, dim), x, **tol("float32"))
    check(lambda lib, x: lib.linalg.norm(x, ord, dim, keepdim=True, dtype=lib.float64), x)
    check(lambda lib, x: lib.linalg.norm(x.to("meta"), ord, dim), x)


@pytest.mark.parametrize("p,dim", [("fro", None), (2, None), (1, 1), (INF, (0, 1)), ("nuc", None), (3, -1)])
def test_torch_norm(p, dim):
    check(lambda lib, x: lib.norm(x, p, dim), make((3, 4)), **tol("float32"))
    check(lambda lib, x: x.norm(p=p, dim=dim, keepdim=True), make((3, 4)), **tol("float32"))
