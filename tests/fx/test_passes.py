"""ShapeProp, dead-code elimination, CSE, constant folding and the PassManager on crafted graphs.

Every pass test runs the graph before and after the pass on the same inputs (results must not
change) and checks which nodes are left; ShapeProp is compared with torch.fx's on the same graph.
"""
import operator

import numpy as np
import pytest
import torch
import torch.fx
from torch.fx.passes.shape_prop import ShapeProp as TorchShapeProp

import ember
import ember.fx
from ember.fx.passes import (PassManager, PassResult, ShapeProp, eliminate_common_subexpressions,
                             eliminate_dead_code, fold_constants)
from oracle import assert_same, make, to_ember, to_torch


def names(gm):
    return [n.name for n in gm.graph.nodes]


def module(lib, graph, **attrs):
    root = lib.nn.Module()
    for k, v in attrs.items():
        setattr(root, k, v)
    return lib.fx.GraphModule(root, graph)


# -- ShapeProp ----------------------------------------------------------------------------------
def build_shapes(lib, weight):
    root = lib.nn.Module()
    root.lin = lib.nn.Linear(3, 5)
    with lib.no_grad():
        root.lin.weight.copy_(weight)
        root.lin.bias.zero_()
    g = lib.fx.Graph()
    x = g.placeholder("x")
    h = g.call_module("lin", (x,))
    t = g.call_method("t", (h,))
    s = g.call_function(lib.sum, (t,), {"dim": 0})
    i = g.call_method("to", (s, lib.float64))
    parts = g.call_function(lib.split, (h, 2), {"dim": 1})
    first = g.call_function(operator.getitem, (parts, 0))
    g.output((i, first, t))
    return lib.fx.GraphModule(root, g)


def test_shape_prop_matches_torch():
    w, x = make((5, 3)), make((4, 3))
    gm_e, gm_t = build_shapes(ember, to_ember(w)), build_shapes(torch, to_torch(w))
    out_e = ShapeProp(gm_e).propagate(to_ember(x))
    out_t = TorchShapeProp(gm_t).propagate(to_torch(x))
    assert_same(out_e, out_t, rtol=1e-5, atol=1e-5)    # float32 sums, then cast to float64
    for ne, nt in zip(gm_e.graph.nodes, gm_t.graph.nodes):
        me, mt = ne.meta.get("tensor_meta"), nt.meta.get("tensor_meta")
        assert (me is None) == (mt is None), ne.name
        if me is None:
            continue
        flat_e = [me] if hasattr(me, "shape") else list(me)     # TensorMetadata is a tuple too
        flat_t = [mt] if hasattr(mt, "shape") else list(mt)
        for a, b in zip(flat_e, flat_t):
            assert tuple(a.shape) == tuple(b.shape), ne.name
            assert a.dtype.name == str(b.dtype).replace("torch.", ""), ne.name
            assert a.stride == b.stride, ne.name
            assert a.requires_grad == b.requires_grad, ne.name
            assert a.memory_format == (str(b.memory_format).replace("torch.", "") if b.memory_format else None)
            assert a.is_quantized is False and a.qparams == {}
        assert ne.meta["type"].__name__ == nt.meta["type"].__name__.replace("Size", "Size")


def test_shape_prop_annotations_in_print_readable_match_torch():
    w, x = make((5, 3)), make((4, 3))
    gm_e, gm_t = build_shapes(ember, to_ember(w)), build_shapes(torch, to_torch(w))
    ShapeProp(gm_e).propagate(to_ember(x))
    TorchShapeProp(gm_t).propagate(to_torch(x))
    expected = gm_t.print_readable(print_output=False).replace("torch.functional.", "torch.")
    # trailing whitespace is print_readable's business (tests/fx/test_graph_module.py), not ShapeProp's
    assert gm_e.print_readable(print_output=False).rstrip() == expected.replace("torch.", "ember.").rstrip()


def test_shape_prop_sets_meta_val_as_meta_tensors():
    w, x = make((5, 3)), make((4, 3))
    gm = build_shapes(ember, to_ember(w))
    ShapeProp(gm).propagate(to_ember(x))
    t = next(n for n in gm.graph.nodes if n.name == "t")
    val = t.meta["val"]
    assert val.device.type == "meta"
    assert tuple(val.shape) == (5, 4) and val.stride() == (1, 5) and val.dtype == ember.float32
    split = next(n for n in gm.graph.nodes if n.name == "split")
    assert all(v.device.type == "meta" for v in split.meta["val"])


