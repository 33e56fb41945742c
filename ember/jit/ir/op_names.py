"""The TorchScript name of a node's target (``aten::add`` for ``a + b``, ``prim::If``,
``aten::relu`` for ``F.relu``): what the printer writes and ``graph.findAllNodes(kind)`` matches.

    op_name(graph.call_function(ember.tanh, (x,)))   # 'aten::tanh'
"""
from __future__ import annotations

import builtins
import math

from ember.fx.node import Node, _is_operator_handle

from . import prim

# operator.* -> TorchScript names (aten::add prints for `a + b`)
_OPERATOR_NAMES = {
    "add": "aten::add", "sub": "aten::sub", "mul": "aten::mul", "truediv": "aten::div",
    "floordiv": "aten::floordiv", "mod": "aten::remainder", "pow": "aten::pow", "neg": "aten::neg",
    "pos": "aten::pos", "not_": "aten::__not__", "lt": "aten::lt", "le": "aten::le", "gt": "aten::gt",
    "ge": "aten::ge", "eq": "aten::eq", "ne": "aten::ne", "and_": "aten::__and__", "or_": "aten::__or__",
    "xor": "aten::__xor__", "invert": "aten::bitwise_not", "getitem": "aten::__getitem__",
    "setitem": "aten::_set_item", "contains": "aten::__contains__", "is_": "aten::__is__",
    "is_not": "aten::__isnot__", "matmul": "aten::matmul", "lshift": "aten::__lshift__",
    "rshift": "aten::__rshift__", "abs": "aten::abs", "iadd": "aten::add_", "isub": "aten::sub_",
    "imul": "aten::mul_", "itruediv": "aten::div_",
}
_BUILTIN_NAMES = {
    "len": "aten::len", "int": "aten::Int", "float": "aten::Float", "bool": "aten::Bool", "str": "aten::str",
    "min": "prim::min", "max": "prim::max", "abs": "prim::abs", "print": "prim::Print",
    "isinstance": "prim::isinstance", "round": "aten::round", "divmod": "aten::divmod", "sum": "aten::sum",
    "any": "aten::any", "all": "aten::all", "list": "aten::list", "hash": "aten::hash", "ord": "aten::ord",
    "chr": "aten::chr", "slice": "aten::slice",
}
# getattr(x, "name") on a tensor -> how TorchScript spells the attribute read
_ATTR_NAMES = {"dtype": "prim::dtype", "device": "prim::device", "ndim": "aten::dim", "shape": "aten::size",
               "is_cuda": "prim::is_cuda", "requires_grad": "prim::requires_grad", "grad": "prim::grad",
               "data": "prim::data", "T": "aten::numpy_T", "layout": "prim::layout"}


def op_name(node: Node) -> str:
    """The TorchScript name of a node's target (see the module docstring)."""
    target = node.target
    if node.op == "call_method":
        return f"aten::{target}"
    if node.op == "get_attr":
        return "prim::GetAttr"
    if prim.is_prim(target):
        return target.name
    if _is_operator_handle(target):
        return target.name.split(".", 1)[0]
    module = getattr(target, "__module__", None)
    name = getattr(target, "__name__", None)
    if module in ("_operator", "operator") and name in _OPERATOR_NAMES:
        return _OPERATOR_NAMES[name]
    if target is builtins.getattr and len(node.args) >= 2 and isinstance(node.args[1], str):
        return _ATTR_NAMES.get(node.args[1], f"prim::{node.args[1]}")
    if module == "builtins" and name in _BUILTIN_NAMES:
        return _BUILTIN_NAMES[name]
    if module == "math" or getattr(math, name or "", None) is target:
        return f"aten::{name}"
    try:
        from ember.fx.node import _get_qualified_name
        qual = _get_qualified_name(target)
    except Exception:  # noqa: BLE001  (an unnamed callable still prints)
        qual = repr(target)
    if qual.startswith("ember."):
        return "aten::" + qual.rsplit(".", 1)[1]
    return "python::" + qual
