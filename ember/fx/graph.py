"""Graph: an ordered list of Nodes, ember's one compiler IR (torch.fx.Graph's surface).

    g = ember.fx.Graph()
    x = g.placeholder("x")
    g.output(g.call_function(operator.add, (x, 1)))
    print(g)
    # graph():
    #     %x : [num_users=1] = placeholder[target=x]
    #     %add : [num_users=1] = call_function[target=operator.add](args = (%x, 1), kwargs = {})
    #     return add
    print(g.python_code("self").src)   # def forward(self, x): ...
"""
from __future__ import annotations

import contextlib
import inspect
from typing import Any, Callable

from . import _codegen
from .node import OPCODES, Node, _copy_collecting, _format_arg, _pretty_print_target, map_arg


class _NodeList:
    """Live view over a graph's nodes (forwards or reversed).

    Iteration reads each node's successor after yielding it, so erasing the node just yielded is
    safe (the usual `for n in reversed(g.nodes): g.erase_node(n)`)."""

    def __init__(self, graph: "Graph", reverse: bool = False):
        self._graph = graph
        self._reverse = reverse

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self):
        root = self._graph._root
        step = (lambda n: n._prev) if self._reverse else (lambda n: n._next)
        cur = step(root)
        while cur is not root:
            nxt = step(cur)
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self):
        return _NodeList(self._graph, not self._reverse)

    def __getitem__(self, i):
        return list(self)[i]

    def __repr__(self):
        return repr(list(self))


class _InsertPoint(contextlib.AbstractContextManager):
    def __init__(self, graph: "Graph", new_insert: Callable):
        self.graph = graph
        self.orig, graph._insert = graph._insert, new_insert

    def __exit__(self, *exc):
        self.graph._insert = self.orig
        return False


