"""The script IR core (ember.jit.ir + the fx additions): blocks, scoping and lint, clone, erase,
inline_graph, walk, multi-output nodes, the prim table, types, and the reference evaluator
(checked against the same programs in plain Python)."""
import operator
import typing

import pytest

import ember
import ir_programs as P
from ember.jit import ir
from ember.jit.ir import prim
from ember.jit.ir.evaluate import evaluate
from ember.jit.ir.printer import format_graph
from ember.jit.ir.types import (AnyType, BoolType, DictType, FloatType, IntType, ListType, ModuleType, NoneType,
                                NumberType, OptionalType, StrType, TensorType, TupleType, from_annotation,
                                parse_type, type_of_value)

T = TensorType()


def _if_graph():
    g = ir.new_graph()
    c = g.placeholder("c", type_expr=BoolType())
    x = g.placeholder("x", type_expr=T)
    node, (y,) = ir.add_if(g, c, [T])
    then_b, else_b = node.blocks
    ir.set_block_returns(then_b, [ir.call(then_b, ember.neg, (x,), type_=T)])
    ir.set_block_returns(else_b, [x])
    g.output(y)
    return g, node, x


def test_blocks_have_parents_and_see_enclosing_values():
    g, node, x = _if_graph()
    then_b, else_b = node.blocks
    assert then_b.parent_node is node and else_b.parent_node is node
    assert g.encloses(then_b) and not then_b.encloses(g) and not then_b.encloses(else_b)
    assert ir.root_graph(then_b) is g
    neg = [n for n in then_b.nodes if n.op == "call_function"][0]
    assert neg in x.users    # a block's node is a user of the outer value
    g.lint()


def test_values_of_a_sibling_block_are_rejected():
    g, node, _ = _if_graph()
    then_b, else_b = node.blocks
    inner = [n for n in then_b.nodes if n.op == "call_function"][0]
    with pytest.raises(RuntimeError, match="another graph"):
        else_b.call_function(ember.neg, (inner,))
    with pytest.raises(RuntimeError, match="another graph"):
        g.call_function(ember.neg, (inner,))   # an outer graph cannot read a block's value


def test_lint_names_the_bad_node():
    g, node, x = _if_graph()
    then_b = node.blocks[0]
    then_b.parent_node = None    # the block no longer sits inside g: its read of x dangles
    with pytest.raises(RuntimeError, match=r"Graph\.lint: node x .*dangling user neg"):
        g.lint()
    then_b.parent_node = node
    g.lint()


def test_names_are_unique_across_blocks():
    g, _, _ = P.if_loop()
    names = [n.name for n in ir.walk(g)]
    assert len(names) == len(set(names))


def test_walk_is_program_order_depth_first():
    g, node, _ = _if_graph()
    ops = [(n.op, getattr(n.target, "name", n.target)) for n in ir.walk(g)]
    i = ops.index(("call_function", "prim::If"))
    assert ops[i + 1] == ("call_function", ember.neg) and ops[i + 2][0] == "output"


def test_output_getitems_and_unpack():
    g, _, _ = P.if_loop()
    loops = [n for n in g.nodes if n.target is prim.Loop]
    items = ir.output_getitems(loops[1])
    outs = [items[i][0] for i in sorted(items)]
    assert [o.args[1] for o in outs] == [0, 1]
    assert all(o.meta["output_of"] is loops[1] for o in outs)
    assert loops[1].type == TupleType((T, IntType()))


def test_erase_node_erases_blocks_and_their_uses():
    g, node, x = _if_graph()
    ((y,),) = ir.output_getitems(node).values()
    out = ir.output_node(g)
    out.args = (x,)
    g.erase_node(y)
    g.erase_node(node)
    assert [u for u in x.users if u.op != "output"] == []
    g.lint()
    assert "prim::If" not in format_graph(g)


def test_erase_node_with_users_fails():
    g, node, x = _if_graph()
    with pytest.raises(RuntimeError, match="still had"):
        g.erase_node(x)


def test_clone_is_deep_and_prints_the_same():
    g, _, _ = P.if_loop()
    value_map = {}
    c = ir.clone(g, value_map)
    c.lint()
    assert format_graph(c) == format_graph(g)
    assert all(n not in set(ir.walk(g)) for n in ir.walk(c))
    loop_old = [n for n in g.nodes if n.target is prim.Loop][0]
    loop_new = value_map[loop_old]
    assert loop_new.blocks[0].parent_node is loop_new and loop_new.blocks[0] is not loop_old.blocks[0]
    x = ember.randn(4)
    assert all(ember.equal(a, b) if isinstance(a, ember.Tensor) else a == b
               for a, b in zip(evaluate(c, [x, 3]), evaluate(g, [x, 3])))


