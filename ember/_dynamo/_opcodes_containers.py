"""Opcode handlers that build, fill and unpack containers: tuples, lists, dicts, sets and strings (BUILD_*,
LIST_APPEND/EXTEND, MAP_ADD, DICT_UPDATE/MERGE, SET_ADD/UPDATE, FORMAT_VALUE, LIST_TO_TUPLE,
UNPACK_SEQUENCE/EX), plus 3.12's LOAD_SUPER_ATTR, registered into symbolic_convert.HANDLERS.

Kept apart from symbolic_convert.py so that file stays about the translator loop; symbolic_convert calls
``register`` to put them in its HANDLERS table.
"""
from __future__ import annotations

from .exc import unimplemented
from .variables import ConstantVariable, ConstDictVariable, ListVariable, TupleVariable
from .variables.sets import SetVariable


def _build_tuple(tx, inst):
    tx.push(TupleVariable(tx.popn(inst.arg)))


def _build_list(tx, inst):
    tx.push(ListVariable(tx.popn(inst.arg)))


def _build_map(tx, inst):
    items = tx.popn(2 * inst.arg)
    tx.push(ConstDictVariable({items[i].as_python_constant(): items[i + 1] for i in range(0, len(items), 2)}))


def _build_const_key_map(tx, inst):
    keys = tx.pop().as_python_constant()
    values = tx.popn(inst.arg)
    tx.push(ConstDictVariable(dict(zip(keys, values))))


def _build_string(tx, inst):
    parts = tx.popn(inst.arg)
    tx.push(ConstantVariable("".join(p.as_python_constant() for p in parts)))


def _format_value(tx, inst):
    spec = tx.pop().as_python_constant() if inst.arg & 0x04 else ""
    value = tx.pop().as_python_constant()
    conv = {1: str, 2: repr, 3: ascii}.get(inst.arg & 0x03)
    tx.push(ConstantVariable(format(conv(value) if conv else value, spec)))


def _add_to_container(method):
    """Handler for LIST_APPEND, LIST_EXTEND, SET_ADD, SET_UPDATE, DICT_UPDATE/MERGE: pop a value and call
    ``method`` with it on the container that sits inst.arg deep below it (comprehensions build their
    result that way; {*xs, y} is BUILD_SET 0 then SET_UPDATE with the iterable)."""
    def handler(tx, inst):
        value = tx.pop()
        tx.stack[-inst.arg].call_method(tx, method, [value], {})
    return handler


def _map_add(tx, inst):
    value = tx.pop()
    key = tx.pop()
    tx.stack[-inst.arg].call_method(tx, "__setitem__", [key, value], {})


def _unpack_sequence(tx, inst):
    items = tx.pop().unpack_var_sequence(tx)
    if len(items) != inst.arg:
        unimplemented(f"ValueError: cannot unpack {len(items)} values into {inst.arg}")
    for item in reversed(items):
        tx.push(item)


def _unpack_ex(tx, inst):
    before, after = inst.arg & 0xFF, inst.arg >> 8
    items = tx.pop().unpack_var_sequence(tx)
    if len(items) < before + after:
        unimplemented("ValueError: not enough values to unpack")
    middle = ListVariable(items[before:len(items) - after])
    for item in reversed([*items[:before], middle, *items[len(items) - after:]]):
        tx.push(item)


def _list_to_tuple(tx, inst):
    tx.push(TupleVariable(tx.pop().unpack_var_sequence(tx)))


def _build_set(tx, inst):
    tx.push(SetVariable(tx.popn(inst.arg)))


def _load_super_attr(tx, inst):
    # 3.12: `super().name` / `super(cls, obj).name` in one opcode; stack: super, class, self (top)
    from .variables import NullVariable
    from .variables.user_objects import SuperVariable
    obj = tx.pop()
    cls = tx.pop()
    tx.pop()   # the global `super` itself
    attr = SuperVariable(cls.as_python_constant(), obj).var_getattr(tx, inst.argval)
    if inst.arg & 1:   # method form: NULL + the (already bound) method
        tx.push(NullVariable())
    tx.push(attr)


def register(handlers: dict) -> None:
    """Add the container opcodes and LOAD_SUPER_ATTR to a translator's handler table."""
    handlers.update({
        "BUILD_TUPLE": _build_tuple, "BUILD_LIST": _build_list, "BUILD_SET": _build_set, "BUILD_MAP": _build_map,
        "BUILD_CONST_KEY_MAP": _build_const_key_map, "BUILD_STRING": _build_string, "FORMAT_VALUE": _format_value,
        "LIST_APPEND": _add_to_container("append"), "LIST_EXTEND": _add_to_container("extend"),
        "SET_ADD": _add_to_container("add"), "SET_UPDATE": _add_to_container("update"),
        "DICT_UPDATE": _add_to_container("update"), "DICT_MERGE": _add_to_container("update"), "MAP_ADD": _map_add,
        "UNPACK_SEQUENCE": _unpack_sequence, "UNPACK_EX": _unpack_ex, "LIST_TO_TUPLE": _list_to_tuple,
        "LOAD_SUPER_ATTR": _load_super_attr,
    })
