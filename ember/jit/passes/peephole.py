"""PeepholeOptimize: local rewrites that the node types prove do not change the value.

- ``x + 0``, ``x - 0``, ``x * 1``, ``x / 1`` (and ``0 + x``, ``1 * x``) -> ``x`` when the result
  provably has x's type: ints with int 0/1; floats for ``- 0``, ``* 1``, ``/ 1`` (not ``+ 0``:
  ``-0.0 + 0`` is ``0.0``); tensors only when the profiled dtype is known (a float dtype with an
  int/float scalar; an integer dtype with an int scalar and not ``/``; never bool, where ``+ 0``
  promotes). Skipped for tensors when the graph mutates tensors in place (x and the result would
  then alias) or when the result leaves the graph (purity.stays_private: eager returns a fresh
  tensor the caller may mutate); likewise ``-(-x)`` and ``view``/``reshape`` to x's own sizes.
- ``x.to(dtype)``, ``x.type_as(y)``, ``x.float()`` / ``.double()`` / ``.long()`` ..., when the
  specialised dtype already matches; ``x.view(sizes)`` / ``x.reshape(sizes)`` to x's own known
  sizes; ``x.contiguous().contiguous()`` -> one ``contiguous``.
- ``len(l)`` of a ``prim::ListConstruct`` list that nothing mutates or lets escape, or of a tuple.
- ``x.dim()``, ``x.size(i)``, ``x.ndim``, ``x.dtype`` on specialised tensor types -> constants;
  ``x.size()`` / ``x.shape`` too where only indexed or measured (``x.shape[0]``, ``len(x.shape)``):
  a constant tuple is not an ember.Size.
- ``-(-x)`` -> ``x``; ``not not b`` -> ``b`` for bools; ``bool(c)`` of a constant -> constant;
  ``bool(b)`` / ``int(i)`` / ``float(f)`` of a value of that type -> the value.

    # before (x : Float(2, 3)): %y = aten::mul(%x, %1); %n = aten::dim(%y)
    # after:                   %n = prim::Constant[value=2]()
    graph = peephole_optimize(graph)
"""
from __future__ import annotations

import builtins
import operator

from ember.fx.blocks import is_constant
from ember.fx.graph import Graph
from ember.fx.node import Node
from ember.fx.passes.jit_log import log_update
from ember.fx.passes.pass_manager import PassResult, finish, until_unchanged
from ember.fx.passes.purity import MutationInfo, has_side_effects, mutated_inputs, stays_private
from ember.jit.ir import prim, walk
from ember.jit.ir.types import BoolType, FloatType, IntType, TensorType, TupleType

from ._util import constant_value, make_constant_before, replace_value

MAX_ROUNDS = 20
_ADD, _SUB, _MUL, _DIV, _NEG = "add", "sub", "mul", "div", "neg"
# the arithmetic families, by ember function / Tensor method name, and by dunder (methods, operator)
_KINDS = {"add": _ADD, "sub": _SUB, "mul": _MUL, "div": _DIV, "true_divide": _DIV, "neg": _NEG, "negative": _NEG}
_DUNDER_KINDS = {"__add__": _ADD, "__sub__": _SUB, "__mul__": _MUL, "__truediv__": _DIV, "__neg__": _NEG}
_DTYPE_METHODS = {"float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16",
                  "long": "int64", "int": "int32", "short": "int16", "char": "int8", "byte": "uint8",
                  "bool": "bool"}


def peephole_optimize(graph: Graph) -> PassResult:
    """Apply the peephole rewrites to `graph` and its blocks until none applies, in place.

        peephole_optimize(g)
    """
    def one_round() -> bool:
        mutations = MutationInfo(graph)
        changed = False
        for node in list(walk(graph)):
            if node._erased or node.op not in ("call_function", "call_method"):
                continue
            new = _rewrite(node, mutations)
            if new is not _NO:
                log_update("peephole", f"rewrote {node.name}")
                if not isinstance(new, Node) or new is not node:
                    if not isinstance(new, Node):
                        new = make_constant_before(node, new[0], type_=node.type, meta_from=node)
                    _keep_name(node, new)
                    replace_value(node, new)
                    changed = True
        return changed
    return finish("peephole", graph, until_unchanged(one_round, MAX_ROUNDS))


_NO = object()


