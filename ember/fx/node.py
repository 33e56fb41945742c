"""Node: one operation of an ember.fx Graph (torch.fx.Node's surface).

    g = ember.fx.Graph()
    x = g.placeholder("x")
    y = g.call_function(operator.add, (x, 1))
    y.args            # (x, 1)
    x.users           # {add: None}
    y.format_node()   # '%add : [num_users=0] = call_function[target=operator.add](args = (%x, 1), kwargs = {})'

A Node's args/kwargs hold other Nodes; setting them keeps every input's `users` up to date, so
the use-def chains are always exact (that is what DCE, replace_all_uses_with and lint rely on).
"""
from __future__ import annotations

from typing import Any, Callable

OPCODES = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output")


def has_side_effect(fn: Callable) -> Callable:
    """Declare `fn` side-effecting in the op-properties table, so passes keep and never merge its
    calls; returns `fn` (usable as a decorator).

        @ember.fx.has_side_effect
        def log(x): print(x)
    """
    import dataclasses
    from ember.ops import properties
    properties.declare(fn, dataclasses.replace(properties.of(fn), side_effects=True))
    return fn


def _is_operator_handle(obj) -> bool:
    from ember._core.dispatch import OperatorHandle
    return isinstance(obj, OperatorHandle)


def _operator_handle_name(op) -> str:
    """`aten::add.Tensor` -> `ember.ops.aten.add.Tensor`; `aten::relu` -> `ember.ops.aten.relu.default`."""
    ns, rest = op.name.split("::", 1)
    name, _, overload = rest.partition(".")
    return f"ember.ops.{ns}.{name}.{overload or 'default'}"


def _get_qualified_name(fn: Any) -> str:
    """The dotted name code uses to reach `fn`: `ember.sigmoid`, `operator.add`, `math.sqrt`.

        _get_qualified_name(ember.ops.aten.add.Tensor)   # 'ember.ops.aten.add.Tensor'
    """
    from ember.ops.registry import public_name
    if _is_operator_handle(fn):
        return _operator_handle_name(fn)
    if getattr(fn, "__module__", None) == "builtins":
        return fn.__name__
    public = public_name(fn)
    if public is not None:
        return public
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    module = getattr(fn, "__module__", None)
    if name is None:
        raise RuntimeError(f"fx: cannot name target {fn!r}: it has no __name__")
    if module == "_operator":
        module = "operator"
    if module is None:
        return name
    return f"{module}.{name}"


def _pretty_print_target(target: Any) -> str:
    """How a target shows in `Graph.__str__`: `operator.add`, `builtins.abs`, `ember.sigmoid`."""
    if isinstance(target, str):
        return target
    module = getattr(target, "__module__", None)
    name = getattr(target, "__name__", None)
    if name is not None and module == "builtins":
        return f"builtins.{name}"
    if name is not None and module == "_operator":
        return f"operator.{name}"
    return _get_qualified_name(target)


def _format_arg(arg: Any, max_list_len: float = float("inf")) -> str:
    """An argument as __str__ shows it: nodes as `%name`, containers recursively."""
    if isinstance(arg, tuple) and not hasattr(arg, "_fields"):
        items = ", ".join(_format_arg(a) for a in arg)
        return f"({items},)" if len(arg) == 1 else f"({items})"
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    if isinstance(arg, Node):
        return "%" + str(arg)
    return str(arg)


