"""Expressions: Python AST expression -> IR values (mixed into the FunctionCompiler of to_ir.py).

An expression gives either a Node (an SSA value with ``node.type``) or a *sugared value* that only
exists at compile time: a Python object reached by name (``PyObj``: the ember module, a function,
a constant), a method bound to a value (``BoundMethod``), a scripted module (``ModuleValue``) or a
ModuleList (``ModuleListValue``). Calls are emitted by calls.py.

Conditions go through ``emit_cond``, which also returns the Optional refinements the condition
proves (``x is not None`` -> x is T in the true branch); ``and``/``or`` short-circuit through
prim::If as in TorchScript; conditions that are constants fold at compile time.
"""
from __future__ import annotations

import ast
import builtins
import operator

from ember.fx.node import Node
from ember.jit.ir import add_block, call, constant, prim, set_block_returns, unpack_outputs
from ember.jit.ir.types import (AnyType, BoolType, DictType, IntType, ListType, NoneType, OptionalType, StrType,
                                TensorType, TupleType, type_of_value)

from . import builtins as rules
from .errors import FrontendError, UnsupportedNodeError


class PyObj:
    """A Python object used by name in script (resolved at compile time)."""

    def __init__(self, obj):
        self.obj = obj


class BoundMethod:
    """``value.name`` waiting to be called (a Tensor, list, dict or str method)."""

    def __init__(self, recv: Node, name: str):
        self.recv, self.name = recv, name


class ModuleValue:
    """A scripted module value (``self``, ``self.sub``) with its ModuleInfo."""

    def __init__(self, node: Node, info, items=None):
        self.node, self.info, self.items = node, info, items


class Unrolled:
    """Compile-time list of values a for loop unrolls over (a ModuleDict's items/keys/values)."""

    def __init__(self, values: list):
        self.values = values


class ModuleDictView:
    """``module_dict.items`` / ``.keys`` / ``.values`` waiting to be called."""

    def __init__(self, module: "ModuleValue", name: str):
        self.module, self.name = module, name


class ModuleListValue:
    """A ModuleList attribute: iterated by unrolling over `items` (AttrInfo per element)."""

    def __init__(self, node: Node, items: list):
        self.node, self.items = node, items


class ModuleMethod:
    """``module.method`` waiting to be called (scripted or @ignore'd)."""

    def __init__(self, module: ModuleValue, name: str, attr):
        self.module, self.name, self.attr = module, name, attr


BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
          ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
          ast.MatMult: operator.matmul, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
          ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift}
CMPOPS = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
          ast.Eq: operator.eq, ast.NotEq: operator.ne}
_OP_SYMBOL = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
              operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
              operator.and_: "&", operator.or_: "|", operator.xor: "^", operator.lshift: "<<",
              operator.rshift: ">>", operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=",
              operator.eq: "==", operator.ne: "!="}


def is_constant(v) -> bool:
    """True for a prim::Constant node."""
    return isinstance(v, Node) and v.op == "call_function" and v.target is prim.Constant


