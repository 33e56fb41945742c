"""The jit's rewriting passes on crafted graphs: peephole, tuple lowering, loop unrolling,
profiling nodes, EMBER_JIT_LOG_LEVEL, and the executor's whole pipeline on seed 001's example.
Each checks the structure after the pass and that ir.evaluate agrees before and after."""
from __future__ import annotations

import builtins
import operator
import os
import subprocess
import sys

import numpy as np

import ember
from ember.fx.passes import eliminate_common_subexpressions, eliminate_dead_code, fold_constants, purity
from ember.jit import ir, passes
from ember.jit.ir import prim
from ember.jit.ir.evaluate import evaluate
from ember.jit.ir.types import BoolType, FloatType, IntType, ListType, TensorType, TupleType
from ember.fx.passes import jit_log
from test_jit_passes import _same, _t, add_if, check, count, nodes, positive, rng_inputs

T = TensorType()


# ---- peephole -------------------------------------------------------------------------------
def _arith_graph(x_type, scalars, ops=(operator.add, operator.sub, operator.mul, operator.truediv)):
    def build():
        g = ir.new_graph()
        x = g.placeholder("x", type_expr=x_type)
        outs = []
        for op, c in zip(ops, scalars):   # each result read in the graph (x * 2), never returned:
            r = ir.call(g, op, (x, c), type_=x_type)   # a returned x * 1 must stay a fresh tensor
            outs.append(ir.call(g, operator.mul, (r, 2), type_=x_type))
        g.output(ir.call(g, prim.TupleConstruct, tuple(outs), type_=TupleType((x_type,) * len(outs))))
        return g
    return build


def _returned_inputs(g):
    """Per output (r * 2): whether r was rewritten to the input x."""
    x = ir.block_params(g)[0]
    out = ir.output_node(g).args[0]
    return [a.args[0] is x for a in out.args]


def test_peephole_arithmetic_identities_on_specialised_float_tensor():
    f32 = TensorType(ember.float32, (2, 3), False)
    rng = np.random.default_rng(0)
    build = _arith_graph(f32, (0, 0.0, 1, 1.0))
    after = check(build, passes.peephole_optimize, lambda: [_t(rng, 2, 3)])
    assert _returned_inputs(after) == [True, True, True, True]
    commuted = ir.new_graph()   # 1 * x and 0 + x too
    x = commuted.placeholder("x", type_expr=f32)
    y = ir.call(commuted, operator.mul, (1, ir.call(commuted, operator.add, (0, x), type_=f32)), type_=f32)
    commuted.output(ir.call(commuted, "sum", (y,), type_=f32))
    passes.peephole_optimize(commuted)
    assert ir.output_node(commuted).args[0].args[0] is x
    returned = ir.new_graph()   # returned, x * 1 stays: eager gives the caller a new tensor
    x = returned.placeholder("x", type_expr=f32)
    returned.output(ir.call(returned, operator.mul, (x, 1), type_=f32))
    passes.peephole_optimize(returned)
    assert ir.output_node(returned).args[0] is not x


def test_peephole_keeps_ops_that_change_dtype_or_are_unproven():
    rng = np.random.default_rng(1)
    i64 = TensorType(ember.int64, (3,), False)
    ints = lambda: [ember.from_numpy(rng.integers(-5, 5, (3,)))]   # noqa: E731
    after = check(_arith_graph(i64, (0, 0, 1.0, 1)), passes.peephole_optimize, ints)
    assert _returned_inputs(after) == [True, True, False, False]   # x*1.0 and x/1 become float
    generic = check(_arith_graph(T, (0, 0, 1, 1)), passes.peephole_optimize, lambda: [_t(rng, 3)])
    assert _returned_inputs(generic) == [False] * 4                # dtype unknown: could be bool
    b = TensorType(ember.bool, (3,), False)
    bools = check(_arith_graph(b, (0,), ops=(operator.add,)), passes.peephole_optimize,
                  lambda: [ember.from_numpy(rng.integers(0, 2, (3,)).astype(bool))])
    assert _returned_inputs(bools) == [False]                      # bool + 0 is int64


