"""replace_pattern, compared with torch.fx.subgraph_rewriter on the same graphs.

The graph, the pattern and the replacement are written once against the library (`torch` or
`ember`); both rewriters must find the same matches and leave the same graph behind.
"""
import operator

import pytest
import torch
import torch.fx
from torch.fx import subgraph_rewriter as torch_rewriter

import ember
import ember.fx
from ember.fx.subgraph_rewriter import Match, replace_pattern
from oracle import assert_same, make, to_ember, to_torch


def structure(gm):
    def t(target):
        return target if isinstance(target, str) else getattr(target, "__name__", str(target))
    return [(n.op, n.name, t(n.target), [str(a) for a in n.args]) for n in gm.graph.nodes]


def crafted(lib, build):
    g = lib.fx.Graph()
    build(lib, g)
    return lib.fx.GraphModule(lib.nn.Module(), g)


def pattern_graph(lib, build, n_inputs):
    """A pattern/replacement as a GraphModule built with the Graph API (no tracing needed)."""
    def b(lib, g):
        ins = [g.placeholder(f"p{i}") for i in range(n_inputs)]
        g.output(build(lib, g, *ins))
    return crafted(lib, b)


def both(build_graph, pattern, replacement, n_inputs, inputs):
    """Run replace_pattern in torch and ember; return (matches_e, matches_t, gm_e, gm_t)."""
    results = {}
    for lib, rewrite in ((ember, replace_pattern), (torch, torch_rewriter.replace_pattern)):
        gm = crafted(lib, build_graph)
        conv = to_ember if lib is ember else to_torch
        before = gm(*[conv(x) for x in inputs])
        matches = rewrite(gm, pattern_graph(lib, pattern, n_inputs), pattern_graph(lib, replacement, n_inputs))
        results[lib.__name__] = (matches, gm, before, gm(*[conv(x) for x in inputs]))
    me, gm_e, _, out_e = results["ember"]
    mt, gm_t, _, out_t = results["torch"]
    assert structure(gm_e) == structure(gm_t)
    assert len(me) == len(mt)
    for a, b in zip(me, mt):
        assert a.anchor.name == b.anchor.name
        assert {k.name: v.name for k, v in a.nodes_map.items()} == {k.name: v.name for k, v in b.nodes_map.items()}
    assert_same(out_e, out_t)
    return results


# -- graphs -------------------------------------------------------------------------------------
def two_chains(lib, g):
    x, y = g.placeholder("x"), g.placeholder("y")
    a = g.call_function(operator.add, (g.call_function(lib.neg, (x,)), g.call_function(lib.relu, (y,))))
    b = g.call_function(operator.add, (g.call_function(lib.neg, (a,)), g.call_function(lib.relu, (y,))))
    g.output(b)


def neg_plus_relu(lib, g, x, y):
    return g.call_function(operator.add, (g.call_function(lib.neg, (x,)), g.call_function(lib.relu, (y,))))


def sigmoid_times(lib, g, x, y):
    return g.call_function(operator.mul, (g.call_function(lib.sigmoid, (x,)), y))


def test_replaces_every_match_like_torch():
    res = both(two_chains, neg_plus_relu, sigmoid_times, 2, [make((3,)), make((3,))])
    matches, gm, _, _ = res["ember"]
    assert len(matches) == 2 and all(isinstance(m, Match) for m in matches)
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"] == [
        ember.sigmoid, operator.mul, ember.sigmoid, operator.mul]
    # the second match's input was the first match's output: nodes_map points at its replacement
    assert matches[1].nodes_map[next(iter(matches[1].nodes_map))] is not None


def escaping(lib, g):
    """neg(x) is also used outside the would-be match: that match must be rejected."""
    x, y = g.placeholder("x"), g.placeholder("y")
    n = g.call_function(lib.neg, (x,))
    s = g.call_function(operator.add, (n, g.call_function(lib.relu, (y,))))
    g.output((s, g.call_method("exp", (n,))))


def test_match_is_rejected_when_an_inner_value_escapes():
    res = both(escaping, neg_plus_relu, sigmoid_times, 2, [make((3,)), make((3,))])
    assert res["ember"][0] == []


def overlapping(lib, g):
    """x.sin().sin().sin(): pattern sin(sin(p)) matches twice, overlapping; only the first is taken."""
    x = g.placeholder("x")
    a = g.call_method("sin", (x,))
    b = g.call_method("sin", (a,))
    c = g.call_method("sin", (b,))
    g.output(c)


def sin_sin(lib, g, p):
    return g.call_method("sin", (g.call_method("sin", (p,)),))


def cos_of(lib, g, p):
    return g.call_method("cos", (p,))


def test_overlapping_matches_first_wins():
    res = both(overlapping, sin_sin, cos_of, 1, [make((4,))])
    assert len(res["ember"][0]) == 1


def literal_graph(lib, g):
    x = g.placeholder("x")
    a = g.call_function(operator.mul, (x, 2))
    b = g.call_function(operator.mul, (a, 3))
    g.output(b)


def times_two(lib, g, p):
    return g.call_function(operator.mul, (p, 2))


def plus_self(lib, g, p):
    return g.call_function(operator.add, (p, p))


def test_literal_arguments_must_be_equal():
    res = both(literal_graph, times_two, plus_self, 1, [make((4,))])
    assert len(res["ember"][0]) == 1


def multi_output_graph(lib, g):
    x = g.placeholder("x")
    s = g.call_method("sin", (x,))
    c = g.call_method("cos", (x,))
    g.output(g.call_function(operator.sub, (s, c)))


def sin_and_cos(lib, g, p):
    return (g.call_method("sin", (p,)), g.call_method("cos", (p,)))


def swapped(lib, g, p):
    return (g.call_method("cos", (p,)), g.call_method("sin", (p,)))


def test_patterns_with_two_outputs():
    res = both(multi_output_graph, sin_and_cos, swapped, 1, [make((4,))])
    assert len(res["ember"][0]) == 1


def test_callable_patterns_traced_with_symbolic_trace():
    pytest.importorskip("ember.fx._symbolic_trace")
    x0, w1, w2 = make((3,)), make((2, 3)), make((2, 3))

    def program(lib):
        def forward(x, w1, w2):
            m1 = lib.cat([w1, w2]).sum()
            m2 = lib.cat([w1, w2]).sum()
            return x + lib.max(m1) + lib.max(m2)
        return forward
    outs, codes = [], []
    for lib, fx, conv in ((ember, ember.fx, to_ember), (torch, torch.fx, to_torch)):
        gm = fx.symbolic_trace(program(lib))
        rewrite = replace_pattern if lib is ember else torch_rewriter.replace_pattern
        matches = rewrite(gm, lambda w1, w2: lib.cat([w1, w2]), lambda w1, w2: lib.stack([w1, w2]))
        assert len(matches) == 2
        outs.append(gm(conv(x0), conv(w1), conv(w2)))
        codes.append([(n.op, n.name) for n in gm.graph.nodes])
    assert codes[0] == codes[1]
    assert_same(outs[0], outs[1])


def test_replacement_must_take_the_same_inputs():
    gm = crafted(ember, two_chains)
    with pytest.raises(ValueError, match="same inputs"):
        replace_pattern(gm, pattern_graph(ember, neg_plus_relu, 2), pattern_graph(ember, cos_of, 1))


def test_bad_pattern_type():
    gm = crafted(ember, two_chains)
    with pytest.raises(TypeError, match="pattern must be a callable, a GraphModule or a Graph"):
        replace_pattern(gm, 42, pattern_graph(ember, cos_of, 1))
