"""ember.fx Graph/Node: the same graphs built with torch.fx and ember.fx print and behave the same."""
import inspect
import math
import operator

import pytest
import torch
import torch.fx

import ember
import ember.fx
from ember.fx.graph import format_simple_table
from ember.fx.node import has_side_effect, map_aggregate, map_arg

STACK = '  File "/tmp/prog.py", line 9, in fn\n    return a + b\n'


def build_rich(lib, fx):
    """One graph that uses every opcode and most printing cases, built with lib = torch or ember."""
    g = fx.Graph()
    x = g.placeholder("x")
    y = g.placeholder("y", default_value=3)
    a = g.call_function(operator.add, (x, 1))
    a.meta["stack_trace"] = STACK
    s = g.call_function(lib.sum, (a,), {"dim": 1})
    t = g.call_function(lib.ops.aten.add.Tensor, (s, y), {"alpha": 2})
    gi = g.call_function(operator.getitem, (t, 0))
    gi2 = g.call_function(operator.getitem, (t, slice(None, 2)))
    v = g.call_method("view", (gi, -1))
    n = g.call_function(operator.neg, (v,))
    ab = g.call_function(abs, (n,))
    sq = g.call_function(math.sqrt, (1.0,))
    ga = g.call_function(getattr, (x, "shape"))
    w = g.get_attr("layers.0.weight")
    m = g.call_module("layers.0", (w,))
    r = g.call_function(lib.nn.functional.relu, (m,), {"inplace": False})
    sg = g.call_function(lib.sigmoid, (r,))
    mm = g.call_function(operator.matmul, (sg, sg))
    g.output((ab, {"a": mm, "b": [gi2, sq, ga]}))
    return g


def as_ember(text: str) -> str:
    return text.replace("torch.", "ember.")


def test_str_matches_torch():
    assert str(build_rich(ember, ember.fx)) == as_ember(str(build_rich(torch, torch.fx)))


def test_str_small_example_form():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    g.output(g.call_function(operator.add, (x, 1)))
    assert str(g) == ("graph():\n    %x : [num_users=1] = placeholder[target=x]\n"
                      "    %add : [num_users=1] = call_function[target=operator.add](args = (%x, 1), kwargs = {})\n"
                      "    return add")


def test_python_code_matches_torch():
    src = build_rich(ember, ember.fx).python_code("self").src
    assert src == as_ember(build_rich(torch, torch.fx).python_code("self").src)
    compile(src, "<test>", "exec")  # valid Python


def test_verbose_code_has_stack_trace_comment_like_torch():
    ours = build_rich(ember, ember.fx).python_code("self", verbose=True).src
    theirs = build_rich(torch, torch.fx).python_code("self", verbose=True).src
    assert ours == as_ember(theirs)
    assert "# File: /tmp/prog.py:9 in fn, code: return a + b" in ours


def test_names_match_torch():
    def names(lib, fx):
        g = fx.Graph()
        x = g.placeholder("x")
        p = g.placeholder("add_1")
        out = [g.call_function(operator.add, (x, p)) for _ in range(3)]
        out += [g.call_function(lib.sum, (x,)), g.call_function(lib.sum, (x,)), g.call_function(abs, (x,)),
                g.call_module("layers.0", (x,)), g.call_method("__getitem__", (x, 0)),
                g.call_function(lib.ops.aten.relu.default, (x,)), g.call_function(lib.sigmoid, (x,)),
                g.create_node("call_function", operator.mul, (x, x), name="my.name"),
                g.create_node("call_function", operator.mul, (x, x), name="2x"),
                g.call_function(operator.add, (x, p))]
        return [n.name for n in g.nodes]
    assert names(ember, ember.fx) == names(torch, torch.fx)


