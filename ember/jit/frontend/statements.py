"""Statements: assignments, ``if``, ``raise``, ``assert``, ``del``, expression statements.

A handler returns True when the statement always raises (what follows it is dead). SSA form
comes from emitting control flow as nodes with blocks:

- ``if``: a prim::If whose outputs are the variables either branch (re)assigned; a variable
  assigned in only one branch is undefined afterwards (error if used), different types in the two
  branches unify (None + T -> Optional[T]) or are an error if used. A constant condition
  (``is None`` on a non-Optional, ``ember.jit.is_scripting()``, the exit flags) folds: only the
  taken branch is emitted, as TorchScript's metaprogramming does.
- ``return`` reaches here only as the final ``return $retval`` (exits.py made the others flags).
"""
from __future__ import annotations

import ast
import operator

from ember.fx.node import Node
from ember.jit.ir import prim, unpack_outputs
from ember.jit.ir.types import DictType, ListType, StrType, TensorType, TupleType

from . import builtins as rules
from .errors import UnsupportedNodeError
from .exits import RETVAL
from .exprs import getitem, index_value, type_from_expr
from .operators import BINOPS, apply_refinements, binary, close_if, emit_cond, emit_if
from .state import ModuleListValue, ModuleValue, PyObj, is_constant


def compile_return(st, s):
    st.return_value = st.value(s.value)


def compile_expr_statement(st, s):
    if not (isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)):   # not a docstring
        st.expr(s.value)


def compile_pass(st, s):
    return


def compile_assign(st, s):
    v = st.expr(s.value)
    if getattr(s, "_return_of", None) is not None:   # `$retval = ...`: the `return` it came from
        st.return_site = s._return_of
    for target in s.targets:
        assign(st, target, v, s)


def compile_ann_assign(st, s):
    if not isinstance(s.target, ast.Name):
        raise st.error(s.target, "annotated assignments in script must assign a plain variable")
    t = type_from_expr(st, s.annotation)
    if s.value is None:
        raise st.error(s, "annotated declarations need a value in script")
    v = st.coerce(st.value(s.value), t, s)
    st.declared[s.target.id] = t
    st.bind(s.target.id, v, s)


def assign(st, target, v, s):
    """Store value `v` (or a tuple of values, from zip/enumerate) into an assignment target."""
    if isinstance(v, tuple):   # several values at once (zip/enumerate loop variables)
        if isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == len(v):
            for t, x in zip(target.elts, v):
                assign(st, t, x, s)
            return
        v = st.emit(prim.TupleConstruct, v, s, TupleType(tuple(x.type for x in v)))
    if isinstance(target, ast.Name):
        if not isinstance(v, (Node, PyObj, ModuleValue, ModuleListValue)):
            raise st.error(s, "this value cannot be assigned to a variable (call the method instead)")
        st.bind(target.id, v, s)
    elif isinstance(target, (ast.Tuple, ast.List)):
        _unpack(st, target, st.to_value(v, s.value if hasattr(s, "value") else s), s)
    elif isinstance(target, ast.Subscript):
        base = st.value(target.value)
        index = index_value(st, target.slice)
        v = st.to_value(v, s)
        bt = base.type
        if isinstance(bt, ListType) and not v.type.is_subtype_of(bt.elem):
            raise st.error(s, f"cannot store a '{rules.py_type_str(v.type)}' in a '{rules.py_type_str(bt)}'")
        if not isinstance(bt, (ListType, DictType, TensorType)):
            raise st.error(target, f"'{rules.py_type_str(bt)}' does not support item assignment")
        st.emit(operator.setitem, (base, index, v), s, rules.NONE)
    elif isinstance(target, ast.Attribute):
        base = st.expr(target.value)
        if not isinstance(base, ModuleValue):
            raise st.error(target, "script can only assign attributes of modules (self.x = ...)")
        st.emit(prim.SetAttr, (base.node, target.attr, st.to_value(v, s)), s, rules.NONE)
    else:
        raise UnsupportedNodeError(st.ctx, target)


