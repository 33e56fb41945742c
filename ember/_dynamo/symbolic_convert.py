"""The symbolic instruction translator: runs a frame's bytecode on VariableTrackers instead of values.

    tx = InstructionTranslator(code, f_globals, f_locals, closure, output)
    tx.run()          # fills output.graph; ends at RETURN_VALUE or at a graph break

One handler per opcode, in the table ``HANDLERS`` (3.11 and 3.12 names both). Tensor operations become
fx nodes (variables/tensor.py); constants fold; user functions are inlined by InliningInstructionTranslator.
Whatever cannot be captured raises exc.Unsupported; the root translator turns that into a graph break at a
CALL or a conditional jump (compile what came before, run the instruction, resume in a new function) or
gives up on the frame.
"""
from __future__ import annotations

import dis
import inspect
import linecache
import operator
import sys
import types

from . import exc
from .bytecode_transformation import cleaned_instructions
from .exc import Unsupported, unimplemented
from .variables import (BuiltinVariable, ConstantVariable, ConstDictVariable, ListIteratorVariable, ListVariable,
                        NestedUserFunctionVariable, NullVariable, SliceVariable, TensorVariable, TupleVariable,
                        VariableTracker, wrap)
from .variables.base import VariableTracker as _VT  # noqa: F401
from .variables.functions import UserFunctionVariable
from .variables.misc import BoundMethodVariable, CellVariable

PY311 = sys.version_info[:2] == (3, 11)

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
_MAX_INLINE_DEPTH = 32


def _jump_kind(opname: str) -> str:
    """Portable name of a jump: POP_JUMP_FORWARD_IF_FALSE (3.11) -> POP_JUMP_IF_FALSE."""
    return opname.replace("FORWARD_", "").replace("BACKWARD_", "")


class _Return(Exception):
    pass


class InstructionTranslatorBase:
    """State and handlers shared by the root translator and the inlining one."""

    def __init__(self, code, f_globals, symbolic_locals, output, parent=None):
        self.code = code
        self.f_globals = f_globals
        self.f_builtins = f_globals.get("__builtins__", __builtins__)
        if isinstance(self.f_builtins, types.ModuleType):
            self.f_builtins = vars(self.f_builtins)
        self.symbolic_locals = symbolic_locals
        self.output = output
        self.parent = parent
        self.instructions = cleaned_instructions(code)
        self.index_of = {id(inst): i for i, inst in enumerate(self.instructions)}
        self.stack: list = []
        self.ip = 0
        self.kw_names = None
        self.current_inst = None
        self.lineno = code.co_firstlineno
        self.return_value = None

    # ---------------------------------------------------------------- stack helpers
    def push(self, vt):
        assert isinstance(vt, VariableTracker), vt
        self.stack.append(vt)

    def pop(self):
        return self.stack.pop()

    def popn(self, n):
        if n == 0:
            return []
        items = self.stack[-n:]
        del self.stack[-n:]
        return items

    def jump(self, inst):
        self.ip = self.index_of[id(inst.target)]

    # ---------------------------------------------------------------- where we are
    def source_line(self, lineno=None) -> str:
        return linecache.getline(self.code.co_filename, lineno or self.lineno).rstrip("\n")

    def frame_summary(self) -> str:
        outer = self.parent.frame_summary() if self.parent is not None else ""
        return outer + (f'  File "{self.code.co_filename}", line {self.lineno}, in {self.code.co_name}\n'
                        f"    {self.source_line().strip()}\n")

    # ---------------------------------------------------------------- the loop
    def step(self):
        inst = self.instructions[self.ip]
        self.ip += 1
        self.current_inst = inst
        if inst.starts_line is not None:
            self.lineno = inst.starts_line
        handler = HANDLERS.get(inst.opname)
        if handler is None:
            unimplemented(f"bytecode {inst.opname} is not supported")
        handler(self, inst)

    def run(self):
        try:
            while True:
                self.step()
        except _Return:
            return self.return_value

    # ---------------------------------------------------------------- shared operations
    def load_global(self, name):
        from . import source as src
        pending = self.output.side_effects.pending_global(self, name)
        if pending is not None:
            return pending
        if name in self.f_globals:
            guard_source = src.GlobalSource(name) if self.f_globals is self.output.root_globals else None
            value = self.f_globals[name]
            if guard_source is None:   # an inlined function from another module: read, no guard possible here
                return wrap(self, value, None, guard=False)
            return wrap(self, value, guard_source)
        if name in self.f_builtins:
            return wrap(self, self.f_builtins[name], None, guard=False)
        unimplemented(f"NameError: name {name!r} is not defined")

    def call_function(self, fn, args, kwargs):
        if isinstance(fn, (TensorVariable,)):
            unimplemented("calling a tensor")
        return fn.call_function(self, args, kwargs)

    def store_attr(self, obj, name, value):
        from .variables import NNModuleVariable, UserDefinedObjectVariable
        local_store = getattr(obj, "store_attr_local", None)   # an object made during capture
        if local_store is not None:
            local_store(self, name, value)
            return
        if isinstance(obj, (NNModuleVariable, UserDefinedObjectVariable)) and obj.source is not None:
            if isinstance(obj, NNModuleVariable) and isinstance(value, TensorVariable) and name in \
                    obj.module._parameters:
                unimplemented("assigning a parameter of a module")
            self.output.side_effects.store_attr(self, obj, name, value)
            return
        unimplemented(f"attribute assignment {name!r} on {obj}")

    def inline_user_function(self, fn_vt, args, kwargs):
        depth, tx = 0, self
        while tx is not None:
            depth, tx = depth + 1, tx.parent
        if depth > _MAX_INLINE_DEPTH:
            unimplemented("recursion too deep to inline")
        code = fn_vt.get_code()
        if code.co_flags & (inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE):
            unimplemented("calling a coroutine")
        bound = fn_vt.bind(self, args, kwargs)
        child = InliningInstructionTranslator(fn_vt, code, fn_vt.get_globals(), bound, self.output, parent=self)
        try:
            return child.run()
        except Unsupported as e:
            e.set_location(code.co_filename, child.lineno, child.source_line())
            e.inlined = True
            raise

    def truthy(self, vt):
        return vt.truthy(self)