def test_inserting_before_after_order_like_torch():
    def order(fx):
        g = fx.Graph()
        x = g.placeholder("x")
        out = g.output(x)
        with g.inserting_after(x):
            a = g.call_function(operator.add, (x, 1))
            g.call_function(operator.add, (a, 1))
        with g.inserting_before(out):
            g.call_function(operator.mul, (x, 2))
        with g.inserting_before(None):
            g.placeholder("first")
        with g.inserting_after(None):
            g.call_function(operator.sub, (x, 2))
        return [n.name for n in g.nodes]
    assert order(ember.fx) == order(torch.fx)


def test_users_follow_args_and_replace_all_uses_with():
    g = ember.fx.Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    a = g.call_function(operator.add, (x, [x, {"k": y}]))
    assert list(x.users) == [a] and list(y.users) == [a]
    assert a.all_input_nodes == [x, y]
    a.args = (y, 1)
    assert x.users == {} and list(y.users) == [a]
    a.update_kwarg("alpha", x)
    assert list(x.users) == [a] and a.kwargs == {"alpha": x}
    a.update_arg(1, x)
    assert a.args == (y, x)
    b = g.call_function(operator.mul, (y, y))
    changed = y.replace_all_uses_with(x)
    assert set(changed) == {a, b} and y.users == {} and b.args == (x, x)
    # delete_user_cb keeps a user on the old node
    z = g.placeholder("z")
    x.replace_all_uses_with(z, delete_user_cb=lambda u: u is b)
    assert b.args == (z, z) and a.args == (x, x)
    a.replace_input_with(x, z)
    assert a.args == (z, z) and a.kwargs == {"alpha": z}
    x.meta["val"] = 1
    w = g.placeholder("w")
    z.meta["val"] = 2
    z.replace_all_uses_with(w, propagate_meta=True)
    assert w.meta == {"val": 2}


def test_erase_node_with_users_raises_and_reverse_erase_is_safe():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(operator.add, (x, 1))
    b = g.call_function(operator.mul, (a, 2))
    with pytest.raises(RuntimeError, match="add"):
        g.erase_node(a)
    g.output(b)
    for n in reversed(g.nodes):
        if n.op != "placeholder" and n.op != "output":
            n.replace_all_uses_with(x)
            g.erase_node(n)
    assert [n.name for n in g.nodes] == ["x", "output"]
    assert len(g.nodes) == 2 and x.users == {g.find_nodes(op="output")[0]: None}


def test_prev_next_prepend_append():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(operator.add, (x, 1))
    b = g.call_function(operator.mul, (x, 2))
    assert a.prev is x and a.next is b
    a.prepend(b)
    assert [n.name for n in g.nodes] == ["x", "mul", "add"]
    b.append(a)  # already there: no change
    x.append(a)
    assert [n.name for n in g.nodes] == ["x", "add", "mul"]


def test_node_copy_graph_copy_and_deepcopy_print_the_same():
    import copy
    g = build_rich(ember, ember.fx)
    g2 = ember.fx.Graph()
    env = {}
    out = g2.graph_copy(g, env)
    g2.output(out)
    assert str(g2) == str(g)
    assert env[next(iter(g.nodes))].graph is g2
    assert str(copy.deepcopy(g)) == str(g)
    g3 = ember.fx.Graph()
    x = g3.placeholder("x")
    add = g.find_nodes(op="call_function", target=operator.add)[0]
    c = g3.node_copy(add, lambda n: x)
    assert c.args == (x, 1) and c.meta["stack_trace"] == STACK and c.graph is g3


def test_find_nodes():
    g = build_rich(ember, ember.fx)
    assert [n.name for n in g.find_nodes(op="placeholder")] == ["x", "y"]
    assert [n.name for n in g.find_nodes(op="call_function", target=operator.getitem)] == ["getitem", "getitem_1"]
    assert [n.name for n in g.find_nodes(op="call_method", target="view")] == ["view"]
    assert g.find_nodes(op="call_function", target=ember.sigmoid)[0].target == ember.sigmoid