def _unpack(st, target, v: Node, s):
    n = len(target.elts)
    starred = next((t for t in target.elts if isinstance(t, ast.Starred)), None)
    if starred is not None:
        raise UnsupportedNodeError(st.ctx, starred)
    if isinstance(v.type, TupleType):
        found = len(v.type.elems)
        if found != n:
            raise st.error(s, f"too many values to unpack: need {n} but found {found}" if found > n else
                              f"need {n} values to unpack but found only {found}")
        outs = unpack_outputs(st.emit(prim.TupleUnpack, (v,), s, None), list(v.type.elems))
    elif isinstance(v.type, ListType):
        outs = unpack_outputs(st.emit(prim.ListUnpack, (v, n), s, None), [v.type.elem] * n)
    else:
        raise st.error(s, f"{rules.py_type_str(v.type)} cannot be used as a tuple")
    for t, o in zip(target.elts, outs):
        assign(st, t, o, s)


_INPLACE = {ast.Add: "add_", ast.Sub: "sub_", ast.Mult: "mul_", ast.Div: "div_", ast.Pow: "pow_",
            ast.Mod: "remainder_", ast.FloorDiv: "floor_divide_", ast.BitAnd: "bitwise_and_",
            ast.BitOr: "bitwise_or_", ast.BitXor: "bitwise_xor_"}


def compile_aug_assign(st, s):
    target = s.target
    rhs = st.value(s.value)
    if isinstance(target, ast.Name):
        cur = st.to_value(st.lookup(target.id, target), target)
    elif isinstance(target, ast.Subscript):
        cur = getitem(st, st.value(target.value), index_value(st, target.slice), target)
    elif isinstance(target, ast.Attribute):
        cur = st.value(target)
    else:
        raise UnsupportedNodeError(st.ctx, target)
    if isinstance(cur.type, TensorType) and type(s.op) in _INPLACE:
        if not (isinstance(rhs.type, TensorType) or rules._is_num(rhs.type)):
            raise st.error(s, f"Arguments for call are not valid: unsupported operand types for "
                              f"augmented assignment: 'Tensor' and '{rules.py_type_str(rhs.type)}'")
        new = st.emit(_INPLACE[type(s.op)], (cur, rhs), s, rules.T_)
    elif isinstance(cur.type, ListType) and isinstance(s.op, ast.Add):
        if not rhs.type.is_subtype_of(cur.type):
            raise st.error(s, f"cannot extend a '{rules.py_type_str(cur.type)}' with "
                              f"'{rules.py_type_str(rhs.type)}'")
        st.emit("extend", (cur, rhs), s, rules.NONE)
        new = cur
    else:
        new = binary(st, BINOPS.get(type(s.op)), cur, rhs, s)
    if not isinstance(target, ast.Name):
        assign(st, target, new, s)
    elif new is not cur:
        st.bind(target.id, new, s)


def compile_delete(st, s):
    for t in s.targets:
        if not isinstance(t, ast.Name) or t.id not in st.env:
            raise UnsupportedNodeError(st.ctx, s, t)
        del st.env[t.id]


def compile_raise(st, s):
    exc = s.exc
    if exc is None:
        raise st.error(s, "a bare `raise` is not supported in script; raise an exception instance")
    msg_expr, cls_expr = None, exc
    if isinstance(exc, ast.Call):
        cls_expr = exc.func
        msg_expr = exc.args[0] if exc.args else None
    cls = st.expr(cls_expr)
    if not (isinstance(cls, PyObj) and isinstance(cls.obj, type) and issubclass(cls.obj, BaseException)):
        raise st.error(cls_expr, "script can only raise exception classes (raise ValueError(\"...\"))")
    emit_raise(st, msg_expr, cls.obj.__name__, s)
    return True


def emit_raise(st, msg_expr, cls_name: str, s):
    """``prim::RaiseException`` of exception class `cls_name`, the message `msg_expr` made a str."""
    msg = st.value(msg_expr) if msg_expr is not None else st.const("", s)
    if not isinstance(msg.type, StrType):
        msg = st.emit(str, (msg,), s, rules.STR)
    st.emit(prim.RaiseException, (msg, cls_name), s, rules.NONE)