class Graph:
    """An ordered, named list of Nodes ending in one `output` node.

        g = Graph(); x = g.placeholder("x"); g.output(x)
    """

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._root = Node(self, "", "placeholder", "", (), {})  # sentinel of the node ring
        self._insert: Callable = self._root.prepend                # append at the end by default
        self._len = 0
        self._namespace = _codegen.Namespace()
        self._owners = 0
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._find_nodes_lookup: dict = {}
        self.parent_node = None   # set on a block: the control-flow Node this graph is nested in

    def encloses(self, other: "Graph") -> bool:
        """True if `other` is this graph or a block nested (at any depth) inside it: nodes of a
        block may read values of the graphs that enclose it, as in TorchScript."""
        while other is not None:
            if other is self:
                return True
            other = other.parent_node.graph if other.parent_node is not None else None
        return False

    # -- basics ------------------------------------------------------------------------------
    @property
    def owning_module(self):
        """The GraphModule this graph belongs to (None for a free graph)."""
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod) -> None:
        self._owning_module = mod

    @property
    def nodes(self) -> _NodeList:
        """The nodes in order (a live view; `reversed(g.nodes)` is safe to erase while iterating)."""
        return _NodeList(self)

    def find_nodes(self, *, op: str, target: Any = None, sort: bool = True) -> list:
        """Nodes with this opcode (and target, when given), in graph order.

            g.find_nodes(op="call_function", target=operator.add)
        """
        return [n for n in self.nodes if n.op == op and (target is None or n.target is target
                                                         or (isinstance(target, str) and n.target == target))]

    # -- creating nodes ----------------------------------------------------------------------
    def create_node(self, op: str, target: Any, args: tuple | None = None, kwargs: dict | None = None,
                    name: str | None = None, type_expr: Any | None = None) -> Node:
        """Create a node at the current insert point (end of graph by default).

            g.create_node("call_function", ember.relu, (x,))
        """
        if op not in OPCODES:
            raise ValueError(f"Graph.create_node: op must be one of {OPCODES}, got {op!r}")
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        if not isinstance(args, tuple):
            raise TypeError(f"Graph.create_node: args must be a tuple, got {type(args).__name__}")
        if not isinstance(kwargs, dict):
            raise TypeError(f"Graph.create_node: kwargs must be a dict, got {type(kwargs).__name__}")
        for n in _nodes_in((args, kwargs)):
            if not n.graph.encloses(self):
                raise RuntimeError(f"Graph.create_node: argument {n.name} belongs to another graph")
        candidate = name if name is not None else _codegen.target_to_str(target)
        unique = self._namespace.create_name(candidate, None)
        node = Node(self, unique, op, target, args, kwargs, type_expr)
        self._insert(node)
        self._len += 1
        return node

    def placeholder(self, name: str, type_expr: Any | None = None,
                    default_value: Any = inspect.Signature.empty) -> Node:
        """An input of the graph; `default_value` makes it optional.

            x = g.placeholder("x")
        """
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any | None = None) -> Node:
        """Read an attribute (parameter, buffer, constant) of the owning module.

            w = g.get_attr("layers.0.weight")
        """
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_function(self, the_function: Callable, args: tuple | None = None, kwargs: dict | None = None,
                      type_expr: Any | None = None) -> Node:
        """A call of a free function (`ember.relu`, `operator.add`, an OperatorHandle).

            g.call_function(ember.ops.aten.add.Tensor, (x, y))
        """
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple | None = None, kwargs: dict | None = None,
                    type_expr: Any | None = None) -> Node:
        """A method call on args[0] (`x.view(-1)`).

            g.call_method("view", (x, -1))
        """
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple | None = None, kwargs: dict | None = None,
                    type_expr: Any | None = None) -> Node:
        """A call of the owning module's submodule at path `module_name`.

            g.call_module("layers.0", (x,))
        """
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def output(self, result: Any, type_expr: Any | None = None) -> Node:
        """The graph's return value (one output node per graph).

            g.output((a, b))
        """
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    # -- editing -----------------------------------------------------------------------------
    def erase_node(self, to_erase: Node) -> None:
        """Remove a node nobody uses (RuntimeError if it still has users).

            g.erase_node(dead)
        """
        if to_erase.graph is not self:
            raise RuntimeError(f"Graph.erase_node: node {to_erase.name} belongs to another graph")
        if to_erase._erased:
            raise RuntimeError(f"Graph.erase_node: node {to_erase.name} was already erased")
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase.name} but it still had {len(to_erase.users)} "
                               f"users in the graph: {to_erase.users}!")
        for block in to_erase.blocks:  # nested nodes read outer values: drop them from those users
            for inner in reversed(block.nodes):
                inner.users.clear()
                block.erase_node(inner)
        nxt = to_erase._next
        to_erase._remove_from_list()
        # keep the insert point valid if it was this node
        to_erase._next = nxt
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})  # drop it from its inputs' users

    def inserting_before(self, n: Node | None = None):
        """Context manager: new nodes go just before `n` (start of graph when None).

            with g.inserting_before(add): g.call_function(ember.relu, (x,))
        """
        if n is None:
            return self.inserting_after(self._root)
        if n.graph is not self:
            raise RuntimeError("Graph.inserting_before: node belongs to another graph")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None):
        """Context manager: new nodes go right after `n` (each new one first, like torch; end of graph when None).

            with g.inserting_after(x): g.call_function(ember.relu, (x,))
        """
        if n is None:
            return self.inserting_before(self._root)
        if n.graph is not self:
            raise RuntimeError("Graph.inserting_after: node belongs to another graph")
        # like torch, every new node goes right after `n` (so successive ones end up reversed)
        return _InsertPoint(self, n.append)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Any] = lambda x: x) -> Node:
        """Copy `node` (from any graph) into this one; `arg_transform` maps its input nodes.

            new = g2.node_copy(n, lambda a: env[a])
        """
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = dict(node.meta)
        return result

    def graph_copy(self, g: "Graph", val_map: dict, return_output_node: bool = False):
        """Copy all nodes of `g` except its output into this graph; returns the copied output value.

            env = {}; out = g2.graph_copy(g, env); g2.output(out)
        """
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None) -> bool:
        """Erase nodes with no users and no side effects (blocks included); returns whether anything
        changed. The pass is ``ember.fx.passes.eliminate_dead_code``; `is_impure_node` replaces its test.

            g.eliminate_dead_code()
        """
        from .passes.dead_code_elimination import eliminate_dead_code
        return eliminate_dead_code(self, is_impure_node=is_impure_node).modified

    # -- checking ----------------------------------------------------------------------------
    def lint(self) -> None:
        """Check the graph is well formed; raises RuntimeError naming the first bad node.

            g.lint()
        """
        _lint(self)

    # -- printing ----------------------------------------------------------------------------
    def python_code(self, root_module: str = "self", *, verbose: bool = False) -> _codegen.PythonCode:
        """The graph as `def forward(self, ...)` source plus the globals it needs.

            print(g.python_code("self").src)
        """
        return _codegen.generate_python_code(self, root_module, verbose=verbose)

    def __str__(self) -> str:
        maybe_return = [""]
        lines = []
        for node in self.nodes:
            line = node.format_node(None, maybe_return)
            if line is not None:
                lines.append("    " + line)
        return "graph():\n" + "\n".join(lines)

    def __repr__(self) -> str:
        return self.__str__()

    def print_tabular(self) -> None:
        """Print the nodes as a table (tabulate's "simple" layout, like torch.fx).

            g.print_tabular()
        """
        print(self.tabular())

    def tabular(self) -> str:
        """The text `print_tabular` prints."""
        rows = [[n.op, n.name, str(n.target), str(n.args), str(n.kwargs)] for n in self.nodes]
        return format_simple_table(["opcode", "name", "target", "args", "kwargs"], rows)

    # -- copying -----------------------------------------------------------------------------
    def __deepcopy__(self, memo=None) -> "Graph":
        memo = memo if memo is not None else {}
        g = Graph(tracer_cls=self._tracer_cls)
        out = g.graph_copy(self, {}, return_output_node=True)
        memo[id(self)] = g
        if out is not None:
            rv, old_out = out
            new_out = g.output(rv, type_expr=old_out.type)
            new_out.meta = dict(old_out.meta)
        return g


