"""Writes whose target overlaps itself or an input, compared with PyTorch.

* internal overlap: the written tensor has several elements at one address (``expand``): ops
  that PyTorch refuses raise RuntimeError "unsupported operation: more than one element of the
  written-to tensor refers to a single memory location"; ops it allows (fill_, index_put_,
  masked_fill_, tril_ ...) write through the shared memory and give PyTorch's values.
* partial overlap: an input and the written tensor share part of their memory
  (``x[1:].add_(x[:-1])``): RuntimeError "some elements of the input tensor and the written-to
  tensor refer to a single memory location"; full overlap (the same view) is allowed except
  where PyTorch refuses any overlap (cat, index_add_ ...); overlap of non-dense views is allowed.
* a refused write writes nothing (checked in ember; PyTorch sometimes writes before raising).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

OVERLAP_MESSAGES = ("more than one element of the written-to tensor", "some elements of the input tensor")


def ex(L, dtype=None):
    """A (2, 3) tensor whose rows are one row of memory."""
    return L.arange(3.).reshape(1, 3).expand(2, 3) if dtype is None else L.zeros(1, 3, dtype=dtype).expand(2, 3)


def pair(L):
    """(base, written, input): two dense (2, 3) views of `base` overlapping in 4 elements."""
    base = L.arange(12.)
    return base, base[2:8].view(2, 3), base[0:6].view(2, 3)


def _through(prog):
    """prog(L, base, written, input) on a partially overlapping pair; returns base."""
    def run(L):
        base, w, i = pair(L)
        prog(L, w, i)
        return base
    return run


def _self(prog, make=lambda L: L.arange(6.).reshape(2, 3)):
    def run(L):
        x = make(L)
        prog(L, x)
        return x
    return run


def _expanded(prog, dtype=None):
    def run(L):
        x = ex(L, None if dtype is None else getattr(L, dtype))
        prog(L, x)
        return x
    return run


B = lambda L: L.ones(2, 3, dtype=L.bool)  # noqa: E731
IDX = lambda L: L.tensor([0, 1])  # noqa: E731

INTERNAL = {
    "add_ tensor": lambda L, x: x.add_(L.ones(2, 3)),
    "add_ number": lambda L, x: x.add_(1),
    "mul_": lambda L, x: x.mul_(L.ones(2, 3)),
    "exp_": lambda L, x: x.exp_(),
    "sigmoid_": lambda L, x: x.sigmoid_(),
    "relu_": lambda L, x: x.relu_(),
    "clamp_": lambda L, x: x.clamp_(0, 1),
    "hardtanh_": lambda L, x: L.nn.functional.hardtanh_(x),
    "leaky_relu_": lambda L, x: L.nn.functional.leaky_relu_(x),
    "elu_": lambda L, x: L.nn.functional.elu_(x),
    "nan_to_num_": lambda L, x: x.nan_to_num_(),
    "round_": lambda L, x: x.round_(),
    "neg_": lambda L, x: x.neg_(),
    "abs_": lambda L, x: x.abs_(),
    "addcmul_": lambda L, x: x.addcmul_(L.ones(2, 3), L.ones(2, 3)),
    "lerp_": lambda L, x: x.lerp_(L.ones(2, 3), 0.5),
    "copy_": lambda L, x: x.copy_(L.ones(2, 3)),
    "copy_ broadcast": lambda L, x: x.copy_(L.ones(3)),
    "setitem slice": lambda L, x: x.__setitem__(slice(None), L.ones(2, 3)),
    "uniform_": lambda L, x: x.uniform_(),
    "normal_": lambda L, x: x.normal_(),
    "bernoulli_": lambda L, x: x.bernoulli_(0.5),
    "exponential_": lambda L, x: x.exponential_(),
    "random_": lambda L, x: x.random_(0, 5),
    "rand out=": lambda L, x: L.rand(2, 3, out=x),
    "randn out=": lambda L, x: L.randn(2, 3, generator=L.Generator().manual_seed(0), out=x),
    "rand out= resized": lambda L, x: L.rand(4, out=x),
    "cumsum_": lambda L, x: x.cumsum_(1),
    "scatter_": lambda L, x: x.scatter_(0, L.zeros(1, 3, dtype=L.long), 1.),
    "scatter_ src": lambda L, x: x.scatter_(0, L.zeros(1, 3, dtype=L.long), L.ones(1, 3)),
    "scatter_add_": lambda L, x: x.scatter_add_(0, L.zeros(1, 3, dtype=L.long), L.ones(1, 3)),
    "index_add_": lambda L, x: x.index_add_(0, L.tensor([0]), L.ones(1, 3)),
    "index_copy_": lambda L, x: x.index_copy_(0, L.tensor([0]), L.ones(1, 3)),
    "masked_scatter_": lambda L, x: x.masked_scatter_(B(L), L.ones(6)),
    "put_": lambda L, x: x.put_(L.tensor([0]), L.ones(1)),
    "addmm_": lambda L, x: x[:, :2].addmm_(L.ones(2, 2), L.ones(2, 2)),
    "addr_": lambda L, x: x.addr_(L.ones(2), L.ones(3)),
    "add out=": lambda L, x: L.add(L.ones(2, 3), 1, out=x),
    "exp out=": lambda L, x: L.exp(L.ones(2, 3), out=x),
    "eq out=": lambda L, x: L.eq(L.ones(2, 3), 1, out=x),
    "where out=": lambda L, x: L.where(B(L), L.ones(2, 3), L.zeros(2, 3), out=x),
    "clamp out=": lambda L, x: L.clamp(L.ones(2, 3), 0, 1, out=x),
    "cumsum out=": lambda L, x: L.cumsum(L.ones(2, 3), 1, out=x),
    "cat out=": lambda L, x: L.cat([L.ones(1, 3), L.ones(1, 3)], out=x),
    "stack out=": lambda L, x: L.stack([L.ones(3), L.ones(3)], out=x),
    "mm out=": lambda L, x: L.mm(L.ones(2, 2), L.ones(2, 3), out=x),
    "matmul out=": lambda L, x: L.matmul(L.ones(2, 2), L.ones(2, 3), out=x),
    "index_select out=": lambda L, x: L.index_select(L.ones(4, 3), 0, IDX(L), out=x),
    "gather out=": lambda L, x: L.gather(L.ones(2, 3), 1, L.zeros(2, 3, dtype=L.long), out=x),
    "cross out=": lambda L, x: L.cross(L.ones(2, 3), L.ones(2, 3), dim=1, out=x),
    # allowed by PyTorch (the write goes through the shared memory)
    "fill_": lambda L, x: x.fill_(1),
    "zero_": lambda L, x: x.zero_(),
    "setitem row": lambda L, x: x.__setitem__(0, 5.),
    "setitem element": lambda L, x: x.__setitem__((1, 2), 5.),
    "masked_fill_": lambda L, x: x.masked_fill_(L.tensor([[True, False, False], [False, False, True]]), 7.),
    "index_fill_": lambda L, x: x.index_fill_(1, L.tensor([1]), 7.),
    "index_put_": lambda L, x: x.index_put_((L.tensor([0, 1]), L.tensor([1, 2])), L.tensor([5., 6.])),
    "tril_": lambda L, x: x.tril_(),
    "triu_": lambda L, x: x.triu_(),
    "threshold_": lambda L, x: L.nn.functional.threshold_(x, 0.5, 9.),
    "add_ size-1 expand": lambda L, x: x[:1].add_(1),
    "out= of another shape is resized": lambda L, x: L.add(L.ones(4), 1, out=x),
}

PARTIAL = {
    "add_ later": lambda L, w, i: w.add_(i),
    "add_ earlier": lambda L, w, i: i.add_(w),
    "sub_ alpha": lambda L, w, i: w.sub_(i, alpha=2),
    "mul_": lambda L, w, i: w.mul_(i),
    "div_": lambda L, w, i: w.div_(i + 1),
    "atan2_": lambda L, w, i: w.atan2_(i),
    "copy_": lambda L, w, i: w.copy_(i),
    "setitem": lambda L, w, i: w.__setitem__(slice(None), i),
    "addcmul_": lambda L, w, i: w.addcmul_(i, L.ones(2, 3)),
    "addcdiv_ second": lambda L, w, i: w.addcdiv_(L.ones(2, 3), i + 1),
    "lerp_": lambda L, w, i: w.lerp_(i, 0.5),
    "clamp_ tensor": lambda L, w, i: w.clamp_(min=i),
    "maximum out=": lambda L, w, i: L.maximum(i, L.ones(2, 3), out=w),
    "add out=": lambda L, w, i: L.add(i, 1, out=w),
    "exp out=": lambda L, w, i: L.exp(i, out=w),
    "where out=": lambda L, w, i: L.where(B(L), i, L.zeros(2, 3), out=w),
    "cumsum out=": lambda L, w, i: L.cumsum(i, 1, out=w),
    "cat out=": lambda L, w, i: L.cat([i[:1], i[1:]], out=w),
    "index_add_ source": lambda L, w, i: w.index_add_(0, IDX(L), i),
    "index_copy_ source": lambda L, w, i: w.index_copy_(0, IDX(L), i),
    "scatter_add_ src": lambda L, w, i: w.scatter_add_(0, L.zeros(2, 3, dtype=L.long), i),
    "index_put_ values": lambda L, w, i: w.index_put_((L.tensor([0]),), i[0]),
    "setitem advanced": lambda L, w, i: w.__setitem__(L.tensor([0, 1]), i),
    "index_select out=": lambda L, w, i: L.index_select(i, 0, IDX(L), out=w),
    "gather out=": lambda L, w, i: L.gather(i, 1, L.zeros(2, 3, dtype=L.long), out=w),
    "cross out=": lambda L, w, i: L.cross(i, L.ones(2, 3), dim=1, out=w),
    "kron out=": lambda L, w, i: L.kron(i[:1, :1], L.ones(2, 3), out=w),
    "outer out=": lambda L, w, i: L.outer(i[0, :2], i[1], out=w),
    # allowed: no check in PyTorch for these
    "fill_ with an element": lambda L, w, i: w.fill_(i[0, 0]),
    "masked_fill_ with an element": lambda L, w, i: w.masked_fill_(B(L), i[0, 0]),
}

SAME_TENSOR = {
    "add_ itself": lambda L, x: x.add_(x),
    "mul_ a view of itself": lambda L, x: x.mul_(x.view(2, 3)),
    "add out= itself": lambda L, x: L.add(x, 1, out=x),
    "exp out= itself": lambda L, x: L.exp(x, out=x),
    "copy_ itself": lambda L, x: x.copy_(x),
    "where out= itself": lambda L, x: L.where(B(L), x, L.zeros(2, 3), out=x),
    "transpose add_": lambda L, x: x.reshape(3, 2)[:2].t().add_(x.reshape(3, 2)[:2]),
    "strided halves (too hard: allowed)": lambda L, x: x.view(6)[::2].add_(x.view(6)[1::2]),
    "columns (too hard: allowed)": lambda L, x: x[:, 0].copy_(x[:, 1]),
    "rows (disjoint)": lambda L, x: x[0].add_(x[1]),
    # PyTorch refuses any overlap here, the same view included
    "cat of itself": lambda L, x: L.cat([x[:1], x[1:]], out=x),
    "cat resizing": lambda L, x: L.cat([x, x], out=x),
    "stack of itself": lambda L, x: L.stack([x[0], x[1]], out=x),
    "index_add_ itself": lambda L, x: x.index_add_(0, IDX(L), x),
    "index_copy_ itself": lambda L, x: x.index_copy_(0, IDX(L), x),
    "scatter_ src itself": lambda L, x: x.scatter_(0, L.zeros(2, 3, dtype=L.long), x),
    "put_ itself": lambda L, x: x.view(6).put_(L.arange(6), x.view(6)),
    "index_put_ itself": lambda L, x: x.index_put_((L.tensor([0, 1]),), x),
    "index_select out= itself": lambda L, x: L.index_select(x, 0, IDX(L), out=x),
    "take out= itself": lambda L, x: L.take(x, L.tensor([[0, 1, 2], [3, 4, 5]]), out=x),
    "masked_select out= itself": lambda L, x: L.masked_select(x.view(6), L.ones(6, dtype=L.bool), out=x.view(6)),
    "gather out= itself": lambda L, x: L.gather(x, 1, L.zeros(2, 3, dtype=L.long), out=x),
}


def _outcome(prog, lib):
    try:
        r = prog(lib)
        return "ok", r.tolist()
    except Exception as e:  # noqa: BLE001 - compared below
        return type(e), str(e)


def _same(prog, random_values=False):
    got, expected = _outcome(prog, ember), _outcome(prog, torch)
    assert got[0] is expected[0], f"ember {got}; torch {expected}"
    if got[0] == "ok":
        if not random_values:
            np.testing.assert_allclose(got[1], expected[1], rtol=1e-6)
    else:
        assert any(m in got[1] for m in OVERLAP_MESSAGES) == any(m in expected[1] for m in OVERLAP_MESSAGES), (
            got[1], expected[1])


@pytest.mark.parametrize("name", sorted(INTERNAL))
def test_write_into_expanded_tensor(name):
    _same(_expanded(INTERNAL[name]), random_values=name.startswith(("uniform_", "normal_", "bernoulli_", "random_",
                                                                        "exponential_", "rand")))


@pytest.mark.parametrize("name", sorted(PARTIAL))
def test_partially_overlapping_input(name):
    _same(_through(PARTIAL[name]))


@pytest.mark.parametrize("name", sorted(SAME_TENSOR))
def test_same_tensor_or_view(name):
    _same(_self(SAME_TENSOR[name]))


def _refused(cases, scenario):
    return [n for n in sorted(cases) if _outcome(scenario(cases[n]), torch)[0] is RuntimeError
            and any(m in _outcome(scenario(cases[n]), torch)[1] for m in OVERLAP_MESSAGES)]


@pytest.mark.parametrize("name", _refused(INTERNAL, _expanded) + [f"partial: {n}" for n in _refused(PARTIAL, _through)])
def test_refused_write_leaves_memory_unchanged(name):
    if name.startswith("partial: "):
        base, w, i = pair(ember)
        before = base.tolist()
        with pytest.raises(RuntimeError, match="single memory location"):
            PARTIAL[name[9:]](ember, w, i)
        assert base.tolist() == before
    else:
        x = ex(ember)
        before = x.tolist()
        with pytest.raises(RuntimeError, match="single memory location"):
            INTERNAL[name](ember, x)
        assert x.tolist() == before


def test_message_names_the_op():
    with pytest.raises(RuntimeError, match=r"^add_\(\): unsupported operation: more than one element"):
        ex(ember).add_(1)
    x = ember.arange(5.)
    with pytest.raises(RuntimeError, match=r"^add_\(\): unsupported operation: some elements of the input"):
        x[1:].add_(x[:-1])


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_other_dtypes_and_meta(dtype):
    _same(_expanded(lambda L, x: x.copy_(L.ones(2, 3, dtype=getattr(L, dtype))), dtype=dtype))
    _same(lambda L: L.zeros(1, 3, dtype=getattr(L, dtype), device="meta").expand(2, 3).copy_(
        L.ones(2, 3, dtype=getattr(L, dtype), device="meta")).shape and L.ones(1))


def test_empty_and_zero_stride_size_one_dims_are_not_overlap():
    _same(lambda L: L.zeros(1, 0).expand(2, 0).add_(1))
    _same(lambda L: L.zeros(3, 1).expand(3, 1).add_(1))
    _same(lambda L: L.zeros(1).expand(1).mul_(2))


def test_numpy_views_sharing_memory():
    # tensors made from NumPy views of one array: the overlap is found through the shared buffer
    arr = np.arange(8.0)
    a, b = ember.from_numpy(arr[1:7]), ember.from_numpy(arr[0:6])
    with pytest.raises(RuntimeError, match="some elements of the input tensor"):
        a.add_(b)
    assert arr.tolist() == list(range(8))
