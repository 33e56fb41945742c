"""jit.trace with aliased example inputs and with Python globals, against torch.jit.trace 2.13.

Aliased inputs: ``trace(f, (x, x))`` must keep two distinct graph parameters (PyTorch gives the
repeated tensor a view of its own before tracing), so calling the trace with two different
tensors computes ``f(a, b)``, not ``f(b, b)``.

Globals: a Python number a traced function reads is frozen into the trace without a warning; a
global tensor becomes a constant that is the global's tensor itself (in-place changes made to it
later show in the trace's results, rebinding the global does not) -- both exactly as in PyTorch.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch as real_torch

import ember
from test_trace import arrays, load

ALIASED = {  # name -> (source of f, index tuple saying which example inputs are the same tensor)
    "mul": ("def f(a, b):\n    return a * b\n", (0, 0)),
    "sub": ("def f(a, b):\n    return a - b\n", (0, 0)),
    "matmul_t": ("def f(a, b):\n    return a @ b.t()\n", (0, 0)),
    "three_with_repeat": ("def f(a, b, c):\n    return a * b + c * 2\n", (0, 1, 0)),
    "all_three_same": ("def f(a, b, c):\n    return (a - b) * c\n", (0, 0, 0)),
    "inplace_on_first": ("def f(a, b):\n    a = a.clone()\n    a.add_(1)\n    return a * b\n", (0, 0)),
    "tuple_out": ("def f(a, b):\n    return a + 1, b * 2\n", (0, 0)),
}


def _examples(lib, pattern, shape=(3, 3)):
    made = [lib.from_numpy(a) for a in arrays([shape] * (max(pattern) + 1), 0)]
    return tuple(made[i] for i in pattern)


def _flat(value):
    return list(value) if isinstance(value, tuple) else [value]


@pytest.mark.parametrize("check_trace", [False, True])
@pytest.mark.parametrize("name", sorted(ALIASED))
def test_aliased_example_inputs_stay_distinct_parameters(name, check_trace):
    src, pattern = ALIASED[name]
    results = {}
    for lib in (ember, real_torch):
        f = load(src, lib)["f"]
        examples = _examples(lib, pattern)
        before = [t.clone() for t in examples]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traced = lib.jit.trace(f, examples, check_trace=check_trace)
        for t, b in zip(examples, before):   # tracing leaves the example inputs as they were
            assert t.tolist() == b.tolist()
        fresh = [lib.from_numpy(a) for a in arrays([(3, 3)] * len(pattern), 1)]
        got = _flat(traced(*[t.clone() for t in fresh]))
        want = _flat(f(*[t.clone() for t in fresh]))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-6)
        results[lib] = [g.detach().numpy() for g in got]
    for g, w in zip(results[ember], results[real_torch]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_aliased_inputs_graph_uses_both_parameters_like_torch():
    src = ALIASED["mul"][0]
    ours = ember.jit.trace(load(src, ember)["f"], _examples(ember, (0, 0)), check_trace=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = real_torch.jit.trace(load(src, real_torch)["f"], _examples(real_torch, (0, 0)), check_trace=False)
    line = next(ln for ln in str(ours.graph).splitlines() if "aten::mul" in ln)
    their_line = next(ln for ln in str(theirs.graph).splitlines() if "aten::mul" in ln)
    assert line.split("=", 1)[1] == their_line.split("=", 1)[1]
    assert "aten::mul(%a, %b)" in line


def test_aliased_inputs_of_a_module():
    class Pair(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = ember.nn.Linear(3, 3)

        def forward(self, a, b):
            return self.lin(a) - b

    m = Pair()
    x = ember.randn(2, 3)
    traced = ember.jit.trace(m, (x, x))
    a, b = ember.randn(2, 3), ember.randn(2, 3)
    with ember.no_grad():
        np.testing.assert_allclose(traced(a, b).numpy(), m(a, b).numpy(), rtol=1e-6)


# ---------------------------------------------------------------------------------------
# globals
# ---------------------------------------------------------------------------------------
GLOBALS_SRC = """
K = 2.0
N = 3
W = torch.ones(3)
def f(x):
    return x * K + N + x * W
"""


def _trace_globals(lib):
    namespace = load(GLOBALS_SRC, lib)
    tracer_warning = ember.jit.TracerWarning if lib is ember else real_torch.jit.TracerWarning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traced = lib.jit.trace(namespace["f"], (lib.ones(3),))
    return namespace, traced, [w for w in caught if issubclass(w.category, tracer_warning)]


def test_python_number_globals_are_frozen_without_warning_like_torch():
    outs = {}
    for lib in (ember, real_torch):
        namespace, traced, caught = _trace_globals(lib)
        assert caught == []
        namespace["K"], namespace["N"] = 10.0, 100
        x = lib.from_numpy(np.array([1.0, 2.0, 3.0], dtype=np.float32))
        outs[lib] = traced(x).tolist()
        assert outs[lib] == [1.0 * 2 + 3 + 1.0, 2.0 * 2 + 3 + 2.0, 3.0 * 2 + 3 + 3.0]   # K, N as traced
        assert namespace["f"](x).tolist() != outs[lib]                                # eager reads the new ones
    assert outs[ember] == outs[real_torch]


def test_global_tensor_is_the_traced_constant_itself_like_torch():
    outs = {}
    for lib in (ember, real_torch):
        namespace, traced, _ = _trace_globals(lib)
        x = lib.ones(3)
        namespace["W"].mul_(5)                    # in place: the trace's constant is this tensor
        after_inplace = traced(x).tolist()
        namespace["W"] = lib.zeros(3)              # rebinding: the trace keeps the old tensor
        after_rebind = traced(x).tolist()
        outs[lib] = (after_inplace, after_rebind)
        assert after_inplace == after_rebind == [2.0 + 3 + 5.0] * 3
    assert outs[ember] == outs[real_torch]


def test_trace_that_mutates_a_global_tensor_keeps_mutating_it_like_torch():
    src = "G = torch.ones(2)\ndef f(x):\n    G.add_(1)\n    return x * G\n"
    seen = {}
    for lib in (ember, real_torch):
        namespace = load(src, lib)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traced = lib.jit.trace(namespace["f"], (lib.ones(2),), check_trace=False)
        calls = [traced(lib.ones(2)).tolist() for _ in range(3)]
        seen[lib] = (calls, namespace["G"].tolist())
    assert seen[ember] == seen[real_torch]


def test_tensor_literal_inside_a_trace_warns_like_torch():
    src = "def f(x):\n    c = torch.tensor([1.0, 2.0])\n    return x + c\n"
    messages = {}
    for lib in (ember, real_torch):
        tracer_warning = ember.jit.TracerWarning if lib is ember else real_torch.jit.TracerWarning
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.jit.trace(load(src, lib)["f"], (lib.ones(2),), check_trace=False)
        messages[lib] = [(str(w.message), w.lineno) for w in caught if issubclass(w.category, tracer_warning)]
    assert messages[ember] and messages[ember] == messages[real_torch]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.tensor([1.0, 2.0])                     # outside a trace: no warning
