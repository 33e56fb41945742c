"""Print a graph the way TorchScript prints ``fn.graph``: the one printer of jit.script's and
jit.trace's graphs (``format_graph``; ``ScriptGraph`` is what ``.graph`` returns).

    graph(%a.1 : Tensor,                                            # jit.script
          %b.1 : Tensor):
      %2 : int = prim::Constant[value=1]()
      %c.1 : Tensor = aten::add(%a.1, %b.1, %2) # /path/file.py:9:6
      %y : Tensor = prim::If(%4) # file.py:10:2
        block0():
          -> (%c.1)
        block1():
          -> (%a.1)
      return (%y)

    graph(%a : Float(4, strides=[1], requires_grad=0, device=cpu),  # jit.trace
          %b : Float(4, strides=[1], requires_grad=0, device=cpu)):
      %2 : int = prim::Constant[value=1]() # /path/x.py:3:0
      %c : Float(4, strides=[1], requires_grad=0, device=cpu) = aten::add(%a, %b, %2) # /path/x.py:3:0
      return (%c)

Values are numbered in creation order (as TorchScript's unique ids are); a value whose node has
``meta["jit_name"]`` prints under that name and still uses up its number. A value's type is its
``node.type`` (a ScriptType) when it has one, else the tensor in ``meta["val"]`` (with sizes,
strides, requires_grad and device when ``with_shapes``). A Python literal argument prints as a
``prim::Constant`` line just before the node reading it (dtypes as their ScalarType code), lists
of operands as ``prim::ListConstruct`` / ``prim::TupleConstruct`` lines. Targets print under their
TorchScript names (`op_name`). Blocks print as ``blockN(params):`` ... ``-> (returns)``.

The two capture paths name and type things differently, and `traced=True` selects the trace's
rules, each what ``torch.jit.trace`` prints: names are used as the recorder made them unique (a
script's ``jit_name`` is the Python variable, printed ``%y.1``, ``%y.2`` for each assignment);
literals carry the location of the node reading them; operator calls print one operand per schema
argument (a number passed for a Tensor of add/sub/mul/div as a 0-dim ``{2.5}`` constant); traced
sizes (``call_method size`` nodes and arithmetic on them, see ``_sizes.py``) print as
``aten::size`` + ``prim::NumToTensor`` 0-dim tensors with an ``aten::Int`` before each use as an
int; the returned structure prints as Tuple/List/DictConstruct lines.

Where the script IR differs from TorchScript's (documented choices): keyword arguments print as
``name=%value`` after the positional operands; ``prim::CallFunction`` prints its callee as
``[name="helper"]``; ``prim::ListUnpack``'s element count is not printed.
"""
from __future__ import annotations

import builtins
import math
import operator

from ember._core import dtype as _dt
from ember._core.device import device as _device_cls
from ember._core.tensor import Tensor
from ember.fx.node import Node, _collect_nodes, _is_operator_handle

from . import block_params, block_returns, callee_name, prim
from .op_names import _OPERATOR_NAMES, op_name
from .types import ModuleType, TensorType

# ---------------------------------------------------------------------------------------------
# values as text
# ---------------------------------------------------------------------------------------------
# Ops whose Python binding in PyTorch turns a number into a 0-dim "wrapped number" tensor (their
# Scalar overloads are not exposed to Python); elsewhere a number passed for a Tensor argument
# selects the Scalar overload and prints as a plain constant (``aten::gt(%x, %2)``, %2 : int).
_WRAPPED_NUMBER_OPS = {"aten::add", "aten::add_", "aten::sub", "aten::sub_", "aten::mul", "aten::mul_",
                       "aten::div", "aten::div_", "aten::true_divide", "aten::true_divide_"}


def format_float(x: float) -> str:
    """TorchScript's float constants: 17 significant digits, a trailing '.' on integral values
    below 1e10 (``1.``, ``0.10000000000000001``, ``1e+17``)."""
    if math.isfinite(x) and x == int(x) and abs(x) < 1e10:
        return f"{int(x)}."
    return "%.17g" % x


