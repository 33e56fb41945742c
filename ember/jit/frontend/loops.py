"""Loops: ``for`` over range/lists/tensors/str/dict keys/zip/enumerate as prim::Loop, ``while`` as
prim::Loop with a huge trip count, and ``for`` over tuples and ModuleLists by unrolling the body
(mixed into the FunctionCompiler of to_ir.py).

prim::Loop: args (max_trip_count, start_cond, *carried); body block params (i, *carried) returning
(cond_next, *carried). The carried variables are those the body assigns that exist before the
loop; exits.py's flags (``_exit_flags``) are folded into cond_next. ``range(a, b, s)``'s trip
count is computed in the graph (``(b - a + s - sign(s)) // s``; a negative count runs no trips).
zip/enumerate over tuples or ModuleLists unroll too (all arguments must then unroll).
"""
from __future__ import annotations

import ast
import builtins
import operator

from ember.fx.node import Node
from ember.jit.ir import add_block, block_params, call, prim, set_block_returns, unpack_outputs
from ember.jit.ir.types import DictType, IntType, ListType, StrType, TensorType, TupleType

from . import builtins as rules
from .builtins import BottomType
from .errors import NotSupportedError
from .exprs import ModuleListValue, ModuleValue, PyObj, Unrolled, is_constant

MAX_TRIPS = 2 ** 63 - 1


class _BindValue(ast.stmt):
    """Synthetic statement: assign an already-emitted value to a target (unrolled loops)."""
    _fields = ("target",)


class _Indexed:
    """An iterable read by index: `length` (int node) and `item(i)` emitting the element."""

    def __init__(self, length, item):
        self.length, self.item = length, item


def _stored_names(stmts: list) -> list:
    names = []
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in names:
                names.append(n.id)
    return names


def _flag_test(flags: list, src, extra=None):
    tests = [ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=ast.copy_location(
        ast.Name(id=f, ctx=ast.Load()), src)), src) for f in flags]
    if extra is not None:
        tests.append(extra)
    if not tests:
        return None
    if len(tests) == 1:
        return tests[0]
    return ast.copy_location(ast.BoolOp(op=ast.And(), values=tests), src)


_SIZE_CHANGING = {"append", "pop", "extend", "insert", "remove", "clear", "popitem", "update", "setdefault"}


def _iterated_names(e) -> list:
    """Names of the containers a ``for`` iterates over (``a``, ``enumerate(a)``, ``zip(a, b)``,
    ``d.items()``)."""
    if isinstance(e, ast.Name):
        return [e.id]
    if isinstance(e, ast.Call):
        if isinstance(e.func, ast.Name) and e.func.id in ("enumerate", "zip"):
            return [n for a in e.args for n in _iterated_names(a)]
        if isinstance(e.func, ast.Attribute) and e.func.attr in ("keys", "values", "items") and not e.args:
            return _iterated_names(e.func.value)
    return []


def _size_change(stmts: list, names: list):
    """The first statement node of `stmts` that changes the size of a container named in `names`
    (``a.append(...)``, ``a += ...``, ``del d[k]``...), or None."""
    for s in stmts:
        for n in ast.walk(s):
            if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _SIZE_CHANGING
                    and isinstance(n.func.value, ast.Name) and n.func.value.id in names):
                return n, n.func.value.id
            if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id in names:
                return n, n.target.id
            if isinstance(n, ast.Delete):
                for t in n.targets:
                    if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in names:
                        return n, t.value.id
    return None


