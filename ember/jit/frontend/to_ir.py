"""Statements: a Python function's source -> a typed SSA graph (ember.fx Graph with blocks).

    graph, signature = compile_function(fn)

The source is read with inspect, dedented and parsed (file name and line numbers kept for
``meta["loc"]`` and error messages). exits.py first rewrites return/break/continue into flags
(TorchScript's exit transform). Variables are tracked in ``self.env`` (name -> value); SSA
form comes from emitting control flow as nodes with blocks:

- ``if``: a prim::If whose outputs are the variables either branch (re)assigned; a variable
  assigned in only one branch is undefined afterwards (error if used), different types in the two
  branches unify (None + T -> Optional[T]) or are an error if used. A constant condition
  (``is None`` on a non-Optional, ``ember.jit.is_scripting()``, the exit flags) folds: only the
  taken branch is emitted, as TorchScript's metaprogramming does.
- loops: a prim::Loop carrying the variables the body assigns that exist before the loop;
  variables first assigned inside the body stay local to it. When the body changes a carried
  variable's type (a return value first assigned in the loop), the loop is emitted again with the
  unified types.
- tuples and ModuleLists are iterated by unrolling the body (their elements may differ in type).

Choices where the spec left room: a Tensor ``x += y`` is ``x.add_(y)`` (in place, as eager) and
rebinds x to its result; unannotated empty ``[]``/``{}`` are List[Tensor]/Dict[str, Tensor]; the
loop variable and loop-local variables are not visible after a loop.
"""
from __future__ import annotations

import ast
import inspect
import operator
import textwrap

from ember.fx.node import Node
from ember.jit.ir import add_block, call, new_graph, prim, set_block_returns, unpack_outputs
from ember.jit.ir.types import (NO_DEFAULT, Argument, DictType, FunctionType, ListType, ModuleType,  # noqa: F401
                                Signature, StrType, TensorType, TupleType, from_annotation)

from . import builtins as rules
from .builtins import BottomType
from .calls import CallMixin
from .comprehensions import ComprehensionMixin
from .errors import FrontendError, NotSupportedError, SourceContext, UnsupportedNodeError
from .exits import RETVAL, UNINIT, ExitLowering
from .exprs import BINOPS, ExprMixin, ModuleListValue, ModuleValue, PyObj, is_constant
from .loops import LoopMixin
from .withs import WithMixin

_COMPILING: list = []


def compiling() -> list:
    """The Python functions being compiled right now (recursion detection)."""
    return _COMPILING


def compile_function(py_fn, *, self_info=None, name=None):
    """Compile a Python function to ``(graph, Signature)``; FrontendError on unsupported code."""
    compiler = FunctionCompiler(py_fn, self_info=self_info, name=name)
    _COMPILING.append(py_fn)
    try:
        return compiler.compile()
    finally:
        _COMPILING.pop()


def _parse(py_fn):
    fn = inspect.unwrap(py_fn)
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as err:
        raise RuntimeError(f"Can't get source for {py_fn!r}: script compiles Python source, so the "
                           f"function must be defined in a file") from err
    filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    raw = "".join(lines)
    dedented = textwrap.dedent(raw)
    removed = len(lines[0]) - len(lines[0].lstrip()) - (len(dedented.splitlines()[0]) -
                                                          len(dedented.splitlines()[0].lstrip()))
    tree = ast.parse(dedented)
    fdef = tree.body[0]
    if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise RuntimeError(f"script expects a function, got {type(fdef).__name__} source")
    ctx = SourceContext(filename, dedented.splitlines(), first, removed)
    return fn, fdef, ctx


