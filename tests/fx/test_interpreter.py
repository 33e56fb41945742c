"""Interpreter and Transformer, checked against torch.fx running the same graphs.

Graphs are built with the Graph API by builders that take the library (`torch` or `ember`), so
the same program runs through torch.fx.Interpreter and ember.fx.Interpreter.
"""
import operator

import numpy as np
import pytest
import torch
import torch.fx

import ember
import ember.fx
from oracle import assert_same, make, to_ember, to_torch


# -- builders ----------------------------------------------------------------------------------
def build_mlp(lib, weight, bias, scale):
    """x -> linear submodule -> relu -> * scale attribute -> sum(dim=1) + x.mean()"""
    root = lib.nn.Module()
    root.lin = lib.nn.Linear(weight.shape[1], weight.shape[0])
    with lib.no_grad():
        root.lin.weight.copy_(weight)
        root.lin.bias.copy_(bias)
    root.scale = scale
    g = lib.fx.Graph()
    x = g.placeholder("x")
    h = g.call_module("lin", (x,))
    r = g.call_function(lib.relu, (h,))
    s = g.get_attr("scale")
    m = g.call_function(operator.mul, (r, s))
    total = g.call_method("sum", (m,), {"dim": 1})
    mean = g.call_method("mean", (x,))
    out = g.call_function(operator.add, (total, mean))
    g.output((out, r))
    return lib.fx.GraphModule(root, g)


def build_sigmoid_neg(lib):
    g = lib.fx.Graph()
    x = g.placeholder("x")
    s = g.call_function(lib.sigmoid, (x,))
    n = g.call_method("neg", (s,))
    g.output(n)
    return lib.fx.GraphModule(lib.nn.Module(), g)


def mlp_pair():
    w, b, sc, x = make((5, 3)), make((5,)), make((5,)), make((4, 3))
    gm_e = build_mlp(ember, to_ember(w), to_ember(b), to_ember(sc))
    gm_t = build_mlp(torch, to_torch(w), to_torch(b), to_torch(sc))
    return gm_e, gm_t, x


# -- the seed's example -------------------------------------------------------------------------
def _neg_sigm_swap(lib):
    Interpreter = lib.fx.Interpreter

    class NegSigmSwapInterpreter(Interpreter):
        def call_function(self, target, args, kwargs):
            if target == lib.sigmoid:
                return lib.neg(*args, **kwargs)
            return super().call_function(target)

        def call_method(self, target, args, kwargs):
            if target == 'neg':
                call_self, *args_tail = args
                return call_self.sigmoid(*args_tail, **kwargs)
            return super().call_method(target)
    return NegSigmSwapInterpreter


def test_seed_neg_sigm_swap_on_crafted_graph_prints_what_torch_prints():
    x = make((3, 4))
    outs = {}
    for lib, conv in ((ember, to_ember), (torch, to_torch)):
        gm = build_sigmoid_neg(lib)
        inp = conv(x)
        result = _neg_sigm_swap(lib)(gm).run(inp)
        outs[lib.__name__] = (result, lib.neg(inp).sigmoid(), str(result))
    assert_same(outs["ember"][0], outs["torch"][0])
    assert_same(outs["ember"][0], to_torch(outs["ember"][1].numpy()))
    assert outs["ember"][2] == outs["torch"][2].replace("torch", "ember")


def test_seed_neg_sigm_swap_on_symbolic_trace():
    pytest.importorskip("ember.fx._symbolic_trace")
    x = make((3, 4))

    def fn(lib):
        return lambda x: lib.sigmoid(x).neg()
    gm = ember.fx.symbolic_trace(fn(ember))
    result = _neg_sigm_swap(ember)(gm).run(to_ember(x))
    expected = _neg_sigm_swap(torch)(torch.fx.symbolic_trace(fn(torch))).run(to_torch(x))
    assert_same(result, expected)


# -- running ------------------------------------------------------------------------------------
def test_run_matches_torch_and_the_module_itself():
    gm_e, gm_t, x = mlp_pair()
    got = ember.fx.Interpreter(gm_e).run(to_ember(x))
    assert_same(got, torch.fx.Interpreter(gm_t).run(to_torch(x)))
    assert_same(got, to_torch([t.detach().numpy() for t in gm_e(to_ember(x))]))


def test_values_are_freed_after_their_last_use_like_torch():
    def live_sets(lib, gm, x, gc):
        class Recorder(lib.fx.Interpreter):
            def run_node(self, n):
                result = super().run_node(n)
                self.seen.append(sorted(k.name for k in self.env))
                return result
        interp = Recorder(gm, garbage_collect_values=gc)
        interp.seen = []
        interp.run(x)
        return interp.seen
    gm_e, gm_t, x = mlp_pair()
    for gc in (True, False):
        assert live_sets(ember, gm_e, to_ember(x), gc) == live_sets(torch, gm_t, to_torch(x), gc)