def test_shape_prop_with_meta_inputs_computes_no_data_and_leaves_module_alone():
    w, x = make((5, 3)), make((4, 3))
    gm_real, gm_meta = build_shapes(ember, to_ember(w)), build_shapes(ember, to_ember(w))
    ShapeProp(gm_real).propagate(to_ember(x))
    out = ShapeProp(gm_meta).propagate(ember.empty(4, 3, device="meta"))
    assert out[0].device.type == "meta"
    assert gm_meta.lin.weight.device.type == "cpu"
    for a, b in zip(gm_real.graph.nodes, gm_meta.graph.nodes):
        assert a.meta.get("tensor_meta") == b.meta.get("tensor_meta")


def test_shape_prop_memory_format_channels_last():
    x = make((2, 3, 4, 5))
    metas = []
    for lib, conv in ((ember, to_ember), (torch, to_torch)):
        g = lib.fx.Graph()
        p = g.placeholder("x")
        g.output(g.call_method("permute", (p, 0, 3, 1, 2)))
        gm = module(lib, g)
        (ShapeProp if lib is ember else TorchShapeProp)(gm).propagate(conv(x).permute(0, 2, 3, 1))
        metas.append([n.meta["tensor_meta"] for n in gm.graph.nodes])
    for a, b in zip(*metas):
        assert a.stride == b.stride
        assert a.memory_format == (str(b.memory_format).replace("torch.", "") if b.memory_format else None)


# -- dead-code elimination ------------------------------------------------------------------------
_effects = []


def _log_effect(x):
    _effects.append(x)
    return x


ember.fx.node.has_side_effect(_log_effect)


def build_dce(lib):
    g = lib.fx.Graph()
    x = g.placeholder("x")
    unused = g.placeholder("unused")
    dead1 = g.call_function(lib.sin, (x,))
    g.call_method("cos", (dead1,))                      # dead chain: sin -> cos
    g.call_method("add_", (x, 1))                       # in-place: kept
    g.call_function(lib.rand, ((2,),))                  # random: kept (advances the RNG)
    live = g.call_function(operator.mul, (x, 2))
    g.output(live)
    return g, unused


def test_dce_removes_dead_chains_keeps_inputs_inplace_and_random():
    g, _ = build_dce(ember)
    gm = module(ember, g)
    x0 = make((3,))
    before_in, after_in = to_ember(x0.copy()), to_ember(x0.copy())   # from_numpy shares memory
    ember.manual_seed(0)
    before = gm(before_in, None)
    rng_before = ember.rand(1)
    result = eliminate_dead_code(gm)
    assert isinstance(result, PassResult) and result.modified and result.graph_module is gm
    assert names(gm) == ["x", "unused", "add_", "rand", "mul", "output"]
    ember.manual_seed(0)
    assert_same(gm(after_in, None), to_torch(before.numpy()))
    assert_same(after_in, to_torch(before_in.numpy()))          # the in-place add still happened
    assert_same(ember.rand(1), to_torch(rng_before.numpy()))    # the RNG advanced the same way
    assert eliminate_dead_code(gm).modified is False


def test_dce_agrees_with_torch_on_function_nodes():
    def build(lib):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        a = g.call_function(lib.sin, (x,))
        g.call_function(lib.cos, (a,))
        g.call_function(lib.randn, ((2,),))
        g.output(g.call_function(lib.relu, (x,)))
        return module(lib, g)
    gm_e, gm_t = build(ember), build(torch)
    eliminate_dead_code(gm_e)
    gm_t.graph.eliminate_dead_code()
    assert names(gm_e) == names(gm_t)


def test_dce_keeps_registered_side_effects_mutating_ops_and_outputs():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    g.call_function(_log_effect, (x,))
    g.call_function(ember.ops.aten.add_.Tensor, (x, x))         # schema writes to self
    g.call_function(ember.ops.aten.add.Tensor, (x, x))          # pure: goes
    out = g.call_function(operator.setitem, (x, 0, 5.0))        # setitem: kept
    g.call_function(ember.ops.aten.mul.out, (x, x), {"out": x}) # out=: kept
    g.output(None)
    gm = module(ember, g)
    eliminate_dead_code(gm)
    assert names(gm) == ["x", "_log_effect", "add__tensor", "setitem", "mul_out", "output"]   # torch's names
    assert out in gm.graph.nodes
    _effects.clear()
    gm(ember.ones(2))
    assert len(_effects) == 1


# -- common-subexpression elimination --------------------------------------------------------------
def test_cse_merges_repeated_pure_work_and_keeps_results():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    a = g.call_method("sin", (x,))
    b = g.call_method("sin", (x,))
    c = g.call_function(operator.add, (a, 1))
    d = g.call_function(operator.add, (b, 1))       # same as c once b is merged into a
    e = g.call_function(operator.add, (b, 1.0))     # 1.0 is not 1: not merged
    f = g.call_function(ember.sum, (x,), {"dim": 0})
    h = g.call_function(ember.sum, (x,), {"dim": 0})
    cd = g.call_function(operator.mul, (c, d))
    fh = g.call_function(operator.sub, (f, h))
    g.output((cd, e, fh))
    gm = module(ember, g)
    x0 = to_ember(make((3, 2)))
    before = gm(x0)
    assert eliminate_common_subexpressions(gm).modified
    assert names(gm) == ["x", "sin", "add", "add_2", "sum_1", "mul", "sub", "output"]
    for a_, b_ in zip(gm(x0), before):
        assert_same(a_, to_torch(b_.numpy()))
    assert eliminate_common_subexpressions(gm).modified is False


