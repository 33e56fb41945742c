"""ember.fx's code generator on graphs with blocks (prim::If / prim::Loop, jit.script's IR).

Every generated function is run and compared with ``ember.jit.ir.evaluate`` (the reference walker
of block graphs) and, where the program is a plain Python function, with that function itself.
Both ways the generator is used are covered: GraphModule's ``forward(self, ...)`` (values freed
after their last use) and the jit's positional plans (``ember.jit.executor.codegen``).
"""
from __future__ import annotations

import operator
import re

import numpy as np
import pytest

import ember
from ember.fx._codegen import CodegenOptions, generate_python_code, load_function
from ember.jit import ir
from ember.jit.executor import GraphExecutor, codegen
from ember.jit.ir import prim
from ember.jit.ir.evaluate import evaluate
from ember.jit.ir.types import BoolType, IntType, NoneType, TensorType, TupleType

T = TensorType()
I = IntType()


def _run_all(graph, *inputs):
    """The graph's value through fx's forward (freeing values), the jit plan, and evaluate: all equal."""
    want = evaluate(graph, list(inputs))
    code = generate_python_code(graph)
    forward = load_function(code, "<test forward>")
    got_fx = forward(None, *inputs)
    got_plan = codegen.generate(graph)(*inputs)
    for got in (got_fx, got_plan):
        _same(got, want)
    return want, code.src


def _same(a, b):
    if isinstance(a, ember.Tensor):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a == b and type(a) is type(b)


def _swap_loop():
    """a, b = x, 1; for i in range(n): a, b = b, a + i  (parallel update of carried values)"""
    g = ir.new_graph()
    x, n = g.placeholder("x", type_expr=I), g.placeholder("n", type_expr=I)
    loop, (af, bf) = ir.add_loop(g, n, ir.constant(g, True), [x, ir.constant(g, 1)], [I, I])
    body = loop.blocks[0]
    i, a, b = ir.block_params(body)
    ir.set_block_returns(body, [ir.constant(body, True), b, ir.call(body, operator.add, (a, i), type_=I)])
    g.output(ir.call(g, prim.TupleConstruct, (af, bf), type_=TupleType((I, I))))
    return g


def _swap_eager(x, n):
    a, b = x, 1
    for i in range(n):
        a, b = b, a + i
    return a, b


@pytest.mark.parametrize("n", [-3, 0, 1, 2, 7])
def test_for_loop_updates_carried_values_in_parallel(n):
    got, src = _run_all(_swap_loop(), 5, n)
    assert got == _swap_eager(5, n)
    assert "for i in range(n):" in src


def _while_loop():
    """s = x; k = 0; while s < limit and k < max: s = s * 2 + k + i; k += 1 (i: the trip count; the
    start condition from the input)"""
    g = ir.new_graph()
    x, limit, cap = (g.placeholder(name, type_expr=I) for name in ("x", "limit", "cap"))
    start = ir.call(g, operator.lt, (x, limit), type_=BoolType())
    loop, (sf, kf) = ir.add_loop(g, cap, start, [x, ir.constant(g, 0)], [I, I])
    body = loop.blocks[0]
    i, s, k = ir.block_params(body)
    s2 = ir.call(body, operator.add, (ir.call(body, operator.mul, (s, 2), type_=I), k), type_=I)
    s2 = ir.call(body, operator.add, (s2, i), type_=I)
    k2 = ir.call(body, operator.add, (k, 1), type_=I)
    more = ir.call(body, operator.lt, (s2, limit), type_=BoolType())
    ir.set_block_returns(body, [more, s2, k2])
    g.output(ir.call(g, prim.TupleConstruct, (sf, kf), type_=TupleType((I, I))))
    return g


def _while_eager(x, limit, cap):
    s, k, i = x, 0, 0
    while s < limit and k < cap:
        s, k, i = s * 2 + k + i, k + 1, i + 1
    return s, k


