"""Comprehensions: list, dict and generator expressions lowered to loops (mixed into the
FunctionCompiler of to_ir.py).

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


class _DictCompStore(ast.stmt):
    """Synthetic statement: ``$comp[key] = value`` typing the dict on its first store."""
    _fields = ("key", "value")


class _Renamer(ast.NodeTransformer):
    def __init__(self, names: dict):
        self.names = names

    def visit_Name(self, node):
        if node.id in self.names:
            return ast.copy_location(ast.Name(id=self.names[node.id], ctx=node.ctx), node)
        return node


class ComprehensionMixin:
    """List / dict / generator comprehensions (see module docstring)."""

    def expr_ListComp(self, e):
        self._check_generators(e)
        lst = self.emit(prim.ListConstruct, (), e, ListType(rules.T_))
        lst.meta["comprehension"] = True
        name, (elt,), loop = self._comprehension_loop(e, [e.elt])
        self.env[name] = lst
        append = ast.Expr(value=ast.Call(func=ast.Attribute(value=ast.Name(id=name, ctx=ast.Load()), attr="append",
                                                            ctx=ast.Load()), args=[elt], keywords=[]))
        return self._run_comprehension(e, name, loop, append)

    expr_GeneratorExp = expr_ListComp

    def expr_DictComp(self, e):
        self._check_generators(e)
        d = self.emit(prim.DictConstruct, (), e, DictType(rules.STR, rules.T_))
        d.meta["comprehension"] = True
        name, (key, value), loop = self._comprehension_loop(e, [e.key, e.value])
        self.env[name] = d
        store = _DictCompStore(key=key, value=value)
        store.comp_name = name
        return self._run_comprehension(e, name, loop, store)

    def stmt__DictCompStore(self, s):
        d = self.env[s.comp_name]
        k, v = self.value(s.key), self.value(s.value)
        if d.meta.pop("comprehension", False):
            d.type = DictType(k.type, v.type)
        else:
            for what, x, t, src in (("keys", k, d.type.key, s.key), ("values", v, d.type.value, s.value)):
                if not x.type.is_subtype_of(t):
                    raise self.error(src, f"dict comprehension {what} must all have type "
                                          f"'{rules.py_type_str(t)}', got '{rules.py_type_str(x.type)}'")
        self.emit(operator.setitem, (d, k, v), s, rules.NONE)

    # -- shared ----------------------------------------------------------------------------
    def _check_generators(self, e):
        for gen in e.generators:
            if gen.is_async:
                raise self.error(e, "async comprehensions are not supported in script")

    def _comprehension_loop(self, e, results: list):
        """(list variable name, renamed result expressions, innermost-body builder)."""
        self.comp_count += 1
        k = self.comp_count
        name = f"$comp{k}"
        bound = {n.id for g in e.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        renamer = _Renamer({b: f"$c{k}_{b}" for b in bound})
        gens = []
        for i, g in enumerate(e.generators):
            gens.append((renamer.visit(copy.deepcopy(g.target)),
                         g.iter if i == 0 else renamer.visit(copy.deepcopy(g.iter)),
                         [renamer.visit(copy.deepcopy(c)) for c in g.ifs]))
        results = [renamer.visit(copy.deepcopy(r)) for r in results]

        def loop(innermost):
            body = [innermost]
            for target, it, ifs in reversed(gens):
                for cond in reversed(ifs):
                    body = [ast.If(test=cond, body=body, orelse=[])]
                body = [ast.For(target=target, iter=it, body=body, orelse=[], type_comment=None)]
            return body[0]
        return name, results, loop

    def _run_comprehension(self, e, name, loop_builder, innermost):
        loop = loop_builder(innermost)
        for node in ast.walk(loop):   # synthetic nodes point at the comprehension
            if not hasattr(node, "lineno") or isinstance(node, _DictCompStore) or node is innermost:
                ast.copy_location(node, e)
                node.end_lineno, node.end_col_offset = e.end_lineno, e.end_col_offset
        self.emit_stmt(loop)
        result = self.env.pop(name)
        result.meta.pop("comprehension", None)
        return result
