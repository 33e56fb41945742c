"""Expressions that read values: constants, names, attributes, container literals, subscripts,
f-strings, and the values of scripted modules (``self.x``, ``self.layers[0]``, ``len(self.layers)``).

Operators and conditions are in operators.py, calls in calls.py, comprehensions in
comprehensions.py; the values (Nodes and sugared values) are described in state.py.
"""
from __future__ import annotations

import ast
import builtins
import operator

from ember.fx.node import Node
from ember.jit.ir import prim
from ember.jit.ir.types import (AnyType, BoolType, DictType, IntType, ListType, OptionalType, StrType,
                                TensorType, TupleType)

from . import builtins as rules
from .errors import UnsupportedNodeError
from .state import (BoundMethod, ModuleDictView, ModuleListValue, ModuleMethod, ModuleValue, PyObj, Unrolled,
                    is_constant)


def compile_constant(st, e):
    if e.value is Ellipsis:
        return st.const(Ellipsis, e, AnyType())
    if isinstance(e.value, (bytes, complex)):
        raise st.error(e, f"{type(e.value).__name__} literals are not supported in script")
    return st.const(e.value, e)


def compile_name(st, e):
    return st.lookup(e.id, e)


def compile_attribute(st, e):
    return attribute(st, st.expr(e.value), e.attr, e)


def attribute(st, base, name: str, e):
    """``base.name`` for any base (Python object, Tensor, module, list...)."""
    if isinstance(base, PyObj):
        if not hasattr(base.obj, name):
            raise st.error(e, f"Python object {getattr(base.obj, '__name__', base.obj)!r} has no "
                              f"attribute {name!r}")
        return PyObj(getattr(base.obj, name))
    if isinstance(base, ModuleValue):
        return module_attribute(st, base, name, e)
    if isinstance(base, (BoundMethod, ModuleListValue, ModuleMethod, ModuleDictView, Unrolled)):
        raise st.error(e, f"cannot read attribute {name!r} of this value")
    t = base.type
    if isinstance(t, TensorType):
        if name == "shape":
            return st.emit("size", (base,), e, ListType(rules.INT))
        at = rules.tensor_attribute_type(name)
        if at is not None:
            return st.emit(builtins.getattr, (base, name), e, at)
        import ember
        if callable(getattr(ember.Tensor, name, None)):
            return BoundMethod(base, name)
        raise st.error(e, f"'Tensor' object has no attribute or method '{name}'.")
    if isinstance(t, (ListType, DictType, StrType)):
        return BoundMethod(base, name)
    if isinstance(t, TupleType) and len(t.elems) == 2 and name in ("values", "indices"):
        # the (values, indices) results of max/min/sort/topk/... are named tuples
        return st.emit(operator.getitem, (base, st.const(int(name == "indices"), e)), e, t.elems[name == "indices"])
    raise st.error(e, f"'{rules.py_type_str(t)}' object has no attribute or method '{name}'."
                   + (" (refine it with `if x is not None:` first)" if isinstance(t, OptionalType) else ""))


def type_from_expr(st, expr):
    """The ScriptType an expression names (``List[int]``, ``Optional[Tensor]``, ``"Tensor"``)."""
    obj = st.expr(expr)
    if isinstance(obj, PyObj):
        return st.annotation_type(obj.obj, expr)
    if is_constant(obj) and isinstance(obj.args[0], str):
        return st.annotation_type(obj.args[0], expr)
    raise st.error(expr, "expected a type here")


# -- containers ----------------------------------------------------------------------------------
def compile_list(st, e):
    items = [st.value(x) for x in e.elts]
    elem = rules.T_
    if items:
        elem = items[0].type
        for x in items[1:]:
            u = rules.unify(elem, x.type)
            if u is None:
                raise st.error(e, f"Lists must contain only a single type, got "
                                  f"'{rules.py_type_str(elem)}' and '{rules.py_type_str(x.type)}'")
            elem = u
    node = st.emit(prim.ListConstruct, items, e, ListType(elem))
    if not items:
        node.meta["empty_literal"] = True
    return node


def compile_tuple(st, e):
    items = [st.value(x) for x in e.elts]
    return st.emit(prim.TupleConstruct, items, e, TupleType(tuple(x.type for x in items)))


def compile_dict(st, e):
    if any(k is None for k in e.keys):
        raise UnsupportedNodeError(st.ctx, ast.Starred(), e)
    keys = [st.value(k) for k in e.keys]
    vals = [st.value(v) for v in e.values]
    kt, vt = (keys[0].type, vals[0].type) if keys else (rules.STR, rules.T_)
    for k, v in zip(keys, vals):
        if k.type != kt or rules.unify(vt, v.type) is None:
            raise st.error(e, "Dict keys and values must each have a single type")
        vt = rules.unify(vt, v.type)
    node = st.emit(prim.DictConstruct, [x for kv in zip(keys, vals) for x in kv], e, DictType(kt, vt))
    if not keys:
        node.meta["empty_literal"] = True
    return node


def compile_subscript(st, e):
    base = st.expr(e.value)
    if isinstance(base, PyObj):   # List[int] in annotations, constant tuples
        return PyObj(base.obj[static_index(st, e.slice)])
    if isinstance(base, (ModuleListValue, ModuleValue)):
        idx = st.value(e.slice)
        if is_constant(idx) and isinstance(idx.args[0], str) and isinstance(base, ModuleValue):
            return attribute(st, base, idx.args[0], e)   # ModuleDict["name"]
        if not is_constant(idx) or not isinstance(idx.args[0], int) or base.items is None:
            raise st.error(e.slice, "ModuleList/Sequential indices must be integer constants in script "
                                    "(ModuleDict keys: str constants)")
        return modulelist_item(st, base, idx.args[0], e)
    return getitem(st, st.to_value(base, e.value), index_value(st, e.slice), e)


