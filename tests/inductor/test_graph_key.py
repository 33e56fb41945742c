"""The graph cache's key (compile_fx.graph_key) must change with everything a stored plan depends on:
the aten graph, each input's dtype/shape/strides, and each config setting the lowering reads. A
key that missed one would hand a warm process a plan compiled for something else."""
import pytest

import ember
from ember._functorch import make_fx
from ember._inductor import config
from ember._inductor.compile_fx import graph_key


def key(fn, *inputs):
    return graph_key(make_fx(fn)(*inputs), list(inputs))


def f(x):
    return (x * 2).exp()


def test_same_program_same_layouts_same_key():
    assert key(f, ember.randn(3, 4)) == key(f, ember.randn(3, 4))


def test_key_changes_with_graph_and_layouts():
    x = ember.randn(3, 4)
    base = key(f, x)
    others = [key(f, x.double()), key(f, ember.randn(4, 3)), key(f, ember.randn(4, 3).t()),
              key(f, ember.randn(3, 4)[:, ::2]), key(lambda x: (x * 3).exp(), x), key(lambda x: (x * 2).log(), x)]
    assert base not in others and len(set(others)) == len(others)


@pytest.mark.parametrize("setting, value", [("threads", 2), ("cflags", ("-O1", "-fPIC", "-shared")),
                                            ("use_libmvec", False), ("fallback_random", False)])
def test_key_changes_with_config(monkeypatch, setting, value):
    x = ember.randn(3, 4)
    base = key(f, x)
    monkeypatch.setattr(config, setting, value)
    assert key(f, x) != base


def test_a_graph_decoded_from_the_aot_cache_has_the_traced_graphs_key_without_generating_code():
    # the warm start's case: the AOT cache hands over the traced graph as data; its key must be the
    # cold process's (the graph cache finds the wrapper) and computing it generates no Python
    from ember._functorch import _aot_cache
    x = ember.randn(3, 4)
    traced = make_fx(lambda x: (x * 2).exp().sum(1, keepdim=True))(x)
    decoded = _aot_cache.decode_graph(_aot_cache.encode_graph(traced))
    assert graph_key(decoded, [x]) == graph_key(traced, [x])
    assert "_code" not in decoded.__dict__


def test_an_argument_printed_with_its_address_makes_the_graph_uncached():
    # its text would differ in every process: a key from it could never hit, so no key at all
    import operator
    from ember.fx import Graph, GraphModule
    g = Graph()
    x = g.placeholder("x")
    g.output(g.call_function(operator.getitem, (x, object())))
    assert graph_key(GraphModule({}, g, lazy_recompile=True), [ember.randn(2)]) is None


def test_arguments_that_print_alike_but_differ_in_type_give_different_keys():
    from ember.fx import Graph, GraphModule

    def gm(constant):
        g = Graph()
        x = g.placeholder("x")
        g.output(g.call_function(ember.ops.aten.mul.Tensor, (x, constant)))
        return GraphModule({}, g)
    x = ember.randn(2)
    keys = {graph_key(gm(c), [x]) for c in (2, 2.0, True, "2", (2,), [2])}
    assert len(keys) == 6