def test_peephole_scalars_negation_and_casts():
    def build():
        g = ir.new_graph()
        n = g.placeholder("n", type_expr=IntType())
        f = g.placeholder("f", type_expr=FloatType())
        b = g.placeholder("b", type_expr=BoolType())
        x = g.placeholder("x", type_expr=T)
        outs = [ir.call(g, operator.add, (n, 0), type_=IntType()),            # -> n
                ir.call(g, operator.add, (f, 0), type_=FloatType()),          # kept (-0.0 + 0)
                ir.call(g, operator.mul, (f, 1), type_=FloatType()),          # -> f
                ir.call(g, "sum", (ir.call(g, operator.neg, (ir.call(g, operator.neg, (x,), type_=T),),
                                            type_=T),), type_=T),             # sum(-(-x)) -> sum(x)
                ir.call(g, operator.not_, (ir.call(g, operator.not_, (b,), type_=BoolType()),),
                        type_=BoolType()),                                    # -> b
                ir.call(g, builtins.bool, (ir.constant(g, 3),), type_=BoolType()),  # -> True
                ir.call(g, builtins.int, (n,), type_=IntType())]              # -> n
        g.output(ir.call(g, prim.TupleConstruct, tuple(outs), type_=TupleType(tuple(o.type for o in outs))))
        return g

    rng = np.random.default_rng(2)
    after = check(build, passes.peephole_optimize,
                  lambda: [int(rng.integers(-9, 9)), float(rng.standard_normal()), bool(rng.integers(0, 2)),
                           _t(rng, 3)])
    n, f, b, x = ir.block_params(after)
    out = ir.output_node(after).args[0].args
    assert out[0] is n and out[1] is not f and out[2] is f and out[3].args[0] is x and out[4] is b
    assert out[6] is n
    assert out[5].target is prim.Constant and out[5].args[0] is True


def test_peephole_shapes_conversions_and_len():
    f32 = TensorType(ember.float32, (2, 3), False)

    def build(mutate=False):
        g = ir.new_graph()
        x = g.placeholder("x", type_expr=f32)
        i64 = g.placeholder("i", type_expr=TensorType(ember.int64, (3,), False))
        lst = ir.call(g, prim.ListConstruct, (x, x, x), type_=ListType(T))
        if mutate:
            ir.call(g, "append", (lst, x), type_=ir.NoneType())
        outs = [ir.call(g, "dim", (x,), type_=IntType()),
                ir.call(g, operator.getitem, (ir.call(g, "size", (x,), type_=ListType(IntType())), 0),
                        type_=IntType()),
                ir.call(g, "size", (x, -1), type_=IntType()),
                ir.call(g, builtins.getattr, (x, "dtype"), type_=ir.DTypeType()),
                ir.call(g, "float", (x,), type_=f32),                               # -> x
                ir.call(g, "to", (x, ember.float32), type_=f32),                    # -> x
                ir.call(g, "float", (i64,), type_=T),                               # kept
                ir.call(g, "sum", (ir.call(g, "view", (x, 2, 3), type_=f32),), type_=f32),  # sum(x)
                ir.call(g, "contiguous", (ir.call(g, "contiguous", (x,), type_=f32),), type_=f32),
                ir.call(g, builtins.len, (lst,), type_=IntType())]
        g.output(ir.call(g, prim.TupleConstruct, tuple(outs), type_=TupleType(tuple(o.type for o in outs))))
        return g

    rng = np.random.default_rng(3)
    inputs = lambda: [_t(rng, 2, 3), ember.from_numpy(rng.integers(0, 9, (3,)))]   # noqa: E731
    after = check(build, passes.peephole_optimize, inputs)
    out = ir.output_node(after).args[0].args
    x = ir.block_params(after)[0]
    for k in (0, 1, 2, 3, 9):
        assert out[k].target is prim.Constant, k
    assert out[4] is x and out[5] is x and out[6] is not x and out[7].args[0] is x
    assert count(after, "contiguous") == 1 and count(after, "size") == 0
    whole = ir.new_graph()   # a bare x.size() is an ember.Size: not replaced by a tuple constant
    xx = whole.placeholder("x", type_expr=f32)
    whole.output(ir.call(whole, "size", (xx,), type_=ListType(IntType())))
    passes.peephole_optimize(whole)
    assert count(whole, "size") == 1
    mutated = check(lambda: build(mutate=True), passes.peephole_optimize, inputs)
    assert count(mutated, builtins.len) == 1                    # the list is appended to: len stays