def test_inline_graph_copies_blocks():
    callee, _, eager = P.if_loop()
    g = ir.new_graph()
    x = g.placeholder("x", type_expr=T)
    n = ir.constant(g, 2)
    placeholder_out = g.output(None)
    result = ir.inline_graph(g, placeholder_out, callee, [x, n])
    placeholder_out.args = (result,)
    g.lint()
    v = ember.randn(3)
    got, want = evaluate(g, [v]), eager(v, 2)
    assert ember.allclose(got[0], want[0]) and got[1] == want[1]
    with pytest.raises(RuntimeError, match="takes 2 inputs"):
        ir.inline_graph(g, placeholder_out, callee, [x])


@pytest.mark.parametrize("builder,inputs", [
    (P.seed, lambda: (ember.randn(3), ember.randn(3))),
    (P.if_loop, lambda: (ember.randn(4), 3)), (P.if_loop, lambda: (-ember.rand(4), 5)),
    (P.misc, lambda: (ember.randn(5), 1)), (P.raises, lambda: (ember.randn(2), 4)),
])
def test_evaluate_matches_python(builder, inputs):
    g, _, eager = builder()
    args = inputs()
    got, want = evaluate(g, list(args)), eager(*args)
    for a, b in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert ember.allclose(a, b) if isinstance(a, ember.Tensor) else a == b


def test_evaluate_raise_and_arity():
    g, _, _ = P.raises()
    with pytest.raises(ValueError, match="k must be positive"):
        evaluate(g, [ember.ones(2), 0])
    with pytest.raises(TypeError, match="takes 2 inputs"):
        evaluate(g, [ember.ones(2)])


def test_evaluate_module_graph_reads_attributes():
    g, _ = P.cell_graph()
    cell = P.Cell()
    x, h = ember.randn(3), ember.randn(3)
    assert ember.allclose(evaluate(g, [cell, x, h]), cell(x, h))


def test_prim_table():
    assert prim.by_name("prim::If") is prim.If
    assert prim.Constant.name == "prim::Constant" and prim.Constant.__name__ == "Constant"
    assert prim.is_prim(prim.Loop) and not prim.is_prim(ember.tanh)
    assert prim.ListConstruct.properties.pure and not prim.ListConstruct.properties.cse_safe
    assert prim.TupleConstruct.properties.cse_safe and not prim.RaiseException.properties.pure
    with pytest.raises(KeyError, match="prim::Nope"):
        prim.by_name("prim::Nope")
    with pytest.raises(NotImplementedError, match="prim::If"):
        prim.If(True)
    with pytest.raises(ValueError, match="expected 3"):
        prim.ListUnpack([1, 2], 3)
    assert len(prim.all_ops()) == len({op.name for op in prim.all_ops()})


@pytest.mark.parametrize("t", [
    T, IntType(), FloatType(), BoolType(), StrType(), NoneType(), NumberType(), AnyType(), ListType(T),
    TupleType((T, IntType())), TupleType(()), OptionalType(ListType(IntType())), DictType(StrType(), T),
    ModuleType("pkg.Mod"), ListType(TupleType((T, OptionalType(FloatType())))),
])
def test_types_print_and_parse_back(t):
    assert parse_type(str(t)) == t


def test_types_from_annotations_and_values():
    assert from_annotation(typing.Optional[typing.List[int]]) == OptionalType(ListType(IntType()))
    assert from_annotation("Tuple[Tensor, float]") == TupleType((T, FloatType()))
    assert from_annotation(typing.Dict[str, ember.Tensor]) == DictType(StrType(), T)
    with pytest.raises(ValueError, match="set"):
        from_annotation(set)
    assert type_of_value([1, 2]) == ListType(IntType())
    assert type_of_value((ember.ones(1), 2.0, None)) == TupleType((T, FloatType(), NoneType()))
    assert type_of_value(True) == BoolType()
    with pytest.raises(ValueError, match="empty list"):
        type_of_value([])
    assert IntType().is_subtype_of(OptionalType(IntType()))
    assert not IntType().is_subtype_of(FloatType())
    assert IntType().is_subtype_of(NumberType())


def test_constant_and_call_helpers():
    g = ir.new_graph()
    c = ir.constant(g, 1.5, loc=("f.py", 1, 0))
    assert c.target is prim.Constant and c.type == FloatType() and c.meta["loc"] == ("f.py", 1, 0)
    x = g.placeholder("x", type_expr=T)
    m = ir.call(g, "view", (x, -1), type_=T)
    f = ir.call(g, operator.add, (x, c), type_=T)
    assert m.op == "call_method" and f.op == "call_function"
    g.output(f)
    assert ir.output_node(g).args == (f,)
