"""Wrap a real Python value found in the frame into a tracker, installing the guards it relies on.

    wrap(tx, a, LocalSource("a"))       # tensor -> graph input + TENSOR_MATCH on L['a']
    wrap(tx, 3, LocalSource("n"))       # ConstantVariable(3) + CONSTANT_MATCH on L['n']
    wrap_new(tx, [1, 2])                # a value made during capture: no source, no guard
"""
from __future__ import annotations

import functools
import types

from .base import VariableTracker
from .constant import ConstantVariable, is_constant_value


def _sources():
    from .. import source
    return source


# Which tracker models a value, by its class: each tracker module registers its wrappers with
# @tracks(cls, ...), so this module imports none of them (variables/__init__ imports them all).
# A value's class is looked up along its MRO, most derived first, keyed by id() so that no
# metaclass __hash__/__eq__ of user code runs; a wrapper returns None to decline a subclass it
# does not model, and the next class of the MRO is tried.
#   FROM_FRAME: wrapper(tx, value, source, guard) for values read from the frame (guards installed)
#   MADE_IN_CAPTURE: wrapper(tx, value) for values computed during capture (no source, no guard)
FROM_FRAME: dict = {}
MADE_IN_CAPTURE: dict = {}
_mro_of = type.__dict__["__mro__"].__get__   # (not type(value).__mro__: a metaclass could override it)


def tracks(*classes, made_in_capture=False):
    """Register the decorated wrapper as the tracker of values of `classes` (and their subclasses)."""
    table = MADE_IN_CAPTURE if made_in_capture else FROM_FRAME

    def register(wrapper):
        for cls in classes:
            if id(cls) in table:
                raise KeyError(f"{cls.__name__} already has a tracker ({table[id(cls)][1].__qualname__})")
            table[id(cls)] = (cls, wrapper)
        return wrapper
    return register


def _from_table(table, value, *args):
    for cls in _mro_of(type(value)):
        entry = table.get(id(cls))
        if entry is not None and entry[0] is cls:
            vt = entry[1](*args)
            if vt is not None:
                return vt
    return None


def _is_ember_function(value) -> bool:
    from .tensor_functions import is_ember_function
    return is_ember_function(value)


def wrap(tx, value, source, *, guard: bool = True) -> VariableTracker:
    """The tracker for ``value`` read from ``source`` (guards recorded on tx.output unless guard=False)."""
    import ember
    out = tx.output
    opaque = runs_user_code_on_isinstance(value)
    if not opaque and isinstance(value, ember.Tensor):
        return out.add_graph_input(tx, value, source)
    if not opaque and is_constant_value(value):
        return _wrap_constant(out, value, source, guard)
    cached = out.variable_cache.get(id(value))
    if cached is not None and cached[0] is value:   # one tracker per mutable object: aliasing is kept
        first = cached[1].source
        if guard and source is not None and first is not None and first != source and cached[1].is_mutable_object:
            out.guard(source, "OBJECT_ALIASING", first)   # f(l, l): a later f(l, m) must not reuse this
        return cached[1]
    if opaque:
        from .misc import UserDefinedObjectVariable
        if guard and source is not None:
            out.guard(source, "TYPE_MATCH", value)
        vt = UserDefinedObjectVariable(value, source)   # its var_getattr refuses to read it
    else:
        vt = _wrap_object(tx, value, source, guard)
    out.variable_cache[id(value)] = (value, vt)
    if guard and source is not None and vt.is_mutable_object:
        out.mutable_sources.append(source)   # f(l, m) captured: a later f(l, l) must not reuse this
    return vt


def runs_user_code_on_isinstance(value) -> bool:
    """True for an object whose class overrides __getattribute__ or __class__: isinstance() reads
    __class__ through them, so even classifying it would run the class's code during capture."""
    from .misc import class_lookup
    cls = type(value)
    return isinstance(cls.__getattribute__, types.FunctionType) or \
        class_lookup(cls, "__class__") is not _OBJECT_CLASS_SLOT


_OBJECT_CLASS_SLOT = vars(object)["__class__"]


def _wrap_constant(out, value, source, guard):
    if guard and source is not None:
        kind = "CONSTANT_MATCH" if isinstance(value, (int, float, bool, str, type(None))) else "EQUALS_MATCH"
        out.guard(source, kind, value)
    return ConstantVariable(value, source)