# ==================================================================== opcode handlers
HANDLERS: dict = {}


def handles(*names):
    def register(fn):
        for name in names:
            HANDLERS[name] = fn
        return fn
    return register


@handles("NOP", "RESUME", "PRECALL", "MAKE_CELL", "COPY_FREE_VARS", "EXTENDED_ARG", "CACHE")
def _nop(tx, inst):
    pass


@handles("PUSH_NULL")
def _push_null(tx, inst):
    tx.push(NullVariable())


@handles("POP_TOP")
def _pop_top(tx, inst):
    tx.pop()


@handles("COPY")
def _copy(tx, inst):
    tx.push(tx.stack[-inst.arg])


@handles("SWAP")
def _swap(tx, inst):
    tx.stack[-1], tx.stack[-inst.arg] = tx.stack[-inst.arg], tx.stack[-1]


@handles("LOAD_CONST")
def _load_const(tx, inst):
    from .variables.builder import wrap_new
    tx.push(wrap_new(tx, inst.argval) if not isinstance(inst.argval, types.CodeType) else
            _CodeConstant(inst.argval))


class _CodeConstant(VariableTracker):
    def __init__(self, code):
        super().__init__(None)
        self.code = code


@handles("LOAD_FAST", "LOAD_FAST_CHECK")
def _load_fast(tx, inst):
    name = inst.argval
    if name not in tx.symbolic_locals:
        unimplemented(f"UnboundLocalError: local variable {name!r} referenced before assignment")
    tx.push(tx.symbolic_locals[name])


@handles("LOAD_FAST_AND_CLEAR")
def _load_fast_and_clear(tx, inst):
    tx.push(tx.symbolic_locals.pop(inst.argval, NullVariable()))


@handles("STORE_FAST")
def _store_fast(tx, inst):
    value = tx.pop()
    if isinstance(value, NullVariable):   # 3.12 comprehension restoring an unset variable
        tx.symbolic_locals.pop(inst.argval, None)
    else:
        tx.symbolic_locals[inst.argval] = value


@handles("DELETE_FAST")
def _delete_fast(tx, inst):
    tx.symbolic_locals.pop(inst.argval, None)


@handles("LOAD_GLOBAL")
def _load_global(tx, inst):
    if inst.arg is not None and inst.arg & 1:
        tx.push(NullVariable())
    tx.push(tx.load_global(inst.argval))


