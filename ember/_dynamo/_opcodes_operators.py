"""Opcode handlers for Python operators: BINARY_OP, the UNARY_* ops, comparisons (COMPARE_OP, IS_OP,
CONTAINS_OP), subscripts and slices, and 3.12's CALL_INTRINSIC_1.

Every operator is routed through BuiltinVariable(<operator function>) or the operand's call_method, so
tensors become graph nodes and constants fold in one place (variables/builtins.py). Kept apart from
symbolic_convert.py so that file stays about the translator loop; symbolic_convert calls ``register``.
"""
from __future__ import annotations

import dis
import operator

from .exc import unimplemented
from .variables import BuiltinVariable, ConstantVariable, SliceVariable, TupleVariable

_BINARY_OPS = {"+": operator.add, "&": operator.and_, "//": operator.floordiv, "<<": operator.lshift,
               "@": operator.matmul, "*": operator.mul, "%": operator.mod, "|": operator.or_, "**": operator.pow,
               ">>": operator.rshift, "-": operator.sub, "/": operator.truediv, "^": operator.xor,
               "+=": operator.iadd, "&=": operator.iand, "//=": operator.ifloordiv, "<<=": operator.ilshift,
               "@=": operator.imatmul, "*=": operator.imul, "%=": operator.imod, "|=": operator.ior,
               "**=": operator.ipow, ">>=": operator.irshift, "-=": operator.isub, "/=": operator.itruediv,
               "^=": operator.ixor}
_NB_OPS = [_BINARY_OPS[symbol] for _, symbol in dis._nb_ops]
_COMPARE_OPS = {"<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne, ">": operator.gt,
                ">=": operator.ge}


def _call_intrinsic_1(tx, inst):
    if inst.arg == 6:    # INTRINSIC_LIST_TO_TUPLE
        tx.push(TupleVariable(tx.pop().unpack_var_sequence(tx)))
    elif inst.arg == 5:  # INTRINSIC_UNARY_POSITIVE
        tx.push(BuiltinVariable(operator.pos).call_function(tx, [tx.pop()], {}))
    else:
        unimplemented(f"CALL_INTRINSIC_1 {inst.argval}")


def _binary_op(tx, inst):
    b = tx.pop()
    a = tx.pop()
    tx.push(BuiltinVariable(_NB_OPS[inst.arg]).call_function(tx, [a, b], {}))


def _unary(op):
    """Handler for a UNARY_* opcode: apply ``op`` to the top of the stack through BuiltinVariable."""
    def handler(tx, inst):
        tx.push(BuiltinVariable(op).call_function(tx, [tx.pop()], {}))
    return handler


def _unary_not(tx, inst):
    tx.push(ConstantVariable(not tx.truthy(tx.pop())))


def _compare_op(tx, inst):
    b = tx.pop()
    a = tx.pop()
    tx.push(BuiltinVariable(_COMPARE_OPS[inst.argval]).call_function(tx, [a, b], {}))


def _is_op(tx, inst):
    b = tx.pop()
    a = tx.pop()
    tx.push(BuiltinVariable(operator.is_not if inst.arg else operator.is_).call_function(tx, [a, b], {}))


def _contains_op(tx, inst):
    container = tx.pop()
    item = tx.pop()
    result = container.call_method(tx, "__contains__", [item], {})
    tx.push(ConstantVariable(not result.as_python_constant()) if inst.arg else result)


def _binary_subscr(tx, inst):
    index = tx.pop()
    obj = tx.pop()
    tx.push(obj.call_method(tx, "__getitem__", [index], {}))


def _store_subscr(tx, inst):
    key = tx.pop()
    obj = tx.pop()
    value = tx.pop()
    obj.call_method(tx, "__setitem__", [key, value], {})


def _delete_subscr(tx, inst):
    key = tx.pop()
    obj = tx.pop()
    obj.call_method(tx, "__delitem__", [key], {})


def _make_slice(items):
    if all(i.is_python_constant() for i in items):
        return ConstantVariable(slice(*[i.as_python_constant() for i in items]))
    return SliceVariable(items)


def _build_slice(tx, inst):
    tx.push(_make_slice(tx.popn(inst.arg)))


def _binary_slice(tx, inst):
    start, stop = tx.popn(2)
    obj = tx.pop()
    tx.push(obj.call_method(tx, "__getitem__", [_make_slice([start, stop])], {}))


def _store_slice(tx, inst):
    start, stop = tx.popn(2)
    obj = tx.pop()
    value = tx.pop()
    obj.call_method(tx, "__setitem__", [_make_slice([start, stop]), value], {})


def register(handlers: dict) -> None:
    """Add the operator, comparison, subscript and slice opcodes to a translator's handler table."""
    handlers.update({
        "CALL_INTRINSIC_1": _call_intrinsic_1, "BINARY_OP": _binary_op,
        "UNARY_NEGATIVE": _unary(operator.neg), "UNARY_POSITIVE": _unary(operator.pos),
        "UNARY_INVERT": _unary(operator.invert), "UNARY_NOT": _unary_not, "COMPARE_OP": _compare_op,
        "IS_OP": _is_op, "CONTAINS_OP": _contains_op, "BINARY_SUBSCR": _binary_subscr,
        "STORE_SUBSCR": _store_subscr, "DELETE_SUBSCR": _delete_subscr, "BUILD_SLICE": _build_slice,
        "BINARY_SLICE": _binary_slice, "STORE_SLICE": _store_slice,
    })
