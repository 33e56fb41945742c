"""Opcode handlers that move values between the stack and names: locals, globals, cells, attributes,
constants, plus the pure stack shuffles (NOP, PUSH_NULL, POP_TOP, COPY, SWAP).

Kept apart from symbolic_convert.py so that file stays about the translator loop and frame state; the
handlers only call the translator's public helpers (push/pop, load_global, load_deref, store_attr, ...).
symbolic_convert calls ``register`` to put them in its HANDLERS table.
"""
from __future__ import annotations

import types

from .bytecode_transformation import PY311
from .exc import unimplemented
from .variables import NullVariable, VariableTracker
from .variables.misc import BoundMethodVariable

import builtins as _builtins
_ORIGINAL_IMPORT = _builtins.__import__   # (as the process started: a later replacement is refused)


def _nop(tx, inst):
    pass


def _push_null(tx, inst):
    tx.push(NullVariable())


def _pop_top(tx, inst):
    tx.pop()


def _copy(tx, inst):
    tx.push(tx.stack[-inst.arg])


def _swap(tx, inst):
    tx.stack[-1], tx.stack[-inst.arg] = tx.stack[-inst.arg], tx.stack[-1]


def _load_const(tx, inst):
    from .variables.builder import wrap_new
    tx.push(wrap_new(tx, inst.argval) if not isinstance(inst.argval, types.CodeType) else
            _CodeConstant(inst.argval))


class _CodeConstant(VariableTracker):
    def __init__(self, code):
        super().__init__(None)
        self.code = code


def _load_fast(tx, inst):
    name = inst.argval
    if name not in tx.symbolic_locals:
        unimplemented(f"UnboundLocalError: local variable {name!r} referenced before assignment")
    tx.push(tx.symbolic_locals[name])


def _load_fast_and_clear(tx, inst):
    tx.push(tx.symbolic_locals.pop(inst.argval, NullVariable()))


def _store_fast(tx, inst):
    value = tx.pop()
    _check_not_finalising(tx.symbolic_locals.get(inst.argval), value)
    if isinstance(value, NullVariable):   # 3.12 comprehension restoring an unset variable
        tx.symbolic_locals.pop(inst.argval, None)
    else:
        tx.symbolic_locals[inst.argval] = value


def _delete_fast(tx, inst):
    _check_not_finalising(tx.symbolic_locals.get(inst.argval), None)
    tx.symbolic_locals.pop(inst.argval, None)


def _check_not_finalising(old, new):
    """Dropping a local's reference to a real object with a finalizer (__del__, a weakref callback)
    may end its life right here in eager Python; the compiled frame keeps its locals until it ends,
    so that finalizer would run late. Such a frame is not captured."""
    import weakref
    from .variables.misc import UserDefinedObjectVariable, class_lookup, _MISSING
    if old is None or old is new or not isinstance(old, UserDefinedObjectVariable) or old.source is None:
        return
    value = old.value
    if class_lookup(type(value), "__del__") is not _MISSING or weakref.getweakrefcount(value):
        unimplemented(f"dropping a reference to a {type(value).__name__}, which has a finalizer")


def _load_global(tx, inst):
    if inst.arg is not None and inst.arg & 1:
        tx.push(NullVariable())
    tx.push(tx.load_global(inst.argval))


def _store_global(tx, inst):
    tx.output.side_effects.store_global(tx, inst.argval, tx.pop())


def _load_deref(tx, inst):
    tx.push(tx.load_deref(inst.argval))


def _store_deref(tx, inst):
    tx.store_deref(inst.argval, tx.pop())


def _load_closure(tx, inst):
    tx.push(tx.load_closure(inst.argval))


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


def _load_method(tx, inst):
    obj = tx.pop()
    tx.push(NullVariable())
    tx.push(obj.var_getattr(tx, inst.argval) if _is_plain_attr(tx, obj, inst.argval)
            else BoundMethodVariable(obj, inst.argval))


