"""The DDP graph cut (ember/_dynamo/backends/distributed.py) in one process: where the cuts go,
what is never cut, and that the pieces compute eager's values and gradients (float64)."""
import numpy as np
import pytest

import ember
from ember._dynamo.backends import lookup_backend
from ember._dynamo.backends.distributed import DDPOptimizer, SplitGraph


def compiled_with_cut(fn, params, cap_bytes, backend="aot_eager"):
    """`fn` compiled through DDPOptimizer (caps of `cap_bytes`); returns (compiled fn, results made)."""
    made = []

    def cut(gm, example_inputs):
        out = DDPOptimizer(cap_bytes, lookup_backend(backend), params, first_bucket_cap=cap_bytes).compile_fn(
            gm, example_inputs)
        made.append(out)
        return out
    ember._dynamo.reset()
    return ember.compile(fn, backend=cut), made


def leaves(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [ember.from_numpy(rng.standard_normal(s)).requires_grad_() for s in shapes]


def same_values_and_grads(fn, compiled, inputs):
    """compiled(*inputs) == fn(*inputs), and the gradients of every input of sum(outputs)."""
    def run(f):
        for t in inputs:
            t.grad = None
        out = f(*inputs)
        outs = out if isinstance(out, tuple) else (out,)
        sum(o.sum() for o in outs).backward()
        return [o.detach().numpy().copy() for o in outs], [t.grad.numpy().copy() for t in inputs]
    got, want = run(compiled), run(fn)
    for a, b in zip(got[0] + got[1], want[0] + want[1]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_cuts_where_a_bucket_fills_in_reverse_order_and_matches_eager():
    w1, w2, w3 = leaves((4, 4), (4, 4), (4, 4))
    x = leaves((3, 4), seed=1)[0]

    def f(x, w1, w2, w3):
        return ((x @ w1).tanh() @ w2).relu() @ w3
    compiled, made = compiled_with_cut(f, [w1, w2, w3], cap_bytes=1)
    same_values_and_grads(f, compiled, [x, w1, w2, w3])
    (split,) = made
    assert isinstance(split, SplitGraph) and len(split.ddp_pieces) == 3, split.ddp_pieces
    assert [len(p) for p in split.ddp_pieces] == [1, 1, 1]
    # a cap of two matrices: the last two share a bucket (the graph's tail, the first bucket)
    compiled, made = compiled_with_cut(f, [w1, w2, w3], cap_bytes=2 * 16 * 8)
    same_values_and_grads(f, compiled, [x, w1, w2, w3])
    assert [len(p) for p in made[0].ddp_pieces] == [1, 2], made[0].ddp_pieces


def test_only_the_ddp_modules_parameters_count():
    """An input that is not one of the parameters (here w2) starts no bucket."""
    w1, w2, w3 = leaves((4, 4), (4, 4), (4, 4))
    x = leaves((3, 4), seed=1)[0]

    def f(x, w1, w2, w3):
        return ((x @ w1).tanh() @ w2).relu() @ w3
    compiled, made = compiled_with_cut(f, [w1, w3], cap_bytes=1)
    same_values_and_grads(f, compiled, [x, w1, w2, w3])
    assert made[0].ddp_pieces == [["w1"], ["w3"]], made[0].ddp_pieces      # 3 pieces if w2 counted


def test_a_non_tensor_value_never_crosses_a_cut():
    """A tuple (``split``'s) read on both sides of where the cut would go: the pieces between its
    producer and its last reader are merged (dynamo reads a tuple's items right after it is made,
    so the graph is built by hand here)."""
    import operator
    from ember.fx import Graph, GraphModule
    w1, w2 = leaves((2, 4), (2, 4))
    x = leaves((3, 4), seed=1)[0]
    g = Graph()
    nodes = {name: g.placeholder(name) for name in ("x", "w1", "w2")}
    values = {"x": x, "w1": w1, "w2": w2}
    steps = [("parts", "call_method", "split", ("x", 2, 1)), ("p0", "call_function", operator.getitem, ("parts", 0)),
             ("a", "call_function", operator.matmul, ("p0", "w1")),
             ("p1", "call_function", operator.getitem, ("parts", 1)),
             ("b", "call_function", operator.matmul, ("p1", "w2")), ("c", "call_function", operator.add, ("a", "b"))]
    for name, op, target, args in steps:
        node_args = tuple(nodes[a] if isinstance(a, str) else a for a in args)
        real = tuple(values[a] if isinstance(a, str) else a for a in args)
        nodes[name] = g.create_node(op, target, node_args, {}, name)
        values[name] = getattr(real[0], target)(*real[1:]) if op == "call_method" else target(*real)
        nodes[name].meta["val"] = values[name]
    g.output((nodes["c"],))
    for name in ("x", "w1", "w2"):
        nodes[name].meta["val"] = values[name]
    opt = DDPOptimizer(1, lookup_backend("aot_eager"), [w1, w2], first_bucket_cap=1)
    gm = GraphModule({}, g)
    assert len(opt._merge_non_tensor_crossings([[n] for n in g.nodes if n.op == "call_method"])) == 1
    plan = opt.plan(gm, [x, w1, w2])
    assert len(plan) == 1, plan
    without_tuple = DDPOptimizer._merge_non_tensor_crossings([[nodes["p1"], nodes["b"]], [nodes["c"]]])
    assert len(without_tuple) == 2          # tensors do cross
    compiled = opt.compile_fn(gm, [x, w1, w2])
    np.testing.assert_allclose(compiled(x, w1, w2)[0].detach().numpy(), values["c"].detach().numpy(), rtol=1e-12)


def test_a_grad_mode_switch_inside_the_graph_is_not_cut():
    w1, w2 = leaves((4, 4), (4, 4))
    x = leaves((3, 4), seed=1)[0]

    def f(x, w1, w2):
        h = (x @ w1).tanh()
        with ember.no_grad():
            scale = h.abs().mean()
        return (h * scale) @ w2
    compiled, made = compiled_with_cut(f, [w1, w2], cap_bytes=1)
    same_values_and_grads(f, compiled, [x, w1, w2])
    assert made and not any(isinstance(m, SplitGraph) for m in made)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_shared_parameter_and_returned_intermediates(backend):
    """A parameter read in the first and the last piece (tied weights: its gradient sums both
    pieces'), and an intermediate that a later piece reads and the graph also returns."""
    w1, w2 = leaves((4, 4), (4, 4))
    x = leaves((3, 4), seed=1)[0]

    def f(x, w1, w2):
        h = (x @ w1).tanh()
        g = (h @ w2).sigmoid()
        return h, (g @ w1.t()) * h
    compiled, made = compiled_with_cut(f, [w1, w2], cap_bytes=1, backend=backend)
    for _ in range(2):
        same_values_and_grads(f, compiled, [x, w1, w2])
    (split,) = made
    assert isinstance(split, SplitGraph) and len(split.pieces) == 2, split.ddp_pieces
    for piece in split.pieces:          # each piece compiled by the backend, not run as captured
        assert piece.run is not piece.gm.forward


def test_pieces_are_compiled_once_and_inputs_are_not_kept():
    import gc
    import weakref
    w1, w2, w3 = leaves((4, 4), (4, 4), (4, 4))

    def f(x, w1, w2, w3):
        return ((x @ w1).tanh() @ w2).relu() @ w3
    compiled, made = compiled_with_cut(f, [w1, w2, w3], cap_bytes=1)
    calls = []
    x = leaves((3, 4), seed=1)[0]
    compiled(x, w1, w2, w3)
    for piece in made[0].pieces:
        run = piece.run
        piece.run = lambda *a, run=run: calls.append(1) or run(*a)
    out = compiled(x, w1, w2, w3)
    assert len(calls) == 3 and len(made) == 1
    ref = weakref.ref(x)
    del x, out
    gc.collect()
    assert ref() is None, "the split graph keeps an input alive"
