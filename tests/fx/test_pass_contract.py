"""The contract of the shared pass set (ember/fx/passes/__init__.py) on GraphModules and on script
graphs with blocks: in place, PassResult, nothing random / mutating folded or merged, grad-mode
switches as barriers, values leaving the graph never aliased.

Every rewrite is checked by running the program before and after (eager ember, torch where the
same graph can be built with torch.fx, ember.jit.ir.evaluate for script graphs).
"""
import builtins
import operator

import numpy as np
import pytest
import torch

import ember
import ember.fx
from ember.autograd.grad_mode import _set_grad_enabled
from ember.fx.passes import (PassResult, eliminate_common_subexpressions, eliminate_dead_code, fold_constants)
from ember.jit import ir
from ember.jit.ir import prim
from ember.jit.ir.evaluate import evaluate
from ember.jit.ir.types import BoolType, IntType, TensorType
from oracle import assert_same

T = TensorType()
PASSES = (eliminate_dead_code, eliminate_common_subexpressions, fold_constants)


def module(lib, graph, **attrs):
    root = lib.nn.Module()
    for k, v in attrs.items():
        setattr(root, k, v)
    return lib.fx.GraphModule(root, graph)


def names(g):
    return [n.name for n in g.nodes]


@pytest.mark.parametrize("run", PASSES)
def test_every_pass_edits_its_argument_and_says_whether_it_changed(run):
    g = ember.fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(ember.sin, (x,))
    g.call_function(ember.cos, (x,))                                # dead
    g.output(g.call_function(operator.add, (a, g.call_function(ember.sin, (x,)))))
    gm = module(ember, g)
    code = gm.code
    result = run(gm)
    assert isinstance(result, PassResult) and result.graph_module is gm
    assert result.modified == (gm.code != code)                     # recompiled when changed
    assert run(gm).modified is False                                # a fixed point
    bare = ember.fx.Graph()
    y = bare.placeholder("y")
    bare.output(bare.call_function(ember.exp, (y,)))
    assert run(bare).graph_module is bare and run(bare).modified is False


def test_graph_eliminate_dead_code_is_the_pass_and_sees_blocks():
    g = ir.new_graph()
    x = g.placeholder("x", type_expr=T)
    cond = ir.call(g, builtins.bool, (ir.call(g, ember.sum, (x,), type_=T),), type_=BoolType())
    node, (y,) = ir.add_if(g, cond, [T])
    then_b, else_b = node.blocks
    ir.call(then_b, ember.tanh, (x,), type_=T)                      # dead inside a block
    ir.set_block_returns(then_b, [ir.call(then_b, ember.relu, (x,), type_=T)])
    ir.set_block_returns(else_b, [x])
    g.output(y)
    assert g.eliminate_dead_code() is True
    assert [n.target for n in then_b.nodes if n.op == "call_function"] == [ember.relu]


def test_node_is_impure_asks_the_one_oracle():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    rand = g.call_function(ember.rand, ((2,),))
    inplace = g.call_method("add_", (x, 1))
    pure = g.call_function(ember.add, (x, x))
    out = g.call_function(ember.add, (x, x), {"out": x})
    assert rand.is_impure() and not rand.is_impure(impure_random=False)
    assert inplace.is_impure() and out.is_impure() and not pure.is_impure()


# -- dead code -----------------------------------------------------------------------------------
def test_dce_keeps_modules_that_write_draw_or_update_buffers():
    def build(train):
        root = ember.nn.Module()
        root.drop, root.bn, root.lin = ember.nn.Dropout(0.5), ember.nn.BatchNorm1d(3), ember.nn.Linear(3, 3)
        root.relu = ember.nn.ReLU(inplace=True)
        root.train(train)
        g = ember.fx.Graph()
        x = g.placeholder("x")
        for name in ("drop", "bn", "lin", "relu"):
            g.call_module(name, (x,))
        g.output(x)
        return ember.fx.GraphModule(root, g)
    training, evaluating = build(True), build(False)
    eliminate_dead_code(training)
    eliminate_dead_code(evaluating)
    assert names(training.graph) == ["x", "drop", "bn", "relu", "output"]
    assert names(evaluating.graph) == ["x", "relu", "output"]       # ReLU(inplace=True) writes x
    x = ember.tensor([[-1.0, 2.0, 3.0], [4.0, -5.0, 6.0]])
    mean = training.bn.running_mean.clone()
    training(x)
    assert not ember.equal(training.bn.running_mean, mean)         # the statistics were still updated
    assert x.min().item() == 0.0                                     # and the input was still written


def test_dce_keeps_lookups_that_raise_in_eager():
    g = ember.fx.Graph()
    xs = g.placeholder("xs")
    g.call_function(operator.getitem, (xs, 5))                       # IndexError in eager
    g.output(g.call_function(len, (xs,)))
    gm = module(ember, g)
    eliminate_dead_code(gm)
    with pytest.raises(IndexError):
        gm([1, 2])


def test_dce_drops_an_unused_tuple_element_read():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    pair = g.call_function(ember.max, (x, 0))
    pair.meta["val"] = (ember.empty(2, device="meta"), ember.empty(2, device="meta", dtype=ember.int64))
    g.call_function(operator.getitem, (pair, 1))
    g.output(g.call_function(operator.getitem, (pair, 0)))
    gm = module(ember, g)
    assert eliminate_dead_code(gm).modified
    assert names(gm.graph) == ["x", "max_1", "getitem_1", "output"]


