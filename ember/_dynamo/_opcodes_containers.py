"""Opcode handlers for sets (BUILD_SET, SET_ADD, SET_UPDATE) and 3.12's LOAD_SUPER_ATTR, registered into
symbolic_convert.HANDLERS.

Kept apart from symbolic_convert.py so that file stays about the translator loop; importing this module
(symbolic_convert does, at its end) is what registers the handlers.
"""
from __future__ import annotations

from .variables.sets import SetVariable


def _build_set(tx, inst):
    tx.push(SetVariable(tx.popn(inst.arg)))


def _set_add(tx, inst):
    # {x for x in xs}: the set sits inst.arg deep below the pushed value
    value = tx.pop()
    tx.stack[-inst.arg].call_method(tx, "add", [value], {})


def _set_update(tx, inst):
    # {*xs, y}: BUILD_SET 0 then SET_UPDATE with the iterable
    value = tx.pop()
    tx.stack[-inst.arg].call_method(tx, "update", [value], {})


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
    """Add the set opcodes and LOAD_SUPER_ATTR to a translator's handler table."""
    handlers["BUILD_SET"] = _build_set
    handlers["SET_ADD"] = _set_add
    handlers["SET_UPDATE"] = _set_update
    handlers["LOAD_SUPER_ATTR"] = _load_super_attr
