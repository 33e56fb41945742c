"""out= of ops returning several tensors (max/min(dim), sort, topk, kthvalue, mode, median/
nanmedian(dim), cummax/cummin, aminmax) and of max()/min()/max(other), against PyTorch: the
results land in the given tensors (resized), the returned named tuple holds those very
tensors, each out tensor must have its result's exact dtype (indices: int64), the tuple must
have the right length and hold tensors, and autograd refuses out=."""
from __future__ import annotations

import pytest
import torch

import ember
from oracle import check, make

I64 = "int64"
OPS = {  # name -> (call(lib, x, out), out dtypes for a float32 input)
    "max.dim": (lambda L, x, out: L.max(x, 1, out=out), ("float32", I64)),
    "max.dim keepdim": (lambda L, x, out: L.max(x, 0, keepdim=True, out=out), ("float32", I64)),
    "min.dim": (lambda L, x, out: L.min(x, dim=1, out=out), ("float32", I64)),
    "sort": (lambda L, x, out: L.sort(x, 1, descending=True, out=out), ("float32", I64)),
    "sort.stable": (lambda L, x, out: L.sort(x, stable=True, dim=0, out=out), ("float32", I64)),
    "topk": (lambda L, x, out: L.topk(x, 2, out=out), ("float32", I64)),
    "topk smallest": (lambda L, x, out: L.topk(x, k=1, dim=0, largest=False, out=out), ("float32", I64)),
    "kthvalue": (lambda L, x, out: L.kthvalue(x, 2, 1, out=out), ("float32", I64)),
    "mode": (lambda L, x, out: L.mode(x, 1, out=out), ("float32", I64)),
    "median.dim": (lambda L, x, out: L.median(x, 1, out=out), ("float32", I64)),
    "nanmedian.dim": (lambda L, x, out: L.nanmedian(x, 0, out=out), ("float32", I64)),
    "cummax": (lambda L, x, out: L.cummax(x, 1, out=out), ("float32", I64)),
    "cummin": (lambda L, x, out: L.cummin(x, 0, out=out), ("float32", I64)),
    "aminmax": (lambda L, x, out: L.aminmax(x, dim=1, out=out), ("float32", "float32")),
    "aminmax all": (lambda L, x, out: L.aminmax(x, out=out), ("float32", "float32")),
}


def _outs(L, dtypes, shape=(0,)):
    return tuple(L.empty(shape, dtype=getattr(L, d)) for d in dtypes)


@pytest.mark.parametrize("name", sorted(OPS))
def test_results_go_into_the_given_tensors(name):
    call, dtypes = OPS[name]

    def prog(L, x):
        outs = _outs(L, dtypes)
        r = call(L, x, outs)
        assert all(a is b for a, b in zip(r, outs)) and type(r).__name__.endswith("_out")
        return outs
    check(prog, make((3, 4)))
    check(prog, make((3, 4)), noncontig=True)


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("which,dtype", [(0, "float64"), (0, I64), (1, "int32"), (1, "float32")])
def test_out_dtypes_must_match(name, which, dtype):
    call, dtypes = OPS[name]
    dtypes = list(dtypes)
    dtypes[which] = dtype
    check(lambda L, x: call(L, x, _outs(L, dtypes)), make((3, 4)))


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("bad", ["tensor", "one", "three", "none", "number", "list"])
def test_bad_out_argument(name, bad):
    call, dtypes = OPS[name]
    make_out = {"tensor": lambda L: L.empty(0), "one": lambda L: _outs(L, dtypes[:1]),
                "three": lambda L: _outs(L, dtypes + dtypes[:1]), "none": lambda L: (None, _outs(L, dtypes[1:])[0]),
                "number": lambda L: (1, 2), "list": lambda L: list(_outs(L, dtypes))}[bad]
    check(lambda L, x: call(L, x, make_out(L)), make((3, 4)))


def test_outs_of_the_right_shape_are_kept_and_wrong_ones_resized():
    def prog(L, x):
        v, i = L.empty(3), L.empty(3, dtype=L.long)
        vp = v.data_ptr()
        L.max(x, 1, out=(v, i))
        w, j = L.empty(7), L.empty(1, dtype=L.long)
        L.max(x, 1, out=(w, j))
        return v, i, v.data_ptr() == vp, w, j
    check(prog, make((3, 4)))


def test_autograd_refuses_out():
    check(lambda L, x: L.max(x.requires_grad_(True), 1, out=_outs(L, ("float32", I64))), make((3, 4)))
    check(lambda L, x: L.sort(x.requires_grad_(True), out=_outs(L, ("float32", I64))), make((3, 4)))


@pytest.mark.parametrize("prog", [lambda L, x: L.max(x, out=L.empty(0)), lambda L, x: L.min(x, out=L.empty(0)),
                                  lambda L, x: L.max(x, x.flip(0), out=L.empty(0)),
                                  lambda L, x: L.min(x, x * 0, out=L.empty(0, dtype=L.float64)),
                                  lambda L, x: L.max(x, out=L.empty(0, dtype=L.int64)),
                                  lambda L, x: x.max(1, out=_outs(L, ("float32", I64)))])  # methods take no out
def test_single_result_max_min_out(prog):
    check(prog, make((3, 4)))


def test_overload_names_are_pytorchs():
    for name in ("max.dim_max", "min.dim_min", "sort.values", "sort.values_stable", "topk.values",
                 "kthvalue.values", "mode.values", "median.dim_values", "nanmedian.dim_values", "cummax.out",
                 "cummin.out", "aminmax.out", "max.unary_out", "max.out", "min.unary_out", "min.out"):
        packet, overload = name.split(".")
        assert hasattr(getattr(ember.ops.aten, packet), overload), name
        assert hasattr(getattr(torch.ops.aten, packet), overload), name
