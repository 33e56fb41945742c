"""What the compilation of one function carries: ``FunctionState``, handed to every handler.

Every statement and expression handler of the frontend is a plain function ``handler(st, node)``
found in to_ir.py's tables (``STMT_HANDLERS``, ``EXPR_HANDLERS``); ``st`` is this object:

- the function: ``fn``, ``ctx`` (its source, for error carets), ``self_info`` (the ModuleInfo of
  ``self`` when it is a method; see modules.py), ``fn_globals`` and ``closure`` (free names);
- the environment: ``env`` (variable -> value), ``poison`` (variable -> (why it cannot be used, the
  statement that made it so)), ``declared`` (annotated variables' types);
- the graph builder: ``graph`` (the block being filled; ``inside(block, env)`` switches it),
  ``emit`` and ``const``;
- dispatch: ``stmt`` / ``block`` / ``expr`` / ``value`` run the handler tables.

A value is a Node (an SSA value with ``node.type``) or a *sugared value*, one of the dataclasses
below, which only exists while compiling.
"""
from __future__ import annotations

import builtins
from contextlib import contextmanager
from dataclasses import dataclass

from ember.fx.blocks import is_constant  # noqa: F401  (the frontend reads it from here)
from ember.fx.node import Node
from ember.jit.ir import call, constant, new_graph, prim
from ember.jit.ir.types import AnyType, ModuleType, OptionalType, from_annotation, type_of_value

from . import builtins as rules
from .errors import FrontendError, UnsupportedNodeError, keyword_span
from .exits import UNINIT

COMPILING: list = []   # the Python functions being compiled right now (recursion detection)


@dataclass(eq=False)
class PyObj:
    """A Python object used by name in script (resolved at compile time)."""
    obj: object


@dataclass(eq=False)
class BoundMethod:
    """``value.name`` waiting to be called (a Tensor, list, dict or str method)."""
    recv: Node
    name: str


@dataclass(eq=False)
class ModuleValue:
    """A scripted module value (``self``, ``self.sub``) with its ModuleInfo."""
    node: Node
    info: object
    items: list | None = None


@dataclass(eq=False)
class ModuleListValue:
    """A ModuleList attribute: iterated by unrolling over `items` ((name, AttrInfo) per element)."""
    node: Node
    items: list


@dataclass(eq=False)
class ModuleMethod:
    """``module.method`` waiting to be called (scripted or @ignore'd)."""
    module: ModuleValue
    name: str
    attr: object


@dataclass(eq=False)
class ModuleDictView:
    """``module_dict.items`` / ``.keys`` / ``.values`` waiting to be called."""
    module: ModuleValue
    name: str


@dataclass(eq=False)
class Unrolled:
    """Compile-time list of values a for loop unrolls over (a ModuleDict's items/keys/values)."""
    values: list


class FunctionState:
    """The state of compiling one function (see the module docstring)."""

    def __init__(self, fn, ctx, self_info, stmt_handlers: dict, expr_handlers: dict):
        self.fn, self.ctx, self.self_info = fn, ctx, self_info
        self.fn_globals = getattr(fn, "__globals__", {})
        self.closure = {}
        for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                self.closure[var] = cell.cell_contents
            except ValueError:   # a cell not filled yet: the name is not a closure value
                pass
        self.stmt_handlers, self.expr_handlers = stmt_handlers, expr_handlers
        self.graph = new_graph()
        self.env: dict = {}
        self.poison: dict = {}
        self.declared: dict = {}
        self.def_site: dict = {}    # value -> the statement that assigned it (error messages)
        self.comp_count = 0         # comprehensions so far (their variables get unique names)
        self.return_value = None
        self.return_site = None     # the `return` statement of the result (error messages)

    # -- dispatch --------------------------------------------------------------------------------
    def stmt(self, s) -> bool:
        """Emit one statement; True if it always raises (what follows is dead)."""
        handler = self.stmt_handlers.get(type(s))
        if handler is None:
            raise UnsupportedNodeError(self.ctx, s, keyword_span(s))
        return bool(handler(self, s))

    def block(self, stmts: list) -> bool:
        """Emit statements until one always raises; True if one did."""
        return any(self.stmt(s) for s in stmts)

    def expr(self, e):
        """Emit an expression; returns a Node or a sugared value."""
        handler = self.expr_handlers.get(type(e))
        if handler is None:
            raise UnsupportedNodeError(self.ctx, e)
        return handler(self, e)

    def value(self, e) -> Node:
        """Emit `e` and require a runtime value (sugared Python constants become prim::Constant)."""
        return self.to_value(self.expr(e), e)

    # -- graph building --------------------------------------------------------------------------
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

    @contextmanager
    def inside(self, block, env: dict | None = None):
        """Emit into `block` (and, given `env`, with those variables) until the with-statement ends."""
        saved = self.graph, self.env
        self.graph = block
        self.env = self.env if env is None else env
        try:
            yield
        finally:
            self.graph, self.env = saved

    def annotation_type(self, annotation, e):
        """The ScriptType an annotation names; a compile error at `e` if it names none."""
        try:
            return from_annotation(annotation, self.fn_globals)
        except ValueError as err:
            raise self.error(e, str(err)) from None

    # -- names -----------------------------------------------------------------------------------
    def lookup(self, name: str, e):
        if name == UNINIT:
            return self.emit(prim.Uninitialized, (), e, rules.BottomType())
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
            self.def_site[value] = e

    def make_undefined(self, name: str, why: str, where) -> None:
        """`name` may not be used from here on: using it is a compile error saying `why` at `where`."""
        self.env.pop(name, None)
        self.poison[name] = (why, where)

    # -- values ----------------------------------------------------------------------------------
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
        if isinstance(v, (ModuleValue, ModuleListValue)):
            return v.node
        raise self.error(e, "this expression cannot be used as a value (a method must be called)")

    def coerce(self, v: Node, t, e) -> Node:
        """Give `v` the declared type `t` (empty literals and None retyped; others must be subtypes)."""
        if v.type == t:
            return v
        if v.meta.get("needs_annotation"):
            v.type = t
            v.meta.pop("needs_annotation")
            return v
        empty = v.meta.get("empty_literal")
        if (empty and type(v.type) is type(t)) or (not empty and is_constant(v) and v.args[0] is None
                                                   and isinstance(t, OptionalType)):
            v.type = t
            return v
        if v.type.is_subtype_of(t):
            return v
        raise self.error(e, f"Variable annotated with type '{rules.py_type_str(t)}' but is being assigned a "
                            f"value of type '{rules.py_type_str(v.type)}'")
