"""Operators and conditions: ``a + b``, ``-a``, comparisons, ``and``/``or``/``not``, ``x if c else y``.

Conditions go through ``emit_cond``, which also returns the Optional refinements the condition
proves (``x is not None`` -> x is T in the true branch; ``apply_refinements`` binds them in a
branch); ``and``/``or`` short-circuit through prim::If as in TorchScript; conditions that are
constants fold at compile time. ``emit_if`` builds the two-block prim::If every construct shares.
"""
from __future__ import annotations

import ast
import builtins
import operator

from ember.fx.node import Node
from ember.jit.ir import add_block, call, prim, set_block_returns, unpack_outputs
from ember.jit.ir.types import AnyType, BoolType, DictType, ListType, NoneType, OptionalType, StrType, \
    TensorType, TupleType

from . import builtins as rules
from .state import is_constant

_OPERATORS = [   # (ast operator, operator function, how TorchScript's messages write it)
    (ast.Add, operator.add, "+"), (ast.Sub, operator.sub, "-"), (ast.Mult, operator.mul, "*"),
    (ast.Div, operator.truediv, "/"), (ast.FloorDiv, operator.floordiv, "//"), (ast.Mod, operator.mod, "%"),
    (ast.Pow, operator.pow, "**"), (ast.MatMult, operator.matmul, "@"), (ast.BitAnd, operator.and_, "&"),
    (ast.BitOr, operator.or_, "|"), (ast.BitXor, operator.xor, "^"), (ast.LShift, operator.lshift, "<<"),
    (ast.RShift, operator.rshift, ">>"),
    (ast.Lt, operator.lt, "<"), (ast.LtE, operator.le, "<="), (ast.Gt, operator.gt, ">"),
    (ast.GtE, operator.ge, ">="), (ast.Eq, operator.eq, "=="), (ast.NotEq, operator.ne, "!="),
]
BINOPS = {k: fn for k, fn, _ in _OPERATORS if not issubclass(k, ast.cmpop)}
CMPOPS = {k: fn for k, fn, _ in _OPERATORS if issubclass(k, ast.cmpop)}
_SYMBOL = {fn: symbol for _, fn, symbol in _OPERATORS}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}


# -- operators -----------------------------------------------------------------------------------
def compile_binop(st, e):
    op = BINOPS.get(type(e.op))
    return binary(st, op, st.value(e.left), st.value(e.right), e)


def binary(st, op, a: Node, b: Node, e) -> Node:
    t = rules.binary_type(op, a.type, b.type)
    if t is None:
        raise st.error(e, f"Arguments for call are not valid: unsupported operand types for "
                          f"{_SYMBOL.get(op, op.__name__)}: '{rules.py_type_str(a.type)}' and "
                          f"'{rules.py_type_str(b.type)}' (script supports Tensor with Tensor or number, "
                          f"number with number, str + str and list + list)")
    return st.emit(op, (a, b), e, t)


def compile_unaryop(st, e):
    if isinstance(e.op, ast.Not):
        v = to_bool(st, st.value(e.operand), e.operand)
        return _not(st, v, e)
    op = _UNARY[type(e.op)]
    v = st.value(e.operand)
    if is_constant(v) and op is operator.neg and isinstance(v.args[0], (int, float)) \
            and not isinstance(v.args[0], bool):
        return st.const(-v.args[0], e)
    t = rules.unary_type(op, v.type)
    if t is None:
        raise st.error(e, f"unary {op.__name__} is not defined for '{rules.py_type_str(v.type)}'")
    return st.emit(op, (v,), e, t)


def _not(st, v: Node, e) -> Node:
    return st.const(not v.args[0], e) if is_constant(v) else st.emit(operator.not_, (v,), e, rules.BOOL)


def compile_boolop(st, e):
    # a value: Python's and/or return an operand, script's return a bool -- the same only
    # when every operand is a bool (checked by value_check)
    return emit_cond(st, e, value_check=True)[0]