@handles("STORE_GLOBAL")
def _store_global(tx, inst):
    tx.output.side_effects.store_global(tx, inst.argval, tx.pop())


@handles("LOAD_DEREF", "LOAD_CLASSDEREF")
def _load_deref(tx, inst):
    tx.push(tx.load_deref(inst.argval))


@handles("STORE_DEREF")
def _store_deref(tx, inst):
    tx.store_deref(inst.argval, tx.pop())


@handles("LOAD_CLOSURE")
def _load_closure(tx, inst):
    tx.push(tx.load_closure(inst.argval))


@handles("LOAD_ATTR")
def _load_attr(tx, inst):
    obj = tx.pop()
    if not PY311 and inst.arg is not None and inst.arg & 1:   # 3.12 method form
        tx.push(NullVariable())
        tx.push(BoundMethodVariable(obj, inst.argval) if not _is_plain_attr(tx, obj, inst.argval)
                else obj.var_getattr(tx, inst.argval))
        return
    tx.push(obj.var_getattr(tx, inst.argval))


def _is_plain_attr(tx, obj, name):
    """Method loads on modules/classes (e.g. `ember.abs`) are attribute reads, not bound methods."""
    from .variables import PythonValueVariable, NNModuleVariable, UserDefinedObjectVariable
    return isinstance(obj, (PythonValueVariable, NNModuleVariable, UserDefinedObjectVariable))


@handles("LOAD_METHOD")
def _load_method(tx, inst):
    obj = tx.pop()
    tx.push(NullVariable())
    tx.push(obj.var_getattr(tx, inst.argval) if _is_plain_attr(tx, obj, inst.argval)
            else BoundMethodVariable(obj, inst.argval))


@handles("STORE_ATTR")
def _store_attr(tx, inst):
    obj = tx.pop()
    value = tx.pop()
    tx.store_attr(obj, inst.argval, value)


@handles("KW_NAMES")
def _kw_names(tx, inst):
    tx.kw_names = inst.argval


@handles("CALL")
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


@handles("CALL_FUNCTION_EX")
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


@handles("CALL_INTRINSIC_1")
def _call_intrinsic_1(tx, inst):
    if inst.arg == 6:    # INTRINSIC_LIST_TO_TUPLE
        tx.push(TupleVariable(tx.pop().unpack_var_sequence(tx)))
    elif inst.arg == 5:  # INTRINSIC_UNARY_POSITIVE
        tx.push(BuiltinVariable(operator.pos).call_function(tx, [tx.pop()], {}))
    else:
        unimplemented(f"CALL_INTRINSIC_1 {inst.argval}")


@handles("LIST_TO_TUPLE")
def _list_to_tuple(tx, inst):
    tx.push(TupleVariable(tx.pop().unpack_var_sequence(tx)))


@handles("BINARY_OP")
def _binary_op(tx, inst):
    b = tx.pop()
    a = tx.pop()
    tx.push(BuiltinVariable(_NB_OPS[inst.arg]).call_function(tx, [a, b], {}))


def _unary(op):
    def handler(tx, inst):
        tx.push(BuiltinVariable(op).call_function(tx, [tx.pop()], {}))
    return handler


HANDLERS["UNARY_NEGATIVE"] = _unary(operator.neg)
HANDLERS["UNARY_POSITIVE"] = _unary(operator.pos)
HANDLERS["UNARY_INVERT"] = _unary(operator.invert)


@handles("UNARY_NOT")
def _unary_not(tx, inst):
    tx.push(ConstantVariable(not tx.truthy(tx.pop())))


@handles("COMPARE_OP")
def _compare_op(tx, inst):
    b = tx.pop()
    a = tx.pop()
    tx.push(BuiltinVariable(_COMPARE_OPS[inst.argval]).call_function(tx, [a, b], {}))


@handles("IS_OP")
def _is_op(tx, inst):
    b = tx.pop()
    a = tx.pop()
    tx.push(BuiltinVariable(operator.is_not if inst.arg else operator.is_).call_function(tx, [a, b], {}))


@handles("CONTAINS_OP")
def _contains_op(tx, inst):
    container = tx.pop()
    item = tx.pop()
    result = container.call_method(tx, "__contains__", [item], {})
    tx.push(ConstantVariable(not result.as_python_constant()) if inst.arg else result)