def _store_attr(tx, inst):
    obj = tx.pop()
    value = tx.pop()
    tx.store_attr(obj, inst.argval, value)


def _load_assertion_error(tx, inst):
    from .variables import PythonValueVariable
    tx.push(PythonValueVariable(AssertionError))


def _import_name(tx, inst):
    """``import a.b`` / ``from .x import y`` of modules already in sys.modules: resolved the way
    __import__ would, without calling it (an import that would run a module's code, or a replaced
    __import__, is not captured). Each module read is pinned by an ID_MATCH on ``sys.modules[name]``:
    a module removed from sys.modules (eager would import it again) recompiles."""
    import builtins
    import importlib.util
    import sys
    from . import source as src
    from .variables.builder import wrap
    fromlist = tx.stack[-1].as_python_constant()   # (popped once resolved: a refusal leaves the
    level = tx.stack[-2].as_python_constant()      # stack as the instruction found it)
    name = inst.argval
    if tx.f_builtins not in (builtins, builtins.__dict__) or builtins.__import__ is not _ORIGINAL_IMPORT:
        unimplemented("an import statement with a replaced __import__")
    tx.output.guard(src.BuiltinImportSource(), "ID_MATCH", _ORIGINAL_IMPORT)
    if level:
        package = tx.f_globals.get("__package__")
        if not isinstance(package, str) or not package:
            unimplemented(f"relative import of {name!r} from a module without __package__")
        try:
            absolute = importlib.util.resolve_name("." * level + name, package)
        except ImportError as e:
            unimplemented(f"ImportError: {e}")
    else:
        absolute = name
    parts = absolute.split(".")
    for i in range(1, len(parts) + 1):   # every package on the way must be imported already
        prefix = ".".join(parts[:i])
        if not isinstance(sys.modules.get(prefix), types.ModuleType):
            unimplemented(f"import of {prefix!r}, which is not imported yet (importing runs its code)")
        tx.output.guard(src.ImportedModuleSource(prefix), "ID_MATCH", sys.modules[prefix])
    target = absolute if fromlist else parts[0]
    if fromlist:
        module = sys.modules[absolute]
        for attr in fromlist:   # __import__ would import a missing one as a submodule
            if attr == "*" or attr not in vars(module):
                unimplemented(f"from {absolute} import {attr}: not an attribute of the imported module")
    module_vt = wrap(tx, sys.modules[target], src.ImportedModuleSource(target))
    tx.pop()
    tx.pop()
    tx.push(module_vt)


def _import_from(tx, inst):
    module = tx.stack[-1]
    tx.push(module.var_getattr(tx, inst.argval))


def register(handlers: dict) -> None:
    """Add the load/store and stack-shuffle opcodes to a translator's handler table."""
    for name in ("NOP", "RESUME", "PRECALL", "MAKE_CELL", "COPY_FREE_VARS", "EXTENDED_ARG", "CACHE"):
        handlers[name] = _nop
    handlers.update({
        "PUSH_NULL": _push_null, "POP_TOP": _pop_top, "COPY": _copy, "SWAP": _swap, "LOAD_CONST": _load_const,
        "LOAD_FAST": _load_fast, "LOAD_FAST_CHECK": _load_fast, "LOAD_FAST_AND_CLEAR": _load_fast_and_clear,
        "STORE_FAST": _store_fast, "DELETE_FAST": _delete_fast, "LOAD_GLOBAL": _load_global,
        "STORE_GLOBAL": _store_global, "LOAD_DEREF": _load_deref, "LOAD_CLASSDEREF": _load_deref,
        "STORE_DEREF": _store_deref, "LOAD_CLOSURE": _load_closure, "LOAD_ATTR": _load_attr,
        "LOAD_METHOD": _load_method, "STORE_ATTR": _store_attr, "LOAD_ASSERTION_ERROR": _load_assertion_error,
        "IMPORT_NAME": _import_name, "IMPORT_FROM": _import_from,
    })