# ---- lower simple tuples --------------------------------------------------------------------
def test_lower_simple_tuples_index_unpack_and_if_outputs():
    def build():
        g = ir.new_graph()
        x = g.placeholder("x", type_expr=T)
        y = g.placeholder("y", type_expr=T)
        pair = TupleType((T, T))
        t = ir.call(g, prim.TupleConstruct, (x, y), type_=pair)
        first = ir.call(g, prim.TupleIndex, (t, 0), type_=T)
        last = ir.call(g, operator.getitem, (t, -1), type_=T)
        unpack = ir.call(g, prim.TupleUnpack, (t,))
        a, b = ir.unpack_outputs(unpack, [T, T])
        def then(blk):
            return [ir.call(blk, prim.TupleConstruct, (ir.call(blk, ember.tanh, (x,), type_=T), y), type_=pair)]
        _, (chosen,) = add_if(g, positive(g, x), then,
                              lambda blk: [ir.call(blk, prim.TupleConstruct, (y, x), type_=pair)], [pair])
        c0 = ir.call(g, prim.TupleIndex, (chosen, 0), type_=T)
        s = ir.call(g, operator.add, (ir.call(g, operator.add, (first, last), type_=T),
                                      ir.call(g, operator.mul, (a, b), type_=T)), type_=T)
        g.output(ir.call(g, operator.add, (s, c0), type_=T))
        return g

    after = check(build, passes.lower_simple_tuples, rng_inputs((3,), (3,)))
    assert count(after, prim.TupleIndex) == 0 and count(after, prim.TupleUnpack) == 0
    eliminate_dead_code(after)
    assert count(after, prim.TupleConstruct) == 0
    if_node = nodes(after, prim.If)[0]
    assert if_node.meta["num_outputs"] == 1 and if_node.type == TupleType((T,))
    _same(evaluate(after, [ember.ones(3), ember.zeros(3)]), evaluate(build(), [ember.ones(3), ember.zeros(3)]))


# ---- loop unrolling ---------------------------------------------------------------------------
def counted_loop(trips, cond_value=True, nested=False):
    g = ir.new_graph()
    x = g.placeholder("x", type_expr=T)
    loop, (out,) = ir.add_loop(g, ir.constant(g, trips), ir.constant(g, True), [x], [T])
    body = loop.blocks[0]
    i, c = ir.block_params(body)
    c2 = ir.call(body, operator.add, (ir.call(body, operator.mul, (c, 0.5), type_=T), i), type_=T)
    if nested:
        inner, (c2,) = ir.add_loop(body, ir.constant(body, 2), ir.constant(body, True), [c2], [T])
        ib = inner.blocks[0]
        j, d = ir.block_params(ib)
        ir.set_block_returns(ib, [ir.constant(ib, True), ir.call(ib, operator.sub, (d, j), type_=T)])
    if cond_value is True:
        cond = ir.constant(body, True)
    else:   # a computed condition: stop once the sum is small
        cond = ir.call(body, builtins.bool, (ir.call(body, operator.gt, (ir.call(body, ember.sum, (c2,), type_=T),
                                                                          -100.0), type_=T),), type_=BoolType())
    ir.set_block_returns(body, [cond, c2])
    g.output(out)
    return g


