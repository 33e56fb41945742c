"""Purity rules shared by the jit graph passes: which nodes have side effects (DCE keeps them),
which are deterministic with an immutable result (CSE / constant propagation may merge or fold
them), and which values a graph may mutate (aliasing, kept deliberately coarse).

    has_side_effects(node)        # True for x.add_(1), l.append(x), print, prim::RaiseException
    is_cse_safe(node)             # True for ember.tanh(x), operator.add(a, b); False for ember.rand(3)
    MutationInfo(graph).may_be_mutated(value)

Rules (the spec's "Purity" section):
- PrimOps: the table's ``pure`` / ``cse`` flags; prim::If / prim::Loop are as pure as their blocks;
  an unused ``prim::profile`` may be deleted (it observes a value nobody reads).
- OperatorHandles: the schema's mutability (``Node.is_impure``) plus the random set by name.
- ember functions: impure if the name ends with "_" (in-place, not dunder), takes ``out=``, or is
  random (rand, randn, dropout, bernoulli, ...).
- call_method: impure if the name ends with "_" (not dunder), is random, or is a list/dict
  mutator (append, pop, ...) on a receiver that is not known to be a Tensor.
Aliasing simplification: we do not track which tensor aliases which. If a graph mutates any
tensor in place, every tensor-typed value counts as possibly mutated (likewise lists/dicts); an
opaque call (prim::CallFunction / CallMethod) may mutate anything it is given.
"""
from __future__ import annotations

import builtins
import operator

from ember.jit.ir import prim
from ember.jit.ir.types import (AnyType, ClassType, DictType, ListType, ModuleType, OptionalType,
                                TensorType, TupleType)

# randomness: never folded, never merged, never deleted (they advance the generator, like eager)
RANDOM_NAMES = frozenset({
    "rand", "randn", "rand_like", "randn_like", "randint", "randint_like", "randperm", "dropout",
    "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout", "native_dropout",
    "bernoulli", "multinomial", "normal", "poisson", "rrelu", "uniform", "exponential", "geometric",
    "cauchy", "log_normal", "random", "gumbel_softmax", "manual_seed", "seed", "initial_seed",
    "fractional_max_pool2d", "fractional_max_pool3d"})
# deterministic in effect but not in value: may be deleted when unused, never merged or folded
# (also global state that may differ between compile and run time: grad mode, default dtype)
NONDETERMINISTIC_NAMES = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "is_grad_enabled",
                                    "is_inference_mode_enabled", "get_default_dtype", "is_autocast_enabled",
                                    "get_rng_state", "is_available", "device_count", "current_device"})
CONTAINER_MUTATORS = frozenset({"append", "pop", "insert", "extend", "clear", "remove", "sort", "reverse",
                                "update", "setdefault", "popitem", "__setitem__", "__delitem__"})
MUTATING_FUNCTIONS = frozenset({
    operator.setitem, operator.delitem, operator.iadd, operator.isub, operator.imul, operator.itruediv,
    operator.ifloordiv, operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor,
    operator.ilshift, operator.irshift, operator.imatmul, builtins.setattr, builtins.delattr})
SIDE_EFFECT_FUNCTIONS = frozenset({builtins.print, builtins.input, builtins.exec, builtins.eval})
# names (functions or methods) that act on global or autograd state
SIDE_EFFECT_NAMES = frozenset({"backward", "register_hook", "retain_grad", "set_grad_enabled", "set_default_dtype",
                               "set_printoptions", "warn", "manual_seed", "seed", "set_rng_state"})
# dunder methods that write to their receiver, whatever it is (Tensor or list)
MUTATING_DUNDERS = frozenset({"__setitem__", "__delitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
                              "__ifloordiv__", "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__",
                              "__ilshift__", "__irshift__", "__imatmul__"})
