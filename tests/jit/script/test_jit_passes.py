"""The jit graph passes (ember.jit.passes) on crafted graphs: each pass's structure afterwards,
and that ember.jit.ir.evaluate gives the same values before and after on random inputs.

(Named test_jit_passes.py: tests/fx/test_passes.py already owns the basename test_passes.)
"""
from __future__ import annotations

import builtins
import operator

import numpy as np
import pytest

import ember
from ember.fx.passes import eliminate_common_subexpressions, eliminate_dead_code, fold_constants, purity
from ember.jit import ir, passes
from ember.jit.ir import prim
from ember.jit.ir.evaluate import evaluate
from ember.jit.ir.types import BoolType, FloatType, IntType, ListType, TensorType, TupleType

T = TensorType()
F32 = TensorType(ember.float32, (2, 3), False)


def _t(rng, *shape, dtype=np.float32):
    return ember.from_numpy(rng.standard_normal(shape).astype(dtype))


def _copy(v):
    if isinstance(v, ember.Tensor):
        return v.clone()
    if isinstance(v, list):
        return [_copy(x) for x in v]
    return v


def _same(a, b):
    if isinstance(a, ember.Tensor):
        assert isinstance(b, ember.Tensor)
        assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-6)
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a == b and type(a) is type(b)


def assert_well_formed(g):
    """fx lint plus the script IR's own rules: values are defined before use (also values read
    from enclosing graphs), multi-output nodes agree with their blocks and getitems."""
    g.lint()
    _check_scopes(g, set())


def _check_scopes(graph, visible):
    visible = set(visible)
    for node in graph.nodes:
        for inp in node.all_input_nodes:
            assert inp in visible, f"{node.name} reads {inp.name} before it is defined (or out of scope)"
        for block in node.blocks:
            _check_scopes(block, visible)
        if node.target is prim.If:
            count = node.meta.get("num_outputs", 0)
            assert all(len(ir.block_returns(b)) == count for b in node.blocks), node.name
        if node.target is prim.Loop:
            count = node.meta.get("num_outputs", 0)
            body = node.blocks[0]
            assert len(node.args) == 2 + count and len(ir.block_params(body)) == 1 + count, node.name
            assert len(ir.block_returns(body)) == 1 + count, node.name
        if node.meta.get("output_of") is not None:
            owner = node.meta["output_of"]
            assert not owner._erased and node.args[0] is owner and node.args[1] < owner.meta["num_outputs"]
        visible.add(node)


def check(build, pass_fn, inputs, trials=3):
    """Run pass_fn on a fresh build(); the result is well formed and evaluates like the
    original on inputs()."""
    after = build()
    pass_fn(after)        # every pass edits the graph in place
    assert_well_formed(after)
    for _ in range(trials):
        args = inputs()
        _same(evaluate(after, [_copy(a) for a in args]), evaluate(build(), [_copy(a) for a in args]))
    return after


def nodes(g, target=None):
    return [n for n in ir.walk(g) if n.op in ("call_function", "call_method")
            and (target is None or n.target is target or n.target == target)]


def count(g, target):
    return len(nodes(g, target))