def tensor_type(t, with_shapes: bool = True) -> str:
    """``Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)`` for a tensor (or meta tensor
    standing for one: its device prints as cpu); ``Tensor`` without shapes."""
    if not with_shapes:
        return "Tensor"
    parts = [str(s) for s in t.shape]
    if t.dim():
        parts.append("strides=[" + ", ".join(str(s) for s in t.stride()) + "]")
    parts.append(f"requires_grad={int(bool(t.requires_grad))}")
    device = t.device.type
    parts.append(f"device={'cpu' if device == 'meta' else device}")
    return f"{t.dtype.c10_name}({', '.join(parts)})"


def _scalar_literal(v) -> str:
    """A 0-dim tensor's value (a traced constant, a wrapped number): ``{1}`` (True), ``{2}``, ``{2.5}``."""
    text = str(int(v)) if isinstance(v, bool) else format_float(v).rstrip(".") if isinstance(v, float) else str(v)
    return "{" + text + "}"


def _tensor_literal(t: Tensor) -> str:
    """A tensor constant's value: `_scalar_literal` for a 0-dim tensor, else the values and
    ``[ CPUFloatType{3} ]`` (PyTorch's C++ tensor printing, approximately)."""
    values = t.detach().tolist() if not t.device.type == "meta" else []
    if t.dim() == 0:
        return _scalar_literal(values)
    flat = t.detach().reshape(-1).tolist()
    return " ".join(f"{v:.4f}" if isinstance(v, float) else str(v) for v in flat) + \
        f" [ CPU{t.dtype.c10_name}Type{{{','.join(str(s) for s in t.shape)}}} ]"


def format_constant_value(value) -> str | None:
    """The ``[value=...]`` text of a constant; None for ``None`` (printed ``prim::Constant()``)."""
    if value is None:
        return None
    for cls, text in _CONSTANT_TEXT:    # bool before int: a bool is an int
        if isinstance(value, cls):
            return text(value)
    if isinstance(value, (list, tuple)):
        items = ", ".join("None" if v is None else (format_constant_value(v) or "") for v in value)
        return f"[{items}]" if isinstance(value, list) else f"({items})"
    return repr(value)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


_CONSTANT_TEXT = ((bool, lambda v: str(int(v))), (int, str), (float, format_float), (str, _quote),
                  (_dt.dtype, lambda v: str(v.scalar_type_code)), (_device_cls, lambda v: _quote(str(v))),
                  (Tensor, _tensor_literal))


def _literal_type(value) -> str:
    """The type a literal prints with: ``int`` (dtypes too: a ScalarType is an int), ``int[]``, ``(int, str)``."""
    from .types import AnyType, TupleType, parse_type, type_of_value
    if isinstance(value, Node):
        return str(value.type) if value.type is not None else "Tensor"
    if isinstance(value, _dt.dtype):
        return "int"
    if isinstance(value, tuple):
        def parsed(text):
            try:
                return parse_type(text)
            except ValueError:
                return AnyType()
        return str(TupleType(tuple(parsed(_literal_type(v)) for v in value)))
    if isinstance(value, list):
        return f"{_literal_type(value[0])}[]" if value else "Tensor[]"
    try:
        return str(type_of_value(value))
    except ValueError:
        return type(value).__name__


# ---------------------------------------------------------------------------------------------
# traced sizes (see _sizes.py): ``x.size(d)`` is a ``call_method size`` node, arithmetic on sizes
# an ``operator`` call. PyTorch's tracer holds sizes as 0-dim Long tensors, so they print as
# ``aten::size`` + ``prim::NumToTensor``, arithmetic as tensor ops with 0-dim constants, and each
# use as an int argument as an ``aten::Int`` (placed right after the value's producer).
# ---------------------------------------------------------------------------------------------
# the operator functions recorded on traced sizes, printed under op_names' names (but floordiv:
# on a tensor it is aten::floor_divide)
_INT_OPS = {"add", "sub", "mul", "floordiv", "mod", "neg", "lt", "le", "gt", "ge", "eq", "ne", "pow", "abs",
            "and_", "or_", "xor", "lshift", "rshift", "invert"}


