"""Gradients of indexing ops (gathers, scatters, masks, subscripts) vs finite differences and PyTorch."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _grad_oracle import grad_check, rand  # noqa: E402

import ember  # noqa: E402

I = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
MASK = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]])
SCATTER_IDX = np.array([[0, 1, 0], [2, 0, 1]])  # dim 0 into 3 rows, duplicates included

CASES = [
    ("index.Tensor", lambda L, x: x[[0, 2]], [rand(3, 4)], {}),
    ("index.Tensor", lambda L, x, m: x[m], [rand(3, 4), MASK], {}),
    ("index.Tensor", lambda L, x, i: x[:, i], [rand(3, 4), I(3, 0, 3, -1)], {}),  # duplicates accumulate
    ("index.Tensor", lambda L, x, i, j: x[i, j], [rand(3, 4), I(0, 2, 2), I(1, 3, 3)], {}),
    ("index_put", lambda L, x, v, i: L.index_put(x, (i,), v), [rand(3, 4), rand(2, 4), I(2, 0)], {}),
    ("index_put", lambda L, x, v, i: L.index_put(x, (i,), v, accumulate=True), [rand(3, 4), rand(4), I(1, 1)], {}),
    ("index_put", lambda L, x, v, m: (x * 1).index_put_((m,), v), [rand(3, 4), rand(6), MASK], {}),
    ("index_select", lambda L, x, i: x.index_select(1, i), [rand(3, 4), I(3, 0, 3)], {"gradgrad": True}),
    ("index_select", lambda L, x, i: x.index_select(-2, i), [rand(3, 4), I(2)], {}),
    ("gather", lambda L, x, i: x.gather(1, i), [rand(3, 4), np.array([[0, 0], [3, 1], [2, 2]])],
     {"gradgrad": True}),
    ("gather", lambda L, x, i: x.gather(0, i), [rand(3, 4), SCATTER_IDX], {}),
    ("scatter.value", lambda L, x, i: x.scatter(0, i, 1.5), [rand(3, 4), SCATTER_IDX], {}),
    ("scatter.src", lambda L, x, s: x.scatter(1, L.tensor([[2, 0], [1, 3]]), s), [rand(2, 4), rand(2, 2)], {}),
    ("scatter.src", lambda L, x, s: (x * 1).scatter_(1, L.tensor([[2, 0], [1, 3]]), s), [rand(2, 4), rand(2, 2)],
     {}),
    ("scatter_add", lambda L, x, s, i: x.scatter_add(0, i, s), [rand(3, 4), rand(2, 3), SCATTER_IDX], {}),
    ("scatter_add", lambda L, x, s, i: (x * 1).scatter_add_(0, i, s), [rand(3, 4), rand(2, 3), SCATTER_IDX], {}),
    ("scatter_reduce.two", lambda L, x, s, i: x.scatter_reduce(0, i, s, "sum"), [rand(3, 4), rand(2, 3),
                                                                                SCATTER_IDX], {}),
    ("scatter_reduce.two", lambda L, x, s, i: x.scatter_reduce(0, i, s, "mean", include_self=False),
     [rand(3, 4), rand(2, 3), SCATTER_IDX], {}),
    ("scatter_reduce.two", lambda L, x, s, i: x.scatter_reduce(0, i, s, "amax"), [rand(3, 4), rand(2, 3),
                                                                                 SCATTER_IDX], {}),
    ("scatter_reduce.two", lambda L, x, s, i: x.scatter_reduce(0, i, s, "amin", include_self=False),
     [rand(3, 4), rand(2, 3), SCATTER_IDX], {}),
    ("index_add", lambda L, x, s, i: x.index_add(1, i, s, alpha=2), [rand(3, 4), rand(3, 3), I(0, 3, 0)], {}),
    ("index_add", lambda L, x, s, i: (x * 1).index_add_(0, i, s), [rand(3, 4), rand(2, 4), I(2, 2)], {}),
    ("index_copy", lambda L, x, s, i: x.index_copy(1, i, s), [rand(3, 4), rand(3, 2), I(3, 1)], {}),
    ("index_copy", lambda L, x, s, i: (x * 1).index_copy_(0, i, s), [rand(3, 4), rand(1, 4), I(1)], {}),
    ("index_fill.int_Scalar", lambda L, x, i: x.index_fill(1, i, -1.0), [rand(3, 4), I(0, 2)], {}),
    ("index_fill.int_Tensor", lambda L, x, v, i: x.index_fill(0, i, v), [rand(3, 4), rand(), I(1, 1, 2)], {}),
    ("masked_fill.Scalar", lambda L, x, m: x.masked_fill(m, 0.5), [rand(3, 4), MASK], {}),
    ("masked_fill.Scalar", lambda L, x, m: x.masked_fill(m[0], 0.5), [rand(3, 4), MASK], {}),  # broadcast mask
    ("masked_fill.Tensor", lambda L, x, v, m: x.masked_fill(m, v), [rand(3, 4), rand(), MASK], {}),
    ("masked_fill.Tensor", lambda L, x, v, m: (x * 1).masked_fill_(m, v), [rand(3, 4), rand(), MASK], {}),
    ("masked_select", lambda L, x, m: x.masked_select(m), [rand(3, 4), MASK], {}),
    ("masked_select", lambda L, x, m: x.masked_select(m), [rand(4), MASK], {}),  # x broadcast against mask
    ("masked_scatter", lambda L, x, s, m: x.masked_scatter(m, s), [rand(3, 4), rand(3, 3), MASK], {}),
    ("masked_scatter", lambda L, x, s, m: (x * 1).masked_scatter_(m, s), [rand(3, 4), rand(2, 4), MASK], {}),
    ("take", lambda L, x, i: x.take(i), [rand(3, 4), np.array([[0, 11], [5, 5]])], {}),
    ("take_along_dim", lambda L, x, i: L.take_along_dim(x, i, 1), [rand(3, 4), np.array([[0, 3], [1, 1], [2, 0]])],
     {}),
    ("take_along_dim", lambda L, x, i: L.take_along_dim(x, i, 0), [rand(3, 4), np.array([[2, 0, 1, 1]])], {}),
    ("take_along_dim", lambda L, x, i: L.take_along_dim(x, i, -1), [rand(3, 2), np.array([[0, 1, 0]])], {}),
    ("take_along_dim", lambda L, x, i: L.take_along_dim(x, i), [rand(3, 4), I(0, 11, 5)],
     {"contig_only": True}),  # torch's dim=None path views a non-contiguous input and fails
    ("put", lambda L, x, s, i: x.put(i, s), [rand(3, 4), rand(2, 2), np.array([[0, 11], [5, 6]])], {}),
    ("put", lambda L, x, s, i: (x * 1).put_(i, s, accumulate=True), [rand(3, 4), rand(3), I(1, 1, 7)], {}),
]


@pytest.mark.parametrize("noncontig", [False, True], ids=["contig", "noncontig"])
@pytest.mark.parametrize("key,fn,arrays,opts", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_grad(key, fn, arrays, opts, noncontig):
    if noncontig and not any(a.dtype == np.float64 and a.ndim >= 2 for a in arrays):
        pytest.skip("needs 2-D inputs")
    o = dict(opts)
    if o.pop("contig_only", False) and noncontig:
        pytest.skip("contiguous input only")
    if noncontig:
        o.pop("gradgrad", None)
    grad_check(fn, *arrays, noncontig=noncontig, **o)


def test_subscripts_backward_like_torch():
    for fn in (lambda L, x: x[1:3, ::2], lambda L, x: x[[0, 2]], lambda L, x: x[x > 0],
               lambda L, x: x[..., None, 1], lambda L, x: x[1, [0, 0, 3]], lambda L, x: x[:, 1:][[2, 1]]):
        grad_check(fn, rand(3, 4))
        grad_check(fn, rand(3, 4), noncontig=True, gradcheck=False)


def _setitem_mask(L, x):
    y = x.clone()
    y[x > 0] = 0
    return y * x


def _setitem_index(L, x, v):
    y = x * 2
    y[[0, 2]] = v
    return y


def test_setitem_on_clone_is_differentiable():
    grad_check(_setitem_mask, rand(3, 4))
    grad_check(_setitem_index, rand(3, 4), rand(4))


def test_setitem_through_a_view_of_a_non_leaf():
    """``y[1:3] = v`` writes into a view of `y`: PyTorch rebases the view's history; ember's
    autograd refuses in-place ops on views of tensors that require grad (no wrong gradient)."""
    x = ember.randn(3, 4, requires_grad=True)
    y = x.clone()
    with pytest.raises(NotImplementedError):
        y[1:3] = 0


def test_scatter_reduce_prod_and_scatter_reduce_arg_raise():
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    idx = ember.tensor([[0, 1, 2, 0]])
    with pytest.raises(NotImplementedError, match="prod"):
        x.scatter_reduce(0, idx, x[:1] * 1, "prod").sum().backward()
    with pytest.raises(RuntimeError, match="scatter"):
        x.scatter(0, idx, x[:1] * 1, reduce="add").sum().backward()


def test_every_indexing_op_has_a_formula():
    from ember.ops.table import indexing as table
    from ember.ops.derivatives import indexing as d
    names = [op.schema.split("(")[0] for op in table.OPS if op.composite is None]
    functional = {n.replace("_.", ".").rstrip("_") if n.endswith("_") or "_." in n else n for n in names}
    missing = [n for n in functional if n not in d.FORMULAS and n not in d.NONDIFFERENTIABLE]
    assert not missing
    assert set(d.FORMULAS) - {"scatter.value_reduce", "scatter.reduce"} <= {c[0] for c in CASES}


@pytest.mark.parametrize("fn", [
    lambda L, x, i: (x * 1).index_fill_(1, i, 2.0),
    lambda L, x, i: (x * 1).scatter_(1, i[None].expand(3, 2), 0.5),
    lambda L, x, i: (x * 1).masked_fill_(x > 0, 1.0),
    lambda L, x, i: (x * 1).index_put_((i,), L.tensor(3.0, dtype=L.float64)),
    lambda L, x, i: (x * 1).cumsum_(1) * x,
    lambda L, x, i: (x * 1).cumprod_(0),
])
def test_derived_inplace_overloads(fn):
    grad_check(fn, rand(3, 4), I(2, 0))
