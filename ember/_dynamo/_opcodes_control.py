"""Opcode handlers for control flow: calls (KW_NAMES, CALL, CALL_FUNCTION_EX), jumps and conditional jumps,
iteration (GET_ITER, FOR_ITER, END_FOR), returns, MAKE_FUNCTION, generators and RAISE_VARARGS.

These are the handlers where a graph break can happen (a CALL or a conditional jump on a tensor raises
Unsupported) and where a frame ends (``_Return``); symbolic_convert.InstructionTranslator.run decides what
to do with both. Kept apart from symbolic_convert.py so that file stays about the translator loop;
symbolic_convert imports ``_Return`` and ``_jump_kind`` from here and calls ``register``.
"""
from __future__ import annotations

from ._opcodes_load_store import _CodeConstant
from .exc import unimplemented
from .variables import ConstantVariable, ConstDictVariable, NestedUserFunctionVariable, NullVariable
from .variables.iterators import IteratorVariable, iterator_over


def _jump_kind(opname: str) -> str:
    """Portable name of a jump: POP_JUMP_FORWARD_IF_FALSE (3.11) -> POP_JUMP_IF_FALSE."""
    return opname.replace("FORWARD_", "").replace("BACKWARD_", "")


class _Return(Exception):
    """Raised by RETURN_VALUE / RETURN_CONST to stop the translator loop (the value is tx.return_value)."""


class _Yield(Exception):
    """Raised by YIELD_VALUE in an inlined generator: suspends its translator (see resume())."""

    def __init__(self, value):
        super().__init__()
        self.value = value


def _kw_names(tx, inst):
    tx.kw_names = inst.argval


def _call(tx, inst):
    argc = inst.arg
    args = tx.popn(argc)
    fn = tx.pop()
    below = tx.pop()
    if not isinstance(below, NullVariable):   # [callable, self, args] layout
        args = [fn, *args]
        fn = below
    kwargs = {}
    if tx.kw_names:
        names = tx.kw_names
        kwargs = dict(zip(names, args[len(args) - len(names):]))
        args = args[:len(args) - len(names)]
    tx.kw_names = None
    tx.push(tx.call_function(fn, args, kwargs))


def _call_function_ex(tx, inst):
    kwargs_vt = tx.pop() if inst.arg & 1 else ConstDictVariable({})
    args_vt = tx.pop()
    fn = tx.pop()
    null = tx.pop()
    if not isinstance(null, NullVariable):
        unimplemented("CALL_FUNCTION_EX without NULL")
    args = args_vt.unpack_var_sequence(tx)
    if not isinstance(kwargs_vt, ConstDictVariable):
        unimplemented("**kwargs from a non-dict")
    tx.push(tx.call_function(fn, args, dict(kwargs_vt.items)))


def _get_iter(tx, inst):
    tx.push(iterator_over(tx, tx.pop()))


def _for_iter(tx, inst):
    it = tx.stack[-1]
    if not isinstance(it, IteratorVariable):
        unimplemented(f"iteration over {it}")
    item = it.next_item(tx)
    if item is not None:
        tx.push(item)
        return
    tx.pop()
    target = tx.index_of[id(inst.target)]
    if inst.target.opname == "END_FOR":   # 3.12: exhaustion skips END_FOR
        target += 1
    tx.ip = target


def _end_for(tx, inst):
    tx.popn(2)


def _jump(tx, inst):
    tx.jump(inst)


def _conditional_jump(tx, inst):
    kind = _jump_kind(inst.opname)
    value = tx.stack[-1]
    if kind in ("POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE"):
        is_none = value.is_python_constant() and value.as_python_constant() is None
        taken = is_none if kind == "POP_JUMP_IF_NONE" else not is_none
        tx.pop()
    else:
        truth = tx.truthy(value)     # raises Unsupported for tensors: a graph break here
        taken = truth if "TRUE" in kind else not truth
        if kind.startswith("POP_") or not taken:
            tx.pop()
    if taken:
        tx.jump(inst)


def _return_value(tx, inst):
    tx.return_value = tx.pop()
    tx.on_return(inst)
    raise _Return()


def _return_const(tx, inst):
    from .variables.builder import wrap_new
    tx.return_value = wrap_new(tx, inst.argval)
    tx.on_return(inst)
    raise _Return()


def _make_function(tx, inst):
    code = tx.pop()
    if not isinstance(code, _CodeConstant):
        unimplemented("MAKE_FUNCTION without a code constant")
    flags = inst.arg
    closure = tx.pop().items if flags & 0x08 else None
    if flags & 0x04:
        tx.pop()   # annotations: not needed
    kwdefaults = dict(tx.pop().items) if flags & 0x02 else None
    defaults = tx.pop().unpack_var_sequence(tx) if flags & 0x01 else None
    tx.push(NestedUserFunctionVariable(code.code, tx.f_globals, code.code.co_qualname, defaults, kwdefaults,
                                       closure))


def _return_generator(tx, inst):
    if not getattr(tx, "generator_mode", False):
        unimplemented("generator functions are run eagerly")
    tx.push(ConstantVariable(None))


def _yield_value(tx, inst):
    if not getattr(tx, "generator_mode", False):
        unimplemented("yield outside an inlined generator")
    value = tx.pop()
    tx.push(ConstantVariable(None))     # what the yield expression evaluates to when next() resumes it
    raise _Yield(value)


def _before_with(tx, inst):
    from .variables.ctx_manager import before_with
    before_with(tx, inst)


def _raise(tx, inst):
    unimplemented("raise inside a compiled region")


_CONDITIONAL_JUMPS = ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE",
                      "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_FORWARD_IF_NONE",
                      "POP_JUMP_FORWARD_IF_NOT_NONE", "POP_JUMP_BACKWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_TRUE",
                      "POP_JUMP_BACKWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE", "JUMP_IF_FALSE_OR_POP",
                      "JUMP_IF_TRUE_OR_POP")


def register(handlers: dict) -> None:
    """Add the call, jump, iteration, return, function-making and raise opcodes to a handler table."""
    handlers.update({
        "KW_NAMES": _kw_names, "CALL": _call, "CALL_FUNCTION_EX": _call_function_ex, "GET_ITER": _get_iter,
        "FOR_ITER": _for_iter, "END_FOR": _end_for, "RETURN_VALUE": _return_value, "RETURN_CONST": _return_const,
        "MAKE_FUNCTION": _make_function, "RETURN_GENERATOR": _return_generator, "YIELD_VALUE": _yield_value,
        "RAISE_VARARGS": _raise, "BEFORE_WITH": _before_with,
    })
    for name in ("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP_ABSOLUTE", "JUMP"):
        handlers[name] = _jump
    for name in _CONDITIONAL_JUMPS:
        handlers[name] = _conditional_jump
