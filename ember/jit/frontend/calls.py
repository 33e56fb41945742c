"""Calls: ``f(...)`` for every kind of callee script knows (mixed into the FunctionCompiler).

- ember functions (``ember.tanh``, ``ember.nn.functional.relu``): call_function with the same object;
- Tensor / list / dict / str methods: call_method;
- math, operator and the supported builtins (len, int, float, bool, str, min, max, abs, round,
  print, isinstance, list, getattr, hasattr, sum, any, all, divmod, ord, chr);
- other Python functions: scripted recursively, ``prim::CallFunction`` with meta["callee"];
- ``@ember.jit.ignore`` functions: call_function on the Python function (meta["ignored"]=True);
  ``@ember.jit.unused``: prim::RaiseException at run time;
- modules: ``prim::CallMethod`` (see the ModuleInfo protocol in to_ir.py).
"""
from __future__ import annotations

import ast
import builtins
import inspect
import math
import operator

from ember.fx.node import Node
from ember.jit.ir import prim
from ember.jit.ir.types import (NO_DEFAULT, AnyType, DictType, FloatType, IntType, ListType, ModuleType,
                                NoneType, OptionalType, StrType, TensorType, TupleType, from_annotation)

from . import builtins as rules
from .errors import FrontendError, UnsupportedNodeError
from .exprs import (BoundMethod, ModuleDictView, ModuleListValue, ModuleMethod, ModuleValue, PyObj, Unrolled,
                    is_constant)

UNUSED_MESSAGE = "This function was marked as @ember.jit.unused and cannot be called from script"


def signature_str(sig) -> str:
    """``h(Tensor a, Tensor b) -> Tensor`` (TorchScript's schema form)."""
    args = ", ".join(f"{rules.py_type_str(a.type)} {a.name}" + ("" if a.default is NO_DEFAULT else f"={a.default!r}")
                     for a in sig.arguments)
    return f"{sig.name}({args}) -> {rules.py_type_str(sig.return_type)}"