# --------------------------------------------------------------------------------------------
# walking nested arguments
# --------------------------------------------------------------------------------------------
def map_aggregate(a: Any, fn: Callable) -> Any:
    """Apply `fn` to every leaf of nested tuples/lists/dicts/slices, keeping the structure.

        map_aggregate((1, [2, 3]), lambda v: v * 10)   # (10, [20, 30])
    """
    if isinstance(a, tuple):
        mapped = tuple(map_aggregate(e, fn) for e in a)
        return type(a)(*mapped) if hasattr(a, "_fields") else mapped
    if isinstance(a, list):
        return [map_aggregate(e, fn) for e in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Any, fn: Callable[["Node"], Any]) -> Any:
    """Apply `fn` to every Node inside `a` (nested tuples/lists/dicts/slices); other leaves stay.

        map_arg((x, 1), lambda n: n.name)   # ('x', 1)
    """
    if not callable(fn):
        raise TypeError("map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda v: fn(v) if isinstance(v, Node) else v)


def _collect_nodes(a: Any) -> dict:
    found: dict = {}
    map_arg(a, lambda n: found.setdefault(n))
    return found


_LEAVES = frozenset((int, float, str, bool, type(None)))


def _copy_collecting(a: Any, found: dict) -> Any:
    """map_aggregate(a, identity) (fresh containers) that also records every Node met in `found`,
    in order: one walk where building a node took four (graph building is most of a warm start's
    work: the compiler's graphs are rebuilt from cached data)."""
    cls = a.__class__
    if cls in _LEAVES:
        return a
    if cls is Node:
        found[a] = None
        return a
    if cls is tuple:
        return tuple([_copy_collecting(e, found) for e in a])
    if cls is list:
        return [_copy_collecting(e, found) for e in a]
    if cls is dict:
        return {k: _copy_collecting(v, found) for k, v in a.items()}
    if isinstance(a, Node):
        found[a] = None
        return a
    if isinstance(a, (tuple, list, dict, slice)):       # subclasses and slices: map_aggregate's rules
        def note(v):
            if isinstance(v, Node):
                found[v] = None
            return v
        return map_aggregate(a, note)
    return a


# --------------------------------------------------------------------------------------------
# Node
# --------------------------------------------------------------------------------------------
class Node:
    """One operation in a Graph: `op` (an opcode), `target`, `args`, `kwargs`, `users`, `meta`.

        n = graph.call_function(ember.relu, (x,))
        n.op, n.target, n.args    # 'call_function', ember.relu, (x,)
    """

    def __init__(self, graph, name: str, op: str, target: Any, args: tuple, kwargs: dict,
                 return_type: Any = None):
        if op not in OPCODES:
            raise ValueError(f"Node: op must be one of {OPCODES}, got {op!r}")
        if op in ("call_method", "call_module", "get_attr", "placeholder") and not isinstance(target, str):
            raise ValueError(f"Node: target of a {op} node must be a str, got {type(target).__name__}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node: target of a call_function node must be callable, got {target!r}")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        self.users: dict = {}
        self.type = return_type
        self.meta: dict = {}
        self.blocks: list = []    # nested graphs of a control-flow node (jit.script's If / Loop)
        self._prev: Node = self   # doubly linked ring through the graph's root sentinel
        self._next: Node = self
        self._erased = False
        self._update_args_kwargs(args, kwargs)

    # -- linked list -------------------------------------------------------------------------
    @property
    def next(self) -> "Node":
        """The node after this one (the graph's root sentinel at the end)."""
        return self._next

    @property
    def prev(self) -> "Node":
        """The node before this one (the graph's root sentinel at the start)."""
        return self._prev

    def prepend(self, x: "Node") -> None:
        """Move/insert node `x` just before this node (same graph).

            add.prepend(new_node)
        """
        if x is self:
            return
        if x.graph is not self.graph:
            raise AssertionError("Node.prepend: nodes belong to different graphs")
        x._remove_from_list()
        p = self._prev
        p._next, x._prev, x._next, self._prev = x, p, self, x

    def append(self, x: "Node") -> None:
        """Move/insert node `x` just after this node.

            add.append(new_node)
        """
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # -- args / kwargs -----------------------------------------------------------------------
    @property
    def args(self) -> tuple:
        """The positional arguments (Nodes and constants). Setting them updates `users`."""
        return self._args

    @args.setter
    def args(self, value) -> None:
        self._update_args_kwargs(value, self._kwargs)

    @property
    def kwargs(self) -> dict:
        """The keyword arguments. Setting them updates `users`."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value) -> None:
        self._update_args_kwargs(self._args, value)

    @property
    def all_input_nodes(self) -> list:
        """Every Node this node reads, in order of first appearance.

            add.all_input_nodes   # [x, y]
        """
        return list(self._input_nodes)

    def _update_args_kwargs(self, new_args, new_kwargs) -> None:
        new_args = tuple(new_args) if new_args is not None else ()
        new_kwargs = dict(new_kwargs) if new_kwargs is not None else {}
        for old in self._input_nodes:
            old.users.pop(self, None)
        found: dict = {}
        self._args = _copy_collecting(new_args, found)      # fresh containers, nodes in order
        self._kwargs = _copy_collecting(new_kwargs, found)
        self._input_nodes = found
        for n in found:
            n.users.setdefault(self)

    def update_arg(self, idx: int, arg: Any) -> None:
        """Replace positional argument `idx`.

            add.update_arg(1, 2)
        """
        args = list(self._args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg: Any) -> None:
        """Set keyword argument `key`.

            s.update_kwarg("dim", 0)
        """
        kwargs = dict(self._kwargs)
        kwargs[key] = arg
        self.kwargs = kwargs

    def replace_input_with(self, old_input: "Node", new_input: "Node") -> None:
        """Make this node read `new_input` wherever it read `old_input`.

            add.replace_input_with(x, y)
        """
        swap = lambda n: new_input if n is old_input else n  # noqa: E731
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def replace_all_uses_with(self, replace_with: "Node", delete_user_cb: Callable | None = None, *,
                              propagate_meta: bool = False) -> list:
        """Make every user of this node read `replace_with` instead; returns the changed users.

            relu.replace_all_uses_with(new_relu)
        `delete_user_cb(user)` returning False keeps that user on this node.
        """
        if propagate_meta:
            if replace_with.meta:
                raise AssertionError("replace_all_uses_with(propagate_meta=True): the replacement "
                                     "node must have empty meta")
            replace_with.meta.update(self.meta)
        changed = []
        for user in list(self.users):
            if delete_user_cb is not None and not delete_user_cb(user):
                continue
            user.replace_input_with(self, replace_with)
            changed.append(user)
        return changed

    # -- properties --------------------------------------------------------------------------
    @property
    def stack_trace(self) -> str | None:
        """The user's source location (PyTorch's format), from meta["stack_trace"]."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    def is_impure(self, impure_random: bool = True) -> bool:
        """True if removing this node could change the program (DCE keeps it); random ops count
        unless `impure_random` is False. Asks the one purity oracle (ember.fx.passes.purity).

            graph.call_function(operator.setitem, (d, 0, x)).is_impure()   # True
        """
        from .passes import purity
        if not impure_random and purity.is_random(self):
            props = purity.properties(self)
            return bool(props.mutates or props.side_effects) or bool(purity.mutated_inputs(self))
        return purity.has_side_effects(self)

    def format_node(self, placeholder_names: list | None = None, maybe_return_typename: list | None = None) -> str | None:
        """One line of `Graph.__str__` for this node.

            add.format_node()   # '%add : [num_users=1] = call_function[target=operator.add](args = (%x, 1), kwargs = {})'
        """
        if self.op == "placeholder":
            arg_str = self.target
            if self.type is not None:
                arg_str += f": {_type_repr(self.type)}"
            if self._args:
                arg_str += f" = {self._args[0]!r}"
            if placeholder_names is not None:
                placeholder_names.append(arg_str)
                return None
            default = f"(default={self._args[0]})" if self._args else ""
            return f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={self.target}]{default}"
        if self.op == "get_attr":
            return f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={_pretty_print_target(self.target)}]"
        if self.op == "output":
            if self.type is not None and maybe_return_typename is not None:
                maybe_return_typename[0] = f" -> {_type_repr(self.type)}"
            return f"return {self._args[0]}"
        type_str = "" if self.type is None else f"{_type_repr(self.type)}"
        return (f"%{self.name} : {type_str}[num_users={len(self.users)}] = "
                f"{self.op}[target={_pretty_print_target(self.target)}]"
                f"(args = {_format_arg(self._args)}, kwargs = {_format_arg(self._kwargs)})")

    def __repr__(self) -> str:
        return self.name

    def __getstate__(self):
        return dict(self.__dict__)


def _type_repr(t: Any) -> str:
    if isinstance(t, type):
        if t.__module__ == "builtins":
            return t.__qualname__
        return f"{t.__module__}.{t.__qualname__}"
    return repr(t)