def test_cse_never_makes_two_outputs_one_object():
    """Eager returns two tensors: the caller may write one without changing the other."""
    g = ember.fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(operator.add, (x, 1))
    b = g.call_function(operator.add, (x, 1))
    g.output((a, b))
    gm = module(ember, g)
    assert eliminate_common_subexpressions(gm).modified is False
    p, q = gm(ember.zeros(2))
    p.add_(5)
    assert q.tolist() == [1.0, 1.0]


def test_cse_never_merges_a_value_that_is_written_later():
    """b = x + 1 merged into a = x + 1 would make b.add_(1) change a too."""
    def build(lib):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        a = g.call_function(operator.add, (x, 1))
        b = g.call_function(operator.add, (x, 1))
        g.call_method("add_", (b, 1))
        g.output(g.call_function(operator.mul, (a, b)))
        return module(lib, g)
    gm = build(ember)
    eliminate_common_subexpressions(gm)
    assert_same(gm(ember.zeros(2)), build(torch)(torch.zeros(2)))


@pytest.mark.parametrize("make_random", [
    lambda g, x: g.call_function(ember.rand, ((3,),)),
    lambda g, x: g.call_function(ember.randn_like, (x,)),
    lambda g, x: g.call_function(ember.nn.functional.dropout, (x,), {"p": 0.5, "training": True}),
    lambda g, x: g.call_function(ember.bernoulli, (x,)),
    lambda g, x: g.call_function(ember.ops.aten.rand.generator, ((3,),), {"generator": None}),
    lambda g, x: g.call_function(ember.ops.aten.randint.default, (5, (3,))),
    lambda g, x: g.call_method("uniform_", (x,)),
], ids=["rand", "randn_like", "dropout", "bernoulli", "rand.generator", "aten.randint", "uniform_"])
def test_cse_never_merges_random_ops(make_random):
    g = ember.fx.Graph()
    x = g.placeholder("x")
    a, b = make_random(g, x), make_random(g, x)
    g.output((a, b))
    gm = module(ember, g)
    assert eliminate_common_subexpressions(gm).modified is False
    assert names(gm) == ["x", a.name, b.name, "output"]


def test_cse_does_not_merge_across_a_write_to_the_input():
    def build(lib):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        a = g.call_function(operator.add, (x, 1))
        g.call_method("mul_", (x, 2))
        b = g.call_function(operator.add, (x, 1))
        c = g.call_function(operator.add, (x, 1))       # same epoch as b: merged
        g.output((a, g.call_function(operator.mul, (b, c))))
        return module(lib, g)
    gm = build(ember)
    eliminate_common_subexpressions(gm)
    assert names(gm) == ["x", "add", "mul_", "add_1", "mul", "output"]
    assert_same(gm(ember.ones(2)), build(torch)(torch.ones(2)))


def test_cse_inside_a_view_written_in_place():
    """y = x.view(-1) written in place changes x: x + 1 before and after are different values."""
    def build(lib):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        a = g.call_function(operator.add, (x, 1))
        v = g.call_method("view", (x, -1))
        g.call_method("mul_", (v, 3))
        b = g.call_function(operator.add, (x, 1))
        g.output(g.call_function(operator.sub, (b, a)))
        return module(lib, g)
    gm = build(ember)
    eliminate_common_subexpressions(gm)
    assert_same(gm(ember.ones(2, 2)), build(torch)(torch.ones(2, 2)))


def test_cse_never_merges_inplace_ops_or_modules():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    g.call_method("add_", (x, 1))
    g.call_method("add_", (x, 1))
    m1 = g.call_module("lin", (x,))
    m2 = g.call_module("lin", (x,))
    g.output((m1, m2))
    gm = module(ember, g, lin=ember.nn.Linear(2, 2))
    assert eliminate_common_subexpressions(gm).modified is False
    x0 = ember.zeros(2)
    gm(x0)
    assert x0.tolist() == [2.0, 2.0]