# fresh mutable containers: two calls give two lists, so never merged or folded
CONTAINER_CREATORS = frozenset({builtins.list, builtins.dict, builtins.sorted, prim.ListConstruct,
                                prim.DictConstruct, prim.ListUnpack})
# prim ops whose effects are handled structurally
_OPAQUE_CALLS = (prim.CallFunction, prim.CallMethod)


def is_constant(node) -> bool:
    """True for a ``prim::Constant`` node."""
    from ember.fx.node import Node
    return isinstance(node, Node) and node.op == "call_function" and node.target is prim.Constant


def target_name(node) -> str:
    """The bare op name of a call node: "tanh", "add_", "append", "rand" (for OperatorHandles the
    schema name without namespace or overload)."""
    t = node.target
    if isinstance(t, str):
        return t
    name = getattr(t, "name", None)
    if isinstance(name, str) and "::" in name:      # OperatorHandle / PrimOp
        return name.split("::", 1)[1].split(".", 1)[0]
    return getattr(t, "__name__", "") or ""


def _is_inplace_name(name: str) -> bool:
    return name.endswith("_") and not name.endswith("__")


def _is_operator_handle(target) -> bool:
    from ember._core.dispatch import OperatorHandle
    return isinstance(target, OperatorHandle)


def is_random(node) -> bool:
    """True for ops whose value depends on the random generator."""
    if node.op not in ("call_function", "call_method"):
        return False
    name = target_name(node)
    return name in RANDOM_NAMES or name.rstrip("_") in RANDOM_NAMES


def is_deterministic(node) -> bool:
    """Same inputs give the same value (not random, not ``empty``, not an opaque call)."""
    if node.op not in ("call_function", "call_method"):
        return False
    if node.target in _OPAQUE_CALLS or node.target in (prim.profile, prim.Uninitialized):
        return False
    return not is_random(node) and target_name(node) not in NONDETERMINISTIC_NAMES


def _receiver_is_tensor(node) -> bool:
    recv = node.args[0] if node.args else None
    return isinstance(getattr(recv, "type", None), TensorType)


def mutated_inputs(node) -> list:
    """The input nodes `node` writes to (in place). Opaque calls count as writing all inputs."""
    from ember.fx.node import Node
    if node.op == "call_function":
        t = node.target
        if t in _OPAQUE_CALLS or t is prim.SetAttr:
            return list(node.all_input_nodes)
        if t in MUTATING_FUNCTIONS or (not prim.is_prim(t) and _is_inplace_name(target_name(node))):
            return [node.args[0]] if node.args and isinstance(node.args[0], Node) else []
        if _is_operator_handle(t):
            written = []
            for i, a in enumerate(t.schema.arguments):
                if a.is_write and i < len(node.args) and isinstance(node.args[i], Node):
                    written.append(node.args[i])
            return written
        out = node.kwargs.get("out")
        if isinstance(out, Node):
            return [out]
        return []
    if node.op == "call_method":
        name = node.target
        if _is_inplace_name(name) or name in MUTATING_DUNDERS or \
                (name in CONTAINER_MUTATORS and not _receiver_is_tensor(node)):
            return [node.args[0]] if node.args and isinstance(node.args[0], Node) else []
    return []


def has_side_effects(node) -> bool:
    """True if deleting `node` (even when its value is unused) could change the program."""
    if node.op in ("placeholder", "output", "call_module"):
        return True
    if node.op == "get_attr":
        return False
    t = node.target
    if node.op == "call_function":
        if t in (prim.If, prim.Loop):
            return any(has_side_effects(n) for b in node.blocks for n in b.nodes if n.op != "placeholder"
                       and n.op != "output")
        if t is prim.profile:
            return False   # an observation: only worth keeping while its value is used
        if prim.is_prim(t):
            return not t.pure
        if t in SIDE_EFFECT_FUNCTIONS or t in MUTATING_FUNCTIONS:
            return True
        from ember.fx.node import _side_effectful_functions
        try:
            if t in _side_effectful_functions:
                return True
        except TypeError:
            pass
        if _is_operator_handle(t) and node.is_impure():
            return True
        if "out" in node.kwargs or target_name(node) in SIDE_EFFECT_NAMES:
            return True
        return _is_inplace_name(target_name(node)) or is_random(node)
    if node.op == "call_method":
        if _is_inplace_name(t) or t in MUTATING_DUNDERS or t in SIDE_EFFECT_NAMES or is_random(node):
            return True
        return t in CONTAINER_MUTATORS and not _receiver_is_tensor(node)
    return True


