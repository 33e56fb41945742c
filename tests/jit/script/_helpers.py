"""Helpers shared by the ember.jit.script tests (imported like script_harness):

- functions (test_frontend*.py): `rand`, `same`, `check` (script and compare with eager),
  `targets` / `count` (IR structure), `out_type`;
- modules (test_modules*.py): `close`, `check_module` (script and compare with eager over a few
  fresh inputs), `randn_maker`, and the `TwoLayer` module.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.jit.ir import prim, walk

RNG = np.random.default_rng(0)


def rand(*shape):
    """A float32 tensor of standard normal values."""
    return ember.tensor(RNG.standard_normal(shape).astype(np.float32))


def same(a, b):
    """Assert two results are the same (tensors, numbers, nested lists/tuples)."""
    if isinstance(a, ember.Tensor):
        assert isinstance(b, ember.Tensor)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) or (isinstance(a, tuple) and isinstance(b, tuple)), (a, b)
        assert len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    elif isinstance(a, float):
        assert b == pytest.approx(a, rel=1e-5, abs=1e-6)
    else:
        assert a == b, (a, b)


def check(fn, *inputs, **kw):
    """Script fn, compare with eager on the inputs; returns the ScriptFunction."""
    sf = ember.jit.script(fn)
    sf._graph_uninlined.lint()   # well-formed: defs before uses, block scoping, unique names
    same(fn(*inputs, **kw), sf(*inputs, **kw))
    return sf


def targets(sf):
    """Every node target name of the un-inlined graph (prim ops by name)."""
    out = []
    for n in walk(sf._graph_uninlined):
        t = n.target
        out.append(t.name if prim.is_prim(t) else (t if isinstance(t, str) else getattr(t, "__name__", str(t))))
    return out


def count(sf, target):
    """How many nodes of the un-inlined graph call `target`."""
    return sum(1 for n in walk(sf._graph_uninlined) if n.target is target)


def out_type(sf):
    """The scripted function's return type."""
    return sf.schema.return_type


def close(a, b, tol=1e-5):
    """Assert two tensors are close (detached)."""
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


def check_module(module, *make_inputs, runs=3):
    """Script `module`; compare scripted vs eager over a few fresh inputs (profiling + optimised runs)."""
    scripted = ember.jit.script(module)
    for _ in range(runs):
        inputs = [make() for make in make_inputs]
        close(scripted(*inputs), module(*inputs))
    return scripted


def randn_maker(*shape):
    """A function making a fresh ember.randn(*shape) per call."""
    return lambda: ember.randn(*shape)


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(4, 8)
        self.l2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.l2(ember.tanh(self.l1(x)))