def format_simple_table(headers: list, rows: list) -> str:
    """tabulate(rows, headers) in its "simple" format: left-aligned columns padded to the widest
    cell, two spaces between columns, a dash rule as wide as each column under the header.

        format_simple_table(["a", "b"], [["x", "yy"]])   # 'a    b\\n---  --\\nx    yy'  (shape)
    """
    table = [list(map(str, headers))] + [[str(c) for c in r] for r in rows]
    # tabulate keeps two spaces of room after each header (its MIN_PADDING)
    widths = [max([len(table[0][i]) + 2] + [len(r[i]) for r in table[1:]]) for i in range(len(headers))]
    fmt = lambda row: "  ".join(c.ljust(w) for c, w in zip(row, widths))  # noqa: E731
    lines = [fmt(table[0]), "  ".join("-" * w for w in widths)] + [fmt(r) for r in table[1:]]
    return "\n".join(lines)


def _nodes_in(a) -> list:
    """The Nodes inside `a`, each once, in order of first appearance."""
    found: dict = {}
    _copy_collecting(a, found)
    return list(found)


def _lint(graph: "Graph") -> None:
    """Graph.lint: every check names the node it failed on (RuntimeError, like torch)."""
    def fail(node, what):
        raise RuntimeError(f"Graph.lint: node {node.name} ({node.op} {_pretty_print_target(node.target)}): {what}")

    seen_names: dict = {}
    defined: set = set()
    outputs = []
    for node in graph.nodes:
        if node.graph is not graph:
            fail(node, "belongs to another graph")
        if node.op not in OPCODES:
            fail(node, f"op must be one of {OPCODES}, got {node.op!r}")
        if node.name in seen_names:
            fail(node, f"duplicate name {node.name!r}")
        seen_names[node.name] = node
        for inp in node.all_input_nodes:
            if not inp.graph.encloses(graph):
                fail(node, f"argument {inp.name} belongs to another graph")
            if inp._erased:
                fail(node, f"argument {inp.name} was erased from the graph")
            if inp not in defined and inp.graph is graph:
                fail(node, f"uses {inp.name} before it is defined")
            if node not in inp.users:
                fail(inp, f"user {node.name} is missing from its users")
        for user in node.users:
            if not graph.encloses(user.graph) or user._erased or node not in user._input_nodes:
                fail(node, f"dangling user {user.name} (it does not read this node or is not in the graph)")
        if node.op in ("call_method", "call_module", "get_attr", "placeholder") and not isinstance(node.target, str):
            fail(node, f"target must be a str, got {type(node.target).__name__}")
        if node.op == "call_function" and not callable(node.target):
            fail(node, f"target must be callable, got {node.target!r}")
        if node.op == "output":
            outputs.append(node)
        for block in node.blocks:
            if block.parent_node is not node:
                fail(node, "a block's parent_node is not the node that holds it")
            _lint(block)
        defined.add(node)
    if len(outputs) > 1:
        fail(outputs[1], f"a graph has one output node, found {len(outputs)}")
    mod = graph.owning_module
    if mod is None:
        return
    for node in graph.nodes:
        if node.op not in ("get_attr", "call_module"):
            continue
        obj = mod
        *path, last = node.target.split(".")
        for i, part in enumerate(path + [last]):
            if not hasattr(obj, part):
                done = ".".join((path + [last])[:i])
                fail(node, f"target {node.target} is not an attribute of the owning module"
                           + (f" (no {part!r} in {done})" if done else ""))
            obj = getattr(obj, part)
        from ember.nn import Module
        if node.op == "call_module" and not isinstance(obj, Module):
            fail(node, f"target {node.target} is not a Module")
