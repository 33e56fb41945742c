"""Gradients of reductions, scans, softmax and sorting vs finite differences and PyTorch."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _grad_oracle import grad_check, rand  # noqa: E402
from oracle import DEVICE  # noqa: E402

import ember  # noqa: E402

# (formula key, function, inputs, options)
CASES = [
    ("sum", lambda L, x: x.sum(), [rand(3, 4)], {}),
    ("sum.dim_IntList", lambda L, x: x.sum((0, -1), keepdim=True), [rand(2, 3, 4)], {}),
    ("sum.dim_IntList", lambda L, x: x.sum(-2), [rand(2, 3, 4)], {}),
    ("nansum", lambda L, x: L.nansum(x.masked_fill(x > 1.5, float("nan")), 1), [rand(3, 4)], {}),
    ("mean", lambda L, x: x.mean(), [rand(3, 4)], {}),
    ("mean.dim", lambda L, x: x.mean([-1, 0]), [rand(2, 3, 4)], {}),
    ("mean.dim", lambda L, x: x.mean(1, keepdim=True), [rand(2, 3, 4)], {}),
    ("nanmean", lambda L, x: L.nanmean(x.masked_fill(x > 1.5, float("nan")), -1), [rand(3, 4)], {}),
    ("prod", lambda L, x: x.prod(), [rand(2, 3)], {}),
    ("prod", lambda L, x: (x * (x > -1.5)).prod(), [rand(2, 3)], {}),  # one zero
    ("prod.dim_int", lambda L, x: x.prod(-1), [rand(3, 4)], {}),
    ("prod.dim_int", lambda L, x: (x * (x.abs() > 0.9)).prod(1, keepdim=True), [rand(3, 4)], {}),  # zeros
    ("max", lambda L, x: x.max(), [rand(3, 4)], {}),
    ("min", lambda L, x: x.min(), [rand(3, 4)], {}),
    ("max.dim", lambda L, x: x.max(1), [rand(3, 4)], {}),
    ("max.dim", lambda L, x: x.max(-1, keepdim=True)[0], [rand(2, 3, 4)], {}),
    ("min.dim", lambda L, x: x.min(0), [rand(3, 4)], {}),
    ("max.other", lambda L, x, y: L.max(x, y), [rand(3, 4), rand(4)], {}),
    ("min.other", lambda L, x, y: L.min(x, y), [rand(3, 4), rand(3, 1)], {}),
    ("amax", lambda L, x: x.amax((0, -1)), [rand(2, 3, 4)], {}),
    ("amax", lambda L, x: x.amax(), [rand(3, 4)], {}),
    ("amin", lambda L, x: x.amin(1, keepdim=True), [rand(3, 4)], {}),
    ("aminmax", lambda L, x: L.aminmax(x, dim=1), [rand(3, 4)], {}),
    ("aminmax", lambda L, x: L.aminmax(x), [rand(3, 4)], {}),
    ("var", lambda L, x: x.var(), [rand(3, 4)], {}),
    ("var", lambda L, x: L.var(x, False), [rand(3, 4)], {}),
    ("var.dim", lambda L, x: x.var(1, False, True), [rand(3, 4)], {}),
    ("var.correction", lambda L, x: x.var(-1, correction=2), [rand(3, 5)], {}),
    ("var.correction", lambda L, x: x.var((0, 1), correction=0, keepdim=True), [rand(2, 3, 4)], {}),
    ("std", lambda L, x: x.std(), [rand(3, 4)], {}),
    ("std.dim", lambda L, x: x.std(0, True, False), [rand(3, 4)], {}),
    ("std.correction", lambda L, x: x.std(-1, correction=0, keepdim=True), [rand(3, 4)], {}),
    ("var_mean", lambda L, x: L.var_mean(x), [rand(3, 4)], {}),
    ("var_mean.dim", lambda L, x: L.var_mean(x, 1, True, True), [rand(3, 4)], {}),
    ("var_mean.correction", lambda L, x: L.var_mean(x, -1, correction=0), [rand(3, 4)], {}),
    ("std_mean", lambda L, x: L.std_mean(x), [rand(3, 4)], {}),
    ("std_mean.dim", lambda L, x: L.std_mean(x, [0], False, False), [rand(3, 4)], {}),
    ("std_mean.correction", lambda L, x: L.std_mean(x, 1, correction=2, keepdim=True), [rand(3, 4)], {}),
    ("norm.Scalar", lambda L, x: L.ops.aten.norm.Scalar(x, 2), [rand(3, 4)], {"torch_op": True}),
    ("norm.Scalar", lambda L, x: L.ops.aten.norm.Scalar(x, 1), [rand(3, 4)], {"torch_op": True}),
    ("norm.ScalarOpt_dim", lambda L, x: L.ops.aten.norm.ScalarOpt_dim(x, 3, [1], True), [rand(3, 4)],
     {"torch_op": True}),
    ("norm.ScalarOpt_dim", lambda L, x: L.ops.aten.norm.ScalarOpt_dim(x, float("inf"), [-1]), [rand(3, 4)],
     {"torch_op": True}),
    ("norm.ScalarOpt_dim", lambda L, x: L.ops.aten.norm.ScalarOpt_dim(x, 1.5, [0]), [rand(3, 4)],
     {"torch_op": True}),
    ("norm.ScalarOpt_dim", lambda L, x: L.ops.aten.norm.ScalarOpt_dim(x, 0.5, [0]), [rand(3, 4)],
     {"torch_op": True}),
    ("norm.ScalarOpt_dim_dtype", lambda L, x: L.ops.aten.norm.ScalarOpt_dim_dtype(x, 2, [0], False,
                                                                               dtype=L.float64),
     [rand(3, 4)], {"torch_op": True}),
    ("norm.ScalarOpt_dtype", lambda L, x: L.ops.aten.norm.ScalarOpt_dtype(x, 2, dtype=L.float64), [rand(3, 4)],
     {"torch_op": True}),
    ("logsumexp", lambda L, x: x.logsumexp((0, -1)), [rand(2, 3, 4)], {}),
    ("logsumexp", lambda L, x: x.logsumexp(1, keepdim=True), [rand(3, 4)], {}),
    ("cumsum", lambda L, x: x.cumsum(-1), [rand(3, 4)], {}),
    ("cumsum", lambda L, x: x.cumsum(0), [rand(3, 4)], {}),
    ("cumprod", lambda L, x: x.cumprod(1), [rand(3, 4)], {}),
    ("cumprod", lambda L, x: (x * (x.abs() > 0.9)).cumprod(-1), [rand(3, 4)], {}),  # zeros
    ("cummax", lambda L, x: x.cummax(1), [rand(3, 4)], {}),
    ("cummin", lambda L, x: x.cummin(0), [rand(3, 4)], {}),
    ("logcumsumexp", lambda L, x: x.logcumsumexp(1), [rand(3, 4)], {}),
    ("softmax.int", lambda L, x: x.softmax(-1), [rand(3, 4)], {"gradgrad": True}),
    ("softmax.int", lambda L, x: L.nn.functional.softmax(x, 0), [rand(3, 4)], {}),
    ("log_softmax.int", lambda L, x: x.log_softmax(1), [rand(3, 4)], {"gradgrad": True}),
    ("sort", lambda L, x: x.sort(1), [rand(3, 4)], {}),
    ("sort", lambda L, x: x.sort(0, descending=True), [rand(3, 4)], {}),
    ("sort.stable", lambda L, x: x.sort(stable=True, dim=-1), [rand(3, 4)], {}),
    ("msort", lambda L, x: L.msort(x), [rand(3, 4)], {}),
    ("topk", lambda L, x: x.topk(2, 1), [rand(3, 4)], {}),
    ("topk", lambda L, x: x.topk(2, 0, largest=False), [rand(3, 4)], {}),
    ("median", lambda L, x: x.median(), [rand(3, 5)], {}),
    ("nanmedian", lambda L, x: x.nanmedian(), [rand(3, 5)], {}),
    ("median.dim", lambda L, x: x.median(1), [rand(3, 5)], {}),
    ("nanmedian.dim", lambda L, x: x.nanmedian(0, keepdim=True), [rand(3, 5)], {}),
    ("quantile.scalar", lambda L, x: x.quantile(0.3, 1), [rand(3, 5)], {}),
    ("quantile.scalar", lambda L, x: x.quantile(0.5, interpolation="midpoint"), [rand(3, 4)], {}),
    ("quantile.scalar", lambda L, x: x.quantile(0.4, 0, True, interpolation="nearest"), [rand(3, 4)], {}),
    ("quantile", lambda L, x: x.quantile(L.tensor([0.1, 0.75], dtype=L.float64), -1, interpolation="lower"),
     [rand(3, 5)], {}),
    ("quantile", lambda L, x: x.quantile(L.tensor([0.2, 0.9], dtype=L.float64), 0, True, interpolation="higher"),
     [rand(3, 5)], {}),
    ("quantile", lambda L, x: x.quantile(L.tensor(0.6, dtype=L.float64)), [rand(3, 5)], {}),
    ("nanquantile.scalar", lambda L, x: x.masked_fill(x > 1.2, float("nan")).nanquantile(0.3, 1), [rand(3, 5)], {}),
    ("nanquantile", lambda L, x: x.masked_fill(x > 1.2, float("nan")).nanquantile(
        L.tensor([0.5, 0.9], dtype=L.float64), 1, keepdim=True), [rand(3, 5)], {}),
    ("mode", lambda L, x: x.mode(1), [rand(3, 4)], {}),
    ("kthvalue", lambda L, x: x.kthvalue(2, 1), [rand(3, 4)], {}),
    ("kthvalue", lambda L, x: x.kthvalue(3, 0, True), [rand(3, 4)], {}),
]

GRADGRAD = {"sum", "sum.dim_IntList", "mean", "mean.dim", "var", "var.correction", "std.dim", "prod.dim_int",
            "logsumexp", "cumsum", "max.dim", "amax"}


def _opts(key, opts):
    opts = dict(opts)
    opts.pop("torch_op", None)
    if key in GRADGRAD:
        opts["gradgrad"] = True
    return opts


def _torch_norm(fn):
    """aten.norm overloads are spelled ``torch.ops.aten.norm.X`` in PyTorch."""
    import torch

    class _L:
        def __getattr__(self, name):
            return getattr(torch, name)
    lib = _L()
    lib.ops = torch.ops
    return lambda L, *a: fn(lib if L is torch else L, *a)


@pytest.mark.parametrize("noncontig", [False, True], ids=["contig", "noncontig"])
@pytest.mark.parametrize("key,fn,arrays,opts", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_grad(key, fn, arrays, opts, noncontig):
    if noncontig and not all(a.ndim >= 2 for a in arrays):
        pytest.skip("needs 2-D inputs")
    o = _opts(key, opts)
    if noncontig:
        o.pop("gradgrad", None)
    grad_check(fn, *arrays, noncontig=noncontig, **o)


def test_ties_split_like_torch():
    x = np.array([[1.0, 3.0, 3.0, 0.5], [2.0, 2.0, 2.0, -1.0]])
    for fn in (lambda L, x: x.max(), lambda L, x: x.amax(1), lambda L, x: x.amin(), lambda L, x: x.median(),
               lambda L, x: L.max(x, x.flip(1)), lambda L, x: x.max(1)[0], lambda L, x: L.ops.aten.norm.Scalar(x, float("inf"))):
        grad_check(fn, x, gradcheck=False)


def test_zero_std_and_norm_have_zero_grad():
    x = np.zeros((2, 3))
    grad_check(lambda L, x: x.std(1), x, gradcheck=False)
    grad_check(lambda L, x: L.ops.aten.norm.Scalar(x, 2), x, gradcheck=False)


def test_dtype_argument():
    grad_check(lambda L, x: x.to(L.float32).softmax(1, dtype=L.float64), rand(3, 4), gradcheck=False, atol=1e-6)
    grad_check(lambda L, x: x.to(L.float32).sum(dtype=L.float64), rand(3, 4), gradcheck=False)


def test_unique_backward_raises_like_torch():
    x = ember.tensor([1.0, 2.0, 1.0], requires_grad=True)
    y = ember.unique(x)
    assert y.requires_grad
    with pytest.raises(NotImplementedError, match="_unique2"):
        y.sum().backward()


def test_integer_outputs_need_no_grad():
    x = ember.randn(3, 4, requires_grad=True)
    for y in (x.argmax(), x.argsort(1), x.argmin(0), (x > 0).all(), x.count_nonzero()):
        assert not y.requires_grad


def test_every_reduction_op_has_a_formula():
    from ember.ops.table import reduction as table
    from ember.ops.derivatives import reduction as d
    missing = [op.schema.split("(")[0] for op in table.OPS if op.composite is None
               and op.schema.split("(")[0] not in d.FORMULAS and op.schema.split("(")[0] not in d.NONDIFFERENTIABLE]
    assert not missing
    assert set(d.FORMULAS) - {"_unique2", "unique_consecutive", "unique_dim"} <= {c[0] for c in CASES}


def test_logcumsumexp_with_inf_and_one_signed_grad():
    x = np.array([[0.5, -np.inf, 2.0], [1.0, 1.0, 1.0]])
    grad_check(lambda L, x: x.logcumsumexp(1).sum(), x, gradcheck=False)


NAN_INPUT = np.array([[1.0, np.nan, 3.0, 0.0], [1.0, 2.0, 2.0, -1.0]])


def _sorts(fn):
    """`fn` routes the gradient of equal values by the order a sort gives them: PyTorch's CUDA sort
    is not stable, so on the GPU the input's tie (row 1) is broken first (the NaN stays)."""
    fn.sorts = True
    return fn


@pytest.mark.parametrize("fn", [
    lambda L, x: x.max(), lambda L, x: x.max(1)[0], lambda L, x: x.amax(1), _sorts(lambda L, x: x.sort(1)[0]),
    lambda L, x: x.median(), lambda L, x: x.median(1)[0], lambda L, x: x.nanmedian(), lambda L, x: x.cummax(1)[0],
    _sorts(lambda L, x: x.topk(2)[0]), lambda L, x: L.max(x, x.flip(1)), lambda L, x: x.prod(1),
    lambda L, x: L.ops.aten.norm.ScalarOpt_dim(x, float("inf"), [1]), _sorts(lambda L, x: x.quantile(0.4, 1)),
    _sorts(lambda L, x: x.nanquantile(0.4, 1)),
    lambda L, x: x.softmax(1), lambda L, x: x.logsumexp(1), lambda L, x: x.std(1), lambda L, x: x.kthvalue(2, 1)[0],
])
def test_nan_inputs_like_torch(fn):
    x = NAN_INPUT.copy()
    if DEVICE == "cuda" and getattr(fn, "sorts", False):
        x[1, 2] = 2.5
    grad_check(fn, x, gradcheck=False)