@pytest.mark.parametrize("x,limit,cap", [(1, 100, 50), (1, 100, 3), (500, 100, 50), (1, 100, 0), (-4, 0, 9)])
def test_while_loop_tests_its_condition_and_trip_count(x, limit, cap):
    got, src = _run_all(_while_loop(), x, limit, cap)
    assert got == _while_eager(x, limit, cap)
    assert "while " in src


def _nested():
    """Values of the outer graph read inside nested blocks and after them (so freed only after the
    loop), an If in a loop reading the outer trip count, an unused If output."""
    g = ir.new_graph()
    x, n = g.placeholder("x", type_expr=T), g.placeholder("n", type_expr=I)
    scale = ir.call(g, operator.mul, (x, 0.5), type_=T)       # read inside the loop and after it
    outer, (hf,) = ir.add_loop(g, n, ir.constant(g, True), [x], [T])
    ob = outer.blocks[0]
    i, h = ir.block_params(ob)
    inner, (hi,) = ir.add_loop(ob, ir.constant(ob, 2), ir.constant(ob, True), [h], [T])
    ib = inner.blocks[0]
    j, hj = ir.block_params(ib)
    odd = ir.call(ib, operator.eq, (ir.call(ib, operator.mod, (ir.call(ib, operator.add, (i, j), type_=I), 2),
                                            type_=I), 1), type_=BoolType())
    node, (hn, unused) = ir.add_if(ib, odd, [T, I])
    tb, eb = node.blocks
    ir.set_block_returns(tb, [ir.call(tb, operator.add, (hj, scale), type_=T), i])
    ir.set_block_returns(eb, [ir.call(eb, ember.tanh, (hj,), type_=T), j])
    ir.set_block_returns(ib, [ir.constant(ib, True), hn])
    ir.set_block_returns(ob, [ir.constant(ob, True), hi])
    g.output(ir.call(g, operator.sub, (hf, scale), type_=T))
    return g


def _nested_eager(x, n):
    scale = x * 0.5
    h = x
    for i in range(n):
        for j in range(2):
            h = h + scale if (i + j) % 2 == 1 else ember.tanh(h)
    return h - scale


@pytest.mark.parametrize("n", [0, 1, 3])
def test_nested_blocks_read_enclosing_values(n):
    x = ember.from_numpy(np.linspace(-1, 1, 5).astype(np.float32))
    g = _nested()
    got, src = _run_all(g, x, n)
    _same(got, _nested_eager(x, n))
    # `scale` is read in the loop: freed after the loop statement, never inside it; `x` is freed
    # right after the loop statement (its last reader)
    scale = next(node.name for node in g.nodes if node.target is operator.mul)
    loop = src.split("for i in range(n):", 1)[1].split("\n    getitem", 1)[0]
    assert f"{scale} = None" not in loop and f"{scale} = None" in src
    assert re.search(r"\n    (\w+ = )*x = None\n", src)


def test_if_read_as_a_whole_tuple_and_empty_branches():
    g = ir.new_graph()
    c, x = g.placeholder("c", type_expr=BoolType()), g.placeholder("x", type_expr=I)
    node, (a, _) = ir.add_if(g, c, [I, I])
    tb, eb = node.blocks
    ir.set_block_returns(tb, [x, ir.call(tb, operator.mul, (x, 3), type_=I)])
    ir.set_block_returns(eb, [ir.constant(eb, -1), x])
    second = ir.call(g, prim.TupleIndex, (node, 1), type_=I)    # reads the If's tuple itself
    empty, _ = ir.add_if(g, c, [])                              # nothing in either branch
    for block in empty.blocks:
        ir.set_block_returns(block, [])
    g.output(ir.call(g, prim.TupleConstruct, (a, second), type_=TupleType((I, I))))
    for flag in (True, False):
        got, src = _run_all(g, flag, 4)
        assert got == ((4, 12) if flag else (-1, 4))
    assert "pass" in src