def test_unroll_loops_constant_trip_counts():
    after = check(lambda: counted_loop(3), passes.unroll_loops, rng_inputs((4,)))
    assert count(after, prim.Loop) == 0 and count(after, operator.mul) == 3
    nested = check(lambda: counted_loop(3, nested=True), passes.unroll_loops, rng_inputs((4,)))
    assert count(nested, prim.Loop) == 0 and count(nested, operator.sub) == 6
    zero = check(lambda: counted_loop(0), passes.unroll_loops, rng_inputs((4,)))
    assert count(zero, prim.Loop) == 0 and count(zero, operator.mul) == 0


def test_unroll_loops_leaves_long_and_conditional_loops():
    long_ = check(lambda: counted_loop(10), passes.unroll_loops, rng_inputs((4,)))
    assert count(long_, prim.Loop) == 1
    loop10 = counted_loop(10)
    passes.unroll_loops(loop10, max_trip=10)
    assert count(loop10, prim.Loop) == 0
    cond = check(lambda: counted_loop(3, cond_value=False), passes.unroll_loops, rng_inputs((4,)))
    assert count(cond, prim.Loop) == 1


# ---- profiling nodes ------------------------------------------------------------------------
def _profiled_run(graph, inputs):
    """What the profiling executor does: run the graph, record each profile node's value."""
    env: dict = {}
    result = evaluate(graph, inputs, env)
    for node in ir.walk(graph):
        if node.target is prim.profile and node in env:
            passes.record_profile(node, env[node])
    return result


def test_profile_nodes_record_and_specialise_types():
    def build():
        g = ir.new_graph()
        x = g.placeholder("x", type_expr=T)
        n = g.placeholder("n", type_expr=IntType())
        y = ir.call(g, ember.tanh, (x,), type_=T)
        _, (z,) = add_if(g, positive(g, y), lambda b: [ir.call(b, operator.mul, (y, n), type_=T)],
                         lambda b: [y], [T])
        g.output(ir.call(g, "dim", (z,), type_=IntType()))
        return g

    g = build()
    passes.insert_profile_nodes(g)
    profiles = nodes(g, prim.profile)
    profiled = {p.args[0].name for p in profiles}
    assert {"x", "tanh"} <= profiled and len(profiles) == len(profiled) == 6   # x, tanh, sum, gt, mul, z
    x = ir.block_params(g)[0]
    assert all(u.target is prim.profile for u in x.users)
    rng = np.random.default_rng(4)
    inputs = [_t(rng, 2, 5), 3]
    _same(_profiled_run(g, inputs), evaluate(build(), inputs))
    passes.insert_profile_nodes(g)                     # idempotent
    assert count(g, prim.profile) == 6
    passes.remove_profile_nodes(g)
    assert count(g, prim.profile) == 0
    assert x.type == TensorType(ember.float32, (2, 5), False)
    passes.peephole_optimize(g)                        # the specialised type proves z.dim() == 2
    assert ir.output_node(g).args[0].target is prim.Constant
    _same(evaluate(g, inputs), evaluate(build(), inputs))


def test_profile_merge_of_different_observations_is_unshaped():
    g = counted_loop(2)
    passes.insert_profile_nodes(g)
    rng = np.random.default_rng(5)
    _profiled_run(g, [_t(rng, 3)])
    _profiled_run(g, [_t(rng, 4)])
    x = ir.block_params(g)[0]
    passes.remove_profile_nodes(g)
    assert x.type == TensorType()
    one, other = ember.empty(1, device="meta"), ember.empty(2, device="meta")
    assert passes.merge_observed(one, ember.empty(1, device="meta")) is one     # the same look stays
    assert passes.merge_observed(one, other) is None                            # different looks: unknown
    assert passes.merge_observed(one, ember.empty(1, dtype=ember.float64, device="meta")) is None
    assert passes.merge_observed(ember.empty(2, 3, device="meta"),
                                 ember.empty(3, 2, device="meta").t()) is None   # same shape, other strides
    assert passes.merge_observed(None, one) is None


