"""Purity of graph nodes: the one oracle every pass asks (DCE, CSE, constant folding, the jit's rewrites).

    has_side_effects(node)    # True for x.add_(1), l.append(x), print, ember.rand(3): DCE keeps it
    is_cse_safe(node)         # True for ember.tanh(x), operator.add(a, b): may be merged / folded
    mutated_inputs(node)      # [x] for x.add_(1), [out] for ember.add(a, b, out=out)
    MutationInfo(graph).may_be_mutated(value)

What an op does comes from the op-properties table (``ember.ops.properties``: operators, bindings,
prim ops, ember's Python functions, ``operator``/``builtins``); this module adds what only the
node knows: ``out=`` and ``inplace=True`` arguments, whether a method's receiver is a tensor or a
list (node.type's ``kind`` in script graphs, ``meta["val"]`` in traced ones; unknown: either),
call_module (never merged; kept when the module writes its input or buffers or says it is impure),
and control flow (an If/Loop is as pure as its blocks).

Aliasing is tracked coarsely: values that may share memory form one class (a view and its base,
an in-place result and its input, a container and its elements, every graph input and attribute:
the caller may pass one tensor twice). A write to any value marks its whole class written.
"""
from __future__ import annotations

import builtins
import operator

from ember.ops import properties as _props
from ember.ops.properties import OpProperties

from .. import prim
from ..blocks import block_params, block_returns, is_constant, root_graph, walk  # noqa: F401
from ..node import Node, map_arg

# what a value is, from node.type's kind (script graphs) or meta["val"] (traced graphs)
_IMMUTABLE_KINDS = frozenset({"int", "float", "bool", "number", "str", "none", "device", "dtype", "function"})


def value_kind(node) -> str | None:
    """"tensor", "int", "list", "tuple", ... for a node's value; None when unknown."""
    t = getattr(node, "type", None)
    kind = getattr(t, "kind", None)
    if kind is not None and kind != "any":
        return kind
    if "val" not in getattr(node, "meta", {}):
        return None
    val = node.meta["val"]
    if hasattr(val, "shape") and hasattr(val, "dtype"):
        return "tensor"
    for cls, name in ((bool, "bool"), (int, "int"), (float, "float"), (str, "str"), (tuple, "tuple"),
                      (list, "list"), (dict, "dict"), (type(None), "none")):
        if isinstance(val, cls):
            return name
    return None


def is_mutable_type(t) -> bool:
    """Values of type `t` (a ScriptType, or None: unknown) can be changed in place."""
    kind = getattr(t, "kind", "any") if t is not None else "any"
    if kind == "tuple":
        return any(is_mutable_type(e) for e in t.elems)
    if kind == "optional":
        return is_mutable_type(t.elem)
    return kind not in _IMMUTABLE_KINDS


def is_mutable_value(node) -> bool:
    """`node`'s value can be changed in place (a tensor, list, object, or unknown)."""
    if getattr(node, "type", None) is not None:
        return is_mutable_type(node.type)
    kind = value_kind(node)
    if kind == "tuple":
        return any(hasattr(v, "shape") or isinstance(v, (list, dict)) for v in node.meta["val"])
    return kind not in _IMMUTABLE_KINDS


def _receiver(node) -> str | None:
    recv = node.args[0] if node.args else None
    kind = value_kind(recv) if isinstance(recv, Node) else None
    if kind is None or kind == "optional":
        return None
    return "tensor" if kind == "tensor" else "other"


def properties(node) -> OpProperties:
    """The op-properties row of what `node` runs (call_function / call_method)."""
    if node.op == "call_function":
        return _props.of(node.target)
    if node.op == "call_method":
        return _props.of_method(node.target, _receiver(node))
    return _props.PURE


def is_random(node) -> bool:
    """Running `node` draws random numbers (two runs differ; the generator's state advances)."""
    return node.op in ("call_function", "call_method") and properties(node).is_random


def _argument(node, which):
    """The argument `which` (a position, or a name from the op's schema) of a call node."""
    if isinstance(which, int):
        return node.args[which] if which < len(node.args) else None
    if which in node.kwargs:
        return node.kwargs[which]
    ops = _ops(node)
    names = [a.name for a in ops[0].schema.arguments] if len(ops) == 1 else ["self"]
    position = names.index(which) if which in names else 0 if which in ("self", "input") else None
    return node.args[position] if position is not None and position < len(node.args) else None


def _ops(node) -> tuple:
    from ember._core.dispatch import OperatorHandle
    from ember.ops import registry
    if node.op == "call_method":
        fn = registry.METHODS.get(node.target)
        return registry.ops_of(fn) if fn is not None else ()
    if isinstance(node.target, OperatorHandle):
        return (node.target,)
    return registry.ops_of(node.target)


def _submodule(node):
    module = getattr(node.graph, "owning_module", None)
    for atom in node.target.split("."):
        module = getattr(module, atom, None)
    return module


def _module_effects(node) -> tuple:
    """(writes its inputs, writes its own state, impure) for a call_module node. ember.nn modules
    write their input only with ``inplace=True`` and their buffers only in training (BatchNorm's
    running statistics); random ones (Dropout) say so with torch.fx's ``_is_impure``. A module
    the graph does not hold is pure, as in torch.fx."""
    module = _submodule(node)
    if module is None:
        return False, False, False
    writes_input = bool(getattr(module, "inplace", False))
    writes_state = bool(module.training and any(True for _ in module.buffers()))
    return writes_input, writes_state, writes_input or writes_state or bool(getattr(module, "_is_impure", False))


