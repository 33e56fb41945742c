"""Loops: ``for`` over range/lists/tensors/str/dict keys/zip/enumerate as prim::Loop, ``while`` as
prim::Loop with a huge trip count, and ``for`` over tuples and ModuleLists by unrolling the body.

prim::Loop: args (max_trip_count, start_cond, *carried); body block params (i, *carried) returning
(cond_next, *carried). The carried variables are those the body assigns that exist before the
loop; variables first assigned inside the body stay local to it. When the body changes a carried
variable's type (a return value first assigned in the loop), the loop is emitted again with the
unified types. exits.py's flags (``_exit_flags``) are folded into cond_next. ``range(a, b, s)``'s
trip count is computed in the graph (``(b - a + s - sign(s)) // s``; a negative count runs no
trips). Tuples and ModuleLists are iterated by unrolling the body (their elements may differ in
type); zip/enumerate over them unroll too (all arguments must then unroll).
"""
from __future__ import annotations

import ast
import builtins
import operator
from collections import namedtuple

from ember.fx.node import Node
from ember.jit.ir import add_block, block_params, call, prim, set_block_returns, unpack_outputs
from ember.jit.ir.types import DictType, IntType, ListType, NoneType, OptionalType, StrType, TensorType, \
    TupleType

from . import builtins as rules
from .errors import NotSupportedError
from .exits import guard, none_set
from .exprs import modulelist_item
from .operators import close_if, emit_cond, emit_if, to_bool
from .state import ModuleListValue, ModuleValue, PyObj, Unrolled, is_constant
from .statements import assign

MAX_TRIPS = 2 ** 63 - 1


class BindValue(ast.stmt):
    """Synthetic statement: assign the already-emitted ``bound_value`` to a target (unrolled loops)."""
    _fields = ("target",)


_Indexed = namedtuple("_Indexed", "length item")   # an iterable read by index: int node, i -> element