def rng_inputs(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return lambda: [_t(rng, *s) for s in shapes]


def add_if(g, cond, then_fn, else_fn, types):
    node, outs = ir.add_if(g, cond, types)
    then_b, else_b = node.blocks
    ir.set_block_returns(then_b, then_fn(then_b))
    ir.set_block_returns(else_b, else_fn(else_b))
    return node, outs


def positive(g, x):
    s = ir.call(g, ember.sum, (x,), type_=T)
    return ir.call(g, builtins.bool, (ir.call(g, operator.gt, (s, 0), type_=T),), type_=BoolType())


class Callee:
    """What prim::CallFunction's meta["callee"] holds: an object with `._graph`."""
    def __init__(self, graph):
        self._graph = graph


# ---- inline ---------------------------------------------------------------------------------
def relu_plus_one():
    g = ir.new_graph()
    a = g.placeholder("a", type_expr=T)
    r = ir.call(g, ember.relu, (a,), type_=T)
    g.output(ir.call(g, operator.add, (r, 1), type_=T))
    return g


def test_inline_call_function_in_block_and_nested():
    def outer_callee():   # calls relu_plus_one, so inlining must recurse
        g = ir.new_graph()
        a = g.placeholder("a", type_expr=T)
        c = ir.call(g, prim.CallFunction, (a,), type_=T)
        c.meta["callee"] = Callee(relu_plus_one())
        g.output(ir.call(g, ember.tanh, (c,), type_=T))
        return g

    callee = Callee(outer_callee())

    def build():
        g = ir.new_graph()
        x = g.placeholder("x", type_expr=T)

        def then(b):
            c = ir.call(b, prim.CallFunction, (x,), type_=T)
            c.meta["callee"] = callee
            return [c]
        _, (y,) = add_if(g, positive(g, x), then, lambda b: [x], [T])
        top = ir.call(g, prim.CallFunction, (y,), type_=T)
        top.meta["callee"] = callee
        g.output(top)
        return g

    after = check(build, passes.inline, rng_inputs((4,)))
    assert count(after, prim.CallFunction) == 0
    assert count(after, ember.relu) == 2 and count(after, ember.tanh) == 2
    assert count(callee._graph, prim.CallFunction) == 1   # the callee's own graph is untouched


def test_inline_call_method_and_fx_graph_callee():
    class Graphish:
        def __init__(self, g):
            self.fx_graph = g

    class Method:
        def __init__(self, g):
            self.graph = Graphish(g)

    def method_graph():   # forward(self, x): self is unused by the body
        g = ir.new_graph()
        g.placeholder("self", type_expr=ir.ModuleType("M"))
        x = g.placeholder("x", type_expr=T)
        g.output(ir.call(g, operator.mul, (x, x), type_=T))
        return g

    method = Method(method_graph())

    def build():
        g = ir.new_graph()
        m = g.placeholder("m", type_expr=ir.ModuleType("M"))
        x = g.placeholder("x", type_expr=T)
        c = ir.call(g, prim.CallMethod, (m, "forward", x), type_=T)
        c.meta["callee"] = method
        ignored = ir.call(g, prim.CallMethod, (m, "forward", c), type_=T)   # no callee: stays
        g.output(ignored)
        return g

    class M:
        def forward(self, x):
            return x + 1

    rng = np.random.default_rng(1)
    after = build()
    passes.inline(after)
    assert count(after, prim.CallMethod) == 1 and count(after, operator.mul) == 1
    x = _t(rng, 3)
    _same(evaluate(after, [M(), x]), evaluate(build(), [M(), x]))


# ---- dead code elimination ------------------------------------------------------------------
def test_dce_removes_unused_pure_nodes_and_keeps_side_effects():
    def build():
        g = ir.new_graph()
        x = g.placeholder("x", type_expr=T)
        ir.call(g, ember.tanh, (x,), type_=T)                        # dead
        ir.call(g, ember.sigmoid, (ir.call(g, ember.exp, (x,), type_=T),), type_=T)  # dead chain
        y = ir.call(g, ember.mul, (x, 2.0), type_=T)
        ir.call(g, "add_", (y, 1.0), type_=T)                        # in place: kept
        lst = ir.call(g, prim.ListConstruct, (x,), type_=ListType(T))
        ir.call(g, "append", (lst, y), type_=ir.NoneType())          # list mutation: kept
        ir.call(g, prim.Print, ("hello",), type_=ir.NoneType())      # print: kept
        ir.call(g, ember.rand, (3,), type_=T)                        # random: kept
        g.output(y)
        return g

    after = check(build, eliminate_dead_code, rng_inputs((3,)))
    assert count(after, ember.tanh) == count(after, ember.exp) == count(after, ember.sigmoid) == 0
    for target in ("add_", "append", prim.Print, prim.ListConstruct, ember.rand):
        assert count(after, target) == 1, target


def test_dce_drops_unused_if_outputs_and_dead_ifs():
    def build():
        g = ir.new_graph()
        x = g.placeholder("x", type_expr=T)
        cond = positive(g, x)

        def then(b):
            return [ir.call(b, ember.tanh, (x,), type_=T), ir.call(b, ember.exp, (x,), type_=T)]

        def other(b):
            return [ir.call(b, ember.sigmoid, (x,), type_=T), ir.call(b, ember.neg, (x,), type_=T)]
        add_if(g, cond, then, other, [T, T])                      # entirely unused and pure
        _, (a, _b) = add_if(g, cond, then, other, [T, T])         # second output unused

        def raising(b):
            ir.call(b, prim.RaiseException, ("boom", "ValueError"), type_=ir.NoneType())
            return []
        huge = ir.call(g, operator.gt, (ir.call(g, ember.sum, (x,), type_=T), 1e30), type_=T)
        add_if(g, ir.call(g, builtins.bool, (huge,), type_=BoolType()), raising, lambda b: [], [])
        g.output(a)
        return g

    after = check(build, eliminate_dead_code, rng_inputs((5,)))
    ifs = nodes(after, prim.If)
    assert len(ifs) == 2                                 # the raising If stays
    assert ifs[0].meta["num_outputs"] == 1 and len(ir.block_returns(ifs[0].blocks[0])) == 1
    assert count(after, ember.exp) == 0 and count(after, ember.neg) == 0
    assert count(after, prim.RaiseException) == 1


def carried_loop(use_b_inside=False, append_to=None):
    """for i in range(n): a = a + b (or a + i); b = b * 2   -> return a"""
    g = ir.new_graph()
    x = g.placeholder("x", type_expr=T)
    n = ir.constant(g, 4)
    true = ir.constant(g, True)
    loop, (a_out, b_out) = ir.add_loop(g, n, true, [x, x], [T, T])
    body = loop.blocks[0]
    i, a, b = ir.block_params(body)
    a2 = ir.call(body, operator.add, (a, b if use_b_inside else i), type_=T)
    b2 = ir.call(body, operator.mul, (b, 2), type_=T)
    ir.set_block_returns(body, [true, a2, b2])
    g.output(a_out)
    return g


def test_dce_drops_loop_carried_value_unused_after_and_inside():
    after = check(carried_loop, eliminate_dead_code, rng_inputs((3,)))
    loop = nodes(after, prim.Loop)[0]
    assert loop.meta["num_outputs"] == 1 and len(loop.args) == 3
    assert len(ir.block_params(loop.blocks[0])) == 2 and count(after, operator.mul) == 0


def test_dce_keeps_loop_carried_value_read_inside():
    after = check(lambda: carried_loop(use_b_inside=True), eliminate_dead_code, rng_inputs((3,)))
    loop = nodes(after, prim.Loop)[0]
    assert loop.meta["num_outputs"] == 2 and count(after, operator.mul) == 1


def test_dce_removes_pure_unused_loop_but_keeps_side_effecting_loop():
    def build(side_effect):
        g = ir.new_graph()
        x = g.placeholder("x", type_expr=T)
        lst = ir.call(g, prim.ListConstruct, (), type_=ListType(T))
        loop, _ = ir.add_loop(g, ir.constant(g, 3), ir.constant(g, True), [x], [T])
        body = loop.blocks[0]
        _, c = ir.block_params(body)
        c2 = ir.call(body, ember.tanh, (c,), type_=T)
        if side_effect:
            ir.call(body, "append", (lst, c2), type_=ir.NoneType())
        ir.set_block_returns(body, [ir.constant(body, True), c2])
        g.output(lst)
        return g

    pure = check(lambda: build(False), eliminate_dead_code, rng_inputs((2,)))
    assert count(pure, prim.Loop) == 0
    kept = check(lambda: build(True), eliminate_dead_code, rng_inputs((2,)))
    assert count(kept, prim.Loop) == 1 and count(kept, "append") == 1


# ---- constant propagation -------------------------------------------------------------------
def test_constant_propagation_folds_scalars_ifs_and_loops():
    def build():
        g = ir.new_graph()
        x = g.placeholder("x", type_expr=T)
        two = ir.constant(g, 2)
        six = ir.call(g, operator.mul, (two, 3), type_=IntType())
        seven = ir.call(g, operator.add, (six, 1), type_=IntType())
        cond = ir.call(g, operator.gt, (seven, 5), type_=BoolType())
        _, (y,) = add_if(g, cond, lambda b: [ir.call(b, operator.mul, (x, seven), type_=T)],
                         lambda b: [ir.call(b, ember.tanh, (x,), type_=T)], [T])
        loop, (z,) = ir.add_loop(g, ir.call(g, operator.sub, (two, 2), type_=IntType()),
                                 ir.constant(g, True), [y], [T])
        body = loop.blocks[0]
        ir.set_block_returns(body, [ir.constant(body, True),
                                    ir.call(body, ember.exp, (ir.block_params(body)[1],), type_=T)])
        g.output(ir.call(g, prim.TupleConstruct, (z, seven), type_=TupleType((T, IntType()))))
        return g

    after = check(build, fold_constants, rng_inputs((3,)))
    assert count(after, prim.If) == 0 and count(after, prim.Loop) == 0
    assert count(after, ember.tanh) == 0 and count(after, operator.add) == 0
    assert 7 in [n.args[0] for n in nodes(after, prim.Constant)]


def test_constant_propagation_never_folds_random_printing_inplace_or_lists():
    def build():
        g = ir.new_graph()
        x = g.placeholder("x", type_expr=T)
        r = ir.call(g, ember.rand, (3,), type_=T)
        z = ir.call(g, ember.zeros, (3,), type_=T)
        ir.call(g, "add_", (z, 1.0), type_=T)
        ir.call(g, prim.Print, (ir.constant(g, 1),), type_=ir.NoneType())
        lst = ir.call(g, prim.ListConstruct, (1, 2), type_=ListType(IntType()))
        bad = ir.call(g, operator.truediv, (1, 0), type_=FloatType())    # raises at run time: stays
        ir.call(g, builtins.len, (lst,), type_=IntType())
        g.output(ir.call(g, prim.TupleConstruct, (ir.call(g, operator.mul, (r, 0.0), type_=T), x, z),
                         type_=TupleType((T, T, T))))
        del bad
        return g

    g = build()
    fold_constants(g)
    for target in (ember.rand, ember.zeros, "add_", prim.Print, prim.ListConstruct, operator.truediv):
        assert count(g, target) == 1, target


def test_constant_propagation_folds_tensors_only_when_safe():
    def build(returned):
        g = ir.new_graph()
        x = g.placeholder("x", type_expr=T)
        z = ir.call(g, ember.ones, (3,), type_=T)
        w = ir.call(g, ember.tanh, (z,), type_=T)
        out = ir.call(g, operator.add, (x, w), type_=T)
        g.output(ir.call(g, prim.TupleConstruct, (out, w), type_=TupleType((T, T))) if returned else out)
        return g

    folded = check(lambda: build(False), fold_constants, rng_inputs((3,)))
    assert count(folded, ember.ones) == 0 and count(folded, ember.tanh) == 0
    kept = check(lambda: build(True), fold_constants, rng_inputs((3,)))
    assert count(kept, ember.ones) == 0 and count(kept, ember.tanh) == 1   # tanh's result escapes


# ---- common subexpression elimination ---------------------------------------------------------
def test_cse_merges_within_dominance_only():
    def build():
        g = ir.new_graph()
        x = g.placeholder("x", type_expr=T)
        y = g.placeholder("y", type_expr=T)
        a = ir.call(g, operator.mul, (x, y), type_=T)
        b = ir.call(g, operator.mul, (x, y), type_=T)                 # merged into a
        cond = positive(g, x)
        _, (r,) = add_if(g, cond,
                         lambda blk: [ir.call(blk, operator.add, (ir.call(blk, operator.mul, (x, y), type_=T),
                                                                ir.call(blk, ember.exp, (x,), type_=T)), type_=T)],
                         lambda blk: [ir.call(blk, ember.exp, (x,), type_=T)], [T])
        e = ir.call(g, ember.exp, (x,), type_=T)                      # not merged into a block's exp
        s = ir.call(g, operator.add, (ir.call(g, operator.add, (a, b), type_=T), r), type_=T)
        g.output(ir.call(g, operator.add, (s, e), type_=T))
        return g

    after = check(build, eliminate_common_subexpressions, rng_inputs((3,), (3,)))
    assert count(after, operator.mul) == 1      # b and the then-block's mul read a
    assert count(after, ember.exp) == 3


def test_cse_never_merges_random_lists_typed_constants_or_mutated_values():
    def build():
        g = ir.new_graph()
        x = g.placeholder("x", type_expr=T)
        r1 = ir.call(g, ember.rand, (3,), type_=T)
        r2 = ir.call(g, ember.rand, (3,), type_=T)
        l1 = ir.call(g, prim.ListConstruct, (x,), type_=ListType(T))
        l2 = ir.call(g, prim.ListConstruct, (x,), type_=ListType(T))
        ints = ir.call(g, operator.add, (x, 1), type_=T)
        floats = ir.call(g, operator.add, (x, 1.0), type_=T)
        before = ir.call(g, operator.add, (x, 2), type_=T)
        ir.call(g, "mul_", (x, 3), type_=T)
        after_ = ir.call(g, operator.add, (x, 2), type_=T)
        g.output(ir.call(g, prim.TupleConstruct, (r1, r2, l1, l2, ints, floats, before, after_),
                         type_=TupleType((T,) * 8)))
        return g

    g = build()
    eliminate_common_subexpressions(g)
    assert count(g, ember.rand) == 2 and count(g, prim.ListConstruct) == 2 and count(g, operator.add) == 4
    rng = np.random.default_rng(3)
    x = _t(rng, 3)
    out_after, out_before = evaluate(g, [x.clone()]), evaluate(build(), [x.clone()])
    for i in (4, 5, 6, 7):
        _same(out_after[i], out_before[i])


# ---- constant pooling -----------------------------------------------------------------------
def test_constant_pooling_is_type_aware_and_hoists_from_blocks():
    def build():
        g = ir.new_graph()
        x = g.placeholder("x", type_expr=T)
        a = ir.call(g, operator.mul, (x, ir.constant(g, 1)), type_=T)
        b = ir.call(g, operator.mul, (a, ir.constant(g, 1)), type_=T)
        c = ir.call(g, operator.mul, (b, ir.constant(g, 1.0)), type_=T)
        cond = ir.constant(g, True)
        _, (y,) = add_if(g, positive(g, x),
                         lambda blk: [ir.call(blk, operator.add, (c, ir.constant(blk, 1)), type_=T)],
                         lambda blk: [ir.call(blk, operator.add, (c, ir.constant(blk, -0.0)), type_=T)], [T])
        z = ir.call(g, operator.add, (y, ir.constant(g, 0.0)), type_=T)
        g.output(ir.call(g, prim.TupleConstruct, (z, cond), type_=TupleType((T, BoolType()))))
        return g

    after = check(build, passes.constant_pooling, rng_inputs((3,)))
    consts = [n for n in ir.walk(after) if n.target is prim.Constant]
    values = [n.args[0] for n in consts]
    assert len(consts) == 5 and all(n.graph is after for n in consts)     # 1, 1.0, True, -0.0, 0.0
    assert sorted(map(repr, values)) == sorted(map(repr, [1, 1.0, True, -0.0, 0.0]))
    top = list(after.nodes)[1:6]                                             # right after x
    assert all(n.target is prim.Constant for n in top)


# ---- more edge cases ------------------------------------------------------------------------
def test_inline_rejects_recursion():
    g = ir.new_graph()
    x = g.placeholder("x", type_expr=T)
    c = ir.call(g, prim.CallFunction, (x,), type_=T)
    c.meta["callee"] = Callee(g)          # calls itself
    g.output(c)
    caller = ir.new_graph()
    y = caller.placeholder("y", type_expr=T)
    top = ir.call(caller, prim.CallFunction, (y,), type_=T)
    top.meta["callee"] = Callee(g)
    caller.output(top)
    with pytest.raises(RuntimeError, match="calls itself"):
        passes.inline(caller)


def test_dce_keeps_carried_value_feeding_the_loop_condition_or_a_print():
    def build(use):
        """while sum(b) < 50 (or print(b)): a = a + 1; b = b * 2   -> return a"""
        g = ir.new_graph()
        x = g.placeholder("x", type_expr=T)
        loop, (a_out, _) = ir.add_loop(g, ir.constant(g, 6), ir.constant(g, True), [x, x], [T, T])
        body = loop.blocks[0]
        _, a, b = ir.block_params(body)
        b2 = ir.call(body, operator.mul, (b, 2), type_=T)
        if use == "cond":
            cond = ir.call(body, builtins.bool, (ir.call(body, operator.lt, (ir.call(body, ember.sum, (b2,), type_=T),
                                                                          50.0), type_=T),), type_=BoolType())
        else:
            ir.call(body, prim.Print, (b,), type_=ir.NoneType())
            cond = ir.constant(body, True)
        ir.set_block_returns(body, [cond, ir.call(body, operator.add, (a, 1), type_=T), b2])
        g.output(a_out)
        return g

    rng = np.random.default_rng(7)
    inputs = lambda: [ember.from_numpy(np.abs(rng.standard_normal(3)).astype(np.float32))]   # noqa: E731
    for use in ("cond", "print"):
        after = check(lambda: build(use), eliminate_dead_code, inputs, trials=1)
        loop = nodes(after, prim.Loop)[0]
        assert loop.meta["num_outputs"] == 2 and count(after, operator.mul) == 1, use


def test_cse_and_constant_propagation_inside_loop_bodies():
    def build():
        g = ir.new_graph()
        x = g.placeholder("x", type_expr=T)
        outer = ir.call(g, ember.exp, (x,), type_=T)
        loop, (out,) = ir.add_loop(g, ir.constant(g, 3), ir.constant(g, True), [x], [T])
        body = loop.blocks[0]
        i, c = ir.block_params(body)
        again = ir.call(body, ember.exp, (x,), type_=T)                   # same as outer: merged
        k = ir.call(body, operator.add, (ir.constant(body, 2), 3), type_=IntType())   # folded to 5
        c2 = ir.call(body, operator.add, (ir.call(body, operator.mul, (c, k), type_=T),
                                          ir.call(body, operator.mul, (again, i), type_=T)), type_=T)
        ir.set_block_returns(body, [ir.constant(body, True), c2])
        g.output(ir.call(g, operator.add, (out, outer), type_=T))
        return g

    after = check(build, eliminate_common_subexpressions, rng_inputs((3,)))
    assert count(after, ember.exp) == 1
    folded = check(build, fold_constants, rng_inputs((3,)))
    body = nodes(folded, prim.Loop)[0].blocks[0]
    assert 5 in [n.args[0] for n in body.nodes if n.target is prim.Constant]


def test_constant_propagation_skips_global_state():
    g = ir.new_graph()
    g.placeholder("x", type_expr=T)
    g.output(ir.call(g, ember.is_grad_enabled, (), type_=BoolType()))
    fold_constants(g)
    assert count(g, ember.is_grad_enabled) == 1


def test_purity_rules():
    g = ir.new_graph()
    x = g.placeholder("x", type_expr=T)
    lst = g.placeholder("l", type_expr=ListType(T))
    cases = [  # (node, has side effects, cse-safe)
        (ir.call(g, ember.tanh, (x,), type_=T), False, True),
        (ir.call(g, operator.add, (x, 1), type_=T), False, True),
        (ir.call(g, "add_", (x, 1), type_=T), True, False),
        (ir.call(g, "__setitem__", (x, 0, 1.0)), True, False),
        (ir.call(g, operator.setitem, (lst, 0, x)), True, False),
        (ir.call(g, "append", (lst, x)), True, False),
        (ir.call(g, "sort", (x,), type_=TupleType((T, T))), False, True),    # Tensor.sort is pure
        (ir.call(g, ember.rand, (3,), type_=T), True, False),
        (ir.call(g, ember.nn.functional.dropout, (x, 0.5), type_=T), True, False),
        (ir.call(g, ember.empty, (3,), type_=T), False, False),
        (ir.call(g, ember.ops.aten.add_.Tensor, (x, x), type_=T), True, False),
        (ir.call(g, prim.ListConstruct, (x,), type_=ListType(T)), False, False),
        (ir.call(g, prim.TupleConstruct, (x,), type_=TupleType((T,))), False, True),
        (ir.call(g, prim.Print, (x,)), True, False),
        (ir.call(g, prim.RaiseException, ("m", "ValueError")), True, False),
        (ir.call(g, prim.SetAttr, (x, "a", 1)), True, False),
        (ir.call(g, builtins.print, (x,)), True, False),
        (ir.call(g, builtins.len, (lst,), type_=IntType()), False, True),
    ]
    for node, effects, cse in cases:
        assert purity.has_side_effects(node) is effects, node.target
        assert purity.is_cse_safe(node) is cse, node.target
    assert purity.MutationInfo(g).may_be_mutated(x) and purity.MutationInfo(g).may_be_mutated(lst)


def test_every_pass_edits_in_place_and_handles_an_empty_one():
    for fn in (passes.inline, eliminate_dead_code, fold_constants,
               eliminate_common_subexpressions, passes.constant_pooling, passes.peephole_optimize,
               passes.lower_simple_tuples, passes.unroll_loops, passes.insert_profile_nodes,
               passes.remove_profile_nodes, passes.specialize_types):
        g = ir.new_graph()
        x = g.placeholder("x", type_expr=T)
        g.output(x)
        assert fn(g).graph_module is g
        assert [n.op for n in g.nodes if n.target is not prim.profile] == ["placeholder", "output"]


def test_dce_loop_carried_values_that_feed_each_other():
    def build(keep):
        """a, b = x, y; for i in range(5): a, b = b, a + b;  return a (or b)"""
        g = ir.new_graph()
        x = g.placeholder("x", type_expr=T)
        y = g.placeholder("y", type_expr=T)
        loop, outs = ir.add_loop(g, ir.constant(g, 5), ir.constant(g, True), [x, y], [T, T])
        body = loop.blocks[0]
        _, a, b = ir.block_params(body)
        ir.set_block_returns(body, [ir.constant(body, True), b, ir.call(body, operator.add, (a, b), type_=T)])
        g.output(outs[keep])
        return g

    for keep in (0, 1):
        after = check(lambda: build(keep), eliminate_dead_code, rng_inputs((2,), (2,)))
        assert nodes(after, prim.Loop)[0].meta["num_outputs"] == 2