def _keep_name(old: Node, new: Node) -> None:
    if "jit_name" in old.meta and "jit_name" not in new.meta and is_constant(new):
        new.meta["jit_name"] = old.meta["jit_name"]


def _kind(node: Node) -> str | None:
    """The arithmetic family of a call: operator.add / ember.add / x.add -> "add"."""
    import ember
    t = node.target
    if node.op == "call_method":
        return _KINDS.get(t) or _DUNDER_KINDS.get(t)
    name = getattr(t, "__name__", None)
    if not isinstance(name, str):
        return None
    if getattr(operator, name, None) is t:
        return _DUNDER_KINDS.get(f"__{name}__")
    return _KINDS.get(name) if getattr(ember, name, None) is t else None


def _rewrite(node: Node, mutations: MutationInfo):
    """The value `node` can be replaced by: a Node, a 1-tuple (value,) for a new constant, or _NO."""
    kind = _kind(node)
    if kind in (_ADD, _SUB, _MUL, _DIV):
        return _identity_arith(node, kind, mutations)
    if kind == _NEG:
        inner = node.args[0] if len(node.args) == 1 and not node.kwargs else None
        if isinstance(inner, Node) and _kind(inner) == _NEG and len(inner.args) == 1 and not inner.kwargs:
            x = inner.args[0]
            if isinstance(x, Node) and isinstance(x.type, (IntType, FloatType)):
                return x
            if isinstance(x, Node) and isinstance(x.type, TensorType) and not mutations.tensors \
                    and stays_private(node):
                return x
        return _NO
    t = node.target
    if node.op == "call_function":
        if t is operator.not_:
            inner = node.args[0]
            if isinstance(inner, Node) and inner.target is operator.not_ and isinstance(inner.args[0], Node) \
                    and isinstance(inner.args[0].type, BoolType):
                return inner.args[0]
            return _NO
        if t in (builtins.bool, builtins.int, builtins.float) and len(node.args) == 1 and not node.kwargs:
            return _scalar_cast(node)
        if t is operator.getitem and len(node.args) == 2 and not node.meta.get("output_of"):
            ok_t, seq = constant_value(node.args[0])
            ok_i, idx = constant_value(node.args[1])
            if ok_t and ok_i and isinstance(seq, tuple) and type(idx) is int and -len(seq) <= idx < len(seq):
                return (seq[idx],)   # e.g. x.shape[0] once x.shape is a constant
            return _NO
        if t is builtins.len and len(node.args) == 1:
            return _len(node.args[0])
        if t is builtins.getattr and len(node.args) == 2 and isinstance(node.args[1], str):
            return _tensor_attr(node.args[0], node.args[1], node)
        return _NO
    return _tensor_method(node)


def _number(arg):
    ok, v = constant_value(arg)
    if ok and isinstance(v, (int, float)) and not isinstance(v, bool):
        return v
    return None


def _identity_arith(node: Node, kind: str, mutations: MutationInfo):
    args, kwargs = node.args, dict(node.kwargs)
    if len(args) != 2:
        return _NO
    if "alpha" in kwargs:
        alpha = _number(kwargs.pop("alpha"))
        if alpha != 1:
            return _NO
    if kwargs:
        return _NO
    neutral = 0 if kind in (_ADD, _SUB) else 1
    candidates = [(args[0], args[1])]
    if kind in (_ADD, _MUL):
        candidates.append((args[1], args[0]))
    for x, c in candidates:
        scalar = _number(c)
        if not isinstance(x, Node) or scalar is None or scalar != neutral:
            continue
        if node.op == "call_method" and x is not args[0]:
            continue
        if _result_is_x(x, scalar, kind, mutations) and (
                not isinstance(x.type, TensorType) or stays_private(node)):
            return x
    return _NO


def _result_is_x(x: Node, scalar, kind: str, mutations: MutationInfo) -> bool:
    t = x.type
    if isinstance(t, IntType):
        return isinstance(scalar, int) and kind != _DIV
    if isinstance(t, FloatType):
        return kind != _ADD    # -0.0 + 0 == 0.0 (sign lost)
    if isinstance(t, TensorType) and t.dtype is not None and not mutations.tensors and not mutations.everything:
        if t.dtype.is_floating_point:
            return True
        if getattr(t.dtype, "is_complex", False) or str(t.dtype).endswith("bool"):
            return False
        return isinstance(scalar, int) and kind != _DIV
    return False