def _check_bool_operand(st, v: Node, e):
    if not isinstance(v.type, BoolType):
        raise st.error(e, f"an 'and'/'or' used as a value needs bool operands in script (Python would return "
                          f"this '{rules.py_type_str(v.type)}' operand itself); compare it explicitly or "
                          f"use it as a condition")


def compile_compare(st, e):
    if len(e.ops) == 1:   # a value: Tensor comparisons stay Tensors (masks)
        return compare(st, type(e.ops[0]), st.value(e.left), st.value(e.comparators[0]), e)[0]
    return emit_cond(st, e)[0]


def compare(st, op, left: Node, right: Node, e):
    """One comparison; returns (bool/Tensor node, true refinements, false refinements)."""
    if op in (ast.Is, ast.IsNot):
        return _identity(st, op is ast.Is, left, right, e)
    if op in (ast.In, ast.NotIn):
        rt = right.type
        if not isinstance(rt, (ListType, DictType, StrType, TupleType, TensorType)):
            raise st.error(e, f"'in' is not supported for '{rules.py_type_str(rt)}'")
        res = st.emit(operator.contains, (right, left), e, rules.BOOL)
        if op is ast.NotIn:
            res = st.emit(operator.not_, (res,), e, rules.BOOL)
        return res, {}, {}
    return binary(st, CMPOPS[op], left, right, e), {}, {}


def _identity(st, is_: bool, left: Node, right: Node, e):
    """``a is None`` / ``a is not None``: folded when the type decides it, else a runtime test
    plus the Optional refinement of a variable."""
    none_side = right if isinstance(right.type, NoneType) else left
    other = right if none_side is left else left
    test = operator.is_ if is_ else operator.is_not
    if not isinstance(none_side.type, NoneType):
        return st.emit(test, (left, right), e, rules.BOOL), {}, {}
    if isinstance(other.type, NoneType):
        return st.const(is_, e), {}, {}
    if not isinstance(other.type, (OptionalType, AnyType)):
        return st.const(not is_, e), {}, {}
    res = st.emit(test, (other, none_side), e, rules.BOOL)
    name = _var_name_of(st, other, e)
    refine = {} if name is None else {name: other.type.elem}
    return (res, {}, refine) if is_ else (res, refine, {})


def _var_name_of(st, node, e):
    """The variable written in the comparison `e` that holds `node` (refinement applies to names)."""
    if isinstance(e, ast.Compare) and len(e.ops) == 1:
        for side in (e.left, e.comparators[0]):
            if isinstance(side, ast.Name) and st.env.get(side.id) is node:
                return side.id
    return None


# -- conditions ----------------------------------------------------------------------------------
def to_bool(st, v: Node, e) -> Node:
    """Convert a condition to bool (``aten::Bool`` of a Tensor, truthiness of numbers)."""
    t = v.type
    if isinstance(t, BoolType):
        return v
    if isinstance(t, (OptionalType, NoneType)):
        raise st.error(e, f"Could not convert a value of type '{rules.py_type_str(t)}' to bool: "
                          f"test Optional values with `is None` / `is not None`")
    if is_constant(v) and isinstance(v.args[0], (int, float, str)):
        return st.const(bool(v.args[0]), e)
    return st.emit(builtins.bool, (v,), e, rules.BOOL)


