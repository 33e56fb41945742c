"""Every frontend's graph carries the one per-node tensor fact, ``node.meta["val"]``, after capture:
symbolic_trace (after ShapeProp, on real or meta inputs), jit.trace, jit.script (after its
profiling runs: the optimised graph), ember.compile (dynamo) and make_fx (real or meta inputs).

Each program runs in each frontend on the same inputs (contiguous, transposed, broadcast,
requiring grad), and every node whose eager value is a tensor must carry a meta tensor with that
value's shape, dtype, strides and requires_grad, where the eager value is recomputed by running
the node's op on real tensors (tests/node_vals.py).
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._functorch import make_fx
from ember.fx import prim
from ember.fx.passes.shape_prop import ShapeProp
from ember.jit.executor.graph_executor import input_signature
from ember.jit.ir.types import TensorType

from node_vals import assert_vals_match, eager_node_values


def pointwise_chain(x, y):
    a = x + y
    b = ember.relu(a) * 2.0
    return ember.tanh(b) - ember.sigmoid(y)


def views_and_reductions(x, y):
    t = x.t()
    s = t.sum(dim=1, keepdim=True)
    m = (t * 3.0).mean(dim=0)
    return s, m, t.contiguous(), x.transpose(0, 1) + y.t()


def broadcast_compare_cast(x, y):
    row = y[0]
    mask = (x + row) > 0.5
    return ember.where(mask, x, row).to(ember.float64), mask


def matmul_split_cat(x, y):
    p = x @ y.t()
    left, right = ember.split(p, 1, dim=1)
    return ember.cat([right, left], dim=1).unsqueeze(0).expand(2, -1, -1)


PROGRAMS = [pointwise_chain, views_and_reductions, broadcast_compare_cast, matmul_split_cat]


def _inputs(layout: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    if layout == "transposed":
        x = ember.from_numpy(rng.standard_normal((3, 2)).astype("float32")).t()
        y = ember.from_numpy(rng.standard_normal((3, 2)).astype("float32")).t()
    else:
        x = ember.from_numpy(rng.standard_normal((2, 3)).astype("float32"))
        y = ember.from_numpy(rng.standard_normal((2, 3)).astype("float32"))
    if layout == "requires_grad":
        x.requires_grad_(True)
    return x, y


LAYOUTS = ["contiguous", "transposed", "requires_grad"]
CASES = [pytest.param(p, layout, id=f"{p.__name__}-{layout}") for p in PROGRAMS for layout in LAYOUTS]


class AsModule(ember.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x, y):
        return self.fn(x, y)


def _check(graph, inputs, root=None):
    values = eager_node_values(graph, inputs, root)
    assert assert_vals_match(graph, values) >= 2     # the inputs at least, and some op results


@pytest.mark.parametrize("program,layout", CASES)
def test_symbolic_trace_after_shape_prop(program, layout):
    gm = ember.fx.symbolic_trace(AsModule(program))
    inputs = _inputs(layout)
    ShapeProp(gm).propagate(*inputs)
    _check(gm.graph, inputs, gm)


@pytest.mark.parametrize("program,layout", CASES)
def test_symbolic_trace_after_shape_prop_on_meta_inputs(program, layout):
    gm = ember.fx.symbolic_trace(AsModule(program))
    inputs = _inputs(layout)
    ShapeProp(gm).propagate(*(t.detach().to("meta").requires_grad_(t.requires_grad) for t in inputs))
    _check(gm.graph, inputs, gm)       # vals from the meta kernels, checked against CPU results


@pytest.mark.parametrize("program,layout", CASES)
def test_jit_trace(program, layout):
    inputs = _inputs(layout)
    traced = ember.jit.trace(program, inputs, check_trace=False)
    _check(traced.graph_module.graph, inputs, traced.graph_module)


@pytest.fixture
def no_fusion(monkeypatch):
    """The jit tests here read the optimised graph node by node: plans without fusion groups
    (script caches per function, so every test building plans takes it; fusion groups:
    tests/jit/test_fusion_groups.py)."""
    from ember.jit.executor import config
    monkeypatch.setattr(config, "fusion_enabled", False)


@pytest.mark.usefixtures("no_fusion")
@pytest.mark.parametrize("program,layout", CASES)
def test_jit_script_profiling_observes_every_tensor(program, layout):
    """The profiling run records a meta tensor for every value of type Tensor (TorchScript
    profiles tensors; tuples and lists such as split's Tensor[] are observed through their elements)."""
    inputs = _inputs(layout)
    scripted = ember.jit.script(program)
    scripted(*inputs)                                              # the profiling run
    executor = scripted._get_executor()       # (script caches per function: other layouts have plans too)
    executor.graph_for(*inputs)
    profiled = executor._plans[input_signature(inputs)].profiled_graph
    values = eager_node_values(profiled, inputs)
    observed = {n.args[0]: n for n in profiled.nodes if n.target is prim.profile}
    tensors = [n for n in profiled.nodes if isinstance(values.get(n), ember.Tensor) and n.target is not prim.profile]
    assert tensors and all(n in observed for n in tensors), [n.name for n in tensors if n not in observed]
    assert assert_vals_match(profiled, values, [observed[n] for n in tensors]) == len(tensors)


@pytest.mark.usefixtures("no_fusion")
@pytest.mark.parametrize("program,layout", CASES)
def test_jit_script_optimised_graph(program, layout):
    """The optimised graph keeps an observation where the input signature guarantees it (the
    plan's guard checks inputs only: list elements fall back to the plain Tensor), and then it is
    the specialised type's meta["val"]; a value typed plain Tensor carries none."""
    inputs = _inputs(layout)
    scripted = ember.jit.script(program)
    scripted(*inputs)
    graph = scripted._get_executor().graph_for(*inputs)
    specialised = [n for n in graph.nodes if isinstance(n.type, TensorType) and n.type != TensorType()]
    assert len(specialised) >= 3
    assert assert_vals_match(graph, eager_node_values(graph, inputs), specialised) == len(specialised)
    assert all("val" not in n.meta for n in graph.nodes if n.type == TensorType())
    if program is not matmul_split_cat:      # no list elements: every tensor value is guaranteed
        assert all(isinstance(n.type, TensorType) and n.type != TensorType() for n in graph.nodes
                   if n.op not in ("output",) and isinstance(eager_node_values(graph, inputs).get(n), ember.Tensor))


@pytest.mark.parametrize("program,layout", CASES)
def test_ember_compile(program, layout):
    graphs = []

    def backend(gm, example_inputs):
        graphs.append((gm, list(example_inputs)))
        return gm.forward
    ember._dynamo.reset()
    inputs = _inputs(layout)
    ember.compile(program, backend=backend, fullgraph=True)(*inputs)
    (gm, example_inputs), = graphs
    _check(gm.graph, example_inputs, gm)


@pytest.mark.parametrize("program,layout", CASES)
def test_make_fx(program, layout):
    inputs = _inputs(layout)
    gm = make_fx(program)(*inputs)
    _check(gm.graph, inputs, gm)


@pytest.mark.parametrize("program,layout", CASES)
def test_make_fx_on_meta_inputs(program, layout):
    inputs = _inputs(layout)
    gm = make_fx(program)(*(t.detach().to("meta").requires_grad_(t.requires_grad) for t in inputs))
    _check(gm.graph, inputs, gm)       # vals from the meta kernels, checked against CPU results
