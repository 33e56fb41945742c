"""Oracle tests of the composite operators (ember/ops/table/composite_math.py) against PyTorch: values,
dtypes, errors, gradients through the ops they are made of, and meta tensors."""
import numpy as np
import pytest
import torch

import ember
from oracle import check, make
from autograd._grad_oracle import grad_check


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float64"])
def test_diff(dtype):
    x = make((3, 5), dtype)
    for kw in (dict(), dict(n=2), dict(dim=0), dict(n=0), dict(n=7), dict(n=-1), dict(dim=2)):
        check(lambda lib, t: lib.diff(t, **kw), x)
        check(lambda lib, t: t.diff(**kw), x, noncontig=True)
    check(lambda lib, t, p, a: lib.diff(t, dim=1, prepend=p, append=a), x, make((3, 2), dtype), make((3, 1), dtype))
    check(lambda lib, t: lib.diff(t), make((), dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "complex64"])
def test_cov_corrcoef(dtype):
    x = make((3, 6), dtype)
    check(lambda lib, t: lib.cov(t), x)
    check(lambda lib, t: t.cov(correction=0), x)
    check(lambda lib, t: t[0].cov(), x)
    check(lambda lib, t: lib.corrcoef(t), x)
    check(lambda lib, t: t[1].corrcoef(), x)
    check(lambda lib, t: lib.cov(t.unsqueeze(0)), x)


def test_cov_weights():
    x = make((2, 5), "float64")
    fw, aw = np.array([1, 2, 0, 3, 1]), np.array([0.5, 1.0, 2.0, 0.1, 1.5])
    check(lambda lib, t, f: lib.cov(t, fweights=f), x, fw)
    check(lambda lib, t, a: lib.cov(t, aweights=a), x, aw)
    check(lambda lib, t, f, a: lib.cov(t, correction=2, fweights=f, aweights=a), x, fw, aw)
    check(lambda lib, t, f, a: lib.cov(t, correction=0, fweights=f, aweights=a), x, fw, aw)
    check(lambda lib, t, f: lib.cov(t, fweights=f), x, fw.astype("float32"))       # not integral
    check(lambda lib, t, f: lib.cov(t, fweights=f), x, -fw)                        # negative
    check(lambda lib, t, a: lib.cov(t, aweights=a), x, aw[:3])                     # wrong length
    check(lambda lib, t, a: lib.cov(t, aweights=a), x, np.array([1, 2, 3, 4, 5]))  # not floating


def test_dist():
    a, b = make((3, 4)), make((4,))
    for p in (2, 1, 0, 3.5, float("inf"), float("-inf")):
        check(lambda lib, x, y: lib.dist(x, y, p), a, b)
        check(lambda lib, x, y: x.dist(y, p=p), a, b)
    check(lambda lib, x, y: lib.dist(x, y), make((3,), "int64"), make((3,), "int64"))


def test_renorm():
    x = make((4, 3, 2))
    for p, dim, maxnorm in ((2, 0, 1.0), (1, 1, 2.0), (3.0, -1, 0.5), (float("inf"), 2, 1.5), (2, 0, 100.0)):
        check(lambda lib, t: lib.renorm(t, p, dim, maxnorm), x)
        check(lambda lib, t: t.clone().renorm_(p, dim, maxnorm), x, noncontig=True)
    for bad in ((-1, 0, 1.0), (2, 0, -1.0), (2, 3, 1.0)):
        check(lambda lib, t: t.renorm(*bad), x)
    check(lambda lib, t: t.renorm(2, 0, 1.0), make((4,)))
    grad_check(lambda lib, t: t.renorm(2, 0, 1.0), np.random.default_rng(0).standard_normal((3, 4)))


def test_sum_to_size():
    x = make((2, 3, 4))
    for size in ((3, 4), (1, 4), (2, 1, 1), (1, 1, 1), (4,), (2, 3, 4)):
        check(lambda lib, t: t.sum_to_size(size), x)
        check(lambda lib, t: t.sum_to_size(*size), x)
    check(lambda lib, t: t.sum_to_size(3, 3), x)
    check(lambda lib, t: t.sum_to_size(5, 2, 3, 4), x)


def test_narrow_copy_and_unsafe_splits():
    x = make((4, 6))
    check(lambda lib, t: lib.narrow_copy(t, 1, 2, 3), x)
    check(lambda lib, t: t.narrow_copy(0, 1, 2).is_contiguous(), x, noncontig=True)
    check(lambda lib, t: t.narrow_copy(0, 3, 2), x)
    check(lambda lib, t: lib.unsafe_chunk(t, 3, 1), x)
    check(lambda lib, t: t.unsafe_split(4), x)
    check(lambda lib, t: t.unsafe_split_with_sizes([1, 2, 3], 1), x)
    check(lambda lib, t: t.unsafe_split_with_sizes([1, 2], 1), x)