def static_index(st, s):
    """The compile-time value of an index or argument that must be constant (``getattr(x, "n")``)."""
    if isinstance(s, ast.Tuple):
        return tuple(static_index(st, x) for x in s.elts)
    v = st.expr(s)
    if isinstance(v, PyObj):
        return v.obj
    if is_constant(v):
        return v.args[0]
    raise st.error(s, "expected a constant index here")


def index_value(st, s) -> Node:
    """An index expression: slices become builtins.slice nodes, tuples of them TupleConstruct."""
    if isinstance(s, ast.Slice):
        parts = [st.value(p) if p is not None else st.const(None, s) for p in (s.lower, s.upper, s.step)]
        return st.emit(builtins.slice, parts, s, AnyType())
    if isinstance(s, ast.Tuple):
        items = [index_value(st, x) for x in s.elts]
        return st.emit(prim.TupleConstruct, items, s, TupleType(tuple(x.type for x in items)))
    return st.value(s)


def getitem(st, base: Node, index: Node, e) -> Node:
    t, it = base.type, index.type
    is_slice = index.target is builtins.slice if isinstance(index, Node) else False
    if isinstance(t, TensorType):
        rt = rules.T_
    elif isinstance(t, ListType):
        if not (is_slice or isinstance(it, (IntType, BoolType))):
            raise st.error(e, f"list indices must be integers or slices, not '{rules.py_type_str(it)}'")
        rt = t if is_slice else t.elem
    elif isinstance(t, StrType):
        rt = rules.STR
    elif isinstance(t, DictType):
        if not it.is_subtype_of(t.key):
            raise st.error(e, f"dict key must be '{rules.py_type_str(t.key)}', got '{rules.py_type_str(it)}'")
        rt = t.value
    elif isinstance(t, TupleType):
        if is_slice and all(is_constant(p) for p in index.args):
            rt = TupleType(t.elems[slice(*[p.args[0] for p in index.args])])
        elif is_constant(index) and isinstance(index.args[0], int):
            i = index.args[0]
            if not -len(t.elems) <= i < len(t.elems):
                raise st.error(e, f"Tuple index out of range. Tuple is length {len(t.elems)} and index is {i}")
            rt = t.elems[i]
        else:
            raise st.error(e, "tuple indices must be integer constants (tuples may hold different types)")
    else:
        raise st.error(e, f"'{rules.py_type_str(t)}' object is not subscriptable")
    return st.emit(operator.getitem, (base, index), e, rt)


def compile_fstring(st, e):
    fmt, args = [], []
    for part in e.values:
        if isinstance(part, ast.Constant):
            fmt.append(str(part.value).replace("{", "{{").replace("}", "}}"))
        else:
            if part.conversion != -1 or part.format_spec is not None:
                raise st.error(part, "f-string conversions and format specs are not supported in script")
            fmt.append("{}")
            args.append(st.value(part.value))
    return st.emit("format", (st.const("".join(fmt), e), *args), e, rules.STR)


# -- modules (the ModuleInfo protocol of modules.py) ---------------------------------------------
def module_attribute(st, mv: ModuleValue, name: str, e):
    from ember.nn import ModuleDict
    if name in ("items", "keys", "values") and isinstance(getattr(mv.info, "module", None), ModuleDict):
        return ModuleDictView(mv, name)
    info = mv.info.attribute(name)
    if info is None:
        raise st.error(e, mv.info.missing_attribute_message(name))
    kind = info.kind
    if kind in ("parameter", "buffer", "attribute"):
        return st.emit(prim.GetAttr, (mv.node, name), e, info.type)
    if kind == "constant":
        return st.const(info.value, e, info.type)
    if kind in ("module", "modulelist"):
        return _submodule(st.emit(prim.GetAttr, (mv.node, name), e, info.type), info)
    if kind in ("method", "ignored"):
        return ModuleMethod(mv, name, info)
    raise st.error(e, f"Module attribute '{name}' of kind {kind!r} cannot be used in script")


def static_len(v):
    """The length of a ModuleList / Sequential / ModuleDict (or unrolled) value, else None."""
    if isinstance(v, Unrolled):
        return len(v.values)
    if isinstance(v, (ModuleListValue, ModuleValue)) and v.items is not None:
        return len(v.items)
    from ember.nn import ModuleDict
    if isinstance(v, ModuleValue) and isinstance(v.info.module, ModuleDict):
        return len(v.info.module)
    return None


def modulelist_item(st, mlv, i: int, e):
    """Element `i` (a constant) of a ModuleList or Sequential value."""
    if not -len(mlv.items) <= i < len(mlv.items):
        raise st.error(e, f"index {i} is out of range for a ModuleList of length {len(mlv.items)}")
    key, item = mlv.items[i % len(mlv.items)]
    return _submodule(st.emit(prim.GetAttr, (mlv.node, key), e, item.type), item)


def _submodule(node: Node, attr):
    """The value of the submodule `attr` (an AttrInfo of kind "module" or "modulelist") read as `node`."""
    if attr.kind == "modulelist":
        return ModuleListValue(node, attr.items)
    return ModuleValue(node, attr.module_info, attr.items)