@handles("BINARY_SUBSCR")
def _binary_subscr(tx, inst):
    index = tx.pop()
    obj = tx.pop()
    tx.push(obj.call_method(tx, "__getitem__", [index], {}))


@handles("STORE_SUBSCR")
def _store_subscr(tx, inst):
    key = tx.pop()
    obj = tx.pop()
    value = tx.pop()
    obj.call_method(tx, "__setitem__", [key, value], {})


@handles("DELETE_SUBSCR")
def _delete_subscr(tx, inst):
    key = tx.pop()
    obj = tx.pop()
    obj.call_method(tx, "__delitem__", [key], {})


def _make_slice(items):
    if all(i.is_python_constant() for i in items):
        return ConstantVariable(slice(*[i.as_python_constant() for i in items]))
    return SliceVariable(items)


@handles("BUILD_SLICE")
def _build_slice(tx, inst):
    tx.push(_make_slice(tx.popn(inst.arg)))


@handles("BINARY_SLICE")
def _binary_slice(tx, inst):
    start, stop = tx.popn(2)
    obj = tx.pop()
    tx.push(obj.call_method(tx, "__getitem__", [_make_slice([start, stop])], {}))


@handles("STORE_SLICE")
def _store_slice(tx, inst):
    start, stop = tx.popn(2)
    obj = tx.pop()
    value = tx.pop()
    obj.call_method(tx, "__setitem__", [_make_slice([start, stop]), value], {})


@handles("BUILD_TUPLE")
def _build_tuple(tx, inst):
    tx.push(TupleVariable(tx.popn(inst.arg)))


@handles("BUILD_LIST")
def _build_list(tx, inst):
    tx.push(ListVariable(tx.popn(inst.arg)))


@handles("BUILD_MAP")
def _build_map(tx, inst):
    items = tx.popn(2 * inst.arg)
    tx.push(ConstDictVariable({items[i].as_python_constant(): items[i + 1] for i in range(0, len(items), 2)}))


@handles("BUILD_CONST_KEY_MAP")
def _build_const_key_map(tx, inst):
    keys = tx.pop().as_python_constant()
    values = tx.popn(inst.arg)
    tx.push(ConstDictVariable(dict(zip(keys, values))))


@handles("BUILD_STRING")
def _build_string(tx, inst):
    parts = tx.popn(inst.arg)
    tx.push(ConstantVariable("".join(p.as_python_constant() for p in parts)))


@handles("FORMAT_VALUE")
def _format_value(tx, inst):
    spec = tx.pop().as_python_constant() if inst.arg & 0x04 else ""
    value = tx.pop().as_python_constant()
    conv = {1: str, 2: repr, 3: ascii}.get(inst.arg & 0x03)
    tx.push(ConstantVariable(format(conv(value) if conv else value, spec)))


@handles("LIST_APPEND")
def _list_append(tx, inst):
    value = tx.pop()
    tx.stack[-inst.arg].call_method(tx, "append", [value], {})


@handles("LIST_EXTEND")
def _list_extend(tx, inst):
    value = tx.pop()
    tx.stack[-inst.arg].call_method(tx, "extend", [value], {})


@handles("MAP_ADD")
def _map_add(tx, inst):
    value = tx.pop()
    key = tx.pop()
    tx.stack[-inst.arg].call_method(tx, "__setitem__", [key, value], {})


@handles("DICT_UPDATE", "DICT_MERGE")
def _dict_update(tx, inst):
    value = tx.pop()
    tx.stack[-inst.arg].call_method(tx, "update", [value], {})


@handles("UNPACK_SEQUENCE")
def _unpack_sequence(tx, inst):
    items = tx.pop().unpack_var_sequence(tx)
    if len(items) != inst.arg:
        unimplemented(f"ValueError: cannot unpack {len(items)} values into {inst.arg}")
    for item in reversed(items):
        tx.push(item)


@handles("UNPACK_EX")
def _unpack_ex(tx, inst):
    before, after = inst.arg & 0xFF, inst.arg >> 8
    items = tx.pop().unpack_var_sequence(tx)
    if len(items) < before + after:
        unimplemented("ValueError: not enough values to unpack")
    middle = ListVariable(items[before:len(items) - after])
    for item in reversed([*items[:before], middle, *items[len(items) - after:]]):
        tx.push(item)