def _stored_names(stmts: list) -> set:
    return {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


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


# -- statements ----------------------------------------------------------------------------------
def compile_bind_value(st, s):
    assign(st, s.target, s.bound_value, s)


def compile_break(st, s):   # break / continue inside a loop became flags (exits.py)
    raise NotSupportedError(st.ctx, s, "break is only supported inside loops")


def compile_for(st, s):
    if s.orelse:
        raise NotSupportedError(st.ctx, s, "for-else loops aren't supported")
    it = iterable(st, s.iter)
    flags = getattr(s, "_exit_flags", [])
    mutable = [n for n in _iterated_names(s.iter)
               if isinstance(st.env.get(n), Node) and isinstance(st.env[n].type, (ListType, DictType))]
    changed = None if isinstance(it, list) else _size_change(s.body, mutable)
    if changed is not None:
        # Python re-reads the length each step (or raises for dicts); script reads it once, so
        # such a loop would silently run a different number of times
        raise st.error(changed[0], f"changing the size of '{changed[1]}' while iterating over it is not "
                                   f"supported in script")
    if isinstance(it, list):
        return _unroll(st, s, it, flags)

    def body(i):
        assign(st, s.target, it.item(i), s)
        return st.block(s.body)
    return _emit_loop(st, s, it.length, st.const(True, s), body, none_set(flags, s))


def compile_while(st, s):
    if s.orelse:
        raise NotSupportedError(st.ctx, s, "while-else loops aren't supported")
    test = none_set(getattr(s, "_exit_flags", []), s, s.test)
    start = to_bool(st, emit_cond(st, test)[0], s.test)
    return _emit_loop(st, s, st.const(MAX_TRIPS, s), start, lambda i: st.block(s.body), test)


# -- iterables -----------------------------------------------------------------------------------
def iterable(st, e):
    """An _Indexed for loops, or a list of element values to unroll over."""
    if isinstance(e, ast.Call):
        func = st.expr(e.func)
        if isinstance(func, PyObj) and func.obj in _ITERATORS:
            return _ITERATORS[func.obj](st, e)
    v = st.expr(e)
    if isinstance(v, Unrolled):
        return list(v.values)
    if isinstance(v, ModuleListValue) or isinstance(v, ModuleValue) and v.items is not None:
        return [modulelist_item(st, v, k, e) for k in range(len(v.items))]
    v = st.to_value(v, e)
    t = v.type
    if isinstance(t, TupleType):
        return [st.emit(operator.getitem, (v, st.const(k, e)), e, et) for k, et in enumerate(t.elems)]
    if isinstance(t, DictType):
        v = st.emit(builtins.list, (v,), e, ListType(t.key))
        t = v.type
    if isinstance(t, (ListType, StrType)):
        elem = t.elem if isinstance(t, ListType) else rules.STR
        return _Indexed(st.emit(builtins.len, (v,), e, rules.INT),
                        lambda i: st.emit(operator.getitem, (v, i), e, elem))
    if isinstance(t, TensorType):   # a 0-d tensor: eager's TypeError, not size(0)'s IndexError
        no_dims = st.emit(operator.eq, (st.emit("dim", (v,), e, rules.INT), st.const(0, e)), e, rules.BOOL)
        _raise_if(st, no_dims, "TypeError", "iteration over a 0-d tensor", e)
        return _Indexed(st.emit("size", (v, st.const(0, e)), e, rules.INT),
                        lambda i: st.emit(operator.getitem, (v, i), e, rules.T_))
    raise st.error(e, f"'{rules.py_type_str(t)}' object is not iterable in script (script iterates over "
                      f"range, lists, tuples, tensors, str, dict keys, zip and enumerate)")


def _iter_range(st, e):
    args = [st.value(a) for a in e.args]
    if not 1 <= len(args) <= 3 or e.keywords:
        raise st.error(e, "range expected 1 to 3 arguments")
    for a, node in zip(args, e.args):
        if not isinstance(a.type, IntType):
            raise st.error(node, f"range() arguments must be int, got '{rules.py_type_str(a.type)}'")
    if len(args) == 1:
        return _Indexed(args[0], lambda i: i)

    def int_op(op, a, b):
        return st.emit(op, (a, b), e, rules.INT)
    start, stop = args[0], args[1]
    step = args[2] if len(args) == 3 else None
    span = int_op(operator.sub, stop, start)
    if step is None:
        return _Indexed(span, lambda i: int_op(operator.add, start, i))
    if is_constant(step):
        k = step.args[0]
        if k == 0:
            raise st.error(e.args[2], "range() arg 3 must not be zero")
        adj = int_op(operator.add, span, st.const(k - 1 if k > 0 else k + 1, e))
    else:   # trips = (span + step - sign(step)) // step, sign computed in the graph
        # a run-time step of 0 raises ValueError like Python's range (not the trip count's ZeroDivisionError)
        zero = st.emit(operator.eq, (step, st.const(0, e)), e, rules.BOOL)
        _raise_if(st, zero, "ValueError", "range() arg 3 must not be zero", e)
        positive = st.emit(operator.gt, (step, st.const(0, e)), e, rules.BOOL)
        sign = int_op(operator.sub, int_op(operator.mul, positive, st.const(2, e)), st.const(1, e))
        adj = int_op(operator.sub, int_op(operator.add, span, step), sign)
    return _Indexed(int_op(operator.floordiv, adj, step),
                    lambda i: int_op(operator.add, start, int_op(operator.mul, i, step)))


def _raise_if(st, cond, cls: str, message: str, e):
    """Emit ``if cond: raise cls(message)``."""
    def raise_():
        st.emit(prim.RaiseException, (st.const(message, e), cls), e, rules.NONE)
    node, _, _ = emit_if(st, cond, e, (raise_, lambda: None))
    close_if(node, [[], []], [])


def _iter_enumerate(st, e):
    if not e.args or len(e.args) > 2:
        raise st.error(e, "enumerate expected 1 or 2 arguments")
    start_e = e.args[1] if len(e.args) > 1 else next((k.value for k in e.keywords if k.arg == "start"), None)
    start = st.value(start_e) if start_e is not None else None
    sub = iterable(st, e.args[0])
    if isinstance(sub, list):   # tuples / ModuleLists: unrolled with constant indices
        base = 0
        if start is not None:
            if not is_constant(start):
                raise st.error(start_e, "enumerate start must be a constant over tuples/ModuleLists")
            base = start.args[0]
        return [(st.const(base + k, e), v) for k, v in enumerate(sub)]

    def item(i):
        idx = i if start is None else st.emit(operator.add, (i, start), e, rules.INT)
        return (idx, sub.item(i))
    return _Indexed(sub.length, item)


def _iter_zip(st, e):
    if not e.args:
        raise st.error(e, "zip expected at least 1 argument")
    subs = [iterable(st, a) for a in e.args]
    if all(isinstance(s, list) for s in subs):
        return [tuple(vals) for vals in zip(*subs)]
    if any(isinstance(s, list) for s in subs):
        raise st.error(e, "zip cannot mix tuples/ModuleLists with lists or ranges in script")
    length = subs[0].length
    if len(subs) > 1:
        length = st.emit(builtins.min, tuple(s.length for s in subs), e, rules.INT)
    return _Indexed(length, lambda i: tuple(s.item(i) for s in subs))


_ITERATORS = {range: _iter_range, zip: _iter_zip, enumerate: _iter_enumerate}


# -- emission ------------------------------------------------------------------------------------
def _unroll(st, s, values: list, flags: list):
    for k, v in enumerate(values):
        bind = ast.copy_location(BindValue(target=s.target), s)
        bind.bound_value = v
        body = [bind] + list(s.body)
        if k > 0 and flags:
            body = [guard(flags, body, s)]
        if st.block(body):
            return True
    return False


def _emit_loop(st, s, trips: Node, start: Node, body_fn, next_test):
    stored = _stored_names(s.body) | (_stored_names([s.target]) if isinstance(s, ast.For) else set())
    carried = [n for n in st.env if n in stored and isinstance(st.env[n], Node)]
    inits = [st.env[n] for n in carried]
    types = [v.type for v in inits]
    parent, pre_env = st.graph, st.env
    for _attempt in range(len(carried) + 2):
        node = call(parent, prim.Loop, (trips, start, *inits), loc=st.loc(s))
        block = add_block(node, [rules.INT, *types], ["i"] + [n.lstrip("$") for n in carried])
        i_param, *params = block_params(block)
        for p, n, t in zip(params, carried, types):
            p.type = t
            if not n.startswith("$"):
                p.meta["jit_name"] = n
        with st.inside(block, {**pre_env, **dict(zip(carried, params))}):
            dead = body_fn(i_param)
            if dead or next_test is None:
                cond_next = st.const(not dead, s)
            else:
                cond_next = to_bool(st, emit_cond(st, next_test)[0], s)
            results, new_types = [], []
            for n, t in zip(carried, types):
                r = st.env.get(n)
                if not isinstance(r, Node):
                    what = st.poison.get(n, (f"{n} is not defined at the end of the loop body", s))
                    raise st.error(what[1], what[0])
                u = rules.unify(t, r.type)
                if u is None or (not isinstance(t, rules.BottomType) and u != t and not _widens(t, u)):
                    raise st.error(s, f"Variable '{n}' previously had type {rules.py_type_str(t)} but is "
                                      f"now being assigned to a value of type {rules.py_type_str(r.type)}")
                results.append(r)
                new_types.append(u)
            body_env = st.env
            if new_types == types:
                for k, r in enumerate(results):
                    if isinstance(r.type, rules.BottomType) and not isinstance(types[k], rules.BottomType):
                        results[k] = st.emit(prim.Uninitialized, (), s, types[k])
                set_block_returns(block, [cond_next, *results])
                break
        parent.erase_node(node)
        for k, (v, t) in enumerate(zip(inits, new_types)):
            if v.type != t:
                if v.target is prim.Uninitialized or is_constant(v) and v.args[0] is None:
                    inits[k] = st.emit(v.target, tuple(v.args), s, t)
        types = new_types
    else:
        raise st.error(s, "could not infer the types of the loop's variables")
    st.env = dict(pre_env)
    for n, o in zip(carried, unpack_outputs(node, types)):
        st.bind(n, o)
    for n in body_env:
        if n not in pre_env and not n.startswith("$"):
            st.poison[n] = (f"{n} is defined only inside the loop body; assign it before the loop to use "
                            f"it after the loop", s)
    return False


def _widens(old, new) -> bool:
    """None -> Optional[T] and Tensor-refinements are allowed to widen a loop variable's type."""
    return isinstance(old, NoneType) and isinstance(new, OptionalType) or (
        isinstance(new, OptionalType) and old.is_subtype_of(new))