def test_initial_env_short_circuits_nodes():
    gm_e, gm_t, x = mlp_pair()
    results = []
    for lib, gm, conv in ((ember, gm_e, to_ember), (torch, gm_t, to_torch)):
        relu = next(n for n in gm.graph.nodes if n.name == "relu")
        env = {relu: conv(np.ones((4, 5), dtype=np.float32))}
        results.append(lib.fx.Interpreter(gm).run(conv(x), initial_env=env))
    assert_same(results[0], results[1])


def test_boxed_run_clears_the_list_and_checks_the_count():
    gm_e, gm_t, x = mlp_pair()
    args = [to_ember(x)]
    assert_same(ember.fx.Interpreter(gm_e).boxed_run(args), torch.fx.Interpreter(gm_t).boxed_run([to_torch(x)]))
    assert args == []
    for lib, gm in ((ember, gm_e), (torch, gm_t)):
        with pytest.raises(RuntimeError, match="expected 1 arguments for placeholders but received 2"):
            lib.fx.Interpreter(gm).boxed_run([1, 2])


def test_missing_argument_and_default_value():
    for lib in (ember, torch):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        y = g.placeholder("y", default_value=3)
        g.output(g.call_function(operator.add, (x, y)))
        gm = lib.fx.GraphModule(lib.nn.Module(), g)
        assert lib.fx.Interpreter(gm).run(2) == 5
        with pytest.raises(RuntimeError, match="Expected positional argument for parameter x"):
            lib.fx.Interpreter(gm).run()


def test_failure_names_the_node():
    for lib in (ember, torch):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        g.output(g.call_method("reshape", (x, 7)))
        gm = lib.fx.GraphModule(lib.nn.Module(), g)
        with pytest.raises(RuntimeError) as info:
            lib.fx.Interpreter(gm).run(lib.ones(3))
        assert "While executing %reshape" in str(info.value)


def test_fetch_attr_of_missing_target_raises_like_torch():
    for lib in (ember, torch):
        gm = lib.fx.GraphModule(lib.nn.Module(), lib.fx.Graph())
        with pytest.raises(RuntimeError, match="Node referenced nonexistent target nope"):
            lib.fx.Interpreter(gm).fetch_attr("nope.w")


def test_run_node_override_sees_every_node_in_order():
    gm_e, gm_t, x = mlp_pair()

    def ops(lib, gm, x):
        seen = []

        class Spy(lib.fx.Interpreter):
            def run_node(self, n):
                seen.append((n.op, n.name))
                return super().run_node(n)
        Spy(gm).run(x)
        return seen
    assert ops(ember, gm_e, to_ember(x)) == ops(torch, gm_t, to_torch(x))


def test_interpreting_a_separate_graph_argument():
    gm_e, _, x = mlp_pair()
    g = ember.fx.Graph()
    a = g.placeholder("a")
    g.output(g.call_module("lin", (a,)))
    got = ember.fx.Interpreter(gm_e, graph=g).run(to_ember(x))
    assert_same(got, to_torch(gm_e.lin(to_ember(x)).detach().numpy()))


# -- Transformer --------------------------------------------------------------------------------
def _swap_xformer(lib):
    class NegSigmSwapXformer(lib.fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is lib.sigmoid:
                return lib.neg(*args, **kwargs)
            return super().call_function(target, args, kwargs)

        def call_method(self, target, args, kwargs):
            if target == "neg":
                call_self, *args_tail = args
                return call_self.sigmoid(*args_tail, **kwargs)
            return super().call_method(target, args, kwargs)
    return NegSigmSwapXformer


def _structure(gm):
    return [(n.op, n.name, n.target if isinstance(n.target, str) else n.target.__name__) for n in gm.graph.nodes]


def test_transformer_rewrites_like_torch():
    pytest.importorskip("ember.fx._symbolic_trace")
    x = make((3, 4))
    new_e = _swap_xformer(ember)(build_sigmoid_neg(ember)).transform()
    new_t = _swap_xformer(torch)(build_sigmoid_neg(torch)).transform()
    assert _structure(new_e) == _structure(new_t)
    assert_same(new_e(to_ember(x)), new_t(to_torch(x)))
    assert isinstance(new_e, ember.fx.GraphModule)


def test_plain_transformer_copies_the_graph():
    pytest.importorskip("ember.fx._symbolic_trace")
    gm_e, gm_t, x = mlp_pair()
    new_e, new_t = ember.fx.Transformer(gm_e).transform(), torch.fx.Transformer(gm_t).transform()
    assert _structure(new_e) == _structure(new_t)
    assert_same(new_e(to_ember(x)), to_torch([t.detach().numpy() for t in gm_e(to_ember(x))]))
    assert new_e.graph is not gm_e.graph