class FunctionCompiler(CallMixin, LoopMixin, WithMixin, ComprehensionMixin, ExprMixin):
    """Compiles one function; see the module docstring."""

    def __init__(self, py_fn, self_info=None, name=None):
        self.fn, self.fdef, self.ctx = _parse(py_fn)
        self.self_info = self_info
        self.name = name or self.fn.__name__
        self.fn_globals = getattr(self.fn, "__globals__", {})
        self.closure = {}
        for var, cell in zip(self.fn.__code__.co_freevars, self.fn.__closure__ or ()):
            try:
                self.closure[var] = cell.cell_contents
            except ValueError:
                pass
        self.env: dict = {}
        self.poison: dict = {}
        self.declared: dict = {}
        self.comp_count = 0
        self.graph = None
        self._return_site = None
        self._def_site: dict = {}   # value -> the statement that assigned it (error messages)

    # -- names -----------------------------------------------------------------------------------
    def lookup(self, name: str, e):
        if name == UNINIT:
            return self.emit(prim.Uninitialized, (), e, BottomType())
        if name in self.env:
            v = self.env[name]
            if isinstance(v, Node) and isinstance(v.type, ModuleType) and self.self_info is not None \
                    and v.op == "placeholder":
                return ModuleValue(v, self.self_info)
            return v
        if name in self.poison:
            what, where = self.poison[name]
            raise FrontendError(self.ctx, where, what, used_at=e)
        for scope in (self.closure, self.fn_globals):
            if name in scope:
                return PyObj(scope[name])
        import builtins
        if hasattr(builtins, name):
            return PyObj(getattr(builtins, name))
        raise self.error(e, f"undefined value {name}")

    def bind(self, name: str, value, e=None):
        if name in self.declared and isinstance(value, Node):
            value = self.coerce(value, self.declared[name], e)
        if isinstance(value, Node) and "jit_name" not in value.meta and not name.startswith("$") \
                and not is_constant(value):
            value.meta["jit_name"] = name
        self.poison.pop(name, None)
        self.env[name] = value
        if e is not None and isinstance(value, Node):
            self._def_site[value] = e

    # -- entry -----------------------------------------------------------------------------------
    def compile(self):
        fdef = self.fdef
        if isinstance(fdef, ast.AsyncFunctionDef):
            raise NotSupportedError(self.ctx, fdef, "async functions aren't supported")
        a = fdef.args
        if a.vararg is not None or a.kwarg is not None:
            raise NotSupportedError(self.ctx, a.vararg or a.kwarg,
                                    "Compiled functions can't take variable number of arguments or use "
                                    "keyword-only arguments with defaults")
        self.graph = graph = new_graph()
        params = a.posonlyargs + a.args + a.kwonlyargs
        sig_defaults = inspect.signature(self.fn).parameters
        hints = getattr(self.fn, "__annotations__", {})
        arguments = []
        for i, p in enumerate(params):
            if i == 0 and self.self_info is not None:
                t = ModuleType(self.self_info.qualified_name)
            elif p.arg in hints:
                try:
                    t = from_annotation(hints[p.arg], self.fn_globals)
                except ValueError as err:
                    raise self.error(p.annotation or p, str(err)) from None
            else:
                t = rules.T_
            default = sig_defaults[p.arg].default if p.arg in sig_defaults else inspect.Parameter.empty
            default = NO_DEFAULT if default is inspect.Parameter.empty else default
            node = graph.placeholder(p.arg, type_expr=t)
            node.type = t
            node.meta["loc"] = self.ctx.loc(p)
            node.meta["jit_name"] = p.arg
            self.env[p.arg] = node
            arguments.append(Argument(p.arg, t, default))
        body = ExitLowering().function(fdef.body, fdef)
        if self.emit_block(body):   # every path raises: the result is never produced
            self.return_value = self.emit(prim.Uninitialized, (), fdef, BottomType())
        result = self.return_value
        ret_ann = hints.get("return", inspect.Signature.empty)
        if ret_ann is not inspect.Signature.empty:
            try:
                declared = from_annotation(ret_ann, self.fn_globals)
            except ValueError as err:
                raise self.error(fdef.returns or fdef, str(err)) from None
            if isinstance(result.type, BottomType):
                result.type = declared
            elif not result.type.is_subtype_of(declared):
                raise self.error(self._return_site or fdef,
                                 f"Return value was annotated as having type {rules.py_type_str(declared)} but "
                                 f"is actually of type {rules.py_type_str(result.type)}")
            ret_type = declared
        else:
            if isinstance(result.type, BottomType):
                result.type = rules.NONE
            ret_type = result.type
        out = graph.output(result)
        out.type = ret_type
        _drop_unused_prims(graph)
        return graph, Signature(self.name, tuple(arguments), ret_type)

    # -- blocks and statements -------------------------------------------------------------------
    def emit_block(self, stmts: list) -> bool:
        """Emit statements into self.graph; True if the block always raises (dead afterwards)."""
        for s in stmts:
            if self.emit_stmt(s):
                return True
        return False

    def emit_stmt(self, s) -> bool:
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            raise UnsupportedNodeError(self.ctx, s, _keyword_node(s))
        return bool(method(s))

    def stmt_Return(self, s):   # only the final `return $retval` reaches here (exits.py)
        self.return_value = self.value(s.value)

    def stmt_Expr(self, s):
        if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            return  # docstring
        self.emit_expr(s.value)

    def stmt_Pass(self, s):
        return

    def stmt_Assign(self, s):
        if getattr(s, "_return_of", None) is not None:
            v = self.emit_expr(s.value)
            self._return_site = s._return_of
        else:
            v = self.emit_expr(s.value)
        for target in s.targets:
            self.assign(target, v, s)

    def stmt_AnnAssign(self, s):
        if not isinstance(s.target, ast.Name):
            raise self.error(s.target, "annotated assignments in script must assign a plain variable")
        t = self.type_from_expr(s.annotation)
        if s.value is None:
            raise self.error(s, "annotated declarations need a value in script")
        v = self.coerce(self.value(s.value), t, s)
        self.declared[s.target.id] = t
        self.bind(s.target.id, v, s)

    def assign(self, target, v, s):
        if isinstance(v, tuple):   # several values at once (zip/enumerate loop variables)
            if isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == len(v):
                for t, x in zip(target.elts, v):
                    self.assign(t, x, s)
                return
            v = self.emit(prim.TupleConstruct, v, s, TupleType(tuple(x.type for x in v)))
        if isinstance(target, ast.Name):
            if isinstance(v, Node) or isinstance(v, (PyObj, ModuleValue, ModuleListValue)):
                self.bind(target.id, v, s)
                return
            raise self.error(s, "this value cannot be assigned to a variable (call the method instead)")
        if isinstance(target, (ast.Tuple, ast.List)):
            v = self.to_value(v, s.value if hasattr(s, "value") else s)
            n = len(target.elts)
            if any(isinstance(t, ast.Starred) for t in target.elts):
                raise UnsupportedNodeError(self.ctx, next(t for t in target.elts if isinstance(t, ast.Starred)))
            if isinstance(v.type, TupleType):
                if len(v.type.elems) != n:
                    raise self.error(s, f"too many values to unpack: need {n} but found {len(v.type.elems)}"
                                     if len(v.type.elems) > n else
                                     f"need {n} values to unpack but found only {len(v.type.elems)}")
                node = self.emit(prim.TupleUnpack, (v,), s, None)
                outs = unpack_outputs(node, list(v.type.elems))
            elif isinstance(v.type, ListType):
                node = self.emit(prim.ListUnpack, (v, n), s, None)
                outs = unpack_outputs(node, [v.type.elem] * n)
            else:
                raise self.error(s, f"{rules.py_type_str(v.type)} cannot be used as a tuple")
            for t, o in zip(target.elts, outs):
                self.assign(t, o, s)
            return
        if isinstance(target, ast.Subscript):
            base = self.value(target.value)
            index = self.index_value(target.slice)
            v = self.to_value(v, s)
            bt = base.type
            if isinstance(bt, ListType) and not v.type.is_subtype_of(bt.elem):
                raise self.error(s, f"cannot store a '{rules.py_type_str(v.type)}' in a "
                                    f"'{rules.py_type_str(bt)}'")
            if not isinstance(bt, (ListType, DictType, TensorType)):
                raise self.error(target, f"'{rules.py_type_str(bt)}' does not support item assignment")
            self.emit(operator.setitem, (base, index, v), s, rules.NONE)
            return
        if isinstance(target, ast.Attribute):
            base = self.emit_expr(target.value)
            if not isinstance(base, ModuleValue):
                raise self.error(target, "script can only assign attributes of modules (self.x = ...)")
            self.emit(prim.SetAttr, (base.node, target.attr, self.to_value(v, s)), s, rules.NONE)
            return
        raise UnsupportedNodeError(self.ctx, target)

    _INPLACE = {ast.Add: "add_", ast.Sub: "sub_", ast.Mult: "mul_", ast.Div: "div_", ast.Pow: "pow_",
                ast.Mod: "remainder_", ast.FloorDiv: "floor_divide_", ast.BitAnd: "bitwise_and_",
                ast.BitOr: "bitwise_or_", ast.BitXor: "bitwise_xor_"}

    def stmt_AugAssign(self, s):
        target = s.target
        rhs = self.value(s.value)
        if isinstance(target, ast.Name):
            cur = self.to_value(self.lookup(target.id, target), target)
        elif isinstance(target, ast.Subscript):
            cur = self.getitem(self.value(target.value), self.index_value(target.slice), target)
        elif isinstance(target, ast.Attribute):
            cur = self.value(target)
        else:
            raise UnsupportedNodeError(self.ctx, target)
        if isinstance(cur.type, TensorType) and type(s.op) in self._INPLACE:
            if not (isinstance(rhs.type, TensorType) or rules._is_num(rhs.type)):
                raise self.error(s, f"Arguments for call are not valid: unsupported operand types for "
                                    f"augmented assignment: 'Tensor' and '{rules.py_type_str(rhs.type)}'")
            new = self.emit(self._INPLACE[type(s.op)], (cur, rhs), s, rules.T_)
        elif isinstance(cur.type, ListType) and isinstance(s.op, ast.Add):
            if not rhs.type.is_subtype_of(cur.type):
                raise self.error(s, f"cannot extend a '{rules.py_type_str(cur.type)}' with "
                                    f"'{rules.py_type_str(rhs.type)}'")
            self.emit("extend", (cur, rhs), s, rules.NONE)
            new = cur
        else:
            op = BINOPS.get(type(s.op))
            new = self.binary(op, cur, rhs, s)
        if isinstance(target, ast.Name):
            if new is not cur:
                self.bind(target.id, new, s)
        elif isinstance(target, ast.Subscript):
            self.assign(target, new, s)
        else:
            self.assign(target, new, s)

    def stmt_Delete(self, s):
        for t in s.targets:
            if not isinstance(t, ast.Name) or t.id not in self.env:
                raise UnsupportedNodeError(self.ctx, s, t)
            del self.env[t.id]

    def stmt_Raise(self, s):
        exc = s.exc
        if exc is None:
            raise self.error(s, "a bare `raise` is not supported in script; raise an exception instance")
        msg_expr, cls_expr = None, exc
        if isinstance(exc, ast.Call):
            cls_expr = exc.func
            msg_expr = exc.args[0] if exc.args else None
        cls = self.emit_expr(cls_expr)
        if not (isinstance(cls, PyObj) and isinstance(cls.obj, type) and issubclass(cls.obj, BaseException)):
            raise self.error(cls_expr, "script can only raise exception classes (raise ValueError(\"...\"))")
        if msg_expr is None:
            msg = self.const("", s)
        else:
            msg = self.value(msg_expr)
            if not isinstance(msg.type, StrType):
                msg = self.emit(str, (msg,), s, rules.STR)
        self.emit(prim.RaiseException, (msg, cls.obj.__name__), s, rules.NONE)
        return True

    def stmt_Assert(self, s):
        cond, true_ref, _ = self.emit_cond(s.test)
        if is_constant(cond):
            if cond.args[0]:
                return False
            self._raise_assert(s)
            return True
        node = call(self.graph, prim.If, (cond,), loc=self.loc(s))
        then_b, else_b = add_block(node), add_block(node)
        saved = self.graph
        self.graph = else_b
        self._raise_assert(s)
        set_block_returns(else_b, [])
        set_block_returns(then_b, [])
        self.graph = saved
        unpack_outputs(node, [])
        self.apply_refinements(true_ref, s)
        return False

    def _raise_assert(self, s):
        msg = self.value(s.msg) if s.msg is not None else self.const("", s)
        if not isinstance(msg.type, StrType):
            msg = self.emit(str, (msg,), s, rules.STR)
        self.emit(prim.RaiseException, (msg, "AssertionError"), s, rules.NONE)

    # -- if --------------------------------------------------------------------------------------
    def stmt_If(self, s):
        cond, true_ref, false_ref = self.emit_cond(s.test)
        if is_constant(cond):
            return self.emit_block(s.body if cond.args[0] else s.orelse)
        parent = self.graph
        node = call(parent, prim.If, (cond,), loc=self.loc(s))
        blocks = [add_block(node), add_block(node)]
        pre_env = self.env
        envs, dead = [], []
        for block, stmts, ref in ((blocks[0], s.body, true_ref), (blocks[1], s.orelse, false_ref)):
            self.graph, self.env = block, dict(pre_env)
            self.apply_refinements(ref, s)
            dead.append(self.emit_block(stmts))
            envs.append(self.env)
        self.graph, self.env = parent, dict(pre_env)
        if all(dead):
            for b in blocks:
                set_block_returns(b, [])
            unpack_outputs(node, [])
            return True
        self.merge_if(s, node, blocks, envs, dead, pre_env)
        return False

    def merge_if(self, s, node, blocks, envs, dead, pre_env):
        names = list(dict.fromkeys([*envs[0], *envs[1]]))
        out_names, out_vals, out_types, after = [], ([], []), [], {}
        for name in names:
            a, b = envs[0].get(name), envs[1].get(name)
            if a is b:
                if a is not None:
                    self.env[name] = a
                continue
            pre = pre_env.get(name)
            if pre is not None and _only_refined(a, pre) and _only_refined(b, pre):
                continue   # only refined in the branches, never reassigned: keeps its pre-If value
            if dead[0] or dead[1]:
                live = b if dead[0] else a
                if live is None:
                    continue
                if not isinstance(live, Node) or live.graph.encloses(self.graph):
                    self.env[name] = live
                    continue
                if is_constant(live):
                    after[name] = (live.args[0], live.type)
                    continue
                out_names.append(name)
                out_types.append(live.type)
                out_vals[0].append(None if dead[0] else a)
                out_vals[1].append(None if dead[1] else b)
                continue
            if a is None or b is None:
                branch = "false" if b is None else "true"
                self.env.pop(name, None)
                self.poison[name] = (f"{name} is not defined in the {branch} branch",
                                     self._def_site.get(a if b is None else b, s))
                continue
            if not isinstance(a, Node) or not isinstance(b, Node):
                self.env.pop(name, None)
                self.poison[name] = (f"{name} is assigned different Python values in the branches", s)
                continue
            if is_constant(a) and is_constant(b) and a.type == b.type and type(a.args[0]) is type(b.args[0]) \
                    and a.args[0] == b.args[0]:
                after[name] = (a.args[0], a.type)
                continue
            t = rules.unify(a.type, b.type)
            if t is None and name == RETVAL:
                raise self.error(s, f"Previous return statement returned a value of type "
                                    f"{rules.py_type_str(a.type)} but this return statement returns a value of "
                                    f"type {rules.py_type_str(b.type)}")
            if t is None:
                self.env.pop(name, None)
                self.poison[name] = (f"Type mismatch: {name} is set to type {rules.py_type_str(a.type)} in the "
                                     f"true branch and type {rules.py_type_str(b.type)} in the false branch", self._def_site.get(b, s))
                continue
            if isinstance(t, BottomType):
                after[name] = None
                continue
            out_names.append(name)
            out_types.append(t)
            out_vals[0].append(a)
            out_vals[1].append(b)
        for k, block in enumerate(blocks):
            saved = self.graph
            self.graph = block
            vals = []
            for v, t in zip(out_vals[k], out_types):
                if v is None or isinstance(v.type, BottomType):
                    v = self.emit(prim.Uninitialized, (), s, t)
                vals.append(v)
            self.graph = saved
            set_block_returns(block, vals)
        outs = unpack_outputs(node, out_types)
        for name, o in zip(out_names, outs):
            self.bind(name, o)
        for name, c in after.items():
            if c is None:
                self.env[name] = self.emit(prim.Uninitialized, (), s, BottomType())
            else:
                self.env[name] = self.const(c[0], s, c[1])


def _only_refined(v, pre) -> bool:
    return v is pre or (isinstance(v, Node) and v.meta.get("refined_from") is pre)


def _drop_unused_prims(graph) -> None:
    """Remove constants / Uninitialized values nobody reads (left by the exit flags)."""
    for node in reversed(list(graph.nodes)):
        for block in node.blocks:
            _drop_unused_prims(block)
        if node.op == "call_function" and node.target in (prim.Constant, prim.Uninitialized) and not node.users:
            graph.erase_node(node)


def _keyword_node(s):
    """Torch puts the carets under the statement's keyword (``try``, ``global``, ``def``)."""
    words = {ast.Try: 3, ast.Global: 6, ast.Nonlocal: 8, ast.FunctionDef: 3, ast.ClassDef: 5, ast.With: 4,
             ast.Import: 6, ast.ImportFrom: 4, ast.Delete: 3}
    n = words.get(type(s))
    if n is None:
        return s

    class _Span:
        lineno = s.lineno
        end_lineno = s.lineno
        col_offset = s.col_offset
        end_col_offset = s.col_offset + n
    return _Span()


_ = (RETVAL, Argument, FunctionType)