class CallMixin:
    """Call emission (see module docstring)."""

    def expr_Call(self, e):
        for a in e.args:
            if isinstance(a, ast.Starred):
                raise UnsupportedNodeError(self.ctx, a)
        for k in e.keywords:
            if k.arg is None:
                raise self.error(k.value, "**kwargs in calls are not supported in script")
        func = self.emit_expr(e.func)
        if isinstance(func, BoundMethod):
            return self.method_call(func, e)
        if isinstance(func, ModuleMethod):
            return self.module_method_call(func, e)
        if isinstance(func, ModuleValue):
            attr = func.info.attribute("forward") if hasattr(func.info, "attribute") else None
            return self.module_method_call(ModuleMethod(func, "forward", attr), e)
        if isinstance(func, PyObj):
            return self.pyobj_call(func.obj, e)
        if isinstance(func, ModuleDictView):
            names = list(func.module.info.module._modules)
            subs = [self.module_attribute(func.module, k, e) for k in names]
            if func.name == "keys":
                return Unrolled([self.const(k, e) for k in names])
            if func.name == "values":
                return Unrolled(subs)
            return Unrolled([(self.const(k, e), m) for k, m in zip(names, subs)])
        if isinstance(func, ModuleListValue):
            raise self.error(e.func, "a ModuleList cannot be called; iterate over it or index it")
        raise self.error(e.func, f"cannot call a value of type '{rules.py_type_str(func.type)}'")

    def call_args(self, e):
        args = [self.value(a) for a in e.args]
        kwargs = {k.arg: self.value(k.value) for k in e.keywords}
        return args, kwargs

    # -- Python objects --------------------------------------------------------------------------
    def pyobj_call(self, obj, e):
        import ember.jit
        if obj is getattr(ember.jit, "is_scripting", None) or getattr(obj, "_ember_is_scripting", False):
            return self.const(True, e)
        if getattr(obj, "_ember_jit_annotate", False):
            return self.annotate_call(e)
        if getattr(obj, "_ember_jit_unused", False):
            ret = self._annotated_return(obj)
            self.call_args(e)
            self.emit(prim.RaiseException, (self.const(UNUSED_MESSAGE, e), "RuntimeError"), e, rules.NONE)
            return self.emit(prim.Uninitialized, (), e, ret)
        if getattr(obj, "_ember_jit_ignore", False):
            args, kwargs = self.call_args(e)
            node = self.emit(obj, args, e, self._annotated_return(obj), kwargs)
            node.meta["ignored"] = True
            return node
        from ember.jit._script import ScriptFunction
        if isinstance(obj, ScriptFunction):
            return self.script_function_call(obj, e)
        kind = rules.classify(obj)
        if kind == "builtin":
            return self.builtin_call(obj, e)
        if kind == "ember_function":
            return self.ember_call(obj, e)
        if kind == "math_function":
            args, kwargs = self.call_args(e)
            return self.emit(obj, args, e, rules.math_result_type(obj.__name__), kwargs)
        if kind == "operator_function":
            args, kwargs = self.call_args(e)
            if len(args) == 2 and not kwargs:
                return self.binary(obj, args[0], args[1], e)
            if len(args) == 1 and obj in (operator.neg, operator.pos, operator.invert):
                return self.emit(obj, args, e, rules.unary_type(obj, args[0].type) or AnyType())
            if len(args) == 1 and obj is operator.not_:
                return self.emit(obj, (self.to_bool(args[0], e),), e, rules.BOOL)
            raise self.error(e.func, f"operator.{obj.__name__} with these arguments is not supported in script")
        if kind == "python_function":
            from ember.jit._script import script
            from .to_ir import compiling
            if obj in compiling():
                raise self.error(e.func, f"{obj.__qualname__} is called recursively; recursive functions are "
                                         f"not supported in script")
            return self.script_function_call(script(obj), e)
        if kind == "exception":
            raise self.error(e.func, f"exception {obj.__name__} can only be used in a raise statement in script")
        if kind == "unsupported_builtin":
            raise self.error(e.func, f"Python builtin {obj!r} is currently not supported in Torchscript")
        if kind == "module" or kind == "type":
            raise self.error(e.func, f"{getattr(obj, '__name__', obj)!r} cannot be called in script")
        raise self.error(e.func, f"Python value of type '{type(obj).__name__}' cannot be called in script "
                                 f"(script calls ember functions, Tensor methods, math, and Python functions "
                                 f"that it can compile)")

    def _annotated_return(self, fn):
        ann = getattr(fn, "__annotations__", {}).get("return", inspect.Signature.empty)
        if ann is inspect.Signature.empty:
            return rules.T_
        return from_annotation(ann, getattr(fn, "__globals__", None))

    def annotate_call(self, e):
        """``ember.jit.annotate(List[int], [])``: the value with the given type."""
        if len(e.args) != 2:
            raise self.error(e, "annotate takes a type and a value")
        t = self.type_from_expr(e.args[0])
        v = self.value(e.args[1])
        return self.coerce(v, t, e)

    def coerce(self, v: Node, t, e) -> Node:
        """Give `v` the declared type `t` (empty literals and None retyped; others must be subtypes)."""
        if v.type == t:
            return v
        if v.meta.get("needs_annotation"):
            v.type = t
            v.meta.pop("needs_annotation")
            return v
        if v.meta.get("empty_literal") or (is_constant(v) and v.args[0] is None and isinstance(t, OptionalType)):
            if (v.meta.get("empty_literal") and type(v.type) is type(t)) or not v.meta.get("empty_literal"):
                v.type = t
                return v
        if v.type.is_subtype_of(t):
            return v
        raise self.error(e, f"Variable annotated with type '{rules.py_type_str(t)}' but is being assigned a "
                            f"value of type '{rules.py_type_str(v.type)}'")

    def type_from_expr(self, expr):
        obj = self.emit_expr(expr)
        try:
            if isinstance(obj, PyObj):
                return from_annotation(obj.obj, self.fn_globals)
            if is_constant(obj) and isinstance(obj.args[0], str):
                return from_annotation(obj.args[0], self.fn_globals)
        except ValueError as err:
            raise self.error(expr, str(err)) from None
        raise self.error(expr, "expected a type here")

    # -- ember functions -------------------------------------------------------------------------
    def ember_call(self, fn, e):
        args, kwargs = self.call_args(e)
        name = rules.ember_function_name(fn)
        short = name.rsplit(".", 1)[1]
        self.check_ember_args(fn, short, args, kwargs, e)
        t = rules.function_result_type(short, [a.type for a in args], {k: v.type for k, v in kwargs.items()})
        return self.emit(fn, args, e, t, kwargs)

    def check_ember_args(self, fn, short, args, kwargs, e):
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as err:
            raise self.error(e.func, f"Arguments for call are not valid: {short}{sig}: {err}") from None
        for pname, value in bound.arguments.items():
            if not isinstance(value, Node):
                continue
            t = value.type
            if pname in ("input", "condition") and not isinstance(t, TensorType):
                raise self.error(e.func, f"Arguments for call are not valid.\n  {short}{sig}:\n  Expected a value of "
                                         f"type 'Tensor' for argument '{pname}' but instead found type "
                                         f"'{rules.py_type_str(t)}'.\nThe original call is")
            if pname == "other" and not isinstance(t, TensorType) and not rules._is_num(t):
                raise self.error(e.func, f"Arguments for call are not valid.\n  {short}{sig}:\n  Expected a value of "
                                         f"type 'Tensor' for argument 'other' but instead found type "
                                         f"'{rules.py_type_str(t)}'.\nThe original call is")

    # -- methods ---------------------------------------------------------------------------------
    def method_call(self, bm: BoundMethod, e):
        recv, name = bm.recv, bm.name
        args, kwargs = self.call_args(e)
        t = recv.type
        if isinstance(t, TensorType) and name == "tolist":
            if args or kwargs:
                raise self.error(e, "tolist() takes no arguments")
            node = self.emit(name, (recv,), e, AnyType())
            node.meta["needs_annotation"] = True   # `xs: List[float] = x.tolist()` gives the type
            return node
        if isinstance(t, TensorType):
            try:
                rt = rules.tensor_method_type(name, [a.type for a in args], {k: v.type for k, v in kwargs.items()})
            except ValueError as err:
                raise self.error(e.func, str(err)) from None
            return self.emit(name, (recv, *args), e, rt, kwargs)
        if isinstance(t, ListType):
            rt = rules.list_method_type(name, t, [a.type for a in args])
            if rt is None:
                raise self.error(e.func, f"'{rules.py_type_str(t)}' object has no attribute or method '{name}'.")
            if name == "append" and len(args) == 1:
                if recv.meta.get("comprehension") or (recv.meta.get("empty_literal") and recv.type == rules.LT
                                                       and not isinstance(args[0].type, TensorType)
                                                       and recv.meta.get("untyped_ok")):
                    recv.type = ListType(args[0].type)
                    recv.meta.pop("comprehension", None)
                elif not args[0].type.is_subtype_of(recv.type.elem):
                    raise self.error(e, f"Expected a value of type '{rules.py_type_str(recv.type.elem)}' for "
                                        f"argument 'el' but instead found type '{rules.py_type_str(args[0].type)}'.")
            return self.emit(name, (recv, *args), e, rt, kwargs)
        if isinstance(t, DictType):
            rt = rules.dict_method_type(name, t, [a.type for a in args])
            if rt is None:
                raise self.error(e.func, f"'{rules.py_type_str(t)}' object has no attribute or method '{name}'.")
            node = self.emit(name, (recv, *args), e, rt, kwargs)
            if name in ("keys", "values", "items"):  # views are not indexable: make them lists
                node = self.emit(builtins.list, (node,), e, rt)
            return node
        if isinstance(t, StrType):
            rt = rules.str_method_type(name, [a.type for a in args])
            if rt is None:
                raise self.error(e.func, f"'str' object has no attribute or method '{name}'.")
            return self.emit(name, (recv, *args), e, rt, kwargs)
        raise self.error(e.func, f"'{rules.py_type_str(t)}' object has no attribute or method '{name}'.")

    # -- builtins --------------------------------------------------------------------------------
    def builtin_call(self, fn, e):
        name = fn.__name__
        if name in ("range", "zip", "enumerate"):
            raise self.error(e, f"{name}() can only be used as the iterable of a for loop in script")
        if name == "isinstance":
            v = self.value(e.args[0])
            target = self._static_index(e.args[1])
            targets = target if isinstance(target, tuple) else (target,)
            ok = False
            for tgt in targets:
                try:
                    st = from_annotation(tgt, self.fn_globals)
                except ValueError as err:
                    raise self.error(e.args[1], str(err)) from None
                if isinstance(st, ListType) and isinstance(v.type, ListType) and tgt in (list,):
                    ok = True
                ok = ok or v.type.is_subtype_of(st)
            return self.const(ok, e)
        if name in ("getattr", "hasattr"):
            base = self.emit_expr(e.args[0])
            attr = self._static_index(e.args[1])
            if name == "hasattr":
                try:
                    self.attribute(base, attr, e)
                    return self.const(True, e)
                except FrontendError:
                    return self.const(False, e)
            return self.attribute(base, attr, e)
        if name == "len" and len(e.args) == 1 and not e.keywords:
            v = self.emit_expr(e.args[0])
            n = self.static_len(v)
            if n is not None:   # module containers have a fixed length: a constant, as in torch
                node = getattr(v, "node", None)
                while isinstance(node, Node) and node.target is prim.GetAttr and not node.users:
                    parent = node.args[0]
                    node.graph.erase_node(node)   # the container itself is not needed
                    node = parent
                return self.const(n, e)
            v = self.to_value(v, e.args[0])
            if not isinstance(v.type, (ListType, TupleType, StrType, DictType, TensorType)):
                raise self.error(e, f"len() is not defined for '{rules.py_type_str(v.type)}'")
            return self.emit(builtins.len, (v,), e, rules.INT)
        args, kwargs = self.call_args(e)
        types = [a.type for a in args]
        if name == "print":
            return self.emit(prim.Print, args, e, rules.NONE)
        if kwargs:
            raise self.error(e, f"{name}() does not take keyword arguments in script")
        if name == "len":
            if len(args) != 1 or not isinstance(types[0], (ListType, TupleType, StrType, DictType, TensorType)):
                raise self.error(e, f"len() is not defined for '{rules.py_type_str(types[0]) if types else ''}'")
            return self.emit(builtins.len, args, e, rules.INT)
        if name in ("int", "float", "bool", "str"):
            result = {"int": rules.INT, "float": rules.FLOAT, "bool": rules.BOOL, "str": rules.STR}[name]
            if len(args) != 1:
                raise self.error(e, f"{name}() takes one argument in script")
            if name != "str" and not isinstance(types[0], (TensorType, StrType)) and not rules._is_num(types[0]):
                raise self.error(e, f"{name}() is not defined for '{rules.py_type_str(types[0])}'")
            return self.emit(fn, args, e, result)
        if name in ("min", "max"):
            if len(args) == 1 and isinstance(types[0], ListType):
                return self.emit(fn, args, e, types[0].elem)
            if len(args) >= 2 and all(rules._is_num(t) for t in types):
                t = types[0]
                for u in types[1:]:
                    t = rules.binary_type(operator.add, t, u)
                return self.emit(fn, args, e, t)
            raise self.error(e, f"{name}() in script takes numbers or one list")
        if name == "abs":
            t = types[0] if len(args) == 1 else None
            if not (isinstance(t, TensorType) or rules._is_num(t)):
                raise self.error(e, "abs() takes one number or Tensor in script")
            return self.emit(fn, args, e, rules.INT if isinstance(t, rules.BoolType) else t)
        if name == "round":
            return self.emit(fn, args, e, rules.INT if len(args) == 1 else rules.FLOAT)
        if name == "list":
            if len(args) != 1 or not isinstance(types[0], (ListType, StrType, DictType)):
                raise self.error(e, "list() in script copies a list, a str or a dict's keys")
            t = types[0]
            rt = t if isinstance(t, ListType) else ListType(rules.STR if isinstance(t, StrType) else t.key)
            return self.emit(fn, args, e, rt)
        if name == "sorted" and len(args) == 1 and isinstance(types[0], ListType):
            return self.emit(fn, args, e, types[0])
        if name == "sum" and len(args) == 1 and isinstance(types[0], ListType):
            return self.emit(fn, args, e, types[0].elem)
        if name in ("any", "all") and len(args) == 1 and isinstance(types[0], ListType):
            return self.emit(fn, args, e, rules.BOOL)
        if name == "divmod" and len(args) == 2 and all(rules._is_num(t) for t in types):
            t = rules.binary_type(operator.floordiv, *types)
            return self.emit(fn, args, e, TupleType((t, t)))
        if name == "ord":
            return self.emit(fn, args, e, rules.INT)
        if name == "chr":
            return self.emit(fn, args, e, rules.STR)
        raise self.error(e.func, f"Python builtin {fn!r} is currently not supported in Torchscript")

    # -- scripted callees ------------------------------------------------------------------------
    def bind_schema(self, sig, e, skip_self: bool = False) -> list:
        """Match a call's arguments to a scripted callee's Signature (compile-time checks)."""
        formals = list(sig.arguments[1:] if skip_self else sig.arguments)
        args, kwargs = self.call_args(e)
        head = signature_str(sig)
        if len(args) > len(formals):
            raise self.error(e.func, f"\n{head}:\nExpected at most {len(formals)} arguments but found "
                                     f"{len(args)} positional arguments.\n")
        values = list(args)
        names = [f.name for f in formals]
        for k in kwargs:
            if k not in names:
                raise self.error(e.func, f"\n{head}:\nKeyword argument {k} unknown.\n")
            if names.index(k) < len(args):
                raise self.error(e.func, f"\n{head}:\nArgument {k} specified twice.\n")
        for f in formals[len(args):]:
            if f.name in kwargs:
                values.append(kwargs[f.name])
            elif f.default is not NO_DEFAULT:
                values.append(self.const(f.default, e, f.type if f.default is None else None))
            else:
                raise self.error(e.func, f"\n{head}:\nArgument {f.name} not provided.\n")
        for f, v in zip(formals, values):
            if not v.type.is_subtype_of(f.type) and not (isinstance(f.type, FloatType) and isinstance(v.type, IntType)
                                                         and is_constant(v)):
                raise self.error(e.func, f"\n{head}:\nExpected a value of type '{rules.py_type_str(f.type)}' for "
                                         f"argument '{f.name}' but instead found type '{rules.py_type_str(v.type)}'.\n")
        return values

    def script_function_call(self, sf, e):
        values = self.bind_schema(sf.schema, e)
        node = self.emit(prim.CallFunction, values, e, sf.schema.return_type)
        node.meta["callee"] = sf
        return node

    def module_method_call(self, mm: ModuleMethod, e):
        attr = mm.attr
        if attr is not None and getattr(attr, "kind", None) == "ignored":
            args, kwargs = self.call_args(e)
            if kwargs:
                raise self.error(e, "keyword arguments to @ignore'd methods are not supported in script")
            ret = self._annotated_return(attr.method) if attr.method is not None else rules.T_
            return self.emit(prim.CallMethod, (mm.module.node, mm.name, *args), e, ret)
        callee = mm.module.info.method(mm.name)
        values = self.bind_schema(callee.schema, e, skip_self=True)
        node = self.emit(prim.CallMethod, (mm.module.node, mm.name, *values), e, callee.schema.return_type)
        node.meta["callee"] = callee
        return node

    # -- modules (ModuleInfo protocol, ember/jit/frontend/modules.py) ----------------------------
    def module_attribute(self, mv: ModuleValue, name: str, e):
        from ember.nn import ModuleDict
        if name in ("items", "keys", "values") and isinstance(getattr(mv.info, "module", None), ModuleDict):
            return ModuleDictView(mv, name)
        info = mv.info.attribute(name)
        if info is None:
            explain = getattr(mv.info, "missing_attribute_message", None)
            raise self.error(e, explain(name) if explain is not None else
                             f"Module '{mv.info.qualified_name}' has no attribute '{name}'")
        kind = info.kind
        if kind in ("parameter", "buffer", "attribute"):
            return self.emit(prim.GetAttr, (mv.node, name), e, info.type)
        if kind == "constant":
            return self.const(info.value, e, info.type)
        if kind == "module":
            node = self.emit(prim.GetAttr, (mv.node, name), e, ModuleType(info.module_info.qualified_name))
            return ModuleValue(node, info.module_info, info.items)
        if kind == "modulelist":
            node = self.emit(prim.GetAttr, (mv.node, name), e, info.type or ModuleType("ModuleList"))
            return ModuleListValue(node, info.items)
        if kind in ("method", "ignored"):
            return ModuleMethod(mv, name, info)
        raise self.error(e, f"Module attribute '{name}' of kind {kind!r} cannot be used in script")

    @staticmethod
    def static_len(v):
        """The length of a ModuleList / Sequential / ModuleDict (or unrolled) value, else None."""
        if isinstance(v, Unrolled):
            return len(v.values)
        if isinstance(v, (ModuleListValue, ModuleValue)) and v.items is not None:
            return len(v.items)
        module = getattr(getattr(v, "info", None), "module", None) if isinstance(v, ModuleValue) else None
        import ember.nn as nn
        if isinstance(module, (nn.ModuleDict, nn.ModuleList, nn.Sequential)):
            return len(module)
        return None

    def modulelist_item(self, mlv: ModuleListValue, i: int, e):
        if not -len(mlv.items) <= i < len(mlv.items):
            raise self.error(e, f"index {i} is out of range for a ModuleList of length {len(mlv.items)}")
        i = i % len(mlv.items)
        item = mlv.items[i]
        key = str(i)
        if isinstance(mlv, ModuleValue) and getattr(mlv.info, "module", None) is not None:
            key = list(mlv.info.module._modules)[i]   # Sequential children may have names
        node = self.emit(prim.GetAttr, (mlv.node, key), e, ModuleType(item.module_info.qualified_name))
        if item.kind == "modulelist":
            return ModuleListValue(node, item.items)
        return ModuleValue(node, item.module_info, item.items)


_ = (math, NoneType, AnyType)