def mutated_inputs(node) -> list:
    """The input nodes `node` writes in place (all of them for opaque calls)."""
    if node.op == "call_module":
        return node.all_input_nodes if _module_effects(node)[0] else []
    if node.op not in ("call_function", "call_method"):
        return []
    written: dict = {}
    for which in properties(node).mutates:
        if which == "*":
            return node.all_input_nodes
        map_arg(_argument(node, which), lambda n: written.setdefault(n))
    map_arg(node.kwargs.get("out"), lambda n: written.setdefault(n))
    if node.kwargs.get("inplace") is True and node.args:
        map_arg(node.args[0], lambda n: written.setdefault(n))
    return list(written)


def has_side_effects(node) -> bool:
    """True if deleting `node`, even with its value unused, could change the program."""
    if node.op in ("placeholder", "output"):
        return True
    if node.op == "call_module":
        return _module_effects(node)[2]
    if node.op == "get_attr":
        return False
    if node.blocks:
        return any(has_side_effects(n) for b in node.blocks for n in b.nodes if n.op not in ("placeholder", "output"))
    if not properties(node).pure:
        return True
    return "out" in node.kwargs or node.kwargs.get("inplace") is True


def is_pure(node) -> bool:
    """Deletable when unused (the negation of has_side_effects)."""
    return not has_side_effects(node)


def is_cse_safe(node) -> bool:
    """Two such nodes with equal inputs give equal values that may be shared: pure, deterministic,
    and not a fresh list/dict (aliasing through in-place writes is MutationInfo's business)."""
    if node.op not in ("call_function", "call_method") or node.blocks:
        return False
    if not properties(node).cse_safe or has_side_effects(node):
        return False
    return value_kind(node) not in ("list", "dict")


def is_grad_mode_switch(node) -> bool:
    """`node` turns autograd recording on or off (``with no_grad():``): nothing computed before it
    may stand in for a computation after it."""
    return node.op == "call_function" and properties(node).grad_mode_switch


_SAFE_ATTRS = ("dtype", "shape", "device", "ndim", "requires_grad", "is_cuda")
_ESCAPES = (prim.TupleConstruct, prim.ListConstruct, prim.DictConstruct, prim.If, prim.Loop, prim.SetAttr,
            prim.CallFunction, prim.CallMethod, builtins.list, builtins.id, operator.is_, operator.is_not)


def stays_private(node) -> bool:
    """The value `node` makes is only read by computations of this graph: never returned (from
    the graph or a block), stored in a container, passed to a call, compared by identity or asked
    for autograd metadata. Only such a value may become an alias of another (a rewrite to an
    input it equals, or CSE): eager makes a fresh object, and a caller mutating or inspecting one
    (``y.add_``, ``y is x``, ``y.grad_fn``) would otherwise see the other change."""
    for user in node.users:
        if user.op != "call_function" and user.op != "call_method":
            return False
        if has_side_effects(user) or node in mutated_inputs(user) or user.target in _ESCAPES:
            return False
        if user.target is builtins.getattr and (len(user.args) != 2 or user.args[1] not in _SAFE_ATTRS):
            return False
    return True


class MutationInfo:
    """What a whole graph (and its blocks) may write, by alias class (see the module docstring).

        info = MutationInfo(graph)
        info.may_be_mutated(x)   # x, or something that may share memory with it, is written somewhere
    """

    _EXTERNAL = object()   # the class of every graph input and module attribute

    def __init__(self, graph):
        self._parent: dict = {}
        self.written: set = set()
        self.everything = False    # an opaque call may write anything mutable it can reach
        root = root_graph(graph)
        for node in walk(root):
            self._link(node, root)
            for w in mutated_inputs(node):
                self.written.add(w)
            if node.op in ("call_function", "call_method") and "*" in properties(node).mutates:
                self.everything = True
            elif node.op == "call_module" and _module_effects(node)[1]:
                self.written.add(self._EXTERNAL)     # the module's buffers: attributes of the root
        self._written_classes = {self._find(w) for w in self.written}

    def _find(self, x):
        parent = self._parent
        root = x
        while parent.get(root, root) is not root:
            root = parent[root]
        while x is not root:                 # path compression
            parent[x], x = root, parent[x]
        return root

    def _union(self, a, b) -> None:
        ra, rb = self._find(a), self._find(b)
        if ra is not rb:
            self._parent[ra] = rb

    def _link(self, node, root) -> None:
        if node.op in ("placeholder", "get_attr") and node.graph is root:
            self._union(node, self._EXTERNAL)
        elif node.blocks:      # block params, returns and the node's outputs carry its inputs
            for inp in node.all_input_nodes:
                self._union(node, inp)
            for block in node.blocks:
                for value in block_params(block) + [r for r in block_returns(block) if isinstance(r, Node)]:
                    self._union(node, value)
        elif node.op == "call_module" or (node.op in ("call_function", "call_method")
                                          and properties(node).aliases_args):
            for inp in node.all_input_nodes:
                self._union(node, inp)
        elif node.op in ("call_function", "call_method"):
            map_arg(node.kwargs.get("out"), lambda n: self._union(node, n))

    @property
    def any(self) -> bool:
        """The graph mutates anything at all."""
        return bool(self.written) or self.everything

    @property
    def tensors(self) -> bool:
        """Some tensor (or a value that may be one) is written in place."""
        return self.everything or any(w is self._EXTERNAL or value_kind(w) in (None, "tensor", "optional")
                                      for w in self.written)

    def may_be_mutated(self, value) -> bool:
        """`value` (or a value sharing its memory) might be changed in place somewhere in the graph."""
        if not isinstance(value, Node) or not is_mutable_value(value):
            return False
        return self.everything or self._find(value) in self._written_classes

    def touches_mutated(self, node) -> bool:
        """`node` reads or produces a value that may be mutated."""
        return self.may_be_mutated(node) or any(self.may_be_mutated(n) for n in node.all_input_nodes)
