"""Seed 001's TorchScript example, end to end: the scripted graph as printed, the optimised graph
the executor runs after its profiling run, and the values (against eager and torch.jit.script)."""
import numpy as np
import torch

import ember


def seed_example(a, b):
    c = a + b
    d = c * c
    e = ember.tanh(d * c)
    return d + (e + e)


def seed_example_torch(a, b):
    c = a + b
    d = c * c
    e = torch.tanh(d * c)
    return d + (e + e)


def _inputs(seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2)]


def _op_lines(text: str) -> list:
    """`%name : type = kind(args)` without source locations, numbers or names: what the graph does."""
    kinds = [line.split(" = ", 1)[1].split("(")[0] for line in text.splitlines() if " = " in line]
    return [k for k in kinds if not k.startswith("prim::Constant")]


def test_scripted_graph_prints_like_torchscript():
    scripted = ember.jit.script(seed_example)
    text = scripted.graph.str(print_source_locations=False)
    assert text.splitlines() == [
        "graph(%a.1 : Tensor,",
        "      %b.1 : Tensor):",
        "  %c.1 : Tensor = aten::add(%a.1, %b.1)",
        "  %d.1 : Tensor = aten::mul(%c.1, %c.1)",
        "  %4 : Tensor = aten::mul(%d.1, %c.1)",
        "  %e.1 : Tensor = aten::tanh(%4)",
        "  %6 : Tensor = aten::add(%e.1, %e.1)",
        "  %7 : Tensor = aten::add(%d.1, %6)",
        "  return (%7)",
    ]
    # the same op sequence as torch.jit.script (torch adds alpha constants to aten::add)
    assert _op_lines(text) == _op_lines(str(torch.jit.script(seed_example_torch).graph))
    # each node knows its source line
    assert f"{__file__}:12:" in str(scripted.graph)


def test_optimised_graph_after_profiling_is_specialised():
    scripted = ember.jit.script(seed_example)
    a, b = (ember.from_numpy(x) for x in _inputs(0))
    with ember.jit.fuser("none"):    # the passes' result; with fusion: tests/jit/test_fusion_groups.py
        scripted(a, b)                                   # the profiling run
    optimised = scripted.graph_for(a, b).str(print_source_locations=False)
    lines = optimised.splitlines()
    assert lines[0] == "graph(%a.1 : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu),"
    assert lines[1] == "      %b.1 : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)):"
    assert "%e.1 : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu) = aten::tanh(%4)" in optimised
    assert "prim::profile" not in optimised and "prim::Constant" not in optimised
    assert _op_lines(optimised) == ["aten::add", "aten::mul", "aten::mul", "aten::tanh", "aten::add", "aten::add"]
    # a different shape bails out to the generic plan, then gets its own specialised plan
    a5, b5 = ember.randn(5), ember.randn(5)
    assert ember.allclose(scripted(a5, b5), seed_example(a5, b5))
    assert "Float(5, strides=[1], requires_grad=0, device=cpu)" in str(scripted.graph_for(a5, b5))


def test_values_match_eager_and_torch_on_fresh_inputs():
    scripted = ember.jit.script(seed_example)
    torch_scripted = torch.jit.script(seed_example_torch)
    for seed in range(4):
        x, y = _inputs(seed)
        got = scripted(ember.from_numpy(x), ember.from_numpy(y))
        np.testing.assert_allclose(got.numpy(), seed_example(ember.from_numpy(x), ember.from_numpy(y)).numpy(),
                                   rtol=1e-6)
        np.testing.assert_allclose(got.numpy(), torch_scripted(torch.from_numpy(x), torch.from_numpy(y)).numpy(),
                                   rtol=1e-5, atol=1e-6)


def seed_example_for_debug_state(a, b):   # its own function: script() caches per function
    c = a + b
    d = c * c
    e = ember.tanh(d * c)
    return d + (e + e)


def test_debug_state_shows_the_plan_the_executor_runs():
    scripted = ember.jit.script(seed_example_for_debug_state)
    a, b = (ember.from_numpy(x) for x in _inputs(1))
    with ember.jit.fuser("none"):    # one CALL per op; fused: one FusionGroup (test_fusion_groups.py)
        scripted(a, b)
    scripted(a, b)
    state = scripted.get_debug_state()
    assert state["stats"]["profiling_runs"] == 1 and state["stats"]["optimized_runs"] == 1
    (plan,) = state["plans"].values()
    listing = str(plan)
    # one CALL per op of the seed example, in program order, then the return
    calls = [line.split("= ", 1)[1].split("(")[0] for line in listing.splitlines() if " CALL " in line]
    assert [c.split(".")[0] for c in calls] == ["aten::add", "aten::mul", "aten::mul", "aten::tanh",
                                                "aten::add", "aten::add"]
    assert listing.rstrip().splitlines()[-1].split()[1] == "RET"
    assert "def " in plan.source