def test_constants_keep_their_meaning_in_operator_text():
    """Inlined constants next to infix operators: (-2) ** n is not -(2 ** n); methods of literals."""
    g = ir.new_graph()
    n = g.placeholder("n", type_expr=I)
    power = ir.call(g, operator.pow, (ir.constant(g, -2), n), type_=I)
    bits = ir.call(g, "bit_length", (ir.constant(g, 5),), type_=I)
    neg = ir.call(g, operator.neg, (ir.constant(g, -3),), type_=I)
    g.output(ir.call(g, prim.TupleConstruct, (power, bits, neg), type_=TupleType((I, I, I))))
    for k in (2, 3):
        got, _ = _run_all(g, k)
        assert got == ((-2) ** k, (5).bit_length(), 3)


def test_raise_inside_a_loop_names_the_node():
    g = ir.new_graph()
    x, n = g.placeholder("x", type_expr=T), g.placeholder("n", type_expr=I)
    loop, (xf,) = ir.add_loop(g, n, ir.constant(g, True), [x], [T])
    body = loop.blocks[0]
    i, xc = ir.block_params(body)
    too_far = ir.call(body, operator.gt, (i, 2), type_=BoolType())
    node, _ = ir.add_if(body, too_far, [])
    tb, eb = node.blocks
    ir.call(tb, prim.RaiseException, ("i too big", "ValueError"), type_=NoneType())
    ir.set_block_returns(tb, [])
    ir.set_block_returns(eb, [])
    ir.set_block_returns(body, [ir.constant(body, True), ir.call(body, operator.add, (xc, 1), type_=T)])
    g.output(xf)
    x0 = ember.zeros(2)
    _same(codegen.generate(g)(x0, 3), x0 + 3)
    with pytest.raises(ValueError, match="i too big") as info:
        codegen.generate(g)(x0, 4)
    assert any("RaiseException" in note for note in getattr(info.value, "__notes__", []))


def test_plan_names_never_collide_with_the_generators_own(monkeypatch):
    """Inputs named like the names generated code uses (TLS, _k, _table, _op, a W next to a w)."""
    from ember.jit.executor import config
    monkeypatch.setattr(config, "fusion_enabled", False)    # direct operator calls, not one fused kernel
    g = ir.new_graph()
    names = ["TLS", "_k", "_table", "_op", "W", "w", "ember"]
    xs = [g.placeholder(n, type_expr=T) for n in names]
    acc = xs[0]
    for x in xs[1:]:
        acc = ir.call(g, operator.add, (ir.call(g, ember.tanh, (acc,), type_=T), x), type_=T)
    g.output(acc)
    rng = np.random.default_rng(0)
    inputs = [ember.from_numpy(rng.standard_normal(3).astype(np.float32)) for _ in names]
    want = inputs[0]
    for x in inputs[1:]:
        want = ember.tanh(want) + x
    ex = GraphExecutor(g)
    for _ in range(3):   # the optimised plan has direct operator calls
        _same(ex.run(*inputs), want)
    assert "TLS" in ex.debug_state()["plans"][next(iter(ex.debug_state()["plans"]))].source
    _same(codegen.generate(g, direct=True)(*inputs), want)


def test_graph_module_runs_a_block_graph():
    g = _swap_loop()
    gm = ember.fx.GraphModule(ember.nn.Module(), g)
    assert "for i in range(n):" in gm.code
    assert gm(5, 4) == _swap_eager(5, 4)


def test_flat_graph_text_is_unchanged_by_the_options():
    """The plan options change only the signature and freeing, not how a node is written."""
    g = ember.fx.Graph()
    a, b = g.placeholder("a"), g.placeholder("b")
    g.output(g.call_function(operator.add, (g.call_function(operator.mul, (a, b)), a)))
    default = generate_python_code(g).src
    plan = generate_python_code(g, options=CodegenOptions(fn_name="f", positional_inputs=True,
                                                          free_values=False)).src
    assert "def forward(self, a, b):" in default and "mul = a * b;  b = None" in default
    assert "def f(a, b):" in plan and "mul = a * b\n" in plan