def test_map_arg_and_map_aggregate():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    arg = (x, [1, {"a": x}], slice(x, None))
    assert map_arg(arg, lambda n: n.name) == ("x", [1, {"a": "x"}], slice("x", None))
    assert map_aggregate((1, [2, 3]), lambda v: v * 10) == (10, [20, 30])
    with pytest.raises(TypeError, match="map_arg"):
        map_arg(arg, 3)


# -- lint ----------------------------------------------------------------------------------------
def _small():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(operator.add, (x, 1))
    out = g.output(a)
    return g, x, a, out


def test_lint_accepts_good_graphs():
    _small()[0].lint()
    build_rich(ember, ember.fx).lint()


def test_lint_use_before_definition():
    g, x, a, out = _small()
    b = g.call_function(operator.mul, (a, 2))
    a.prepend(b)  # b now reads a before a is defined
    with pytest.raises(RuntimeError, match="mul.*uses add before it is defined"):
        g.lint()


def test_lint_node_from_another_graph():
    g, x, a, out = _small()
    other, ox, _, _ = _small()
    a.args = (ox, 1)
    with pytest.raises(RuntimeError, match="add.*another graph"):
        g.lint()


def test_lint_dangling_user():
    g, x, a, out = _small()
    ghost = ember.fx.Graph().placeholder("ghost")
    x.users[ghost] = None
    with pytest.raises(RuntimeError, match="node x .*dangling user ghost"):
        g.lint()


def test_lint_duplicate_names_bad_opcode_two_outputs():
    g, x, a, out = _small()
    a.name = "x"
    with pytest.raises(RuntimeError, match="duplicate name 'x'"):
        g.lint()
    g, x, a, out = _small()
    a.op = "call_sideways"
    with pytest.raises(RuntimeError, match="node add .*op must be one of"):
        g.lint()
    g, x, a, out = _small()
    with g.inserting_before(out):
        g.output(x)
    with pytest.raises(RuntimeError, match="one output node"):
        g.lint()


def test_lint_missing_attribute_on_owning_module():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    w = g.get_attr("lin.weight")
    g.output(g.call_module("lin", (x,)))
    g.output  # noqa: B018
    root = ember.nn.Module()
    root.lin = ember.nn.Linear(2, 2)
    gm = ember.fx.GraphModule(root, g)
    gm.graph.lint()
    w.target = "lin.bogus"
    with pytest.raises(RuntimeError, match="lin_weight .*lin.bogus"):
        gm.graph.lint()
    w.target = "lin.weight"
    g.find_nodes(op="call_module")[0].target = "nope"
    with pytest.raises(RuntimeError, match="node lin .*nope"):
        gm.graph.lint()


def test_bad_inputs_raise():
    g = ember.fx.Graph()
    with pytest.raises(ValueError, match="op must be one of"):
        g.create_node("jump", "x")
    with pytest.raises(TypeError, match="args must be a tuple"):
        g.create_node("call_function", operator.add, [1, 2])
    with pytest.raises(ValueError, match="callable"):
        g.call_function("add", (1, 2))


# -- dead code ---------------------------------------------------------------------------------
@has_side_effect
def _log(v):
    return v


def test_dce_keeps_impure_nodes():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    unused = g.placeholder("unused")
    g.call_function(operator.add, (x, 1))                       # dead
    g.call_method("relu", (x,))                                  # dead
    g.call_method("add_", (x, 1))                                # in-place: kept
    g.call_function(ember.ops.aten.add_.Tensor, (x, x))          # mutable schema: kept
    g.call_function(operator.setitem, (x, 0, 1.0))               # side effect: kept
    g.call_function(_log, (x,))                                  # registered: kept
    g.call_function(ember.ops.aten.add.Tensor, (x, x))           # pure op: dead
    g.call_module("sub", (x,))                                   # modules are pure by default (torch)
    g.output(x)
    assert g.eliminate_dead_code()
    assert [n.name for n in g.nodes] == ["x", "unused", "add_", "add__tensor", "setitem", "_log", "output"]
    assert not g.eliminate_dead_code()