@handles("GET_ITER")
def _get_iter(tx, inst):
    obj = tx.pop()
    if isinstance(obj, ListIteratorVariable):
        tx.push(obj)
        return
    tx.push(ListIteratorVariable(obj.unpack_var_sequence(tx)))


@handles("FOR_ITER")
def _for_iter(tx, inst):
    it = tx.stack[-1]
    if not isinstance(it, ListIteratorVariable):
        unimplemented(f"iteration over {it}")
    item = it.next_item()
    if item is not None:
        tx.push(item)
        return
    tx.pop()
    target = tx.index_of[id(inst.target)]
    if inst.target.opname == "END_FOR":   # 3.12: exhaustion skips END_FOR
        target += 1
    tx.ip = target


@handles("END_FOR")
def _end_for(tx, inst):
    tx.popn(2)


@handles("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP_ABSOLUTE", "JUMP")
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


for _name in ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE",
              "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_FORWARD_IF_NONE",
              "POP_JUMP_FORWARD_IF_NOT_NONE", "POP_JUMP_BACKWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_TRUE",
              "POP_JUMP_BACKWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE", "JUMP_IF_FALSE_OR_POP",
              "JUMP_IF_TRUE_OR_POP"):
    HANDLERS[_name] = _conditional_jump


@handles("RETURN_VALUE")
def _return_value(tx, inst):
    tx.return_value = tx.pop()
    tx.on_return(inst)
    raise _Return()


@handles("RETURN_CONST")
def _return_const(tx, inst):
    from .variables.builder import wrap_new
    tx.return_value = wrap_new(tx, inst.argval)
    tx.on_return(inst)
    raise _Return()


@handles("MAKE_FUNCTION")
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


@handles("RETURN_GENERATOR")
def _return_generator(tx, inst):
    if not getattr(tx, "generator_mode", False):
        unimplemented("generator functions are run eagerly")
    tx.push(ConstantVariable(None))


@handles("YIELD_VALUE")
def _yield_value(tx, inst):
    if not getattr(tx, "generator_mode", False):
        unimplemented("yield outside an inlined generator")
    tx.generated.append(tx.pop())
    tx.push(ConstantVariable(None))


@handles("LOAD_ASSERTION_ERROR")
def _load_assertion_error(tx, inst):
    from .variables import PythonValueVariable
    tx.push(PythonValueVariable(AssertionError))


@handles("RAISE_VARARGS")
def _raise(tx, inst):
    unimplemented("raise inside a compiled region")


from . import _opcodes_containers  # noqa: E402  (BUILD_SET, SET_ADD, SET_UPDATE, LOAD_SUPER_ATTR)
_opcodes_containers.register(HANDLERS)


