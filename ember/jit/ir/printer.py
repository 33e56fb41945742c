"""Print a script graph the way TorchScript prints ``fn.graph``.

    graph(%a.1 : Tensor,
          %b.1 : Tensor):
      %2 : int = prim::Constant[value=1]()
      %c.1 : Tensor = aten::add(%a.1, %b.1, %2) # /path/file.py:9:6
      %y : Tensor = prim::If(%4) # file.py:10:2
        block0():
          -> (%c.1)
        block1():
          -> (%a.1)
      return (%y)

Naming: a value whose node has ``meta["jit_name"]`` prints as ``%name.N`` (N counts that
name's values from 1, so reassignments print ``%y.1``, ``%y.2``); other values print as a number
that counts every value printed so far (as TorchScript's unique ids do). A module method's
``self`` prints without a suffix. Targets print under their TorchScript names (``_op_name``).

Where ember's IR differs from TorchScript's (choices documented here, as the spec asks):
- literal (non-Node) arguments print as a ``prim::Constant`` line emitted just before the node
  (lists/tuples of operands as ``prim::ListConstruct`` / ``prim::TupleConstruct`` lines);
  keyword arguments print as ``name=%value`` after the positional operands.
- ``prim::CallFunction`` prints its callee's name as an attribute:
  ``prim::CallFunction[name="helper"](%x)`` (TorchScript passes a function constant).
- ``prim::ListUnpack``'s element count is not printed (it is the number of outputs).
"""
from __future__ import annotations

import builtins
import math
import operator

from ember.fx.node import Node

from . import prim
from .._ir_text import tensor_type
from .types import ModuleType, ScriptType, TensorType

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


def _is_operator_handle(target) -> bool:
    return hasattr(target, "schema") and hasattr(target, "redispatch")


def op_name(node: Node) -> str:
    """The TorchScript name of a node's target: ``aten::add``, ``prim::If``, ``aten::relu``.

        op_name(graph.call_function(ember.tanh, (x,)))   # 'aten::tanh'
    """
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


def format_constant_value(value) -> str | None:
    """The ``[value=...]`` text of a constant; None for ``None`` (printed ``prim::Constant()``)."""
    import ember
    from .._ir_text import _SCALAR_TYPE_CODE, _tensor_literal, format_float
    if value is None:
        return None
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, ember.dtype):
        return str(_SCALAR_TYPE_CODE.get(value, -1))
    if isinstance(value, ember.device):
        return _quote(str(value))
    if isinstance(value, ember.Tensor):
        return _tensor_literal(value)
    if isinstance(value, (list, tuple)):
        items = ", ".join("None" if v is None else (format_constant_value(v) or "") for v in value)
        return f"[{items}]" if isinstance(value, list) else f"({items})"
    return repr(value)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _type_text(node: Node) -> str:
    t = getattr(node, "type", None)
    if isinstance(t, TensorType) and t.sizes is not None and node.meta.get("val") is not None:
        return tensor_type(node.meta["val"])    # the observation it was specialised from
    if isinstance(t, ScriptType):
        return str(t)
    import ember
    val = node.meta.get("val")
    if isinstance(val, ember.Tensor):
        return "Tensor"
    return "Tensor" if t is None else str(t)


def is_folded_output(node: Node) -> bool:
    """True for the ``getitem`` nodes that print as the outputs of their multi-output producer."""
    if node.op != "call_function" or node.target is not operator.getitem:
        return False
    src = node.args[0]
    return isinstance(src, Node) and "num_outputs" in src.meta and isinstance(node.args[1], int)