# ---- EMBER_JIT_LOG_LEVEL ----------------------------------------------------------------------
def test_log_level_parsing():
    assert jit_log.parse_log_levels(">>dead_code_elimination:peephole:>inline.py") == {
        "dead_code_elimination": jit_log.GRAPH_DEBUG, "peephole": jit_log.GRAPH_DUMP,
        "inline": jit_log.GRAPH_UPDATE}
    assert jit_log.parse_log_levels("") == {}


def test_log_level_dumps_graph_after_the_named_pass(monkeypatch, capsys):
    monkeypatch.setenv("EMBER_JIT_LOG_LEVEL", ">>dead_code_elimination")
    passes.constant_pooling(counted_loop(2))
    eliminate_dead_code(counted_loop(2))
    err = capsys.readouterr().err
    assert "[DUMP dead_code_elimination.py]" in err and "constant_pooling" not in err
    monkeypatch.setenv("EMBER_JIT_LOG_LEVEL", "constant_pooling")
    passes.constant_pooling(counted_loop(2))
    err = capsys.readouterr().err
    assert "[DUMP constant_pooling.py]" in err and "[UPDATE" not in err
    monkeypatch.delenv("EMBER_JIT_LOG_LEVEL")
    passes.constant_pooling(counted_loop(2))
    assert capsys.readouterr().err == ""


def test_log_level_from_the_environment_in_a_fresh_process():
    code = ("import operator, ember; from ember.jit import ir\n"
            "from ember.fx.passes import eliminate_dead_code\n"
            "g = ir.new_graph(); x = g.placeholder('x', type_expr=ir.TensorType())\n"
            "ir.call(g, ember.tanh, (x,), type_=ir.TensorType()); g.output(x)\n"
            "eliminate_dead_code(g)\n")
    env = dict(os.environ, EMBER_JIT_LOG_LEVEL=">>dead_code_elimination", OMP_NUM_THREADS="1")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "[DUMP dead_code_elimination.py]" in done.stderr and "[UPDATE dead_code_elimination.py]" in done.stderr


# ---- the executor's pipeline on seed 001's example ---------------------------------------------
def seed_graph():
    """c = a + b; d = c * c; e = tanh(d * c); return d + (e + e)"""
    g = ir.new_graph()
    a = g.placeholder("a", type_expr=T)
    b = g.placeholder("b", type_expr=T)
    one = ir.constant(g, 1)
    c = ir.call(g, ember.add, (a, b), {"alpha": one}, type_=T)
    d = ir.call(g, operator.mul, (c, c), type_=T)
    e = ir.call(g, ember.tanh, (ir.call(g, operator.mul, (d, c), type_=T),), type_=T)
    dup = ir.call(g, operator.mul, (d, c), type_=T)     # a common subexpression to merge
    ir.call(g, ember.exp, (dup,), type_=T)              # dead
    g.output(ir.call(g, operator.add, (d, ir.call(g, operator.add, (e, e), type_=T)), type_=T))
    return g


def test_full_pipeline_matches_on_seed_example():
    def pipeline(g):
        passes.inline(g)
        passes.insert_profile_nodes(g)
        _profiled_run(g, [ember.ones(2, 3), ember.ones(2, 3)])
        for p in (passes.specialize_types, fold_constants, passes.peephole_optimize,
                  passes.lower_simple_tuples, passes.unroll_loops, eliminate_common_subexpressions,
                  passes.constant_pooling, eliminate_dead_code, passes.remove_profile_nodes):
            p(g)
        return g

    after = check(seed_graph, pipeline, rng_inputs((2, 3), (2, 3)))
    assert count(after, ember.exp) == 0 and count(after, operator.mul) == 2
    assert count(after, prim.Constant) == 1 and list(after.nodes)[2].target is prim.Constant