# ==================================================================== translators
class InstructionTranslator(InstructionTranslatorBase):
    """The root frame: its locals come from the real frame, with LocalSource guards."""

    def __init__(self, code, f_globals, f_locals, closure, output, fullgraph=False):
        from . import source as src
        super().__init__(code, f_globals, {}, output)
        self.closure = closure
        self.fullgraph = fullgraph
        self.f_locals = f_locals
        nargs = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & inspect.CO_VARARGS) + \
            bool(code.co_flags & inspect.CO_VARKEYWORDS)
        for name in code.co_varnames[:nargs]:
            if name in f_locals:
                self.symbolic_locals[name] = wrap(self, f_locals[name], src.LocalSource(name))
        self.break_result = None   # set when the frame ends at a graph break

    def load_deref(self, name):
        from . import source as src
        if name in self.code.co_freevars:
            index = self.code.co_freevars.index(name)
            try:
                value = self.closure[index].cell_contents
            except ValueError:
                unimplemented(f"free variable {name!r} referenced before assignment")
            source = src.ClosureCellSource(name, index)
            # a function made by the enclosing call (new on each call): guarded on its code
            nested = self.output.nested_function(value, source)
            return nested if nested is not None else wrap(self, value, source)
        if name not in self.symbolic_locals:
            if name in self.f_locals:   # a cell argument
                self.symbolic_locals[name] = wrap(self, self.f_locals[name], src.LocalSource(name))
            else:
                unimplemented(f"free variable {name!r} referenced before assignment")
        return self.symbolic_locals[name]

    def store_deref(self, name, value):
        if name in self.code.co_freevars:
            unimplemented(f"assignment to the enclosing function's variable {name!r} (nonlocal)")
        self.symbolic_locals[name] = value

    def load_closure(self, name):
        if name in self.code.co_freevars:
            index = self.code.co_freevars.index(name)
            from . import source as src
            from .variables.misc import RealCellVariable
            return RealCellVariable(self.closure[index], src.ClosureCellSource(name, index))
        return CellVariable(self, name)

    def on_return(self, inst):
        self.output.compile_and_return(self, self.return_value)

    def run(self):
        while True:
            inst = self.instructions[self.ip]
            stack_before = list(self.stack)
            kw_before = self.kw_names
            # an inlined call may rebind this frame's cells (nonlocal) before it breaks
            locals_before = dict(self.symbolic_locals) if inst.opname in ("CALL", "CALL_FUNCTION_EX") else None
            checkpoint = self.output.checkpoint()
            try:
                self.step()
            except _Return:
                return
            except Unsupported as e:
                e.set_location(self.code.co_filename, self.lineno, self.source_line())
                reason = e.break_reason()
                if self.fullgraph:
                    raise
                if not self.can_break_at(inst, e):
                    raise exc.SkipFrame(e.reason, filename=reason.filename, lineno=reason.lineno,
                                        source_line=reason.source_line) from e
                self.output.restore(checkpoint)
                self.stack = stack_before
                self.kw_names = kw_before
                if locals_before is not None:
                    self.symbolic_locals = locals_before
                self.output.compile_and_break(self, inst, reason, inlined=getattr(e, "inlined", False))
                return

    def can_break_at(self, inst, e) -> bool:
        kind = _jump_kind(inst.opname)
        if inst.opname not in ("CALL", "CALL_FUNCTION_EX") and not kind.startswith("POP_JUMP_IF"):
            return False
        if inst.exn_tab_entry is not None:   # inside try/with: the handler could not be rebuilt
            return False
        return not self.has_backedge(inst)

    def has_backedge(self, inst) -> bool:
        """A jump back to before ``inst`` after it: the break may be inside a loop (torch skips those).

        torch's heuristic, so the same frames are skipped: scan the instructions after ``inst`` up to
        the first return. A loop's own closing conditional jump is not counted (it is ``inst``
        itself): breaking there resumes at the loop body, a cached resume function."""
        here = self.index_of[id(inst)]
        for i in self.instructions[here + 1:]:
            if i.opname in ("RETURN_VALUE", "RETURN_CONST"):
                return False
            if i.target is not None and self.index_of.get(id(i.target), here) < here:
                return True
        return False


class InliningInstructionTranslator(InstructionTranslatorBase):
    """Runs a user function's bytecode inside the caller's graph; its result is the return tracker."""

    def __init__(self, fn_vt, code, f_globals, symbolic_locals, output, parent):
        super().__init__(code, f_globals, symbolic_locals, output, parent)
        self.fn_vt = fn_vt
        self.generator_mode = bool(code.co_flags & inspect.CO_GENERATOR)
        self.generated = []

    def load_deref(self, name):
        if name in self.code.co_freevars:
            return self.fn_vt.closure_cell(self, name)
        if name not in self.symbolic_locals:
            unimplemented(f"free variable {name!r} referenced before assignment")
        return self.symbolic_locals[name]

    def store_deref(self, name, value):
        if name in self.code.co_freevars:
            if not isinstance(self.fn_vt, NestedUserFunctionVariable):
                unimplemented(f"assignment to the enclosing function's variable {name!r} (nonlocal)")
            self.fn_vt.store_closure_cell(name, value)
            return
        self.symbolic_locals[name] = value

    def load_closure(self, name):
        if name in self.code.co_freevars:
            return self.fn_vt.closure[self.code.co_freevars.index(name)] \
                if isinstance(self.fn_vt, NestedUserFunctionVariable) else unimplemented("re-closing a free cell")
        return CellVariable(self, name)

    def on_return(self, inst):
        if self.generator_mode:
            self.return_value = ListIteratorVariable(self.generated)

    def run(self):
        result = super().run()
        return result
