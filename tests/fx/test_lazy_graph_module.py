"""GraphModule(..., lazy_recompile=True) (PyTorch's _LazyGraphModule): forward's Python is generated on
first use, and the module behaves like an eagerly compiled one; node arguments are copied and their
nodes recorded as torch.fx does (one walk builds both)."""
import collections
import operator

import torch
import torch.fx

import ember
import ember.fx


def small_graph(fx):
    g = fx.Graph()
    x = g.placeholder("x")
    y = g.call_function(operator.mul, (x, 3))
    z = g.call_function(operator.add, (y, x))
    g.output(z)
    return g


def test_lazy_module_generates_code_on_first_call_and_matches_an_eager_one():
    lazy = ember.fx.GraphModule({}, small_graph(ember.fx), lazy_recompile=True)
    eager = ember.fx.GraphModule({}, small_graph(ember.fx))
    assert "_code" not in lazy.__dict__
    x = ember.randn(4)
    assert ember.equal(lazy(x), eager(x))
    assert lazy.code == eager.code
    assert ember.equal(lazy(x), x * 3 + x)


def test_code_property_generates_it():
    lazy = ember.fx.GraphModule({}, small_graph(ember.fx), lazy_recompile=True)
    assert "def forward(self, x)" in lazy.code


def test_a_bound_forward_taken_before_the_first_call_keeps_working_without_regenerating():
    lazy = ember.fx.GraphModule({}, small_graph(ember.fx), lazy_recompile=True)
    bound = lazy.forward
    x = ember.randn(3)
    first = bound(x)
    generated = type(lazy).forward
    for _ in range(3):
        assert ember.equal(bound(x), first)
    assert type(lazy).forward is generated


def test_a_new_graph_makes_the_code_stale():
    lazy = ember.fx.GraphModule({}, small_graph(ember.fx), lazy_recompile=True)
    x = ember.randn(3)
    lazy(x)
    g = ember.fx.Graph()
    a = g.placeholder("x")
    g.output(g.call_function(operator.neg, (a,)))
    lazy.graph = g
    assert "_code" not in lazy.__dict__
    assert ember.equal(lazy(x), -x)
    assert "neg" in lazy.code


def test_a_lazy_module_owns_its_attributes_like_an_eager_one():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    w = g.get_attr("w")
    g.output(g.call_function(operator.add, (x, w)))
    w_value = ember.ones(2)
    lazy = ember.fx.GraphModule({"w": w_value}, g, lazy_recompile=True)
    assert lazy.w is w_value
    assert ember.equal(lazy(ember.zeros(2)), w_value)


Pair = collections.namedtuple("Pair", "a b")


def nested_graph(fx):
    g = fx.Graph()
    x = g.placeholder("x")
    y = g.placeholder("y")
    args_list = [x, (y, 2), {"k": x, "j": [y]}]
    n = g.call_function(operator.add, (args_list, slice(x, y, None), Pair(y, x)), {"alpha": [y, x]})
    g.output(n)
    return g, n, args_list


def test_node_arguments_are_copied_and_their_nodes_recorded_as_torch_fx_does():
    eg, en, elist = nested_graph(ember.fx)
    tg, tn, tlist = nested_graph(torch.fx)
    assert [m.name for m in en.all_input_nodes] == [m.name for m in tn.all_input_nodes]
    for name in ("x", "y"):
        e_in = next(m for m in eg.nodes if m.name == name)
        t_in = next(m for m in tg.nodes if m.name == name)
        assert [u.name for u in e_in.users] == [u.name for u in t_in.users]
    # containers are fresh: editing the list handed in does not change the node
    elist.append(1)
    tlist.append(1)
    assert len(en.args[0]) == len(tn.args[0]) == 3
    assert type(en.args[2]).__name__ == type(tn.args[2]).__name__ == "Pair"
    assert isinstance(en.args[1], slice) and en.args[1].start.name == "x"


def test_changing_args_moves_the_users():
    g = ember.fx.Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    n = g.call_function(operator.add, ([x, {"k": x}],))
    n.args = ((y, 1),)
    assert n not in x.users and n in y.users
    assert n.all_input_nodes == [y]
