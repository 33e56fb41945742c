"""Comprehensions: list, dict and generator expressions lowered to loops.

    [f(x, y) for x in xs if c(x) for y in g(x)]
    ->  $comp = []                      (its element type comes from the first append)
        for $x in xs:
            if c($x):
                for $y in g($x):
                    $comp.append(f($x, $y))

A dict comprehension stores ``$comp[k] = v`` into an empty dict typed by the first store.
Generator expressions are list comprehensions (as in torch.jit.script). The comprehension's
variables are renamed (``$c<k>_x``) so they cannot clobber the function's locals; the first
``for``'s iterable is evaluated in the enclosing scope, as in Python. Beyond torch.jit.script,
which takes exactly one ``for`` and no ``if``, any number of both are accepted.
"""
from __future__ import annotations

import ast
import copy
import operator

from ember.jit.ir import prim
from ember.jit.ir.types import DictType, ListType

from . import builtins as rules


class DictCompStore(ast.stmt):
    """Synthetic statement: ``$comp[key] = value`` typing the dict on its first store."""
    _fields = ("key", "value")


def compile_listcomp(st, e):   # generator expressions too
    def append(name, elt):
        return ast.Expr(value=ast.Call(func=ast.Attribute(value=ast.Name(id=name, ctx=ast.Load()), attr="append",
                                                          ctx=ast.Load()), args=[elt], keywords=[]))
    return _comprehension(st, e, st.emit(prim.ListConstruct, (), e, ListType(rules.T_)), [e.elt], append)


def compile_dictcomp(st, e):
    def store(name, key, value):
        stmt = DictCompStore(key=key, value=value)
        stmt.comp_name = name
        return stmt
    return _comprehension(st, e, st.emit(prim.DictConstruct, (), e, DictType(rules.STR, rules.T_)),
                          [e.key, e.value], store)


def compile_dict_store(st, s):
    d = st.env[s.comp_name]
    k, v = st.value(s.key), st.value(s.value)
    if d.meta.pop("comprehension", False):
        d.type = DictType(k.type, v.type)
    else:
        for what, x, t, src in (("keys", k, d.type.key, s.key), ("values", v, d.type.value, s.value)):
            if not x.type.is_subtype_of(t):
                raise st.error(src, f"dict comprehension {what} must all have type "
                                    f"'{rules.py_type_str(t)}', got '{rules.py_type_str(x.type)}'")
    st.emit(operator.setitem, (d, k, v), s, rules.NONE)


def _comprehension(st, e, container, results: list, innermost_of):
    """Fill the empty `container` (typed by its first store) with the loop the comprehension `e`
    stands for; ``innermost_of(container's variable, *renamed results)`` is the statement storing
    one element."""
    for gen in e.generators:
        if gen.is_async:
            raise st.error(e, "async comprehensions are not supported in script")
    container.meta["comprehension"] = True
    st.comp_count += 1
    k = st.comp_count
    name = f"$comp{k}"
    st.env[name] = container
    bound = {n.id for g in e.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}

    def renamed(node):
        node = copy.deepcopy(node)
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in bound:
                n.id = f"$c{k}_{n.id}"
        return node
    innermost = innermost_of(name, *[renamed(r) for r in results])
    body = [innermost]
    for i, g in reversed(list(enumerate(e.generators))):
        for cond in reversed(g.ifs):
            body = [ast.If(test=renamed(cond), body=body, orelse=[])]
        body = [ast.For(target=renamed(g.target), iter=g.iter if i == 0 else renamed(g.iter), body=body, orelse=[],
                        type_comment=None)]
    for node in ast.walk(body[0]):   # synthetic nodes point at the comprehension
        if not hasattr(node, "lineno") or node is innermost:
            ast.copy_location(node, e)
    st.stmt(body[0])
    result = st.env.pop(name)
    result.meta.pop("comprehension", None)
    return result
