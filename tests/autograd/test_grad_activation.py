"""Gradients of the activation family: gradcheck (float64, a non-contiguous input), equality
with PyTorch's gradients (float32/float64, in-place variants, subgradient points) and double
backward for gelu/softplus/silu/elu. Uses the harness of test_grad_pointwise.py."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import gradgradcheck
from ember.ops.derivatives import activation as formulas
from test_grad_pointwise import Case, compare_with_torch, make_arrays, run_gradcheck

S, D, W = (3, 4), (-2.5, 2.5), (-5.0, 5.0)


def F(lib):
    return lib.nn.functional


CASES = [
    Case("relu", lambda lib, x: lib.relu(x), ((S, *D),)),
    Case("relu6", lambda lib, x: F(lib).relu6(x * 4), ((S, *D),)),
    Case("leaky_relu", lambda lib, x: F(lib).leaky_relu(x, 0.2), ((S, *D),)),
    Case("elu", lambda lib, x: F(lib).elu(x, alpha=1.3), ((S, *D),)),
    Case("elu", lambda lib, x: lib.ops.aten.elu.default(x, 1.2, 0.8, 1.5), ((S, *D),)),
    Case("selu", lambda lib, x: F(lib).selu(x), ((S, *D),)),
    Case("celu", lambda lib, x: F(lib).celu(x, alpha=0.7), ((S, *D),)),
    Case("gelu", lambda lib, x: F(lib).gelu(x), ((S, *W),)),
    Case("gelu", lambda lib, x: F(lib).gelu(x, approximate="tanh"), ((S, *W),)),
    Case("silu", lambda lib, x: F(lib).silu(x), ((S, *W),)),
    Case("mish", lambda lib, x: F(lib).mish(x), ((S, *W),)),
    Case("softplus", lambda lib, x: F(lib).softplus(x), ((S, *W),)),
    Case("softplus", lambda lib, x: F(lib).softplus(x, beta=2, threshold=3), ((S, *W),)),
    Case("hardtanh", lambda lib, x: F(lib).hardtanh(x, -0.5, 1.2), ((S, *D),)),
    Case("hardsigmoid", lambda lib, x: F(lib).hardsigmoid(x), ((S, *W),)),
    Case("hardswish", lambda lib, x: F(lib).hardswish(x), ((S, *W),)),
    Case("log_sigmoid", lambda lib, x: F(lib).logsigmoid(x), ((S, *W),)),
    Case("threshold", lambda lib, x: F(lib).threshold(x, 0.1, 20.0), ((S, *D),)),
    Case("hardshrink", lambda lib, x: F(lib).hardshrink(x, 0.5), ((S, *D),)),
    Case("softshrink", lambda lib, x: F(lib).softshrink(x, 0.7), ((S, *D),)),
    Case("prelu", lambda lib, x, w: F(lib).prelu(x, w), (((2, 3, 4), *D), ((3,), 0, 0.5))),
    Case("prelu", lambda lib, x, w: F(lib).prelu(x, w), ((S, *D), ((1,), 0, 0.5))),
    Case("glu", lambda lib, x: F(lib).glu(x, -1), ((S, *D),)),
    Case("glu", lambda lib, x: F(lib).glu(x, 0), (((4, 3), *D),)),
    # in-place variants
    Case("relu", lambda lib, x: (x * 1).relu_(), ((S, *D),)),
    Case("leaky_relu", lambda lib, x: F(lib).leaky_relu(x * 1, 0.1, inplace=True), ((S, *D),)),
    Case("elu", lambda lib, x: F(lib).elu(x * 1, inplace=True), ((S, *D),)),
    Case("hardtanh", lambda lib, x: F(lib).hardtanh(x * 1, -0.5, 0.5, inplace=True), ((S, *D),)),
    Case("threshold", lambda lib, x: F(lib).threshold(x * 1, 0.1, 2.0, inplace=True), ((S, *D),)),
    Case("silu", lambda lib, x: F(lib).silu(x * 1, inplace=True), ((S, *D),)),
    Case("selu", lambda lib, x: F(lib).selu(x * 1, inplace=True), ((S, *D),)),
    Case("relu6", lambda lib, x: F(lib).relu6(x * 4, inplace=True), ((S, *D),)),
    Case("hardswish", lambda lib, x: F(lib).hardswish(x * 1, inplace=True), ((S, *W),)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.key)
def test_gradcheck(case):
    run_gradcheck(case.fn, make_arrays(case))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.key)
def test_matches_torch(case, dtype):
    compare_with_torch(case.fn, make_arrays(case), dtype, noncontig=(dtype == "float64"))


def test_every_formula_has_a_case():
    assert set(formulas.FORMULAS) <= {c.key for c in CASES}


# kinks of every piecewise activation (0, ±lambd, ±3, the hardtanh/relu6 bounds, the threshold)
_POINTS = np.array([-3.0, -1.0, -0.5, 0.0, 0.1, 0.5, 1.0, 3.0, 6.0, 1.5, -0.0, 20.0])
SUBGRADIENT = [
    ("relu", lambda lib, x: lib.relu(x)),
    ("relu_", lambda lib, x: (x * 1).relu_()),
    ("relu6", lambda lib, x: F(lib).relu6(x)),
    ("leaky_relu", lambda lib, x: F(lib).leaky_relu(x, 0.3)),
    ("hardtanh", lambda lib, x: F(lib).hardtanh(x, -0.5, 1.0)),
    ("hardsigmoid", lambda lib, x: F(lib).hardsigmoid(x)),
    ("hardswish", lambda lib, x: F(lib).hardswish(x)),
    ("threshold", lambda lib, x: F(lib).threshold(x, 0.1, 5.0)),
    ("hardshrink", lambda lib, x: F(lib).hardshrink(x, 0.5)),
    ("softshrink", lambda lib, x: F(lib).softshrink(x, 0.5)),
    ("elu", lambda lib, x: F(lib).elu(x)),
    ("softplus threshold", lambda lib, x: F(lib).softplus(x, beta=2, threshold=3)),
    ("prelu", lambda lib, x: F(lib).prelu(x, x.new_ones(1) * 0.25)),
    ("gelu extremes", lambda lib, x: F(lib).gelu(x * 10)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn", SUBGRADIENT, ids=[s[0] for s in SUBGRADIENT])
def test_subgradients_match_torch(name, fn, dtype):
    compare_with_torch(fn, [_POINTS], dtype)


GRADGRAD = [
    ("gelu", lambda x: F(ember).gelu(x)), ("gelu tanh", lambda x: F(ember).gelu(x, approximate="tanh")),
    ("softplus", lambda x: F(ember).softplus(x, beta=1.5)), ("silu", lambda x: F(ember).silu(x)),
    ("elu", lambda x: F(ember).elu(x)), ("log_sigmoid", lambda x: F(ember).logsigmoid(x)),
    ("mish", lambda x: F(ember).mish(x)),
]


@pytest.mark.parametrize("name,fn", GRADGRAD, ids=[g[0] for g in GRADGRAD])
def test_gradgradcheck(name, fn):
    x = ember.from_numpy(np.random.default_rng(2).uniform(-2, 2, (2, 3))).requires_grad_(True)
    assert gradgradcheck(fn, (x,))