def _wrap_object(tx, value, source, guard):
    vt = _from_table(FROM_FRAME, value, tx, value, source, guard)
    return vt if vt is not None else wrap_python_object(tx, value, source, guard=guard)


def wrap_python_object(tx, value, source, *, guard=True):
    """Functions, classes, modules, builtins and user objects."""
    from .builtins import BuiltinVariable, is_supported_builtin
    from .functions import UserFunctionVariable, UserMethodVariable, PartialVariable
    from .misc import PythonValueVariable, UserDefinedObjectVariable
    from .tensor_functions import EmberFunctionVariable, EmberOperatorVariable, is_ember_operator
    import ember
    from .ctx_manager import (GradModeClassVariable, is_enterable_grad_mode_object, is_grad_mode_class,
                              is_grad_mode_clone, variable_for_object)
    out = tx.output
    if is_supported_builtin(value):
        if guard and source is not None:   # an argument `fn` that is abs now may be another callable later
            out.guard(source, "ID_MATCH", value)
        return BuiltinVariable(value, source)
    if is_grad_mode_class(value):
        if guard and source is not None:
            out.guard(source, "ID_MATCH", value)
        return GradModeClassVariable(value, source)
    if is_enterable_grad_mode_object(value):   # e.g. the block a resume function re-enters
        if guard and source is not None:
            out.guard(source, "TYPE_MATCH", value)
            if type(value) is ember.inference_mode:
                out.guard(_sources().AttrSource(source, "mode"), "CONSTANT_MATCH", value.mode)
        return variable_for_object(tx, value)
    if is_grad_mode_clone(value):   # a grad-mode decorator's wrapper making its context manager
        if guard and source is not None:
            out.guard(source, "TYPE_MATCH", value)
        return GradModeClassVariable(value, source, clone_of=value.__self__)
    if _is_ember_function(value):
        if guard and source is not None:
            out.guard(source, "FUNCTION_MATCH", value)
        return EmberFunctionVariable(value, source)
    if is_ember_operator(value):
        if guard and source is not None:
            out.guard(source, "ID_MATCH", value)
        return EmberOperatorVariable(value, source)
    if isinstance(value, types.FunctionType):
        if guard and source is not None:
            out.guard(source, "FUNCTION_MATCH", value)
        return UserFunctionVariable(value, source)
    if isinstance(value, types.MethodType) and isinstance(value.__func__, types.FunctionType):
        src = _sources()
        self_vt = wrap(tx, value.__self__, src.AttrSource(source, "__self__") if source else None, guard=guard)
        if guard and source is not None:   # a.m1 now, a.m2 later: another function
            out.guard(src.AttrSource(source, "__func__"), "ID_MATCH", value.__func__)
        return UserMethodVariable(value.__func__, self_vt, source)
    if isinstance(value, functools.partial):
        src = _sources()
        fn = wrap(tx, value.func, src.AttrSource(source, "func") if source else None, guard=guard)
        args = [wrap(tx, a, src.GetItemSource(src.AttrSource(source, "args"), i) if source else None, guard=guard)
                for i, a in enumerate(value.args)]
        kwargs = {k: wrap(tx, v, src.GetItemSource(src.AttrSource(source, "keywords"), k) if source else None,
                          guard=guard) for k, v in value.keywords.items()}
        if guard and source is not None:
            out.guard(source, "TYPE_MATCH", value)
        return PartialVariable(fn, args, kwargs, source)
    if isinstance(value, (types.ModuleType, type, types.BuiltinFunctionType)) or callable(value) and not \
            hasattr(type(value), "__dict__"):
        if guard and source is not None:
            out.guard(source, "FUNCTION_MATCH" if isinstance(value, types.ModuleType) else "ID_MATCH", value)
        return PythonValueVariable(value, source)
    if guard and source is not None:
        out.guard(source, "TYPE_MATCH", value)
    return UserDefinedObjectVariable(value, source)


def wrap_new(tx, value) -> VariableTracker:
    """A tracker for a value computed during capture (constant folding results): no source, no guards."""
    import ember
    if is_constant_value(value):
        return ConstantVariable(value)
    vt = _from_table(MADE_IN_CAPTURE, value, tx, value)
    if vt is not None:
        return vt
    if isinstance(value, ember.Tensor):
        from ..exc import unimplemented
        unimplemented("a tensor created outside the graph during capture")
    return wrap_python_object(tx, value, None, guard=False)