def _int_op_name(target):
    name = getattr(target, "__name__", None)
    if name not in _INT_OPS or getattr(operator, name) is not target:
        return None
    return "aten::floor_divide" if name == "floordiv" else _OPERATOR_NAMES[name]


def is_int_node(node) -> bool:
    """True for a traced size (``size``/``numel`` call_method) or arithmetic on traced sizes."""
    if node.op == "call_method":
        return node.target in ("size", "numel")
    return node.op == "call_function" and _int_op_name(node.target) is not None


def _int_value_count(node) -> int:
    """How many TorchScript values the printed form of an int node uses."""
    if node.op == "call_method":   # the dim constant, aten::size, prim::NumToTensor / aten::numel, NumToTensor
        return 3 if node.target == "size" else 2
    count = 1 + sum(1 for a in node.args if not isinstance(a, Node))
    return count + (1 if node.target in (operator.add, operator.sub) else 0)   # alpha


def drop_dead_int_nodes(graph) -> None:
    """Erase unused traced sizes (``x.shape`` records every dim) as PyTorch's dead-code pass
    does; the values they used still count in the numbering (``meta["jit_skip"]`` on the next
    node), as in PyTorch."""
    nodes = list(graph.nodes)
    dead = set()
    for node in reversed(nodes):
        if is_int_node(node) and all(u in dead for u in node.users):
            dead.add(node)
    skip = 0
    for node in nodes:
        if node in dead:
            skip += _int_value_count(node) + node.meta.get("jit_skip", 0)
        elif skip:
            node.meta["jit_skip"] = node.meta.get("jit_skip", 0) + skip
            skip = 0
    for node in reversed(nodes):
        if node in dead:
            graph.erase_node(node)


