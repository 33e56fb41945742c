"""Gradients of matrix products, einsum/tensordot, norms and decompositions vs finite
differences (float64 gradcheck) and PyTorch."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _grad_oracle import grad_check, rand  # noqa: E402

import ember  # noqa: E402


def _spd(n):
    a = rand(n, n)
    return a @ a.T + n * np.eye(n)


def gradgrad_vs_torch(fn, *arrays):
    """Double backward: the gradient of <grad(fn), v> equals PyTorch's (float64, same inputs)."""
    import torch
    rng = np.random.default_rng(1)
    res = []
    for lib in (ember, torch):
        xs = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]
        out = fn(lib, *xs)
        go = lib.tensor(rng.standard_normal(tuple(out.shape)) if lib is ember else res_go, dtype=lib.float64)
        if lib is ember:
            res_go = go.numpy().copy()
        gs = lib.autograd.grad([out], xs, [go], create_graph=True)
        vs = [lib.tensor(np.linspace(-1, 1, int(np.prod(a.shape))).reshape(a.shape)) for a in arrays]
        s = sum((g * v).sum() for g, v in zip(gs, vs))
        res.append([None if g is None else g.detach().numpy() for g in
                    lib.autograd.grad([s], xs, allow_unused=True)])
    for a, b in zip(*res):
        if b is None:
            assert a is None or not np.any(a)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9)


# (formula key, function, inputs, options)
CASES = [
    ("matmul", lambda L, a, b: a @ b, [rand(3), rand(3)], {}),
    ("matmul", lambda L, a, b: a @ b, [rand(3), rand(3, 2)], {}),
    ("matmul", lambda L, a, b: a @ b, [rand(2, 3), rand(3)], {}),
    ("matmul", lambda L, a, b: a @ b, [rand(2, 3), rand(3, 2)], {"noncontig": True}),
    ("matmul", lambda L, a, b: a @ b, [rand(2, 2, 3), rand(3, 2)], {}),
    ("matmul", lambda L, a, b: a @ b, [rand(2, 1, 2, 3), rand(3, 3, 2)], {}),
    ("matmul", lambda L, a, b: a @ b, [rand(3), rand(2, 3, 2)], {}),
    ("matmul", lambda L, a, b: a @ b, [rand(2, 2, 3), rand(3)], {}),
    ("linalg_matmul", lambda L, a, b: L.linalg.matmul(a, b), [rand(2, 3), rand(3, 2)], {}),
    ("mm", lambda L, a, b: L.mm(a, b), [rand(2, 3), rand(3, 2)], {"noncontig": True}),
    ("bmm", lambda L, a, b: L.bmm(a, b), [rand(2, 2, 3), rand(2, 3, 2)], {}),
    ("addmm", lambda L, c, a, b: L.addmm(c, a, b, beta=0.5, alpha=2.0), [rand(2), rand(2, 3), rand(3, 2)], {}),
    ("addmv", lambda L, c, a, b: L.addmv(c, a, b, beta=2.0, alpha=-1.0), [rand(2), rand(2, 3), rand(3)], {}),
    ("addbmm", lambda L, c, a, b: L.addbmm(c, a, b, beta=0.5, alpha=2.0), [rand(2, 2), rand(2, 2, 3),
                                                                         rand(2, 3, 2)], {}),
    ("baddbmm", lambda L, c, a, b: L.baddbmm(c, a, b, alpha=3.0), [rand(1, 2, 2), rand(2, 2, 3), rand(2, 3, 2)],
     {}),
    ("addr", lambda L, c, a, b: L.addr(c, a, b, beta=2.0, alpha=0.5), [rand(2, 3), rand(2), rand(3)], {}),
    ("dot", lambda L, a, b: L.dot(a, b), [rand(4), rand(4)], {}),
    ("vdot", lambda L, a, b: L.vdot(a, b), [rand(4), rand(4)], {}),
    ("mv", lambda L, a, b: L.mv(a, b), [rand(2, 3), rand(3)], {}),
    ("outer", lambda L, a, b: L.outer(a, b), [rand(2), rand(3)], {}),
    ("ger", lambda L, a, b: L.ger(a, b), [rand(2), rand(3)], {}),
    ("inner", lambda L, a, b: L.inner(a, b), [rand(2, 3), rand(2, 3)], {}),
    ("inner", lambda L, a, b: L.inner(a, b), [rand(3), rand(2, 2, 3)], {}),
    ("einsum", lambda L, a, b: L.einsum("ij,jk->ik", a, b), [rand(2, 3), rand(3, 2)], {}),
    ("einsum", lambda L, a, b: L.einsum("bij,bjk", a, b), [rand(2, 2, 3), rand(2, 3, 2)], {}),
    ("einsum", lambda L, a, b: L.einsum("...ij,...j->...i", a, b), [rand(2, 2, 3), rand(1, 3)], {}),
    ("einsum", lambda L, a, b: L.einsum("ij,k->ik", a, b), [rand(2, 3), rand(2)], {}),  # j only in a
    ("einsum", lambda L, a: L.einsum("ij->j", a), [rand(2, 3)], {}),
    ("tensordot", lambda L, a, b: L.tensordot(a, b, 2), [rand(2, 3, 2), rand(3, 2, 2)], {}),
    ("tensordot", lambda L, a, b: L.tensordot(a, b, ([0, 2], [1, 0])), [rand(2, 3, 2), rand(2, 2, 3)], {}),
    ("kron", lambda L, a, b: L.kron(a, b), [rand(2, 2), rand(2, 3)], {}),
    ("kron", lambda L, a, b: L.kron(a, b), [rand(3), rand(2, 2)], {}),
    ("cross", lambda L, a, b: L.cross(a, b, dim=1), [rand(2, 3), rand(2, 3)], {}),
    ("linalg_cross", lambda L, a, b: L.linalg.cross(a, b), [rand(2, 3), rand(1, 3)], {}),
    ("trace", lambda L, a: L.trace(a), [rand(3, 4)], {}),
    ("linalg_vector_norm", lambda L, a: L.linalg.vector_norm(a), [rand(2, 3)], {}),
    ("linalg_vector_norm", lambda L, a: L.linalg.vector_norm(a, 3, dim=1), [rand(2, 3)], {}),
    ("linalg_vector_norm", lambda L, a: L.linalg.vector_norm(a, 1, dim=(0,), keepdim=True), [rand(2, 3)], {}),
    ("linalg_vector_norm", lambda L, a: L.linalg.vector_norm(a, float("inf"), dim=-1), [rand(2, 3)], {}),
    ("linalg_matrix_norm.str_ord", lambda L, a: L.linalg.matrix_norm(a), [rand(2, 2, 3)], {}),
    ("linalg_norm", lambda L, a: L.linalg.norm(a), [rand(2, 3)], {}),
    ("linalg_norm", lambda L, a: L.linalg.norm(a, 2, dim=0), [rand(2, 3)], {}),
    ("linalg_inv", lambda L, a: L.linalg.inv(a), [_spd(3)], {}),
    ("inverse", lambda L, a: L.inverse(a), [_spd(2)], {}),
    ("linalg_det", lambda L, a: L.linalg.det(a), [rand(2, 3, 3)], {}),
    ("det", lambda L, a: L.det(a), [rand(3, 3)], {}),
    ("logdet", lambda L, a: L.logdet(a), [_spd(3)], {}),
    ("linalg_slogdet", lambda L, a: L.linalg.slogdet(a)[1], [rand(3, 3)], {}),
    ("linalg_solve", lambda L, a, b: L.linalg.solve(a, b), [_spd(3), rand(3, 2)], {}),
    ("linalg_solve", lambda L, a, b: L.linalg.solve(a, b), [_spd(3), rand(3)], {}),
    ("linalg_solve", lambda L, a, b: L.linalg.solve(a, b, left=False), [_spd(3), rand(2, 3)], {}),
    ("linalg_cholesky", lambda L, a: L.linalg.cholesky(a @ a.mT + 3 * L.eye(3, dtype=L.float64)), [rand(3, 3)], {}),
    ("cholesky", lambda L, a: L.cholesky(a @ a.mT + 3 * L.eye(3, dtype=L.float64), upper=True), [rand(3, 3)], {}),
    ("linalg_matrix_power", lambda L, a: L.linalg.matrix_power(a, 3), [rand(3, 3) / 2], {}),
]