def _scalar_cast(node: Node):
    arg = node.args[0]
    ok, v = constant_value(arg)
    want = {builtins.bool: BoolType, builtins.int: IntType, builtins.float: FloatType}[node.target]
    if ok and isinstance(v, (bool, int, float)):
        return (node.target(v),)
    if isinstance(arg, Node) and type(arg.type) is want:
        return arg
    return _NO


def _len(value):
    if not isinstance(value, Node):
        return _NO
    if value.target is prim.TupleConstruct and value.op == "call_function":
        return (len(value.args),)
    if isinstance(value.type, TupleType):
        return (len(value.type.elems),)
    if value.op == "call_function" and value.target is prim.ListConstruct and _list_is_frozen(value):
        return (len(value.args),)
    return _NO


def _list_is_frozen(lst: Node) -> bool:
    """Nothing mutates the list or lets it escape under another name."""
    for user in lst.users:
        if user.op != "call_function" and user.op != "call_method":
            return False   # returned from the graph or a block: the caller may change it
        if has_side_effects(user) or lst in mutated_inputs(user):
            return False
        if user.target in (prim.TupleConstruct, prim.ListConstruct, prim.DictConstruct, prim.If, prim.Loop,
                           prim.SetAttr, prim.CallFunction, prim.CallMethod, builtins.list):
            return False
    return True


def _sizes_only_indexed(node: Node) -> bool:
    """A constant tuple may stand for ``x.size()`` (an ember.Size) only where the difference cannot
    show: every user indexes it or takes its length (fx stores constant tuples as plain tuples)."""
    return bool(node.users) and all(u.op == "call_function" and u.target in (operator.getitem, builtins.len)
                                    and u.args[0] is node for u in node.users)


def _tensor_attr(x, attr: str, x_node: Node):
    if not isinstance(x, Node) or not isinstance(x.type, TensorType):
        return _NO
    t = x.type
    if attr == "dtype" and t.dtype is not None:
        return (t.dtype,)
    if t.sizes is None:
        return _NO
    if attr in ("ndim",):
        return (len(t.sizes),)
    if attr == "shape" and _sizes_only_indexed(x_node):
        return (tuple(t.sizes),)
    return _NO


def _tensor_method(node: Node):
    name, args = node.target, node.args
    x = args[0] if args else None
    if not isinstance(x, Node) or not isinstance(x.type, TensorType):
        return _NO
    t = x.type
    rest, kwargs = args[1:], node.kwargs
    if name in ("dim", "ndimension") and not rest and not kwargs and t.sizes is not None:
        return (len(t.sizes),)
    if name == "size" and t.sizes is not None:
        if not rest and not kwargs:
            return (tuple(t.sizes),) if _sizes_only_indexed(node) else _NO
        dim = _number(rest[0]) if len(rest) == 1 and not kwargs else None
        if isinstance(dim, int) and -len(t.sizes) <= dim < len(t.sizes):
            return (t.sizes[dim],)
        return _NO
    if name in _DTYPE_METHODS and not rest and not kwargs and t.dtype is not None:
        return x if str(t.dtype).split(".")[-1] == _DTYPE_METHODS[name] else _NO
    if name == "to" and t.dtype is not None:
        ok, target = constant_value(rest[0]) if len(rest) == 1 and not kwargs else \
            constant_value(kwargs.get("dtype")) if not rest and set(kwargs) == {"dtype"} else (False, None)
        return x if ok and target is t.dtype else _NO
    if name == "type_as" and len(rest) == 1 and not kwargs and t.dtype is not None:
        other = rest[0]
        if isinstance(other, Node) and isinstance(other.type, TensorType) and other.type.dtype is t.dtype:
            return x
        return _NO
    if name in ("view", "reshape") and t.sizes is not None and not kwargs:
        sizes = rest[0] if len(rest) == 1 and isinstance(rest[0], (tuple, list)) else rest
        values = [_number(s) for s in sizes]
        if all(isinstance(v, int) for v in values) and tuple(values) == tuple(t.sizes) \
                and stays_private(node):
            return x
        return _NO
    if name == "contiguous" and not rest and not kwargs and x.op == "call_method" and x.target == "contiguous":
        return x
    return _NO