# -- constant folding ---------------------------------------------------------------------------
def build_fold(lib, w):
    g = lib.fx.Graph()
    x = g.placeholder("x")
    wt = g.get_attr("w")
    t = g.call_method("t", (wt,))
    twice = g.call_function(operator.mul, (t, 2))
    n = g.call_method("size", (wt, 0))                  # a Python int: inlined as a literal
    ones = g.call_function(lib.ones, ((n,),))           # no inputs except constants: folded
    r = g.call_function(lib.rand, ((n,),))              # random: never folded
    xr = g.call_function(operator.add, (x, ones))       # reads the input: never folded
    out = g.call_function(operator.matmul, (xr, twice))
    g.output((out, r))
    return module(lib, g, w=w)


def test_const_fold_folds_attribute_chains_not_inputs_or_random():
    w, x = make((3, 3)), make((2, 3))
    gm = build_fold(ember, to_ember(w))
    ember.manual_seed(0)
    before = gm(to_ember(x))
    result = fold_constants(gm)
    assert result.modified
    assert names(gm) == ["x", "_folded_constant_0", "_folded_constant_1", "rand", "add", "matmul", "output"]
    rand = next(n for n in gm.graph.nodes if n.name == "rand")
    assert rand.args == ((3,),)                         # size() folded into a literal
    assert_same(gm._folded_constant_0, to_torch(w).t() * 2)
    ember.manual_seed(0)
    after = gm(to_ember(x))
    assert_same(after[0], to_torch(before[0].numpy()))
    assert_same(after[1], to_torch(before[1].numpy()))
    expected = (to_torch(x) + 1) @ (to_torch(w).t() * 2)
    assert_same(after[0], expected)
    assert fold_constants(gm).modified is False


def test_const_fold_leaves_attributes_that_are_written_to():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    buf = g.get_attr("buf")
    doubled = g.call_function(operator.mul, (buf, 2))
    g.call_method("add_", (buf, 1))
    g.output(g.call_function(operator.add, (x, doubled)))
    gm = module(ember, g, buf=ember.zeros(2))
    assert fold_constants(gm).modified is False
    assert gm(ember.zeros(2)).tolist() == [0.0, 0.0]
    assert gm(ember.zeros(2)).tolist() == [2.0, 2.0]    # buf changed: folding would be wrong


def test_const_fold_never_touches_placeholder_only_graphs():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    g.output(g.call_method("exp", (g.call_method("sin", (x,)),)))
    gm = module(ember, g)
    assert fold_constants(gm).modified is False
    assert names(gm) == ["x", "sin", "exp", "output"]


# -- PassManager --------------------------------------------------------------------------------
def _dup_graph():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    a = g.call_method("sin", (x,))
    b = g.call_method("sin", (x,))
    g.call_method("cos", (x,))
    g.output(g.call_function(operator.add, (a, b)))
    return module(ember, g)


def test_pass_manager_reports_which_passes_changed_and_logs_each():
    gm = _dup_graph()
    logs = []
    pm = PassManager([fold_constants, eliminate_common_subexpressions, eliminate_dead_code], log=logs.append)
    result = pm(gm)
    assert result.modified and result.changed_passes == ["eliminate_common_subexpressions", "eliminate_dead_code"]
    assert names(gm) == ["x", "sin", "add", "output"]
    assert len(logs) == 3
    assert logs[0].startswith("[pass fold_constants] left the graph unchanged\ngraph():")
    assert logs[1].startswith("[pass eliminate_common_subexpressions] changed the graph")
    assert str(gm.graph) in logs[2]
    assert "sin_1" not in gm.code and "cos" not in gm.code     # recompiled


def test_pass_manager_accepts_plain_callables_and_detects_change():
    gm = _dup_graph()

    def drop_cos(gm):
        for n in list(gm.graph.nodes):
            if n.op == "call_method" and n.target == "cos":
                gm.graph.erase_node(n)

    def no_op(gm):
        return gm
    result = PassManager([no_op, drop_cos])(gm)
    assert result.changed_passes == ["drop_cos"]


def test_pass_manager_lints_after_each_pass():
    gm = _dup_graph()

    def breaks_graph(gm):
        sin = next(n for n in gm.graph.nodes if n.name == "sin")
        out = next(n for n in gm.graph.nodes if n.op == "output")
        sin.args = (out,)                                   # uses a node defined after it
        return PassResult(gm, True)
    with pytest.raises(RuntimeError, match="after pass breaks_graph"):
        PassManager([breaks_graph], run_checks_after_each_pass=True)(gm)


def test_pass_manager_logs_to_the_passes_artifact(capsys):
    from ember import _logging
    _logging.set_logs(passes=True)
    try:
        PassManager([eliminate_dead_code])(_dup_graph())
    finally:
        _logging.set_logs()
    assert "[pass eliminate_dead_code] changed the graph\ngraph():" in capsys.readouterr().err
    PassManager([eliminate_dead_code])(_dup_graph())
    assert "[pass" not in capsys.readouterr().err          # off again