# ---------------------------------------------------------------------------------------------
# the printer
# ---------------------------------------------------------------------------------------------
class _Printer:
    def __init__(self, traced: bool, with_shapes: bool, with_locations: bool):
        self.traced = traced
        self.with_shapes = with_shapes
        self.with_locations = with_locations
        self.next_number = 0
        self.names: dict = {}       # node -> printed value name (without %)
        self.counts: dict = {}      # script: jit_name -> values printed under it so far
        self.lines: list = []
        self.node_lines: dict = {}  # call node -> its printed line (messages quote it)
        self.int_lines: dict = {}   # traced size -> index of its last line in self.lines
        self.after: dict = {}       # line index -> aten::Int lines placed after it
        self.subgraphs: list = []   # (name, graph) of fusion groups, printed after the graph

    # -- names, types, locations ----------------------------------------------------------
    def fresh(self, node: Node | None = None, *, plain: bool = False) -> str:
        number = self.next_number
        self.next_number += 1
        base = node.meta.get("jit_name") if node is not None else None
        if base is None and node is not None and not self.traced and node.op == "placeholder" \
                and node.graph.parent_node is None:
            base = node.target
        if base is None:
            name = str(number)
        elif plain or self.traced:
            name = base
        else:
            self.counts[base] = self.counts.get(base, 0) + 1
            name = f"{base}.{self.counts[base]}"
        if node is not None:
            self.names[node] = name
        return name

    def type_text(self, node: Node) -> str:
        t, val = node.type, node.meta.get("val")
        if isinstance(t, TensorType) and t.sizes is not None and isinstance(val, Tensor):
            return tensor_type(val)    # the observation it was specialised from
        return str(t) if t is not None else self.value_type(val)

    def value_type(self, val) -> str:
        if isinstance(val, Tensor):
            return tensor_type(val, self.with_shapes)
        if isinstance(val, tuple):
            return "(" + ", ".join(self.value_type(v) for v in val) + ")"
        return "Tensor"

    def loc(self, node) -> str:
        if not self.with_locations or node is None:
            return ""
        loc = node.meta.get("loc")
        if loc is not None:
            return f" # {loc[0]}:{loc[1]}:{loc[2] if len(loc) > 2 else 0}"
        loc = node.meta.get("jit_loc")
        return f" # {loc[0]}:{loc[1]}:0" if loc is not None else ""

    def emit(self, indent: str, text: str) -> None:
        self.lines.append(indent + text)

    # -- operands -------------------------------------------------------------------------
    def operand(self, value, indent: str, at=None, *, as_list=False, wrap=False, tensor_arg=False) -> str:
        """The value name (without %) of an argument, emitting lines for literals first. `wrap`:
        a number prints as a 0-dim tensor; `tensor_arg`: a traced size is passed as it is."""
        if isinstance(value, Node):
            if value in self.int_lines and not (wrap or tensor_arg):
                name = self.fresh()   # a traced size used as an int: aten::Int of its 0-dim tensor
                self.after.setdefault(self.int_lines[value], []).append(
                    f"%{name} : int = aten::Int(%{self.names[value]})")
                return name
            if value not in self.names:  # a value from outside the printed graph
                self.names[value] = value.meta.get("jit_name") or value.name
            return self.names[value]
        if isinstance(value, (list, tuple)) and (self.traced or as_list or _collect_nodes(value)):
            return self.construct(value, indent, at, as_list, wrap)
        return self.constant(value, indent, at, wrap)

    def construct(self, value, indent: str, at, as_list: bool, wrap: bool) -> str:
        if self.traced:   # an int[] / Tensor[] argument; its traced sizes are converted first
            converted = {i: self.operand(v, indent, at) for i, v in enumerate(value)
                         if isinstance(v, Node) and v in self.int_lines}
            items = [converted[i] if i in converted else self.operand(v, indent, at, wrap=wrap)
                     for i, v in enumerate(value)]
            elem = "Tensor" if any(isinstance(v, Tensor) or (isinstance(v, Node) and v not in self.int_lines)
                                   for v in value) else ("float" if any(isinstance(v, float) for v in value)
                                                         else "int")
            typ, kind = f"{elem}[]", "ListConstruct"
        else:   # an operator's int[] argument given as a tuple prints as a list, as TorchScript has it
            items = [self.operand(v, indent) for v in value]
            as_list = as_list or isinstance(value, list)
            typ = _literal_type(list(value) if as_list else value)
            kind = "ListConstruct" if as_list else "TupleConstruct"
        name = self.fresh()
        self.emit(indent, f"%{name} : {typ} = prim::{kind}({', '.join('%' + i for i in items)})")
        return name

    def constant(self, value, indent: str, at=None, wrap: bool = False) -> str:
        name = self.fresh()
        loc = self.loc(at) if self.traced and value is not None else ""
        if wrap and isinstance(value, (bool, int, float)):
            kind = "Bool" if isinstance(value, bool) else "Long" if isinstance(value, int) else "Double"
            self.emit(indent, f"%{name} : {kind}(requires_grad=0, device=cpu) = "
                              f"prim::Constant[value={_scalar_literal(value)}](){loc}")
            return name
        text = format_constant_value(value)
        attr = "" if text is None else f"[value={text}]"
        self.emit(indent, f"%{name} : {_literal_type(value)} = prim::Constant{attr}(){loc}")
        return name

    # -- nodes ----------------------------------------------------------------------------
    def block(self, graph, indent: str) -> None:
        for node in graph.nodes:
            if node.op == "placeholder":
                continue
            self.next_number += node.meta.get("jit_skip", 0)   # values of erased traced sizes
            if node.op == "output" or _is_folded_output(node, self.traced):
                continue
            if node.op == "get_attr":
                self.get_attr(node, indent)
            elif self.traced and is_int_node(node):
                self.int_node(node, indent)
            elif self.traced and node.op == "call_function" and _is_operator_handle(node.target):
                self.schema_call(node, indent)
            else:
                self.node(node, indent)

    def get_attr(self, node: Node, indent: str) -> None:
        value = node.meta.get("jit_constant")
        name = self.fresh(node)
        if str(node.target).startswith("_tensor_constant") and isinstance(value, Tensor):
            at = next(iter(node.users), node) if self.traced else node   # a trace's: where it is read
            self.emit(indent, f"%{name} : {self.type_text(node)} = prim::Constant[value={_tensor_literal(value)}]()"
                              f"{self.loc(at)}")
        else:
            self.emit(indent, f'%{name} : {self.type_text(node)} = prim::GetAttr[name="{node.target}"](%self)'
                              f"{self.loc(node)}")

    def node(self, node: Node, indent: str) -> None:
        name, target, args, attr = op_name(node), node.target, list(node.args), ""
        if prim.is_prim(target):
            if target is prim.Constant:
                text = format_constant_value(args[0])
                attr, args = ("" if text is None else f"[value={text}]"), []
            elif target in (prim.GetAttr, prim.SetAttr, prim.CallMethod) and len(args) >= 2:
                attr, args = f'[name="{args[1]}"]', [args[0]] + args[2:]
            elif target is prim.CallFunction:
                cname = callee_name(node)
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
        operands = ["%" + self.operand(a, indent, as_list=as_list) for a in args]
        operands += [f"{k}=%{self.operand(v, indent, as_list=as_list)}" for k, v in node.kwargs.items()]
        self.emit(indent, f"{self.outputs_text(node)} = {name}{attr}({', '.join(operands)}){self.loc(node)}")
        for i, block in enumerate(node.blocks):
            header = ", ".join(f"%{self.fresh(p)} : {self.type_text(p)}" for p in block_params(block))
            self.emit(indent, f"  block{i}({header}):")
            self.block(block, indent + "    ")
            ret_text = ", ".join("%" + self.operand(r, indent + "    ") for r in block_returns(block))
            self.emit(indent, f"    -> ({ret_text})")

    def outputs_text(self, node: Node) -> str:
        if "num_outputs" not in node.meta:
            return f"%{self.fresh(node)} : {self.type_text(node)}"
        from . import num_outputs, output_getitems
        items = output_getitems(node)
        types = getattr(node.type, "elems", None) or ()
        parts = []
        for i in range(num_outputs(node)):
            if i in items:
                parts.append(f"%{self.fresh(items[i][-1])} : {self.type_text(items[i][-1])}")
            else:
                parts.append(f"%{self.fresh()} : {types[i] if i < len(types) else 'Tensor'}")
        self.names[node] = parts[0].split(" ")[0][1:] if parts else self.fresh()
        return ", ".join(parts) if parts else f"%{self.names[node]} : ()"

    def schema_call(self, node: Node, indent: str) -> None:
        """A traced operator call: one operand per schema argument it was given."""
        schema, name = node.target.schema, node.target.name.split(".", 1)[0]
        given, positional = [], list(node.args)   # (value, wrap, tensor_arg) per printed argument
        for arg in schema.arguments:
            if arg.kwarg_only:
                if arg.name not in node.kwargs:
                    continue
                value = node.kwargs[arg.name]
            elif positional:
                value = positional.pop(0)
            else:
                continue
            given.append((value, arg.type == "Tensor" and name in _WRAPPED_NUMBER_OPS, arg.type == "Tensor"))
        # PyTorch converts traced sizes passed as ints (aten::Int) before making the op's constants
        early = {i: self.operand(v, indent, node, wrap=w, tensor_arg=t) for i, (v, w, t) in enumerate(given)
                 if isinstance(v, Node) and v in self.int_lines and not w and not t}
        operands = [early[i] if i in early else self.operand(v, indent, node, wrap=w, tensor_arg=t)
                    for i, (v, w, t) in enumerate(given)]
        call = f"{name}({', '.join('%' + o for o in operands)}){self.loc(node)}"
        val = node.meta.get("val")
        if isinstance(val, (tuple, list)):
            items = {u.args[1]: u for u in node.users if u.target is operator.getitem}
            outs = lambda: ", ".join(f"%{self.fresh(items.get(i))} : {self.value_type(v)}"  # noqa: E731
                                     for i, v in enumerate(val))
            if len(schema.returns) == 1 and schema.returns[0].is_list:
                whole = self.fresh()
                self.emit(indent, f"%{whole} : Tensor[] = {call}")
                self.emit(indent, f"{outs()} = prim::ListUnpack(%{whole})")
            else:
                self.emit(indent, f"{outs()} = {call}")
            return
        self.emit(indent, f"%{self.fresh(node)} : {self.value_type(val)} = {call}")
        self.node_lines[node] = self.lines[-1].strip()

    def int_node(self, node: Node, indent: str) -> None:
        """A traced size or arithmetic on sizes (see `is_int_node`)."""
        loc = self.loc(node)
        if node.op == "call_method":
            x = self.names[node.args[0]]
            if node.target == "size":
                c = self.fresh()
                self.emit(indent, f"%{c} : int = prim::Constant[value={node.args[1]}](){loc}")
                s = self.fresh()
                self.emit(indent, f"%{s} : int = aten::size(%{x}, %{c}){loc}")
            else:
                s = self.fresh()
                self.emit(indent, f"%{s} : int = aten::numel(%{x}){loc}")
            t = self.fresh(node)
            self.emit(indent, f"%{t} : {'Long(device=cpu)' if self.with_shapes else 'Tensor'} = prim::NumToTensor(%{s})")
        else:
            name, args = _int_op_name(node.target), list(node.args)
            if len(args) == 2 and not isinstance(args[0], Node):      # 2 * n: Tensor.__rmul__ and friends
                if node.target in (operator.add, operator.mul, operator.sub):
                    args.reverse()
                if node.target is operator.sub:
                    name = "aten::rsub"
            scalar = name in ("aten::rsub", "aten::pow")   # these take a Scalar, the others a 0-dim tensor
            operands = [self.names[a] if isinstance(a, Node) else self.constant(a, indent, node, not scalar)
                        for a in args]
            if node.target in (operator.add, operator.sub):
                alpha = self.fresh()
                self.emit(indent, f"%{alpha} : int = prim::Constant[value=1](){loc}")
                operands.append(alpha)
            r = self.fresh(node)
            long_type = "Long(requires_grad=0, device=cpu)" if self.with_shapes else "Tensor"
            self.emit(indent, f"%{r} : {long_type} = {name}({', '.join('%' + o for o in operands)}){loc}")
        self.int_lines[node] = len(self.lines) - 1

    # -- the returned value ---------------------------------------------------------------
    def traced_output(self, value, indent: str) -> tuple:
        """(value name, type) of a structure a traced program returns, emitting its construct lines."""
        if isinstance(value, Node):
            return self.names[value], self.value_type(value.meta.get("val"))
        if isinstance(value, (tuple, list)):
            parts = [self.traced_output(v, indent) for v in value]
            typ = "(" + ", ".join(t for _, t in parts) + ")" if isinstance(value, tuple) else "Tensor[]"
            name = self.fresh()
            kind = "TupleConstruct" if isinstance(value, tuple) else "ListConstruct"
            self.emit(indent, f"%{name} : {typ} = prim::{kind}({', '.join('%' + n for n, _ in parts)})")
            return name, typ
        if isinstance(value, dict):
            keys = [self.constant(k, indent) for k in value]
            parts = [self.traced_output(v, indent) for v in value.values()]
            operands = ", ".join(f"%{k}, %{n}" for k, (n, _) in zip(keys, parts))
            name = self.fresh()
            self.emit(indent, f"%{name} : Dict(str, Tensor) = prim::DictConstruct({operands})")
            return name, "Dict(str, Tensor)"
        return self.constant(value, indent), ""

    def run(self, graph, self_type=None) -> str:
        inputs = [f"%self : {self_type}"] if self_type is not None else []
        for node in graph.nodes:
            if node.op == "placeholder":
                self.next_number += node.meta.get("jit_skip", 0)
                name = self.fresh(node, plain=isinstance(node.type, ModuleType))
                inputs.append(f"%{name} : {self.type_text(node)}")
        self.block(graph, "  ")
        out = [n for n in graph.nodes if n.op == "output"]
        if out:
            result = out[0].args[0]
            if self.traced:
                text = self.traced_output(result, "  ")[0]
            elif isinstance(result, (tuple, list)) and not result:
                text = self.constant(None, "  ")
            else:
                text = self.operand(result, "  ")
            self.emit("  ", f"return (%{text})")
        header = "graph(" + ",\n      ".join(inputs) + "):"
        for name, sub in self.subgraphs:   # TorchScript's `with prim::FusionGroup_0 = graph(...)`
            body = _Printer(self.traced, self.with_shapes, self.with_locations).run(getattr(sub, "graph", sub))
            self.lines.append(f"with {name} = " + body.rstrip("\n").replace("\n", "\n  "))
        lines = [header]
        for i, line in enumerate(self.lines):
            lines.append(line)
            lines.extend("  " + extra for extra in reversed(self.after.get(i, ())))
        return "\n".join(lines) + "\n"


