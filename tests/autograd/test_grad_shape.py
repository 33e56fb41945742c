"""Gradients of views, shape ops and element-rearranging copies vs finite differences and PyTorch."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _grad_oracle import grad_check, rand  # noqa: E402

import ember  # noqa: E402


def _aten(name, *args):
    """Call an aten overload by name in either library (``torch.ops.aten`` / ``ember.ops.aten``)."""
    def fn(L, x):
        op = L.ops.aten
        for part in name.split("."):
            op = getattr(op, part)
        return op(x, *args)
    return fn


CASES = [
    ("view", lambda L, x: x.contiguous().view(4, 3), [rand(3, 4)], {}),
    ("view", lambda L, x: x.reshape(2, 6), [rand(3, 4)], {}),
    ("squeeze", lambda L, x: x.squeeze(), [rand(3, 1, 4)], {}),
    ("squeeze.dim", lambda L, x: x.squeeze(-2), [rand(3, 1, 4)], {}),
    ("squeeze.dims", lambda L, x: x.squeeze((1, 2)), [rand(3, 1, 1)], {}),
    ("unsqueeze", lambda L, x: x.unsqueeze(-1), [rand(3, 4)], {}),
    ("transpose.int", lambda L, x: x.transpose(0, -1), [rand(2, 3, 4)], {}),
    ("permute", lambda L, x: x.permute(2, 0, 1), [rand(2, 3, 4)], {}),
    ("t", lambda L, x: x.t(), [rand(3, 4)], {}),
    # in-place views (on a non-leaf): the functional formula, or their own (transpose_)
    ("t_", lambda L, x: (x * 1).t_(), [rand(3, 4)], {}),
    ("transpose_", lambda L, x: (x * 1).transpose_(0, -1), [rand(2, 3, 4)], {}),
    ("transpose_", lambda L, x: (x * 1).swapaxes_(1, 0), [rand(2, 3)], {}),
    ("squeeze_", lambda L, x: (x * 1).squeeze_(), [rand(3, 1, 4)], {}),
    ("squeeze_.dim", lambda L, x: (x * 1).squeeze_(1), [rand(3, 1, 4)], {}),
    ("squeeze_.dims", lambda L, x: (x * 1).squeeze_((1, 2)), [rand(3, 1, 1)], {}),
    ("unsqueeze_", lambda L, x: (x * 1).unsqueeze_(0), [rand(3, 4)], {}),
    ("expand", lambda L, x: x.expand(2, 3, 4), [rand(3, 1)], {}),
    ("as_strided", lambda L, x: x.contiguous().as_strided((2, 2), (1, 2), 1), [rand(3, 4)], {}),
    ("as_strided", lambda L, x: x.contiguous().as_strided((3, 3), (1, 1)), [rand(3, 4)], {}),  # overlapping out
    ("as_strided", lambda L, x: x.as_strided((2, 3), (2, 1), 2), [rand(3, 4)], {}),  # storage geometry of x
    ("slice.Tensor", lambda L, x: x[1:3], [rand(4, 3)], {}),
    ("slice.Tensor", lambda L, x: x[:, ::2], [rand(3, 5)], {}),
    ("slice.Tensor", lambda L, x: x[1:3, ::2], [rand(4, 5)], {}),
    ("slice.Tensor", lambda L, x: x[..., -3:-1], [rand(3, 4)], {}),
    ("select.int", lambda L, x: x[1], [rand(3, 4)], {}),
    ("select.int", lambda L, x: x.select(-1, -2), [rand(3, 4)], {}),
    ("unbind.int", lambda L, x: x.unbind(1), [rand(3, 4)], {}),
    ("unbind.int", lambda L, x: x.unbind()[1], [rand(3, 4)], {}),  # unused outputs get zeros
    ("split.Tensor", lambda L, x: x.split(2, -1), [rand(3, 5)], {}),
    ("split_with_sizes", lambda L, x: x.split([1, 2], 0), [rand(3, 4)], {}),
    ("split.sizes", lambda L, x: L.ops.aten.split.sizes(x, [3, 1], 1), [rand(3, 4)], {}),
    ("diagonal", lambda L, x: x.diagonal(), [rand(3, 4)], {}),
    ("diagonal", lambda L, x: x.diagonal(1, -1, 0), [rand(2, 3, 4)], {}),
    ("unfold", lambda L, x: x.unfold(1, 3, 1), [rand(2, 5)], {}),  # overlapping windows
    ("unfold", lambda L, x: x.unfold(0, 2, 2), [rand(5, 2)], {}),
    ("cat", lambda L, x, y: L.cat([x, y, x], 1), [rand(3, 2), rand(3, 4)], {"gradgrad": True}),
    ("cat", lambda L, x, y: L.cat([x, y], -2), [rand(2, 3), rand(1, 3)], {}),
    ("stack", lambda L, x, y: L.stack([x, y], -1), [rand(3, 4), rand(3, 4)], {}),
    ("repeat", lambda L, x: x.repeat(2, 1, 3), [rand(3, 2)], {}),
    ("repeat_interleave.self_int", lambda L, x: x.repeat_interleave(2, 1), [rand(3, 2)], {}),
    ("repeat_interleave.self_int", lambda L, x: x.repeat_interleave(3), [rand(2, 2)], {}),
    ("repeat_interleave.self_Tensor", lambda L, x: x.repeat_interleave(L.tensor([1, 0, 2]), 0), [rand(3, 2)], {}),
    ("flip", lambda L, x: x.flip(0, -1), [rand(3, 4)], {}),
    ("roll", lambda L, x: x.roll((1, -2), (0, 1)), [rand(3, 4)], {}),
    ("roll", lambda L, x: x.roll(5), [rand(3, 4)], {}),
    ("tril", lambda L, x: x.tril(), [rand(3, 4)], {}),
    ("tril", lambda L, x: x.tril(-1), [rand(3, 4)], {}),
    ("triu", lambda L, x: x.triu(1), [rand(3, 4)], {}),
    ("diag", lambda L, x: x.diag(), [rand(3, 4)], {}),
    ("diag", lambda L, x: x[0].diag(-1), [rand(3, 4)], {}),
    ("diag_embed", lambda L, x: L.diag_embed(x, 1, 0, 2), [rand(3, 4)], {}),
]


@pytest.mark.parametrize("noncontig", [False, True], ids=["contig", "noncontig"])
@pytest.mark.parametrize("key,fn,arrays,opts", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_grad(key, fn, arrays, opts, noncontig):
    if noncontig and not all(a.ndim >= 2 for a in arrays):
        pytest.skip("needs 2-D inputs")
    if noncontig and key in ("view",):
        pytest.skip("a view needs compatible strides")
    o = dict(opts)
    if noncontig:
        o.pop("gradgrad", None)
    grad_check(fn, *arrays, noncontig=noncontig, **o)


def test_views_double_backward():
    for fn in (lambda L, x: x[1:3, ::2] * x[0:2, 1::2], lambda L, x: x.t().unsqueeze(0).expand(2, 4, 3) ** 2,
               lambda L, x: x.split(2, 1)[0] * x[:, :2]):
        grad_check(fn, rand(3, 4), gradgrad=True)


def test_inplace_tril_on_non_leaf():
    grad_check(lambda L, x: (x * 2).tril_(), rand(3, 4))


def test_view_dtype_is_not_differentiable():
    x = ember.randn(3, requires_grad=True, dtype=ember.float64)
    assert not x.view(ember.int64).requires_grad


def test_as_strided_of_overlapping_input_raises():
    x = ember.randn(3, requires_grad=True, dtype=ember.float64)
    y = x[None].expand(2, 3).as_strided((2,), (1,))
    with pytest.raises(NotImplementedError, match="overlap"):
        y.sum().backward()


def test_every_shape_op_has_a_formula():
    from ember.ops.table import shape as table
    from ember.ops.derivatives import shape as d, misc
    from ember.autograd.kernel import _with_inplace
    names = [op.schema.split("(")[0] for op in table.OPS if op.composite is None]
    # an in-place row is covered by its functional op's formula (as autograd installs them)
    covered = {n for f in (*d.FORMULAS, *misc.FORMULAS) for n in _with_inplace(f)} | set(d.NONDIFFERENTIABLE)
    missing = [n for n in names if n not in covered]
    assert not missing
    assert set(d.FORMULAS) <= {c[0] for c in CASES}


def _attention_like(L, x):
    """The view/shape traffic of an attention block: split heads, mask, softmax, merge heads."""
    b, t, c = x.shape
    q, k, v = x.repeat(1, 1, 3).chunk(3, -1)
    q = q.view(b, t, 2, c // 2).transpose(1, 2)
    k = k.reshape(b, t, 2, c // 2).permute(0, 2, 3, 1)
    att = (q @ k).masked_fill(L.ones(t, t).triu(1).bool(), float("-inf")).softmax(-1)
    y = att @ v.unflatten(-1, (2, c // 2)).transpose(1, 2)
    return y.transpose(1, 2).contiguous().view(b, t, c)[:, -1]


def test_composite_view_traffic_like_torch():
    grad_check(_attention_like, rand(2, 3, 4), gradcheck=False)
    grad_check(lambda L, x: L.stack(x.flatten(1).split([2, 4], 1)[::-1][0].unbind(0)).squeeze(), rand(2, 2, 3),
               gradcheck=False)


@pytest.mark.parametrize("fn", [
    lambda L, x: x.narrow(1, 1, 2), lambda L, x: x.chunk(3, 1)[1], lambda L, x: x.flatten(),
    lambda L, x: x.unflatten(1, (2, 2)), lambda L, x: x.movedim(0, 1), lambda L, x: L.tile(x, (2, 1)),
    lambda L, x: L.rot90(x, 1, (0, 1)), lambda L, x: L.diagflat(x[0]), lambda L, x: L.hstack([x, x]),
    lambda L, x: L.vstack([x, x[:1]]), lambda L, x: L.column_stack([x, x]), lambda L, x: x.tensor_split(3, 1)[2],
    lambda L, x: x.ravel(), lambda L, x: x.fliplr(), lambda L, x: L.broadcast_to(x[:1], (2, 3, 4)),
    lambda L, x: L.atleast_3d(x), lambda L, x: x.swapaxes(0, 1), lambda L, x: x.hsplit(2)[1],
])
def test_composite_shape_ops_like_torch(fn):
    grad_check(fn, rand(3, 4), gradcheck=False)