def test_lower_simple_tuples_through_loop_carried_tuples():
    pair = TupleType((T, T))

    def build():
        """t = (x, y); for i in range(3): t = (t[0] * 2, t[1] + t[0]);  return t[1]"""
        g = ir.new_graph()
        x = g.placeholder("x", type_expr=T)
        y = g.placeholder("y", type_expr=T)
        init = ir.call(g, prim.TupleConstruct, (x, y), type_=pair)
        loop, (t_out,) = ir.add_loop(g, ir.constant(g, 3), ir.constant(g, True), [init], [pair])
        body = loop.blocks[0]
        _, t = ir.block_params(body)
        a = ir.call(body, prim.TupleIndex, (t, 0), type_=T)
        b = ir.call(body, prim.TupleIndex, (t, 1), type_=T)
        a2 = ir.call(body, operator.mul, (a, 2), type_=T)
        nxt = ir.call(body, prim.TupleConstruct, (a2, ir.call(body, operator.add, (b, a), type_=T)), type_=pair)
        ir.set_block_returns(body, [ir.constant(body, True), nxt])
        g.output(ir.call(g, operator.getitem, (t_out, 1), type_=T))
        return g

    after = check(build, lambda g: (passes.lower_simple_tuples(g), eliminate_dead_code(g)),
                  rng_inputs((3,), (3,)))
    assert count(after, prim.TupleConstruct) == 0 and count(after, prim.TupleIndex) == 0
    loop = nodes(after, prim.Loop)[0]
    assert loop.meta["num_outputs"] == 2 and len(ir.block_params(loop.blocks[0])) == 3


# ---- on graphs the frontend makes ---------------------------------------------------------------
def scripted_example(x, y, n: int):
    c = x + y
    d = c * c
    e = ember.tanh(d * c)
    acc = x * 0
    for i in range(3):
        acc = acc + e * i
    if bool(x.sum() > 0):
        r = d + (e + e)
    else:
        r = d - e
    k = 0
    while k < n:
        k += 1
        r = r * 1
    sizes = [1, 2, 3]
    pair = (r, acc)
    return pair[0] + pair[1] + len(sizes) + x.shape[0]


def test_every_pass_and_the_pipeline_on_a_frontend_graph():
    from ember.jit.frontend.to_ir import compile_function
    from test_jit_passes import assert_well_formed
    rng = np.random.default_rng(8)
    calls = [[_t(rng, 2, 3), _t(rng, 2, 3), n] for n in (0, 2)]
    source, _ = compile_function(scripted_example)
    expected = [evaluate(ir.clone(source), list(c)) for c in calls]
    single = (passes.inline, eliminate_dead_code, fold_constants,
              eliminate_common_subexpressions, passes.constant_pooling, passes.peephole_optimize,
              passes.lower_simple_tuples, passes.unroll_loops)
    for fn in single:
        g = ir.clone(source)
        fn(g)
        assert_well_formed(g)
        for c, want in zip(calls, expected):
            _same(evaluate(g, list(c)), want)
    g = ir.clone(source)
    passes.insert_profile_nodes(g)
    _profiled_run(g, list(calls[1]))     # n = 2: the while loop runs, so its body is profiled
    for fn in (passes.specialize_types, fold_constants, passes.peephole_optimize,
               passes.lower_simple_tuples, passes.unroll_loops, eliminate_common_subexpressions,
               passes.constant_pooling, eliminate_dead_code, passes.remove_profile_nodes):
        fn(g)
        assert_well_formed(g)
    for c, want in zip(calls, expected):
        _same(evaluate(g, list(c)), want)
    # the for loop is unrolled, `r * 1`, `len(sizes)`, `x.shape[0]` and the tuple are gone
    assert count(g, prim.Loop) == 1 and count(g, prim.ListConstruct) == 0 and count(g, builtins.len) == 0
    assert count(g, prim.TupleConstruct) == 0 and count(g, "size") == 0
    assert count(nodes(g, prim.Loop)[0].blocks[0], operator.mul) == 0   # r * 1 with r : Float(2, 3)
