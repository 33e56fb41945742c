"""Calls: ``f(...)`` for every kind of callee script knows.

- ember functions (``ember.tanh``, ``ember.nn.functional.relu``): call_function with the same object;
- Tensor / list / dict / str methods: call_method;
- math, operator and the builtins of ``builtins.BUILTIN_FUNCTIONS``;
- other Python functions: scripted recursively, ``prim::CallFunction`` with meta["callee"];
- ``@ember.jit.ignore`` functions: call_function on the Python function (meta["ignored"]=True);
  ``@ember.jit.unused``: prim::RaiseException at run time;
- modules: ``prim::CallMethod`` (see the ModuleInfo protocol in modules.py).

``compile_call`` picks the handler from the callee's compile-time value (``_CALLEES``); a Python
object is sorted by ``builtins.classify``; result types come from the rules in builtins.py.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import operator

from ember.fx.node import Node
from ember.jit._callable import ARGUMENT_ERRORS, bind_arguments, signature_str
from ember.jit.ir import prim
from ember.jit.ir.types import AnyType, DictType, FloatType, IntType, ListType, TensorType

from . import builtins as rules
from .errors import FrontendError, UnsupportedNodeError
from .exprs import attribute, module_attribute, static_index, static_len, type_from_expr
from .operators import binary, to_bool
from .state import (COMPILING, BoundMethod, ModuleDictView, ModuleListValue, ModuleMethod, ModuleValue, PyObj,
                    Unrolled, is_constant)

UNUSED_MESSAGE = "This function was marked as @ember.jit.unused and cannot be called from script"


def compile_call(st, e):
    for a in e.args:
        if isinstance(a, ast.Starred):
            raise UnsupportedNodeError(st.ctx, a)
    for k in e.keywords:
        if k.arg is None:
            raise st.error(k.value, "**kwargs in calls are not supported in script")
    func = st.expr(e.func)
    handler = _CALLEES.get(type(func))
    if handler is not None:
        return handler(st, func, e)
    if isinstance(func, ModuleListValue):
        raise st.error(e.func, "a ModuleList cannot be called; iterate over it or index it")
    if not isinstance(func, Node):
        raise st.error(e.func, "this value cannot be called in script")
    raise st.error(e.func, f"cannot call a value of type '{rules.py_type_str(func.type)}'")


def call_args(st, e):
    return [st.value(a) for a in e.args], {k.arg: st.value(k.value) for k in e.keywords}


# -- Python objects ------------------------------------------------------------------------------
def _pyobj_call(st, func: PyObj, e):
    from ember.jit._script import ScriptFunction, annotate, is_scripting, script
    obj = func.obj
    modifier = getattr(obj, "_ember_jit_modifier", None)
    if obj is is_scripting:
        return st.const(True, e)
    if obj is annotate:   # ember.jit.annotate(List[int], []): the value, typed
        if len(e.args) != 2:
            raise st.error(e, "annotate takes a type and a value")
        t = type_from_expr(st, e.args[0])
        return st.coerce(st.value(e.args[1]), t, e)
    if modifier == "unused":
        ret = _annotated_return(obj)
        call_args(st, e)
        st.emit(prim.RaiseException, (st.const(UNUSED_MESSAGE, e), "RuntimeError"), e, rules.NONE)
        return st.emit(prim.Uninitialized, (), e, ret)
    if modifier == "ignore":
        args, kwargs = call_args(st, e)
        node = st.emit(obj, args, e, _annotated_return(obj), kwargs)
        node.meta["ignored"] = True
        return node
    if isinstance(obj, ScriptFunction):
        return _call_scripted(st, prim.CallFunction, (), obj, e)
    kind = rules.classify(obj)
    if kind in _PYTHON_CALLEES:
        return _PYTHON_CALLEES[kind](st, obj, e)
    if kind == "python_function":
        if obj in COMPILING:
            raise st.error(e.func, f"{obj.__qualname__} is called recursively; recursive functions are "
                                   f"not supported in script")
        return _call_scripted(st, prim.CallFunction, (), script(obj), e)
    if kind == "exception":
        raise st.error(e.func, f"exception {obj.__name__} can only be used in a raise statement in script")
    if kind == "unsupported_builtin":
        raise st.error(e.func, f"Python builtin {obj!r} is currently not supported in Torchscript")
    if kind == "module" or kind == "type":
        raise st.error(e.func, f"{getattr(obj, '__name__', obj)!r} cannot be called in script")
    raise st.error(e.func, f"Python value of type '{type(obj).__name__}' cannot be called in script "
                           f"(script calls ember functions, Tensor methods, math, and Python functions "
                           f"that it can compile)")


def _annotated_return(fn):
    return rules.annotated_type(getattr(fn, "__annotations__", {}).get("return", inspect.Parameter.empty), fn)


def _math_call(st, fn, e):
    args, kwargs = call_args(st, e)
    return st.emit(fn, args, e, rules.math_result_type(fn.__name__), kwargs)


def _operator_call(st, fn, e):
    args, kwargs = call_args(st, e)
    if len(args) == 2 and not kwargs:
        return binary(st, fn, args[0], args[1], e)
    if len(args) == 1 and fn in (operator.neg, operator.pos, operator.invert):
        return st.emit(fn, args, e, rules.unary_type(fn, args[0].type) or AnyType())
    if len(args) == 1 and fn is operator.not_:
        return st.emit(fn, (to_bool(st, args[0], e),), e, rules.BOOL)
    raise st.error(e.func, f"operator.{fn.__name__} with these arguments is not supported in script")


# -- ember functions -----------------------------------------------------------------------------
def _ember_call(st, fn, e):
    args, kwargs = call_args(st, e)
    from ember.ops.registry import public_name
    short = public_name(fn).rsplit(".", 1)[1]
    _check_ember_args(st, fn, short, args, kwargs, e)
    t = rules.call_result_type(short, [a.type for a in args], {k: v.type for k, v in kwargs.items()})
    return st.emit(fn, args, e, t, kwargs)


def _check_ember_args(st, fn, short, args, kwargs, e):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):   # a builtin without a signature: nothing to check here
        return
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as err:
        raise st.error(e.func, f"Arguments for call are not valid: {short}{sig}: {err}") from None
    for pname, value in bound.arguments.items():
        if not isinstance(value, Node):
            continue
        t = value.type
        if (pname in ("input", "condition") and not isinstance(t, TensorType)) or \
                (pname == "other" and not isinstance(t, TensorType) and not rules._is_num(t)):
            raise st.error(e.func, f"Arguments for call are not valid.\n  {short}{sig}:\n  Expected a value of "
                                   f"type 'Tensor' for argument '{pname}' but instead found type "
                                   f"'{rules.py_type_str(t)}'.\nThe original call is")


# -- methods -------------------------------------------------------------------------------------
def _method_call(st, bm: BoundMethod, e):
    recv, name = bm.recv, bm.name
    args, kwargs = call_args(st, e)
    t = recv.type
    if isinstance(t, TensorType):
        if name == "tolist":
            if args or kwargs:
                raise st.error(e, "tolist() takes no arguments")
            node = st.emit(name, (recv,), e, AnyType())
            node.meta["needs_annotation"] = True   # `xs: List[float] = x.tolist()` gives the type
            return node
        try:
            rt = rules.tensor_method_type(name, [a.type for a in args], {k: v.type for k, v in kwargs.items()})
        except ValueError as err:
            raise st.error(e.func, str(err)) from None
        return st.emit(name, (recv, *args), e, rt, kwargs)
    rule = rules.METHOD_TYPES.get(type(t))
    rt = rule(name, t, [a.type for a in args]) if rule is not None else None
    if rt is None:
        raise st.error(e.func, f"'{rules.py_type_str(t)}' object has no attribute or method '{name}'.")
    if isinstance(t, ListType) and name == "append" and len(args) == 1:
        if recv.meta.pop("comprehension", False):   # the comprehension's list: typed by its first append
            recv.type = ListType(args[0].type)
        elif not args[0].type.is_subtype_of(recv.type.elem):
            raise st.error(e, f"Expected a value of type '{rules.py_type_str(recv.type.elem)}' for "
                              f"argument 'el' but instead found type '{rules.py_type_str(args[0].type)}'.")
    node = st.emit(name, (recv, *args), e, rt, kwargs)
    if isinstance(t, DictType) and name in ("keys", "values", "items"):   # views are not indexable: lists
        node = st.emit(builtins.list, (node,), e, rt)
    return node


# -- builtins ------------------------------------------------------------------------------------
def _builtin_call(st, fn, e):
    special = _SOURCE_BUILTINS.get(fn)
    if special is not None:
        return special(st, fn, e)
    return _emit_builtin(st, fn, *call_args(st, e), e)


def _emit_builtin(st, fn, args, kwargs, e):
    if fn is print:
        return st.emit(prim.Print, args, e, rules.NONE)
    if kwargs:
        raise st.error(e, f"{fn.__name__}() does not take keyword arguments in script")
    try:
        rt = rules.builtin_result_type(fn, [a.type for a in args])
    except ValueError as err:
        raise st.error(e, str(err)) from None
    if rt is None:
        raise st.error(e.func, f"Python builtin {fn!r} is currently not supported in Torchscript")
    return st.emit(fn, args, e, rt)


def _loop_only(st, fn, e):
    raise st.error(e, f"{fn.__name__}() can only be used as the iterable of a for loop in script")


def _isinstance(st, fn, e):
    v = st.value(e.args[0])
    target = static_index(st, e.args[1])
    ok = False
    for tgt in target if isinstance(target, tuple) else (target,):
        t = st.annotation_type(tgt, e.args[1])
        ok = ok or v.type.is_subtype_of(t) or (tgt is list and isinstance(t, ListType) and isinstance(v.type, ListType))
    return st.const(ok, e)


def _getattr(st, fn, e):
    base = st.expr(e.args[0])
    name = static_index(st, e.args[1])
    if fn is getattr:
        return attribute(st, base, name, e)
    try:
        attribute(st, base, name, e)
        return st.const(True, e)
    except FrontendError:   # hasattr: script sees no such attribute
        return st.const(False, e)


def _len(st, fn, e):
    if len(e.args) != 1 or e.keywords:
        return _emit_builtin(st, fn, *call_args(st, e), e)
    v = st.expr(e.args[0])
    n = static_len(v)
    if n is None:
        return _emit_builtin(st, fn, [st.to_value(v, e.args[0])], {}, e)
    node = getattr(v, "node", None)   # module containers have a fixed length: a constant, as in torch
    while isinstance(node, Node) and node.target is prim.GetAttr and not node.users:
        parent = node.args[0]
        node.graph.erase_node(node)   # the container itself is not needed
        node = parent
    return st.const(n, e)


_SOURCE_BUILTINS = {   # builtins that read their arguments' source, not only their values
    range: _loop_only, zip: _loop_only, enumerate: _loop_only, isinstance: _isinstance,
    getattr: _getattr, hasattr: _getattr, len: _len,
}


# -- scripted callees ----------------------------------------------------------------------------
def _call_scripted(st, target, receiver: tuple, callee, e, skip_self: bool = False):
    """``prim::CallFunction`` / ``prim::CallMethod`` of a compiled callee, arguments bound to its schema."""
    values = _bind_schema(st, callee.schema, e, skip_self)
    node = st.emit(target, (*receiver, *values), e, callee.schema.return_type)
    node.meta["callee"] = callee
    return node


def _bind_schema(st, sig, e, skip_self: bool) -> list:
    """Match a call's arguments to a scripted callee's Signature (compile-time checks)."""
    formals = sig.arguments[1:] if skip_self else sig.arguments
    head = signature_str(sig)

    def wrong(what):
        return st.error(e.func, f"\n{head}:\n{what}\n")
    values = bind_arguments(formals, *call_args(st, e),
                            lambda kind, **fields: wrong(ARGUMENT_ERRORS[kind][0].format(**fields)),
                            lambda f: st.const(f.default, e, f.type if f.default is None else None))
    for f, v in zip(formals, values):
        if not v.type.is_subtype_of(f.type) and not (isinstance(f.type, FloatType) and isinstance(v.type, IntType)
                                                     and is_constant(v)):
            raise wrong(f"Expected a value of type '{rules.py_type_str(f.type)}' for argument '{f.name}' but "
                        f"instead found type '{rules.py_type_str(v.type)}'.")
    return values


def _module_method_call(st, mm: ModuleMethod, e):
    attr = mm.attr
    if attr is not None and getattr(attr, "kind", None) == "ignored":
        args, kwargs = call_args(st, e)
        if kwargs:
            raise st.error(e, "keyword arguments to @ignore'd methods are not supported in script")
        ret = _annotated_return(attr.method) if attr.method is not None else rules.T_
        return st.emit(prim.CallMethod, (mm.module.node, mm.name, *args), e, ret)
    callee = mm.module.info.method(mm.name)
    return _call_scripted(st, prim.CallMethod, (mm.module.node, mm.name), callee, e, skip_self=True)


def _module_forward_call(st, mv: ModuleValue, e):
    return _module_method_call(st, ModuleMethod(mv, "forward", mv.info.attribute("forward")), e)


def _module_dict_view_call(st, view: ModuleDictView, e):
    names = list(view.module.info.module._modules)
    subs = [module_attribute(st, view.module, k, e) for k in names]
    if view.name == "keys":
        return Unrolled([st.const(k, e) for k in names])
    if view.name == "values":
        return Unrolled(subs)
    return Unrolled([(st.const(k, e), m) for k, m in zip(names, subs)])


_CALLEES = {   # the compile-time value of the callee -> its call handler
    PyObj: _pyobj_call, BoundMethod: _method_call, ModuleMethod: _module_method_call,
    ModuleValue: _module_forward_call, ModuleDictView: _module_dict_view_call,
}

_PYTHON_CALLEES = {   # builtins.classify(obj) -> the call handler for that kind of Python object
    "builtin": _builtin_call, "ember_function": _ember_call, "math_function": _math_call,
    "operator_function": _operator_call,
}
