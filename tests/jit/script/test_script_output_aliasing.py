"""Scripted functions must hand the caller the same aliasing as eager: a result eager computes
fresh (``x * 1``, ``-(-x)``, two equal ``x + 1``) must not come back as the input itself or as
another result once the optimised plan runs (peephole identities, CSE). The caller mutates the
results in place and the inputs/other results are compared with eager, over several calls so
that the profiled, specialised plan is the one checked."""
from __future__ import annotations

from typing import List

import numpy as np
import pytest

import ember
import ember.jit


def times_one(x):
    return x * 1


def plus_zero_and_view(x):
    return x + 0, x.view(2)


def double_negation(x):
    return -(-x)


def two_equal_sums(x):
    return x + 1, x + 1


def two_factories(x):
    return ember.zeros(2), ember.zeros(2)


def equal_reductions_in_list(x) -> List[ember.Tensor]:
    return [x.sum(), x.sum()]


def private_identity_still_folds(x):
    y = x * 1
    return y.sum() + (x + 0).sum()


PROGRAMS = [times_one, plus_zero_and_view, double_negation, two_equal_sums, two_factories,
            equal_reductions_in_list, private_identity_still_folds]


def _as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _run(fn, requires_grad):
    """Per call: the results after the caller adds 10 to the first one, and the input after."""
    seen = []
    for call in range(4):
        x = ember.tensor([1.0, 2.0], requires_grad=requires_grad)
        outs = _as_list(fn(x))
        with ember.no_grad():
            outs[0].add_(10)
        seen.append(([o.detach().numpy().copy() for o in outs], x.detach().numpy().copy(),
                     [(o.requires_grad, o.grad_fn is None) for o in outs]))
    return seen


@pytest.mark.parametrize("fn", PROGRAMS, ids=[f.__name__ for f in PROGRAMS])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_results_alias_like_eager(fn, requires_grad):
    scripted = ember.jit.script(fn)
    eager, got = _run(fn, requires_grad), _run(scripted, requires_grad)
    for call, ((e_outs, e_x, e_meta), (g_outs, g_x, g_meta)) in enumerate(zip(eager, got)):
        np.testing.assert_array_equal(g_x, e_x, err_msg=f"call {call}: input after the caller's add_")
        assert len(g_outs) == len(e_outs)
        for i, (g, e) in enumerate(zip(g_outs, e_outs)):
            np.testing.assert_array_equal(g, e, err_msg=f"call {call}: result {i}")
        assert g_meta == e_meta, f"call {call}: (requires_grad, grad_fn is None) {g_meta} != {e_meta}"