def compile_assert(st, s):
    cond, true_ref, _ = emit_cond(st, s.test)
    if is_constant(cond):
        if cond.args[0]:
            return False
        emit_raise(st, s.msg, "AssertionError", s)
        return True
    node, _, _ = emit_if(st, cond, s, (lambda: None, lambda: emit_raise(st, s.msg, "AssertionError", s)))
    close_if(node, [[], []], [])
    apply_refinements(st, true_ref, s)
    return False


# -- if ------------------------------------------------------------------------------------------
def compile_if(st, s):
    cond, true_ref, false_ref = emit_cond(st, s.test)
    if is_constant(cond):
        return st.block(s.body if cond.args[0] else s.orelse)
    pre_env = st.env

    def branch(stmts):
        return lambda: (st.block(stmts), st.env)
    node, blocks, ends = emit_if(st, cond, s, (branch(s.body), branch(s.orelse)), (true_ref, false_ref))
    st.env = dict(pre_env)
    dead, envs = [d for d, _ in ends], [env for _, env in ends]
    if all(dead):
        close_if(node, [[], []], [])
        return True
    _merge_if(st, s, node, blocks, envs, dead, pre_env)
    return False


def _merge_if(st, s, node, blocks, envs, dead, pre_env):
    """The If's outputs: the variables the branches left different (see the module docstring)."""
    out_names, out_vals, out_types, after = [], ([], []), [], {}
    for name in dict.fromkeys([*envs[0], *envs[1]]):
        a, b = envs[0].get(name), envs[1].get(name)
        if a is b:
            if a is not None:
                st.env[name] = a
            continue
        pre = pre_env.get(name)
        if pre is not None and _only_refined(a, pre) and _only_refined(b, pre):
            continue   # only refined in the branches, never reassigned: keeps its pre-If value
        if dead[0] or dead[1]:
            live = b if dead[0] else a
            if live is None:
                continue
            if not isinstance(live, Node) or live.graph.encloses(st.graph):
                st.env[name] = live
            elif is_constant(live):
                after[name] = (live.args[0], live.type)
            else:
                out_names.append(name)
                out_types.append(live.type)
                out_vals[0].append(None if dead[0] else a)
                out_vals[1].append(None if dead[1] else b)
            continue
        if a is None or b is None:
            branch = "false" if b is None else "true"
            st.make_undefined(name, f"{name} is not defined in the {branch} branch",
                              st.def_site.get(a if b is None else b, s))
            continue
        if not isinstance(a, Node) or not isinstance(b, Node):
            st.make_undefined(name, f"{name} is assigned different Python values in the branches", s)
            continue
        if is_constant(a) and is_constant(b) and a.type == b.type and type(a.args[0]) is type(b.args[0]) \
                and a.args[0] == b.args[0]:
            after[name] = (a.args[0], a.type)
            continue
        t = rules.unify(a.type, b.type)
        if t is None and name == RETVAL:
            raise st.error(s, f"Previous return statement returned a value of type "
                              f"{rules.py_type_str(a.type)} but this return statement returns a value of "
                              f"type {rules.py_type_str(b.type)}")
        if t is None:
            st.make_undefined(name, f"Type mismatch: {name} is set to type {rules.py_type_str(a.type)} in the "
                                    f"true branch and type {rules.py_type_str(b.type)} in the false branch",
                              st.def_site.get(b, s))
        elif isinstance(t, rules.BottomType):
            after[name] = None
        else:
            out_names.append(name)
            out_types.append(t)
            out_vals[0].append(a)
            out_vals[1].append(b)
    returns = []
    for block, values in zip(blocks, out_vals):
        with st.inside(block):   # a branch that leaves a value unset returns prim::Uninitialized
            returns.append([st.emit(prim.Uninitialized, (), s, t) if v is None or isinstance(v.type, rules.BottomType)
                            else v for v, t in zip(values, out_types)])
    for name, o in zip(out_names, close_if(node, returns, out_types)):
        st.bind(name, o)
    for name, c in after.items():
        st.env[name] = st.emit(prim.Uninitialized, (), s, rules.BottomType()) if c is None else \
            st.const(c[0], s, c[1])


def _only_refined(v, pre) -> bool:
    return v is pre or (isinstance(v, Node) and v.meta.get("refined_from") is pre)