# -- common subexpressions ----------------------------------------------------------------------
def _grad_switch_graph(lib, set_grad):
    """a = x * 2; set_grad(False); b = x * 2; b2 = x * 2; set_grad(True); c = x * 2"""
    g = lib.fx.Graph()
    x = g.placeholder("x")
    products = [g.call_function(operator.mul, (x, 2))]
    g.call_function(set_grad, (False,))
    products += [g.call_function(operator.mul, (x, 2)), g.call_function(operator.mul, (x, 2))]
    g.call_function(set_grad, (True,))
    products.append(g.call_function(operator.mul, (x, 2)))
    total = products[0]
    for p in products[1:]:
        total = g.call_function(operator.add, (total, p))
    g.output((total, products[1]))
    return module(lib, g)


def test_cse_stops_at_grad_mode_switches_like_the_ones_ember_compile_records():
    gm = _grad_switch_graph(ember, _set_grad_enabled)
    eliminate_common_subexpressions(gm)
    assert [n.name for n in gm.graph.nodes if n.target is operator.mul] == ["mul", "mul_1", "mul_3"]
    x = ember.ones(2, requires_grad=True)
    total, inside = gm(x)
    expected_total, expected_inside = _grad_switch_graph(torch, torch._C._set_grad_enabled)(
        torch.ones(2, requires_grad=True))
    assert_same(total.detach(), expected_total.detach())
    assert inside.requires_grad == expected_inside.requires_grad is False
    assert total.requires_grad and ember.is_grad_enabled()


def test_cse_in_a_loop_body_that_writes_does_not_reuse_values_from_before_the_loop():
    """a = x + 1; for i in range(3): b = x + 1; x.add_(b)  -- b changes every trip."""
    def build():
        g = ir.new_graph()
        x = g.placeholder("x", type_expr=T)
        a = ir.call(g, operator.add, (x, 1), type_=T)
        loop, _ = ir.add_loop(g, ir.constant(g, 3), ir.constant(g, True), [], [])
        body = loop.blocks[0]
        b = ir.call(body, operator.add, (x, 1), type_=T)
        ir.call(body, "add_", (x, b), type_=T)
        ir.set_block_returns(body, [ir.constant(body, True)])
        g.output(ir.call(g, operator.mul, (a, x), type_=T))
        return g
    g = build()
    eliminate_common_subexpressions(g)
    assert len([n for n in ir.walk(g) if n.target is operator.add]) == 2
    x0 = np.arange(3.0, dtype=np.float32)
    after = evaluate(g, [ember.from_numpy(x0.copy())]).numpy()
    before = evaluate(build(), [ember.from_numpy(x0.copy())]).numpy()
    np.testing.assert_array_equal(after, before)
    x_torch = torch.arange(3.0)          # the same program in torch, eagerly
    a = x_torch + 1
    for _ in range(3):
        x_torch.add_(x_torch + 1)
    np.testing.assert_array_equal(after, (a * x_torch).numpy())


# -- constant folding ---------------------------------------------------------------------------
def test_fold_never_shares_a_tensor_that_is_written_or_returned():
    def build(lib):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        acc = g.call_function(lib.zeros, ((2,),))
        g.call_method("add_", (acc, x))                              # the constant would grow every call
        ones = g.call_function(lib.ones, ((2,),))                    # returned: the caller owns it
        g.output((acc, ones))
        return module(lib, g)
    gm = build(ember)
    assert fold_constants(gm).modified is False
    first = gm(ember.ones(2))
    first[1].mul_(7)
    second = gm(ember.ones(2))
    expected = build(torch)(torch.ones(2))
    assert_same(second[0], expected[0])
    assert_same(second[1], expected[1])


def test_fold_leaves_parameters_that_require_grad():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    w = g.get_attr("w")
    g.output(g.call_function(operator.matmul, (x, g.call_method("t", (w,)))))
    gm = module(ember, g, w=ember.nn.Parameter(ember.ones(2, 2)))
    assert fold_constants(gm).modified is False
    gm(ember.ones(1, 2)).sum().backward()
    assert gm.w.grad is not None


def test_fold_on_a_script_graph_makes_prim_constants_and_folds_control_flow():
    g = ir.new_graph()
    x = g.placeholder("x", type_expr=T)
    two = ir.constant(g, 2)
    four = ir.call(g, operator.mul, (two, two), type_=IntType())
    cond = ir.call(g, operator.gt, (four, 3), type_=BoolType())
    node, (y,) = ir.add_if(g, cond, [T])
    ir.set_block_returns(node.blocks[0], [ir.call(node.blocks[0], operator.mul, (x, four), type_=T)])
    ir.set_block_returns(node.blocks[1], [x])
    g.output(y)
    assert fold_constants(g).modified
    assert not any(n.target is prim.If for n in ir.walk(g))
    (mul,) = [n for n in g.nodes if n.target is operator.mul]
    assert mul.args[1].target is prim.Constant and mul.args[1].args[0] == 4 and mul.args[1].type == IntType()
    assert evaluate(g, [ember.ones(2)]).tolist() == [4.0, 4.0]