@pytest.mark.parametrize("key,fn,inputs,opts", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_grad(key, fn, inputs, opts):
    grad_check(fn, *inputs, **opts)


@pytest.mark.parametrize("fn,inputs", [
    (lambda L, a, b: a @ b, [rand(2, 3), rand(3, 2)]),
    (lambda L, a, b: a @ b, [rand(3), rand(2, 3, 2)]),
    (lambda L, a, b: L.mm(a, b), [rand(2, 3), rand(3, 2)]),
    (lambda L, c, a, b: L.addmm(c, a, b, beta=0.5, alpha=2.0), [rand(2, 2), rand(2, 3), rand(3, 2)]),
], ids=["matmul", "matmul-batched", "mm", "addmm"])
def test_gradgrad(fn, inputs):
    gradgrad_vs_torch(fn, *inputs)


def test_every_linalg_op_has_a_formula_or_raises():
    """Ops without a formula raise NotImplementedError instead of a silently missing gradient."""
    a = ember.tensor(_spd(3), requires_grad=True)
    with pytest.raises(NotImplementedError):
        ember.linalg.eigh(a)
    with pytest.raises(NotImplementedError, match="matrix_norm"):
        ember.linalg.matrix_norm(a, 2).backward()
    with pytest.raises(NotImplementedError, match="repeated subscripts"):
        ember.einsum("ii->", a).backward()