class LoopMixin:
    """Loop statements (see module docstring)."""

    def stmt__BindValue(self, s):
        self.assign(s.target, s.bound_value, s)

    def stmt_Break(self, s):
        raise NotSupportedError(self.ctx, s, "break is only supported inside loops")

    stmt_Continue = stmt_Break

    def stmt_For(self, s):
        if s.orelse:
            raise NotSupportedError(self.ctx, s, "for-else loops aren't supported")
        it = self.iterable(s.iter)
        flags = getattr(s, "_exit_flags", [])
        mutable = [n for n in _iterated_names(s.iter)
                   if isinstance(self.env.get(n), Node) and isinstance(self.env[n].type, (ListType, DictType))]
        changed = None if isinstance(it, list) else _size_change(s.body, mutable)
        if changed is not None:
            # Python re-reads the length each step (or raises for dicts); script reads it once, so
            # such a loop would silently run a different number of times
            raise self.error(changed[0], f"changing the size of '{changed[1]}' while iterating over it is not "
                                         f"supported in script")
        if isinstance(it, list):
            return self.unroll(s, it, flags)
        test = _flag_test(flags, s)
        start = self.const(True, s)

        def body(i):
            self.assign(s.target, it.item(i), s)
            return self.emit_block(s.body)
        return self.emit_loop(s, it.length, start, body, test)

    def stmt_While(self, s):
        if s.orelse:
            raise NotSupportedError(self.ctx, s, "while-else loops aren't supported")
        flags = getattr(s, "_exit_flags", [])
        test = _flag_test(flags, s, s.test)
        start = self.to_bool(self.emit_cond(test)[0], s.test)
        trips = self.const(MAX_TRIPS, s)
        return self.emit_loop(s, trips, start, lambda i: self.emit_block(s.body), test)

    # -- iterables -------------------------------------------------------------------------------
    def iterable(self, e):
        """An _Indexed for loops, or a list of element values to unroll over."""
        if isinstance(e, ast.Call):
            func = self.emit_expr(e.func)
            if isinstance(func, PyObj) and func.obj in (range, zip, enumerate):
                return getattr(self, "iter_" + func.obj.__name__)(e)
        v = self.emit_expr(e)
        if isinstance(v, Unrolled):
            return list(v.values)
        if isinstance(v, ModuleListValue) or isinstance(v, ModuleValue) and v.items is not None:
            return [self.modulelist_item(v, k, e) for k in range(len(v.items))]
        v = self.to_value(v, e)
        t = v.type
        if isinstance(t, TupleType):
            return [self.emit(operator.getitem, (v, self.const(k, e)), e, et) for k, et in enumerate(t.elems)]
        if isinstance(t, DictType):
            v = self.emit(builtins.list, (v,), e, ListType(t.key))
            t = v.type
        if isinstance(t, (ListType, StrType)):
            elem = t.elem if isinstance(t, ListType) else rules.STR
            return _Indexed(self.emit(builtins.len, (v,), e, rules.INT),
                            lambda i: self.emit(operator.getitem, (v, i), e, elem))
        if isinstance(t, TensorType):   # a 0-d tensor: eager's TypeError, not size(0)'s IndexError
            no_dims = self.emit(operator.eq, (self.emit("dim", (v,), e, rules.INT), self.const(0, e)), e, rules.BOOL)
            self._raise_if(no_dims, "TypeError", "iteration over a 0-d tensor", e)
            return _Indexed(self.emit("size", (v, self.const(0, e)), e, rules.INT),
                            lambda i: self.emit(operator.getitem, (v, i), e, rules.T_))
        raise self.error(e, f"'{rules.py_type_str(t)}' object is not iterable in script (script iterates over "
                            f"range, lists, tuples, tensors, str, dict keys, zip and enumerate)")

    def iter_range(self, e):
        args = [self.value(a) for a in e.args]
        if not 1 <= len(args) <= 3 or e.keywords:
            raise self.error(e, "range expected 1 to 3 arguments")
        for a, node in zip(args, e.args):
            if not isinstance(a.type, IntType):
                raise self.error(node, f"range() arguments must be int, got '{rules.py_type_str(a.type)}'")
        if len(args) == 1:
            return _Indexed(args[0], lambda i: i)
        start, stop = args[0], args[1]
        step = args[2] if len(args) == 3 else None
        span = self.emit(operator.sub, (stop, start), e, rules.INT)
        if step is None:
            return _Indexed(span, lambda i: self.emit(operator.add, (start, i), e, rules.INT))
        if is_constant(step):
            k = step.args[0]
            if k == 0:
                raise self.error(e.args[2], "range() arg 3 must not be zero")
            adj = self.emit(operator.add, (span, self.const(k - 1 if k > 0 else k + 1, e)), e, rules.INT)
        else:   # trips = (span + step - sign(step)) // step, sign computed in the graph
            self._check_step_nonzero(step, e)
            positive = self.emit(operator.gt, (step, self.const(0, e)), e, rules.BOOL)
            sign = self.emit(operator.sub, (self.emit(operator.mul, (positive, self.const(2, e)), e, rules.INT),
                                            self.const(1, e)), e, rules.INT)
            adj = self.emit(operator.sub, (self.emit(operator.add, (span, step), e, rules.INT), sign), e, rules.INT)
        length = self.emit(operator.floordiv, (adj, step), e, rules.INT)
        return _Indexed(length, lambda i: self.emit(operator.add, (start, self.emit(
            operator.mul, (i, step), e, rules.INT)), e, rules.INT))

    def _check_step_nonzero(self, step, e):
        """A run-time step of 0 raises ValueError like Python's range (not the trip count's
        ZeroDivisionError)."""
        zero = self.emit(operator.eq, (step, self.const(0, e)), e, rules.BOOL)
        self._raise_if(zero, "ValueError", "range() arg 3 must not be zero", e)

    def _raise_if(self, cond, cls: str, message: str, e):
        """Emit ``if cond: raise cls(message)``."""
        node = call(self.graph, prim.If, (cond,), loc=self.loc(e))
        then_b, else_b = add_block(node), add_block(node)
        saved = self.graph
        self.graph = then_b
        self.emit(prim.RaiseException, (self.const(message, e), cls), e, rules.NONE)
        self.graph = saved
        set_block_returns(then_b, [])
        set_block_returns(else_b, [])
        unpack_outputs(node, [])

    def _indexed(self, e, what):
        it = self.iterable(e)
        if isinstance(it, list):
            raise self.error(e, f"{what} over tuples or ModuleLists is not supported in script")
        return it

    def iter_enumerate(self, e):
        if not e.args or len(e.args) > 2:
            raise self.error(e, "enumerate expected 1 or 2 arguments")
        start_e = e.args[1] if len(e.args) > 1 else next((k.value for k in e.keywords if k.arg == "start"), None)
        start = self.value(start_e) if start_e is not None else None
        sub = self.iterable(e.args[0])
        if isinstance(sub, list):   # tuples / ModuleLists: unrolled with constant indices
            base = 0
            if start is not None:
                if not is_constant(start):
                    raise self.error(start_e, "enumerate start must be a constant over tuples/ModuleLists")
                base = start.args[0]
            return [(self.const(base + k, e), v) for k, v in enumerate(sub)]

        def item(i):
            idx = i if start is None else self.emit(operator.add, (i, start), e, rules.INT)
            return (idx, sub.item(i))
        return _Indexed(sub.length, item)

    def iter_zip(self, e):
        if not e.args:
            raise self.error(e, "zip expected at least 1 argument")
        subs = [self.iterable(a) for a in e.args]
        if all(isinstance(s, list) for s in subs):
            return [tuple(vals) for vals in zip(*subs)]
        if any(isinstance(s, list) for s in subs):
            raise self.error(e, "zip cannot mix tuples/ModuleLists with lists or ranges in script")
        length = subs[0].length
        if len(subs) > 1:
            length = self.emit(builtins.min, tuple(s.length for s in subs), e, rules.INT)
        return _Indexed(length, lambda i: tuple(s.item(i) for s in subs))

    # -- emission --------------------------------------------------------------------------------
    def unroll(self, s, values: list, flags: list):
        for k, v in enumerate(values):
            bind = _BindValue(target=s.target)
            bind.bound_value = v
            ast.copy_location(bind, s)
            body = [bind] + list(s.body)
            if k > 0 and flags:
                guard = ast.If(test=_flag_test(flags, s), body=body, orelse=[])
                ast.copy_location(guard, s)
                guard.end_lineno, guard.end_col_offset = s.end_lineno, s.end_col_offset
                body = [guard]
            if self.emit_block(body):
                return True
        return False

    def emit_loop(self, s, trips: Node, start: Node, body_fn, next_test):
        stored = set(_stored_names(s.body)) | set(_stored_names([s.target]) if isinstance(s, ast.For) else ())
        carried = [n for n in self.env if n in stored and isinstance(self.env[n], Node)]
        inits = [self.env[n] for n in carried]
        types = [v.type for v in inits]
        parent, pre_env = self.graph, self.env
        for _attempt in range(len(carried) + 2):
            node = call(parent, prim.Loop, (trips, start, *inits), loc=self.loc(s))
            block = add_block(node, [rules.INT, *types], ["i"] + [n.lstrip("$") for n in carried])
            i_param, *params = block_params(block)
            for p, n in zip(params, carried):
                p.type = types[carried.index(n)]
                if not n.startswith("$"):
                    p.meta["jit_name"] = n
            self.graph, self.env = block, dict(pre_env)
            for n, p in zip(carried, params):
                self.env[n] = p
            try:
                dead = body_fn(i_param)
                if dead or next_test is None:
                    cond_next = self.const(not dead, s)
                else:
                    cond_next = self.to_bool(self.emit_cond(next_test)[0], s)
                results, new_types = [], []
                for n, t in zip(carried, types):
                    r = self.env.get(n)
                    if not isinstance(r, Node):
                        what = self.poison.get(n, (f"{n} is not defined at the end of the loop body", s))
                        raise self.error(what[1], what[0])
                    u = rules.unify(t, r.type)
                    if u is None or (not isinstance(t, BottomType) and u != t and not _widens(t, u)):
                        raise self.error(s, f"Variable '{n}' previously had type {rules.py_type_str(t)} but is "
                                            f"now being assigned to a value of type {rules.py_type_str(r.type)}")
                    results.append(r)
                    new_types.append(u)
                body_env = self.env
                if new_types == types:
                    for k, r in enumerate(results):
                        if isinstance(r.type, BottomType) and not isinstance(types[k], BottomType):
                            results[k] = self.emit(prim.Uninitialized, (), s, types[k])
                    set_block_returns(block, [cond_next, *results])
                    break
            finally:
                self.graph, self.env = parent, pre_env
            parent.erase_node(node)
            for k, (v, t) in enumerate(zip(inits, new_types)):
                if v.type != t:
                    if v.target is prim.Uninitialized or is_constant(v) and v.args[0] is None:
                        inits[k] = self.emit(v.target, tuple(v.args), s, t)
            types = new_types
        else:
            raise self.error(s, "could not infer the types of the loop's variables")
        self.env = dict(pre_env)
        outs = unpack_outputs(node, types)
        for n, o in zip(carried, outs):
            self.bind(n, o)
        for n in body_env:
            if n not in pre_env and not n.startswith("$"):
                self.poison[n] = (f"{n} is defined only inside the loop body; assign it before the loop to use "
                                  f"it after the loop", s)
        return False


def _widens(old, new) -> bool:
    """None -> Optional[T] and Tensor-refinements are allowed to widen a loop variable's type."""
    from ember.jit.ir.types import NoneType, OptionalType
    return isinstance(old, NoneType) and isinstance(new, OptionalType) or (
        isinstance(new, OptionalType) and old.is_subtype_of(new))