def test_dce_same_result_as_torch():
    def run(lib, fx):
        g = fx.Graph()
        x = g.placeholder("x")
        a = g.call_function(operator.add, (x, 1))
        b = g.call_function(operator.mul, (a, 2))
        g.call_function(lib.ops.aten.add.Tensor, (b, x))
        g.call_function(operator.setitem, (x, 0, b))
        g.output(a)
        g.eliminate_dead_code()
        return str(g)
    assert run(ember, ember.fx) == as_ember(run(torch, torch.fx))


# -- print_tabular -------------------------------------------------------------------------------
def test_print_tabular_layout(capsys):
    g = ember.fx.Graph()
    a = g.placeholder("a")
    b = g.placeholder("b")
    ab = g.call_function(abs, (a,))
    add = g.call_function(operator.add, (ab, 1))
    div = g.call_function(operator.truediv, (a, add))
    s = g.call_method("sum", (b,))
    lt = g.call_function(operator.lt, (s, 0))
    g.output((div, lt))
    g.print_tabular()
    expected = (
        "opcode         name     target                       args              kwargs\n"
        "-------------  -------  ---------------------------  ----------------  --------\n"
        "placeholder    a        a                            ()                {}\n"
        "placeholder    b        b                            ()                {}\n"
        "call_function  abs_1    <built-in function abs>      (a,)              {}\n"
        "call_function  add      <built-in function add>      (abs_1, 1)        {}\n"
        "call_function  truediv  <built-in function truediv>  (a, add)          {}\n"
        "call_method    sum_1    sum                          (b,)              {}\n"
        "call_function  lt       <built-in function lt>       (sum_1, 0)        {}\n"
        "output         output   output                       ((truediv, lt),)  {}\n")
    got = capsys.readouterr().out
    assert [line.rstrip() for line in got.splitlines()] == expected.splitlines()
    # every row is padded to the full table width, like tabulate
    assert len({len(line) for line in got.splitlines()}) == 1


def test_format_simple_table_min_padding():
    assert format_simple_table(["a", "bb"], [["xyzw", "1"]]).splitlines() == ["a     bb  ", "----  ----", "xyzw  1   "]


# -- generated code round trip ----------------------------------------------------------------
def test_generated_code_runs_like_the_graph():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    y = g.placeholder("y", default_value=2.0)
    a = g.call_function(ember.ops.aten.mul.Tensor, (x, x))
    b = g.call_function(operator.add, (a, y))
    c = g.call_method("sum", (b,), {"dim": 0})
    d = g.call_function(ember.sigmoid, (c,))
    g.output({"out": d, "pair": (a, b)})
    code = g.python_code("self")
    scope = dict(code.globals)
    exec(code.src, scope)
    xv = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    got = scope["forward"](None, xv)
    tx = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    want = torch.sigmoid((tx * tx + 2.0).sum(dim=0))
    assert got["out"].tolist() == pytest.approx(want.tolist())
    assert got["pair"][1].tolist() == (tx * tx + 2.0).tolist()


def test_generated_code_retraces_to_the_same_graph():
    symbolic_trace = pytest.importorskip("ember.fx._symbolic_trace").symbolic_trace
    g = ember.fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(operator.add, (x, 1))
    b = g.call_function(ember.sigmoid, (a,))
    c = g.call_method("neg", (b,))
    g.output(c)
    gm = ember.fx.GraphModule(ember.nn.Module(), g)
    again = symbolic_trace(gm)
    assert str(again.graph) == str(g)
    assert again.code == gm.code


def test_placeholder_default_and_empty_graph():
    g = ember.fx.Graph()
    g.placeholder("x", default_value=None)
    assert g.find_nodes(op="placeholder")[0].args == (None,)
    assert g.placeholder("z").args == ()
    tg = torch.fx.Graph()
    assert ember.fx.Graph().python_code("self").src == tg.python_code("self").src
    assert inspect.Signature.empty is not None