class ExprMixin:
    """Expression emission; needs self.ctx, self.graph, self.env (see to_ir.FunctionCompiler)."""

    # -- small helpers ---------------------------------------------------------------------------
    def loc(self, e):
        return self.ctx.loc(e)

    def error(self, e, what: str, used_at=None) -> FrontendError:
        return FrontendError(self.ctx, e, what, used_at)

    def const(self, value, e, type_=None) -> Node:
        if type_ is None:
            try:
                type_ = type_of_value(value)
            except ValueError:
                type_ = AnyType()
        return constant(self.graph, value, type_, loc=self.loc(e) if e is not None else None)

    def emit(self, target, args, e, type_, kwargs=None) -> Node:
        return call(self.graph, target, tuple(args), kwargs, type_=type_, loc=self.loc(e) if e is not None else None)

    def value(self, e) -> Node:
        """Emit `e` and require a runtime value (sugared Python constants become prim::Constant)."""
        return self.to_value(self.emit_expr(e), e)

    def to_value(self, v, e) -> Node:
        if isinstance(v, Node):
            return v
        if isinstance(v, PyObj):
            kind = rules.classify(v.obj)
            if kind == "constant":
                return self.const(v.obj, e)
            if kind == "unsupported_builtin":
                raise self.error(e, f"Python builtin {v.obj!r} is currently not supported in Torchscript")
            what = getattr(v.obj, "__name__", type(v.obj).__name__)
            raise self.error(e, f"Python value {what!r} of type '{type(v.obj).__name__}' cannot be used as a "
                                f"value in script (script values are Tensors, numbers, bool, str, None, "
                                f"and List/Tuple/Dict/Optional of them)")
        if isinstance(v, ModuleValue):
            return v.node
        if isinstance(v, ModuleListValue):
            return v.node
        raise self.error(e, "this expression cannot be used as a value (a method must be called)")

    def to_bool(self, v: Node, e) -> Node:
        """Convert a condition to bool (``aten::Bool`` of a Tensor, truthiness of numbers)."""
        t = v.type
        if isinstance(t, BoolType):
            return v
        if isinstance(t, OptionalType) or isinstance(t, NoneType):
            raise self.error(e, f"Could not convert a value of type '{rules.py_type_str(t)}' to bool: "
                                f"test Optional values with `is None` / `is not None`")
        if is_constant(v) and isinstance(v.args[0], (int, float, str)):
            return self.const(bool(v.args[0]), e)
        return self.emit(builtins.bool, (v,), e, rules.BOOL)

    # -- dispatch --------------------------------------------------------------------------------
    def emit_expr(self, e):
        """Emit an expression; returns a Node or a sugared value."""
        method = getattr(self, "expr_" + type(e).__name__, None)
        if method is None:
            raise UnsupportedNodeError(self.ctx, e)
        return method(e)

    def expr_Constant(self, e):
        if e.value is Ellipsis:
            return self.const(Ellipsis, e, AnyType())
        if isinstance(e.value, (bytes, complex)):
            raise self.error(e, f"{type(e.value).__name__} literals are not supported in script")
        return self.const(e.value, e)

    def expr_Name(self, e):
        return self.lookup(e.id, e)

    def expr_Attribute(self, e):
        base = self.emit_expr(e.value)
        return self.attribute(base, e.attr, e)

    def attribute(self, base, name: str, e):
        """``base.name`` for any base (Python object, Tensor, module, list...)."""
        if isinstance(base, PyObj):
            if not hasattr(base.obj, name):
                raise self.error(e, f"Python object {getattr(base.obj, '__name__', base.obj)!r} has no "
                                    f"attribute {name!r}")
            return PyObj(getattr(base.obj, name))
        if isinstance(base, ModuleValue):
            return self.module_attribute(base, name, e)
        if isinstance(base, (BoundMethod, ModuleListValue, ModuleMethod)):
            raise self.error(e, f"cannot read attribute {name!r} of this value")
        t = base.type
        if isinstance(t, TensorType):
            if name == "shape":
                return self.emit("size", (base,), e, ListType(rules.INT))
            at = rules.tensor_attribute_type(name)
            if at is not None:
                return self.emit(builtins.getattr, (base, name), e, at)
            import ember
            if callable(getattr(ember.Tensor, name, None)):
                return BoundMethod(base, name)
            raise self.error(e, f"'Tensor' object has no attribute or method '{name}'.")
        if isinstance(t, (ListType, DictType, StrType)):
            return BoundMethod(base, name)
        if isinstance(t, TupleType) and len(t.elems) == 2 and name in ("values", "indices"):
            # the (values, indices) results of max/min/sort/topk/... are named tuples
            return self.emit(operator.getitem, (base, self.const(int(name == "indices"), e)), e,
                             t.elems[name == "indices"])
        raise self.error(e, f"'{rules.py_type_str(t)}' object has no attribute or method '{name}'."
                         + (" (refine it with `if x is not None:` first)" if isinstance(t, OptionalType) else ""))

    # -- operators -------------------------------------------------------------------------------
    def expr_BinOp(self, e):
        op = BINOPS.get(type(e.op))
        if op is None:
            raise UnsupportedNodeError(self.ctx, e)
        return self.binary(op, self.value(e.left), self.value(e.right), e)

    def binary(self, op, a: Node, b: Node, e) -> Node:
        t = rules.binary_type(op, a.type, b.type)
        if t is None:
            raise self.error(e, f"Arguments for call are not valid: unsupported operand types for "
                                f"{_OP_SYMBOL.get(op, op.__name__)}: '{rules.py_type_str(a.type)}' and "
                                f"'{rules.py_type_str(b.type)}' (script supports Tensor with Tensor or number, "
                                f"number with number, str + str and list + list)")
        return self.emit(op, (a, b), e, t)

    def expr_UnaryOp(self, e):
        if isinstance(e.op, ast.Not):
            v = self.to_bool(self.value(e.operand), e.operand)
            if is_constant(v):
                return self.const(not v.args[0], e)
            return self.emit(operator.not_, (v,), e, rules.BOOL)
        op = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}[type(e.op)]
        v = self.value(e.operand)
        if is_constant(v) and op is operator.neg and isinstance(v.args[0], (int, float)) \
                and not isinstance(v.args[0], bool):
            return self.const(-v.args[0], e)
        t = rules.unary_type(op, v.type)
        if t is None:
            raise self.error(e, f"unary {op.__name__} is not defined for '{rules.py_type_str(v.type)}'")
        return self.emit(op, (v,), e, t)

    def expr_BoolOp(self, e):
        # a value: Python's and/or return an operand, script's return a bool -- the same only
        # when every operand is a bool (checked by value_check)
        return self.emit_cond(e, value_check=True)[0]

    def _check_bool_operand(self, v: Node, e):
        if not isinstance(v.type, BoolType):
            raise self.error(e, f"an 'and'/'or' used as a value needs bool operands in script (Python would return "
                                f"this '{rules.py_type_str(v.type)}' operand itself); compare it explicitly or "
                                f"use it as a condition")
        return v

    def expr_Compare(self, e):
        if len(e.ops) == 1:   # a value: Tensor comparisons stay Tensors (masks)
            return self.compare(type(e.ops[0]), self.value(e.left), self.value(e.comparators[0]), e)[0]
        return self.emit_cond(e)[0]

    def compare(self, op, left: Node, right: Node, e):
        """One comparison; returns (bool/Tensor node, true refinements, false refinements)."""
        if op in (ast.Is, ast.IsNot):
            return self.identity(op is ast.Is, left, right, e)
        if op in (ast.In, ast.NotIn):
            rt = right.type
            if not isinstance(rt, (ListType, DictType, StrType, TupleType, TensorType)):
                raise self.error(e, f"'in' is not supported for '{rules.py_type_str(rt)}'")
            res = self.emit(operator.contains, (right, left), e, rules.BOOL)
            if op is ast.NotIn:
                res = self.emit(operator.not_, (res,), e, rules.BOOL)
            return res, {}, {}
        return self.binary(CMPOPS[op], left, right, e), {}, {}

    def identity(self, is_: bool, left: Node, right: Node, e):
        """``a is None`` / ``a is not None``: folded when the type decides it, else a runtime test
        plus the Optional refinement of a variable."""
        none_side = right if isinstance(right.type, NoneType) else left
        other = right if none_side is left else left
        if isinstance(none_side.type, NoneType):
            if isinstance(other.type, NoneType):
                return self.const(is_, e), {}, {}
            if not isinstance(other.type, (OptionalType, AnyType)):
                return self.const(not is_, e), {}, {}
            res = self.emit(operator.is_ if is_ else operator.is_not, (other, none_side), e, rules.BOOL)
            refine = {}
            name = self._var_name_of(other, e)
            if name is not None:
                refine = {name: other.type.elem}
            return (res, {}, refine) if is_ else (res, refine, {})
        return self.emit(operator.is_ if is_ else operator.is_not, (left, right), e, rules.BOOL), {}, {}

    def _var_name_of(self, node, e):
        """The variable written in the comparison `e` that holds `node` (refinement applies to names)."""
        if isinstance(e, ast.Compare) and len(e.ops) == 1:
            for side in (e.left, e.comparators[0]):
                if isinstance(side, ast.Name) and self.env.get(side.id) is node:
                    return side.id
        return None

    # -- conditions ------------------------------------------------------------------------------
    def emit_cond(self, e, value_check=False):
        """Emit a condition; returns (bool node, refinements if true, refinements if false).
        value_check: `e` is an operand of an and/or used as a value (it must be a bool)."""
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            v, t, f = self.emit_cond(e.operand)
            if is_constant(v):
                return self.const(not v.args[0], e), f, t
            return self.emit(operator.not_, (v,), e, rules.BOOL), f, t
        if isinstance(e, ast.BoolOp):
            return self.bool_op(isinstance(e.op, ast.And), e.values, e, value_check)
        if isinstance(e, ast.Compare):
            left = self.value(e.left)
            if len(e.ops) == 1:
                res, t, f = self.compare(type(e.ops[0]), left, self.value(e.comparators[0]), e)
                if value_check:
                    self._check_bool_operand(res, e)
                return self.to_bool(res, e), t, f
            # chained a < b < c: (a < b) and (b < c), each operand evaluated once
            values = [left] + [self.value(c) for c in e.comparators]
            parts = [self.compare(type(op), values[i], values[i + 1], e)[0] for i, op in enumerate(e.ops)]
            if value_check:
                for p in parts:
                    self._check_bool_operand(p, e)
            result = self.to_bool(parts[0], e)
            for p in parts[1:]:
                result = self.emit(operator.and_, (result, self.to_bool(p, e)), e, rules.BOOL)
            return result, {}, {}
        v = self.value(e)
        if value_check:
            self._check_bool_operand(v, e)
        return self.to_bool(v, e), {}, {}

    def bool_op(self, is_and: bool, values: list, e, value_check=False):
        """Short-circuit ``and``/``or`` of conditions through prim::If (value_check: see emit_cond)."""
        first, t1, f1 = self.emit_cond(values[0], value_check)
        first = self.to_bool(first, values[0])
        if len(values) == 1:
            return first, t1, f1
        if is_constant(first):
            if bool(first.args[0]) == is_and:   # True and ... / False or ...
                return self.bool_op(is_and, values[1:], e, value_check)
            return first, {}, {}
        node = call(self.graph, prim.If, (first,), loc=self.loc(e))
        then_b, else_b = add_block(node), add_block(node)
        saved_graph, saved_env = self.graph, self.env
        try:
            self.graph, self.env = (then_b if is_and else else_b), dict(saved_env)
            self.apply_refinements(t1 if is_and else f1, e)
            rest, t2, f2 = self.bool_op(is_and, values[1:], e, value_check)
            rest = self.to_bool(rest, e)
            set_block_returns(self.graph, [rest])
            self.graph = else_b if is_and else then_b
            set_block_returns(self.graph, [self.const(not is_and, e)])
        finally:
            self.graph, self.env = saved_graph, saved_env
        (out,) = unpack_outputs(node, [rules.BOOL])
        if is_and:
            return out, {**t1, **t2}, {}
        return out, {}, {**f1, **f2}

    def apply_refinements(self, refinements: dict, e):
        """Bind refined variables to ``prim::unchecked_cast`` values in the current block."""
        for name, t in refinements.items():
            orig = self.env.get(name)
            if not isinstance(orig, Node):
                continue
            cast = self.emit(prim.unchecked_cast, (orig,), e, t)
            cast.meta["refined_from"] = orig
            cast.meta["jit_name"] = name
            self.env[name] = cast

    def expr_IfExp(self, e):
        cond, tr, fr = self.emit_cond(e.test)
        if is_constant(cond):
            return self.value(e.body if cond.args[0] else e.orelse)
        node = call(self.graph, prim.If, (cond,), loc=self.loc(e))
        blocks = [add_block(node), add_block(node)]
        saved_graph, saved_env = self.graph, self.env
        results = []
        try:
            for block, expr, ref in ((blocks[0], e.body, tr), (blocks[1], e.orelse, fr)):
                self.graph, self.env = block, dict(saved_env)
                self.apply_refinements(ref, e)
                results.append(self.value(expr))
        finally:
            self.graph, self.env = saved_graph, saved_env
        t = rules.unify(results[0].type, results[1].type)
        if t is None:
            raise self.error(e, f"if-expression's true branch has type {rules.py_type_str(results[0].type)} "
                                f"but false branch has type {rules.py_type_str(results[1].type)}")
        for block, r in zip(blocks, results):
            set_block_returns(block, [r])
        return unpack_outputs(node, [t])[0]

    # -- containers ------------------------------------------------------------------------------
    def expr_List(self, e):
        items = [self.value(x) for x in e.elts]
        elem = rules.T_
        if items:
            elem = items[0].type
            for x in items[1:]:
                u = rules.unify(elem, x.type)
                if u is None:
                    raise self.error(e, f"Lists must contain only a single type, got "
                                        f"'{rules.py_type_str(elem)}' and '{rules.py_type_str(x.type)}'")
                elem = u
        node = self.emit(prim.ListConstruct, items, e, ListType(elem))
        if not items:
            node.meta["empty_literal"] = True
        return node

    def expr_Tuple(self, e):
        items = [self.value(x) for x in e.elts]
        return self.emit(prim.TupleConstruct, items, e, TupleType(tuple(x.type for x in items)))

    def expr_Dict(self, e):
        if any(k is None for k in e.keys):
            raise UnsupportedNodeError(self.ctx, ast.Starred(), e)
        keys = [self.value(k) for k in e.keys]
        vals = [self.value(v) for v in e.values]
        kt, vt = (keys[0].type, vals[0].type) if keys else (rules.STR, rules.T_)
        for k, v in zip(keys, vals):
            if k.type != kt or rules.unify(vt, v.type) is None:
                raise self.error(e, "Dict keys and values must each have a single type")
            vt = rules.unify(vt, v.type)
        flat = [x for kv in zip(keys, vals) for x in kv]
        node = self.emit(prim.DictConstruct, flat, e, DictType(kt, vt))
        if not keys:
            node.meta["empty_literal"] = True
        return node

    def expr_Subscript(self, e):
        base = self.emit_expr(e.value)
        if isinstance(base, PyObj):   # List[int] in annotations, constant tuples
            return PyObj(base.obj[self._static_index(e.slice)])
        if isinstance(base, (ModuleListValue, ModuleValue)):
            idx = self.value(e.slice)
            if is_constant(idx) and isinstance(idx.args[0], str) and isinstance(base, ModuleValue):
                return self.attribute(base, idx.args[0], e)   # ModuleDict["name"]
            if not is_constant(idx) or not isinstance(idx.args[0], int) or base.items is None:
                raise self.error(e.slice, "ModuleList/Sequential indices must be integer constants in script "
                                          "(ModuleDict keys: str constants)")
            return self.modulelist_item(base, idx.args[0], e)
        base = self.to_value(base, e.value)
        index = self.index_value(e.slice)
        return self.getitem(base, index, e)

    def _static_index(self, s):
        if isinstance(s, ast.Tuple):
            return tuple(self._static_index(x) for x in s.elts)
        v = self.emit_expr(s)
        if isinstance(v, PyObj):
            return v.obj
        if is_constant(v):
            return v.args[0]
        raise self.error(s, "expected a constant index here")

    def index_value(self, s) -> Node:
        """An index expression: slices become builtins.slice nodes, tuples of them TupleConstruct."""
        if isinstance(s, ast.Slice):
            parts = [self.value(p) if p is not None else self.const(None, s) for p in (s.lower, s.upper, s.step)]
            return self.emit(builtins.slice, parts, s, AnyType())
        if isinstance(s, ast.Tuple):
            items = [self.index_value(x) for x in s.elts]
            return self.emit(prim.TupleConstruct, items, s, TupleType(tuple(x.type for x in items)))
        return self.value(s)

    def getitem(self, base: Node, index: Node, e) -> Node:
        t, it = base.type, index.type
        is_slice = index.target is builtins.slice if isinstance(index, Node) else False
        if isinstance(t, TensorType):
            rt = rules.T_
        elif isinstance(t, ListType):
            if not (is_slice or isinstance(it, (IntType, BoolType))):
                raise self.error(e, f"list indices must be integers or slices, not '{rules.py_type_str(it)}'")
            rt = t if is_slice else t.elem
        elif isinstance(t, StrType):
            rt = rules.STR
        elif isinstance(t, DictType):
            if not it.is_subtype_of(t.key):
                raise self.error(e, f"dict key must be '{rules.py_type_str(t.key)}', got '{rules.py_type_str(it)}'")
            rt = t.value
        elif isinstance(t, TupleType):
            if is_slice and all(is_constant(p) for p in index.args):
                rt = TupleType(t.elems[slice(*[p.args[0] for p in index.args])])
            elif is_constant(index) and isinstance(index.args[0], int):
                i = index.args[0]
                if not -len(t.elems) <= i < len(t.elems):
                    raise self.error(e, f"Tuple index out of range. Tuple is length {len(t.elems)} and index is {i}")
                rt = t.elems[i]
            else:
                raise self.error(e, "tuple indices must be integer constants (tuples may hold different types)")
        else:
            raise self.error(e, f"'{rules.py_type_str(t)}' object is not subscriptable")
        return self.emit(operator.getitem, (base, index), e, rt)

    def expr_JoinedStr(self, e):
        fmt, args = [], []
        for part in e.values:
            if isinstance(part, ast.Constant):
                fmt.append(str(part.value).replace("{", "{{").replace("}", "}}"))
            else:
                if part.conversion != -1 or part.format_spec is not None:
                    raise self.error(part, "f-string conversions and format specs are not supported in script")
                fmt.append("{}")
                args.append(self.value(part.value))
        return self.emit("format", (self.const("".join(fmt), e), *args), e, rules.STR)

    def _unsupported(self, e):
        raise UnsupportedNodeError(self.ctx, e)

    expr_Lambda = expr_Set = expr_SetComp = expr_Yield = _unsupported
    expr_YieldFrom = expr_Await = expr_Starred = expr_NamedExpr = _unsupported