def is_pure(node) -> bool:
    """Deletable when unused (the negation of has_side_effects)."""
    return not has_side_effects(node)


def is_mutable_type(t) -> bool:
    """Values of this type can be changed in place (or we cannot tell: unknown / Any)."""
    if t is None or isinstance(t, (TensorType, ListType, DictType, AnyType, ModuleType, ClassType)):
        return True
    if isinstance(t, OptionalType):
        return is_mutable_type(t.elem)
    if isinstance(t, TupleType):
        return any(is_mutable_type(e) for e in t.elems)
    return False


def creates_mutable_container(node) -> bool:
    """The node returns a fresh list/dict (merging or folding two of them would alias them)."""
    if node.op == "call_function" and node.target in CONTAINER_CREATORS:
        return True
    return isinstance(node.type, (ListType, DictType))


def is_cse_safe(node) -> bool:
    """Two such nodes with equal inputs give equal, immutable values (ignoring tensor aliasing,
    which MutationInfo handles)."""
    if node.op not in ("call_function", "call_method") or node.blocks:
        return False
    if has_side_effects(node) or not is_deterministic(node):
        return False
    if prim.is_prim(node.target) and not node.target.cse:
        return False
    return not creates_mutable_container(node)


_SAFE_ATTRS = ("dtype", "shape", "device", "ndim", "requires_grad", "is_cuda")
_ESCAPES = (prim.TupleConstruct, prim.ListConstruct, prim.DictConstruct, prim.If, prim.Loop, prim.SetAttr,
            prim.CallFunction, prim.CallMethod, builtins.list, operator.is_, operator.is_not, builtins.id)


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
    """What a whole graph (and its blocks) may mutate, coarsely.

        info = MutationInfo(graph)
        info.may_be_mutated(x)   # True if x (or anything of x's kind) is written somewhere
    """

    def __init__(self, graph):
        from ember.jit.ir import root_graph, walk
        self.written: set = set()
        self.tensors = False      # some tensor (or unknown-typed value) is written in place
        self.containers = False   # some list/dict is mutated
        self.everything = False   # an opaque call may write anything mutable it can reach
        for node in walk(root_graph(graph)):
            if node.op in ("call_function",) and node.target in _OPAQUE_CALLS + (prim.SetAttr,):
                self.everything = True
            for w in mutated_inputs(node):
                self.written.add(w)
                t = w.type
                if t is None or isinstance(t, (TensorType, AnyType, OptionalType)):
                    self.tensors = True
                if t is None or not isinstance(t, TensorType):
                    self.containers = True

    @property
    def any(self) -> bool:
        """True if the graph mutates anything at all."""
        return bool(self.written) or self.everything

    def may_be_mutated(self, value) -> bool:
        """`value` might be changed in place somewhere in the graph."""
        from ember.fx.node import Node
        if not isinstance(value, Node):
            return False
        if value in self.written:
            return True
        t = value.type
        if not is_mutable_type(t):
            return False
        if self.everything:
            return True
        if t is None or isinstance(t, (AnyType, OptionalType, TupleType)):
            return self.tensors or self.containers
        if isinstance(t, TensorType):
            return self.tensors
        return self.containers

    def touches_mutated(self, node) -> bool:
        """`node` reads or produces a value that may be mutated."""
        return self.may_be_mutated(node) or any(self.may_be_mutated(n) for n in node.all_input_nodes)