def test_absolute_resolve_neg_and_predicates():
    x = make((3, 4))
    check(lambda lib, t: lib.absolute(t), x)
    check(lambda lib, t: t.clone().absolute_(), make((3,), "int64"))
    check(lambda lib, t: t.absolute(), make((3,), "complex64"))
    check(lambda lib, t: (t.resolve_neg() is t, t.is_neg()), x)
    check(lambda lib, a, b: (a.is_same_size(b), a.is_same_size(a.t())), x, make((3, 4)))
    for values in (np.array([2.0]), np.array(0.0), np.array([]), np.array([1.0, 0.0]), np.array([[0]])):
        check(lambda lib, t: t.is_nonzero(), values)


@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
def test_matrix_exp(dtype):
    rng = np.random.default_rng(0)
    for scale in (0.01, 1.0, 20.0):
        a = (rng.standard_normal((2, 4, 4)) * scale).astype(dtype)
        if dtype.startswith("complex"):
            a = (a + 1j * rng.standard_normal((2, 4, 4)) * scale).astype(dtype)
        rtol = 1e-10 if dtype != "float32" else 1e-4
        check(lambda lib, t: lib.matrix_exp(t), a, rtol=rtol, atol=rtol * max(1, scale))
        check(lambda lib, t: lib.linalg.matrix_exp(t[0]), a, rtol=rtol, atol=rtol * max(1, scale))
    check(lambda lib, t: t.matrix_exp(), make((2, 3)))
    check(lambda lib, t: t.matrix_exp(), make((3, 3), "int64"))
    check(lambda lib, t: t.matrix_exp(), make((0, 3, 3)))
    grad_check(lambda lib, t: t.matrix_exp(), rng.standard_normal((3, 3)) * 0.5)


def _spd(n, batch=()):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def test_cholesky_inverse_and_solve():
    a = _spd(4, (2,))
    b = np.random.default_rng(4).standard_normal((2, 4, 3))
    for upper in (False, True):
        check(lambda lib, m: lib.cholesky_inverse(lib.linalg.cholesky(m, upper=upper), upper=upper), a)
        check(lambda lib, m, r: lib.cholesky_solve(r, lib.linalg.cholesky(m, upper=upper), upper=upper), a, b)
        check(lambda lib, m, r: r.cholesky_solve(lib.linalg.cholesky(m, upper=upper), upper), a, b)
    check(lambda lib, m: lib.cholesky_inverse(m), make((2, 3)))
    # only one triangle of the factor is read (torch's gradient still fills the other: compare through tril)
    noisy = np.linalg.cholesky(_spd(3)) + np.triu(np.ones((3, 3)), 1)
    check(lambda lib, m: lib.cholesky_inverse(m), noisy)
    check(lambda lib, m, r: lib.cholesky_solve(r, m.mT, upper=True), noisy, np.ones((3, 2)))
    grad_check(lambda lib, m: lib.cholesky_inverse(m.tril()), noisy)
    grad_check(lambda lib, m, r: lib.cholesky_solve(r, m.tril().mT, upper=True), noisy, np.ones((3, 2)))


def test_meta_and_fake_shapes():
    check(lambda lib, t: tuple(lib.diff(t.to("meta"), n=2, dim=0).shape), make((5, 3)))
    check(lambda lib, t: tuple(t.to("meta").sum_to_size(1, 3).shape), make((4, 3)))
    check(lambda lib, t: tuple(t.to("meta").renorm(2, 0, 1.0).shape), make((4, 3)))


def test_compiled_matches_eager():
    def f(x, y):
        return x.diff(dim=0).sum() + x.dist(y) + x.renorm(2, 0, 1.0).sum() + ember.absolute(x).sum()
    x, y = ember.randn(4, 3), ember.randn(4, 3)
    np.testing.assert_allclose(ember.compile(f)(x, y).numpy(), f(x, y).numpy(), rtol=1e-5)


def test_triangular_solve():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((2, 4, 3))
    for upper in (True, False):
        for transpose in (False, True):
            for unit in (False, True):
                check(lambda lib, B, A: tuple(lib.triangular_solve(B, A, upper, transpose, unit)), b, a)
                check(lambda lib, B, A: tuple(B.triangular_solve(A, upper=upper)), b, a)
    check(lambda lib, B, A: lib.triangular_solve(B, A), b[0, :, 0], a)
    grad_check(lambda lib, B, A: lib.triangular_solve(B, A.triu())[0], b[0], a[0])
