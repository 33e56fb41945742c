"""fx Proxies reaching ember operators without the trace's patched names: functions referenced before
tracing (``mm = torch.mm`` at module top, in a dict, a closure, an attribute) and graphs built by hand
with ``fx.Proxy`` outside symbolic_trace. The same program text runs with ``torch`` bound to ember and
to PyTorch; the traced graphs must compute what eager computes, in both libraries."""
import numpy as np
import pytest
import torch
import torch.fx  # noqa: F401

import ember
import ember.fx
from ember._core.dispatch import DispatchKey
from ember.fx.proxy import Proxy
from oracle import as_numpy, make

PROGRAM = '''
mm = torch.mm
relu = torch.relu
F = torch.nn.functional
gelu = F.gelu
OPS = {"add": torch.add, "cat": torch.cat}

def make_scale():
    mul = torch.mul
    def scale(x):
        return mul(x, 0.5)
    return scale

scale = make_scale()

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(4, 4))
        self.op = torch.sub
        self.lin = torch.nn.Linear(8, 3)

    def forward(self, x):
        y = mm(x, self.w)
        y = relu(y) + gelu(y)
        y = OPS["add"](y, 1.0)
        y = self.op(y, x)
        y = OPS["cat"]([y, scale(x)], 1)
        y = torch.sum(y, dim=0, keepdim=True) + F.softmax(y, -1)
        return self.lin(y).max(1).values
'''


def build(lib):
    namespace = {"torch": lib}
    exec(compile(PROGRAM, "<program>", "exec"), namespace)
    return namespace["Net"]()


def test_proxy_answers_the_python_dispatch_key():
    assert Proxy._keys == 1 << DispatchKey.Python


def test_references_taken_before_tracing_are_recorded_as_in_torch():
    e, t = build(ember), build(torch)
    with torch.no_grad():
        for name, p in e.named_parameters():
            dict(t.named_parameters())[name].copy_(torch.from_numpy(p.detach().numpy().copy()))
    ge, gt = ember.fx.symbolic_trace(e), torch.fx.symbolic_trace(t)
    x = make((5, 4))
    eager_e, traced_e = e(ember.from_numpy(x)), ge(ember.from_numpy(x))
    traced_t = gt(torch.from_numpy(x))
    np.testing.assert_array_equal(as_numpy(traced_e), as_numpy(eager_e))
    np.testing.assert_allclose(as_numpy(traced_e), as_numpy(traced_t), rtol=1e-5, atol=1e-6)
    # every call through a saved reference became a node: nothing ran eagerly on a Proxy
    kinds_e = [n.op for n in ge.graph.nodes]
    kinds_t = [n.op for n in gt.graph.nodes]
    assert kinds_e.count("call_function") >= kinds_t.count("call_function") - 1
    assert kinds_e.count("call_module") == kinds_t.count("call_module") == 1


def test_traced_graph_keeps_recording_on_new_inputs_and_grads_flow():
    e = build(ember)
    ge = ember.fx.symbolic_trace(e)
    for seed in range(3):
        x = make((3, 4), seed=seed)
        a, b = ember.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)
        e(a).sum().backward()
        ge(b).sum().backward()
        np.testing.assert_allclose(as_numpy(a.grad), as_numpy(b.grad), rtol=1e-6, atol=1e-7)


def build_by_hand(lib):
    """PyTorch's fx example of building a graph with Proxies, outside symbolic_trace."""
    fx = lib.fx
    graph = fx.Graph()
    tracer = fx.proxy.GraphAppendingTracer(graph)
    x = fx.Proxy(graph.placeholder("x"), tracer)
    w = fx.Proxy(graph.placeholder("w"), tracer)
    y = lib.relu(x)
    z = lib.mm(y, w) + lib.sum(y, dim=1, keepdim=True)
    z = lib.cat([z, lib.sigmoid(y)], 1)
    z = lib.nn.functional.linear(z, w.repeat(1, 2))
    z = lib.max(z, 1).values + lib.nn.functional.softmax(x, -1).sum(-1)
    z = lib.where(z > 0, z, lib.zeros_like(z)).reshape(-1, 1) * 3
    graph.output(z.node)
    return fx.GraphModule(lib.nn.Module(), graph)


def test_graph_built_by_hand_matches_torch():
    ge, gt = build_by_hand(ember), build_by_hand(torch)
    for seed in range(3):
        x, w = make((3, 3), seed=seed), make((3, 3), seed=seed + 10)
        got = ge(ember.from_numpy(x), ember.from_numpy(w))
        want = gt(torch.from_numpy(x), torch.from_numpy(w))
        np.testing.assert_allclose(as_numpy(got), as_numpy(want), rtol=1e-5, atol=1e-6)


def test_proxy_without_a_tracer_appends_to_its_nodes_graph():
    for lib in (ember, torch):
        graph = lib.fx.Graph()
        x = lib.fx.Proxy(graph.placeholder("x"))
        graph.output(lib.neg(lib.exp(x)).node)
        gm = lib.fx.GraphModule(lib.nn.Module(), graph)
        np.testing.assert_allclose(as_numpy(gm(lib.ones(2))), -np.exp(np.ones(2)), rtol=1e-6)


def test_eager_errors_are_unchanged():
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        ember.sum("not a tensor", dim=1)
    with pytest.raises(TypeError, match="must be tuple of Tensors"):
        ember.cat([ember.ones(1), "x"])
    for lib in (ember, torch):
        with pytest.raises(TypeError):
            lib.mm(lib.ones(2, 2), 3)