class _Printer:
    def __init__(self, with_locations: bool):
        self.with_locations = with_locations
        self.names: dict = {}
        self.counts: dict = {}
        self.next_number = 0
        self.subgraphs: list = []   # (name, graph) of fusion groups, printed after the graph

    # -- names --------------------------------------------------------------------------
    def fresh(self, node: Node | None = None, *, plain: bool = False) -> str:
        number = self.next_number
        self.next_number += 1
        base = None
        if node is not None:
            base = node.meta.get("jit_name")
            if base is None and node.op == "placeholder" and node.graph.parent_node is None:
                base = node.target
        if base is None:
            name = str(number)
        elif plain:
            name = base
        else:
            count = self.counts.get(base, 0) + 1
            self.counts[base] = count
            name = f"{base}.{count}"
        if node is not None:
            self.names[node] = name
        return name

    def loc(self, node: Node) -> str:
        if not self.with_locations:
            return ""
        loc = node.meta.get("loc")
        if loc is not None:
            return f" # {loc[0]}:{loc[1]}:{loc[2] if len(loc) > 2 else 0}"
        loc = node.meta.get("jit_loc")
        if loc is not None:
            return f" # {loc[0]}:{loc[1]}:0"
        return ""

    # -- operands -----------------------------------------------------------------------
    def operand(self, value, lines: list, indent: str, as_list: bool = False) -> str:
        """`%name` of a Node, else emit a constant/construct line for the literal first."""
        if isinstance(value, Node):
            if value not in self.names:  # a value from outside the printed graph
                self.names[value] = value.meta.get("jit_name") or value.name
            return "%" + self.names[value]
        if isinstance(value, (list, tuple)) and (as_list or any(isinstance(v, Node) for v in _flat(value))):
            # an operator's int[] argument given as a tuple prints as a list, as TorchScript has it
            items = ", ".join(self.operand(v, lines, indent) for v in value)
            name = self.fresh()
            as_list = as_list or isinstance(value, list)
            kind = "ListConstruct" if as_list else "TupleConstruct"
            typ = _literal_type(list(value) if as_list else value)
            lines.append(f"{indent}%{name} : {typ} = prim::{kind}({items})")
            return "%" + name
        name = self.fresh()
        text = format_constant_value(value)
        attr = "" if text is None else f"[value={text}]"
        lines.append(f"{indent}%{name} : {_literal_type(value)} = prim::Constant{attr}()")
        return "%" + name

    # -- nodes --------------------------------------------------------------------------
    def block(self, graph, lines: list, indent: str) -> None:
        for node in graph.nodes:
            if node.op in ("placeholder", "output") or is_folded_output(node):
                continue
            self.node(node, lines, indent)

    def node(self, node: Node, lines: list, indent: str) -> None:
        name = op_name(node)
        target = node.target
        args = list(node.args)
        attr = ""
        if node.op == "get_attr":
            owner = "%self"
            attr, args = f'[name="{node.target}"]', []
            ops_text = owner
        else:
            if prim.is_prim(target):
                if target is prim.Constant:
                    text = format_constant_value(args[0])
                    attr, args = ("" if text is None else f"[value={text}]"), []
                elif target in (prim.GetAttr, prim.SetAttr, prim.CallMethod) and len(args) >= 2:
                    attr, args = f'[name="{args[1]}"]', [args[0]] + args[2:]
                elif target is prim.CallFunction:
                    callee = node.meta.get("callee")
                    cname = getattr(callee, "name", None) or getattr(callee, "__name__", None)
                    attr = f'[name="{cname}"]' if cname else ""
                elif target is prim.ListUnpack:
                    args = args[:1]
                elif target is prim.profile and node.meta.get("val") is not None:
                    attr = f"[profiled_type={tensor_type(node.meta['val'])}]"
                elif target is prim.TypeCheck and node.meta.get("types") is not None:
                    attr = "[types=[" + ", ".join(str(t) for t in node.meta["types"]) + "]]"
                elif target is prim.FusionGroup and node.meta.get("subgraph") is not None:
                    name = f"prim::FusionGroup_{len(self.subgraphs)}"
                    self.subgraphs.append((name, node.meta["subgraph"]))
            elif node.op == "call_function" and target is builtins.getattr and len(args) == 2 \
                    and isinstance(args[1], str):
                args = args[:1]
            as_list = node.op == "call_method" or _is_operator_handle(target)
            operands = [self.operand(a, lines, indent, as_list) for a in args]
            operands += [f"{k}={self.operand(v, lines, indent, as_list)}" for k, v in node.kwargs.items()]
            ops_text = ", ".join(operands)
        outputs = self.outputs_text(node)
        lines.append(f"{indent}{outputs} = {name}{attr}({ops_text}){self.loc(node)}")
        for i, block in enumerate(node.blocks):
            params = [p for p in block.nodes if p.op == "placeholder"]
            header = ", ".join(f"%{self.fresh(p)} : {_type_text(p)}" for p in params)
            lines.append(f"{indent}  block{i}({header}):")
            self.block(block, lines, indent + "    ")
            out = [n for n in block.nodes if n.op == "output"]
            rets = list(out[0].args[0]) if out and isinstance(out[0].args[0], (tuple, list)) else (
                [out[0].args[0]] if out else [])
            ret_text = ", ".join(self.operand(r, lines, indent + "    ") for r in rets)
            lines.append(f"{indent}    -> ({ret_text})")

    def outputs_text(self, node: Node) -> str:
        if "num_outputs" in node.meta:
            from . import outputs_of
            outs = outputs_of(node)
            types = getattr(node.type, "elems", None) or ()
            parts = []
            for i, out in enumerate(outs):
                if out is not None:
                    parts.append(f"%{self.fresh(out)} : {_type_text(out)}")
                else:
                    parts.append(f"%{self.fresh()} : {types[i] if i < len(types) else 'Tensor'}")
            self.names[node] = parts[0].split(" ")[0][1:] if parts else self.fresh()
            return ", ".join(parts) if parts else f"%{self.names[node]} : ()"
        return f"%{self.fresh(node)} : {_type_text(node)}"

    def run(self, graph) -> str:
        inputs = []
        for node in graph.nodes:
            if node.op == "placeholder":
                plain = isinstance(node.type, ModuleType)
                inputs.append(f"%{self.fresh(node, plain=plain)} : {_type_text(node)}")
        lines: list = []
        self.block(graph, lines, "  ")
        out = [n for n in graph.nodes if n.op == "output"]
        if out:
            result = out[0].args[0]
            if isinstance(result, (tuple, list)) and not isinstance(result, Node):
                text = self.operand(result, lines, "  ") if result else "%" + self._none(lines)
            else:
                text = self.operand(result, lines, "  ")
            lines.append(f"  return ({text})")
        header = "graph(" + ",\n      ".join(inputs) + "):"
        for name, sub in self.subgraphs:   # TorchScript's `with prim::FusionGroup_0 = graph(...)`
            body = _Printer(self.with_locations).run(getattr(sub, "graph", sub))
            lines.append(f"with {name} = " + body.rstrip("\n").replace("\n", "\n  "))
        return "\n".join([header] + lines) + "\n"

    def _none(self, lines):
        name = self.fresh()
        lines.append(f"  %{name} : NoneType = prim::Constant()")
        return name