def _is_folded_output(node: Node, traced: bool) -> bool:
    """The ``getitem`` nodes that print as the outputs of their multi-output producer (a traced
    operator returning several tensors)."""
    if node.op != "call_function" or node.target is not operator.getitem:
        return False
    src = node.args[0]
    return isinstance(src, Node) and isinstance(node.args[1], int) and (
        "num_outputs" in src.meta or (traced and isinstance(src.meta.get("val"), (tuple, list))))


def format_graph(graph, *, traced: bool = False, with_shapes: bool | None = None, with_locations: bool = True,
                 self_type=None) -> str:
    """The TorchScript text of a script graph, or with `traced` of a jit.trace graph (see the
    module docstring); `with_shapes` (default: for traced graphs) prints tensor types from
    ``meta["val"]`` with sizes and strides, `self_type` adds a module's ``%self`` input.

        print(format_graph(fn._graph))
        format_graph(g, with_locations=False)   # without the `# file:line:col` comments
    """
    shapes = traced if with_shapes is None else with_shapes
    return _Printer(traced, shapes, with_locations).run(graph, self_type)


def node_lines(graph) -> dict:
    """Each single-result operator call's printed line in a traced graph (for messages that quote nodes)."""
    printer = _Printer(True, True, True)
    printer.run(graph)
    return printer.node_lines


class ScriptGraph:
    """What ``.graph`` of a scripted or traced function returns: prints TorchScript-style;
    ``fx_graph`` is the IR.

        print(fn.graph)                                   # format_graph(fn.graph.fx_graph)
        fn.graph.str(print_source_locations=False)
        [n.target for n in fn.graph.nodes()]
    """

    def __init__(self, fx_graph, *, traced: bool = False, self_type=None):
        self.fx_graph = fx_graph
        self.traced = traced
        self.self_type = self_type

    def __str__(self) -> str:
        return self.str()

    __repr__ = __str__

    def str(self, print_source_locations: bool = True) -> str:
        """The text, optionally without source locations (TorchScript's ``graph.str(False)``)."""
        return format_graph(self.fx_graph, traced=self.traced, with_locations=print_source_locations,
                            self_type=self.self_type)

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