def emit_cond(st, e, value_check=False):
    """Emit a condition; returns (bool node, refinements if true, refinements if false).
    value_check: `e` is an operand of an and/or used as a value (it must be a bool)."""
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
        v, t, f = emit_cond(st, e.operand)
        return _not(st, v, e), f, t
    if isinstance(e, ast.BoolOp):
        return _bool_op(st, isinstance(e.op, ast.And), e.values, e, value_check)
    if not isinstance(e, ast.Compare):
        v = st.value(e)
        if value_check:
            _check_bool_operand(st, v, e)
        return to_bool(st, v, e), {}, {}
    left = st.value(e.left)
    if len(e.ops) == 1:
        res, t, f = compare(st, type(e.ops[0]), left, st.value(e.comparators[0]), e)
        if value_check:
            _check_bool_operand(st, res, e)
        return to_bool(st, res, e), t, f
    # chained a < b < c: (a < b) and (b < c), each operand evaluated once
    values = [left] + [st.value(c) for c in e.comparators]
    parts = [compare(st, type(op), values[i], values[i + 1], e)[0] for i, op in enumerate(e.ops)]
    if value_check:
        for p in parts:
            _check_bool_operand(st, p, e)
    result = to_bool(st, parts[0], e)
    for p in parts[1:]:
        result = st.emit(operator.and_, (result, to_bool(st, p, e)), e, rules.BOOL)
    return result, {}, {}


def _bool_op(st, is_and: bool, values: list, e, value_check=False):
    """Short-circuit ``and``/``or`` of conditions through prim::If (value_check: see emit_cond)."""
    first, t1, f1 = emit_cond(st, values[0], value_check)
    first = to_bool(st, first, values[0])
    if len(values) == 1:
        return first, t1, f1
    if is_constant(first):
        if bool(first.args[0]) == is_and:   # True and ... / False or ...
            return _bool_op(st, is_and, values[1:], e, value_check)
        return first, {}, {}
    node = call(st.graph, prim.If, (first,), loc=st.loc(e))
    then_b, else_b = add_block(node), add_block(node)
    rest_b, short_b = (then_b, else_b) if is_and else (else_b, then_b)
    with st.inside(rest_b, dict(st.env)):
        apply_refinements(st, t1 if is_and else f1, e)
        rest, t2, f2 = _bool_op(st, is_and, values[1:], e, value_check)
        set_block_returns(rest_b, [to_bool(st, rest, e)])
    with st.inside(short_b):
        set_block_returns(short_b, [st.const(not is_and, e)])
    (out,) = unpack_outputs(node, [rules.BOOL])
    return (out, {**t1, **t2}, {}) if is_and else (out, {}, {**f1, **f2})


def apply_refinements(st, refinements: dict, e):
    """Bind refined variables to ``prim::unchecked_cast`` values in the current block."""
    for name, t in refinements.items():
        orig = st.env.get(name)
        if not isinstance(orig, Node):
            continue
        cast = st.emit(prim.unchecked_cast, (orig,), e, t)
        cast.meta["refined_from"] = orig
        cast.meta["jit_name"] = name
        st.env[name] = cast


def emit_if(st, cond: Node, e, branches, refinements=({}, {})):
    """A prim::If on `cond`: each of the two `branches` (functions of no arguments) runs in its
    block on a copy of the variables, refined by that branch's `refinements`. Returns (node,
    blocks, what each branch returned); the caller closes it with ``close_if``."""
    node = call(st.graph, prim.If, (cond,), loc=st.loc(e))
    blocks = (add_block(node), add_block(node))
    results = []
    for block, branch, refined in zip(blocks, branches, refinements):
        with st.inside(block, dict(st.env)):
            apply_refinements(st, refined, e)
            results.append(branch())
    return node, blocks, results


def close_if(node: Node, returns: list, types: list) -> list:
    """Set what each block of an If returns (`returns`: one list per block); its output values."""
    for block, values in zip(node.blocks, returns):
        set_block_returns(block, values)
    return unpack_outputs(node, types)


def compile_ifexp(st, e):
    cond, tr, fr = emit_cond(st, e.test)
    if is_constant(cond):
        return st.value(e.body if cond.args[0] else e.orelse)
    node, _, results = emit_if(st, cond, e, (lambda: st.value(e.body), lambda: st.value(e.orelse)), (tr, fr))
    t = rules.unify(results[0].type, results[1].type)
    if t is None:
        raise st.error(e, f"if-expression's true branch has type {rules.py_type_str(results[0].type)} "
                          f"but false branch has type {rules.py_type_str(results[1].type)}")
    return close_if(node, [[r] for r in results], [t])[0]