def _flat(value):
    for v in value:
        if isinstance(v, (list, tuple)):
            yield from _flat(v)
        else:
            yield v


def _literal_type(value) -> str:
    from .types import TupleType, type_of_value
    if isinstance(value, Node):
        return _type_text(value)
    if isinstance(value, tuple):
        return str(TupleType(tuple(_parse(_literal_type(v)) for v in value)))
    if isinstance(value, list):
        return f"{_literal_type(value[0])}[]" if value else "Tensor[]"
    try:
        return str(type_of_value(value))
    except ValueError:
        return type(value).__name__


def _parse(text):
    from .types import parse_type
    try:
        return parse_type(text)
    except ValueError:
        from .types import AnyType
        return AnyType()


def format_graph(graph, *, with_locations: bool = True) -> str:
    """The TorchScript text of a script graph (see the module docstring).

        print(format_graph(fn._graph))
        format_graph(g, with_locations=False)   # without the `# file:line:col` comments
    """
    return _Printer(with_locations).run(graph)


class ScriptGraph:
    """What ``ScriptFunction.graph`` returns: prints TorchScript-style; ``fx_graph`` is the IR.

        print(fn.graph)                                   # format_graph(fn.graph.fx_graph)
        fn.graph.str(print_source_locations=False)
        [n.target for n in fn.graph.nodes()]
    """

    def __init__(self, fx_graph):
        self.fx_graph = fx_graph

    def __str__(self) -> str:
        return format_graph(self.fx_graph)

    __repr__ = __str__

    def str(self, print_source_locations: bool = True) -> str:
        """The text, optionally without source locations (TorchScript's ``graph.str(False)``)."""
        return format_graph(self.fx_graph, with_locations=print_source_locations)

    def nodes(self):
        """The top-level nodes (not inputs/outputs), as TorchScript's ``graph.nodes()``."""
        return iter([n for n in self.fx_graph.nodes if n.op not in ("placeholder", "output")])

    def inputs(self) -> list:
        """The graph's input values (placeholder nodes)."""
        return [n for n in self.fx_graph.nodes if n.op == "placeholder"]

    def findAllNodes(self, kind: str) -> list:  # noqa: N802  (TorchScript's spelling)
        """Every node (blocks included) whose TorchScript name is `kind` (``"prim::If"``)."""
        from . import walk
        return [n for n in walk(self.fx_graph) if n.op not in ("placeholder", "output") and op_name(n) == kind]
