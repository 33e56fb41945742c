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
        if guard and source is not None and first is not None and first != source and _is_mutable(cached[1]):
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
    if guard and source is not None and _is_mutable(vt):
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


def _is_mutable(vt) -> bool:
    """Trackers of mutable Python objects whose aliasing changes what mutating code does."""
    from .dicts import ConstDictVariable
    from .lists import ListVariable
    from .misc import UserDefinedObjectVariable
    from .sets import SetVariable
    return isinstance(vt, (ListVariable, ConstDictVariable, UserDefinedObjectVariable)) or (
        isinstance(vt, SetVariable) and not vt.frozen)


def _wrap_constant(out, value, source, guard):
    if guard and source is not None:
        kind = "CONSTANT_MATCH" if isinstance(value, (int, float, bool, str, type(None))) else "EQUALS_MATCH"
        out.guard(source, kind, value)
    return ConstantVariable(value, source)


def _wrap_object(tx, value, source, guard):
    import ember
    out = tx.output
    src = _sources()
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple) or _is_namedtuple(value):
        from .lists import ListVariable, TupleVariable
        if guard:
            out.guard(source, "TYPE_MATCH", value)
            out.guard(source, "LENGTH_CHECK", value)
        items = [wrap(tx, v, src.GetItemSource(source, i), guard=guard) for i, v in enumerate(value)]
        if isinstance(value, list):
            return out.side_effects.track(ListVariable(items, source))
        return TupleVariable(items, source, tuple_cls=type(value))
    if type(value) is dict or (isinstance(value, dict) and type(value).__module__ == "collections"):
        from .dicts import ConstDictVariable
        if guard:
            out.guard(source, "TYPE_MATCH", value)
            out.guard(source, "DICT_KEYS", value)
        items = {k: wrap(tx, v, src.GetItemSource(source, k), guard=guard) for k, v in value.items()}
        return out.side_effects.track(ConstDictVariable(items, source, user_cls=type(value)))
    if isinstance(value, ember.nn.Module):
        from .nn_module import NNModuleVariable
        if guard:
            out.guard(source, "NN_MODULE", value)
        return NNModuleVariable(value, source)
    return wrap_python_object(tx, value, source, guard=guard)


def _is_namedtuple(value):
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def wrap_python_object(tx, value, source, *, guard=True):
    """Functions, classes, modules, builtins and user objects."""
    from .builtins import BuiltinVariable, is_supported_builtin
    from .functions import UserFunctionVariable, UserMethodVariable, PartialVariable
    from .misc import PythonValueVariable, UserDefinedObjectVariable
    from .tensor_functions import EmberFunctionVariable
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
    if isinstance(value, (list, tuple)):
        from .lists import ListVariable, TupleVariable
        items = [wrap_new(tx, v) for v in value]
        return ListVariable(items) if isinstance(value, list) else TupleVariable(items, tuple_cls=type(value))
    if isinstance(value, dict):
        from .dicts import ConstDictVariable
        return ConstDictVariable({k: wrap_new(tx, v) for k, v in value.items()})
    if type(value) in (set, frozenset):
        from .sets import SetVariable
        return SetVariable([wrap_new(tx, v) for v in value], frozen=type(value) is frozenset)
    if isinstance(value, ember.Tensor):
        from ..exc import unimplemented
        unimplemented("a tensor created outside the graph during capture")
    return wrap_python_object(tx, value, None, guard=False)
