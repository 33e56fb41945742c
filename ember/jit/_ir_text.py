"""Print a traced ``ember.fx.Graph`` the way ``torch.jit.trace(...).graph`` prints:

    graph(%a : Float(4, strides=[1], requires_grad=0, device=cpu),
          %b : Float(4, strides=[1], requires_grad=0, device=cpu)):
      %2 : int = prim::Constant[value=1]() # /path/x.py:3:0
      %c : Float(4, strides=[1], requires_grad=0, device=cpu) = aten::add(%a, %b, %2) # /path/x.py:3:0
      return (%c)

TorchScript keeps non-tensor arguments as values too, so each call's Python arguments become
``prim::Constant`` values (ints, floats, bools, None, strings, devices; dtypes as their
ScalarType code; a number passed where the schema takes a Tensor as a 0-dim constant
``{2.5}``), int lists become ``prim::ListConstruct``. Values are numbered in creation order;
a value whose node carries ``meta["jit_name"]`` prints under that name (it still uses up its
number, as in TorchScript). Tuples, lists and dicts returned by the program become
``prim::TupleConstruct`` / ``ListConstruct`` / ``DictConstruct``.
"""
from __future__ import annotations

import math
import operator

from .._core import dtype as _dt
from .._core.device import device as _device_cls
from .._core.tensor import Tensor

_DTYPE_NAMES = {d: d.c10_name for d in _dt.ALL_DTYPES}
_SCALAR_TYPE_CODE = {_dt.uint8: 0, _dt.int8: 1, _dt.int16: 2, _dt.int32: 3, _dt.int64: 4, _dt.float16: 5,
                     _dt.float32: 6, _dt.float64: 7, _dt.complex64: 9, _dt.complex128: 10, _dt.bool_: 11,
                     _dt.bfloat16: 15}


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
    name = _DTYPE_NAMES.get(t.dtype, "Tensor")
    parts = [str(s) for s in t.shape]
    if t.dim():
        parts.append("strides=[" + ", ".join(str(s) for s in t.stride()) + "]")
    parts.append(f"requires_grad={int(bool(t.requires_grad))}")
    device = t.device.type
    parts.append(f"device={'cpu' if device == 'meta' else device}")
    return f"{name}({', '.join(parts)})"


def _tensor_literal(t: Tensor) -> str:
    """A tensor constant's value: ``{2.5}`` for a 0-dim tensor, else the values and
    ``[ CPUFloatType{3} ]`` (PyTorch's C++ tensor printing, approximately)."""
    values = t.detach().tolist() if not t.device.type == "meta" else []
    if t.dim() == 0:
        return "{" + (format_float(values).rstrip(".") if isinstance(values, float) else str(values)) + "}"
    flat = t.detach().reshape(-1).tolist()
    kind = _DTYPE_NAMES.get(t.dtype, "Float")
    return " ".join(f"{v:.4f}" if isinstance(v, float) else str(v) for v in flat) + \
        f" [ CPU{kind}Type{{{','.join(str(s) for s in t.shape)}}} ]"


# Ops whose Python binding in PyTorch turns a number into a 0-dim "wrapped number" tensor (their
# Scalar overloads are not exposed to Python); elsewhere a number passed for a Tensor argument
# selects the Scalar overload and prints as a plain constant (``aten::gt(%x, %2)``, %2 : int).
_WRAPPED_NUMBER_OPS = {"aten::add", "aten::add_", "aten::sub", "aten::sub_", "aten::mul", "aten::mul_",
                       "aten::div", "aten::div_", "aten::true_divide", "aten::true_divide_"}


def _is_operator(target) -> bool:
    return hasattr(target, "schema") and hasattr(target, "redispatch")


# Traced sizes (see _sizes.py): ``x.size(d)`` is a ``call_method size`` node, arithmetic on sizes
# an ``operator`` call. PyTorch's tracer holds sizes as 0-dim Long tensors, so they print as
# ``aten::size`` + ``prim::NumToTensor``, arithmetic as tensor ops with 0-dim constants, and each
# use as an int argument as an ``aten::Int`` (placed right after the value's producer).
_INT_OPS = ((operator.add, "aten::add"), (operator.sub, "aten::sub"), (operator.mul, "aten::mul"),
            (operator.floordiv, "aten::floor_divide"), (operator.mod, "aten::remainder"),
            (operator.neg, "aten::neg"), (operator.lt, "aten::lt"), (operator.le, "aten::le"),
            (operator.gt, "aten::gt"), (operator.ge, "aten::ge"), (operator.eq, "aten::eq"),
            (operator.ne, "aten::ne"), (operator.pow, "aten::pow"), (operator.abs, "aten::abs"),
            (operator.and_, "aten::__and__"), (operator.or_, "aten::__or__"), (operator.xor, "aten::__xor__"),
            (operator.lshift, "aten::__lshift__"), (operator.rshift, "aten::__rshift__"),
            (operator.invert, "aten::bitwise_not"))
_LONG = "Long(requires_grad=0, device=cpu)"


def _int_op_name(target):
    for fn, name in _INT_OPS:
        if target is fn:
            return name
    return None


def is_int_node(node) -> bool:
    """True for a traced size (``size``/``numel`` call_method) or arithmetic on traced sizes."""
    if node.op == "call_method":
        return node.target in ("size", "numel")
    return node.op == "call_function" and _int_op_name(node.target) is not None


def _is_node(value) -> bool:
    return hasattr(value, "op") and hasattr(value, "meta")


def _int_value_count(node) -> int:
    """How many TorchScript values the printed form of an int node uses."""
    if node.op == "call_method":   # the dim constant, aten::size, prim::NumToTensor / aten::numel, NumToTensor
        return 3 if node.target == "size" else 2
    count = 1 + sum(1 for a in node.args if not _is_node(a))
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


class _Printer:
    def __init__(self, graph, with_shapes: bool, with_locations: bool):
        self.graph = graph
        self.with_shapes = with_shapes
        self.with_locations = with_locations
        self.next_number = 0
        self.names: dict = {}       # node -> printed value name (without %)
        self.lines: list = []
        self.node_lines: dict = {}  # call_function node -> its printed line
        self.int_lines: dict = {}   # int node -> index of its last line in self.lines
        self.after: dict = {}       # line index -> aten::Int lines placed after it

    def new_value(self, node=None) -> str:
        number = self.next_number
        self.next_number += 1
        name = node.meta.get("jit_name") if node is not None else None
        name = name or str(number)
        if node is not None:
            self.names[node] = name
        return name

    def loc(self, node) -> str:
        loc = node.meta.get("jit_loc") if node is not None else None
        if not self.with_locations or loc is None:
            return ""
        return f" # {loc[0]}:{loc[1]}:0"

    def value_type(self, val) -> str:
        if isinstance(val, Tensor):
            return tensor_type(val, self.with_shapes)
        if isinstance(val, tuple):
            return "(" + ", ".join(self.value_type(v) for v in val) + ")"
        return "Tensor"

    def emit(self, text: str) -> None:
        self.lines.append("  " + text)

    # -- constants ------------------------------------------------------------------------
    def constant(self, value, schema_type: str, at) -> str:
        """The value name of a Python argument, emitting its prim::Constant (and list) lines."""
        loc = self.loc(at)
        if value is None:
            name = self.new_value()
            self.emit(f"%{name} : NoneType = prim::Constant()")
            return name
        if isinstance(value, (list, tuple)):
            # PyTorch converts the traced sizes in a list (aten::Int) before making its constants
            converted = {i: self.operand(v, schema_type, at) for i, v in enumerate(value) if v in self.int_lines}
            items = [converted[i] if i in converted else self.operand(v, schema_type, at)
                     for i, v in enumerate(value)]
            elem = "Tensor" if any(isinstance(v, Tensor) or (_is_node(v) and v not in self.int_lines)
                                   for v in value) else (
                "float" if any(isinstance(v, float) for v in value) else "int")
            name = self.new_value()
            self.emit(f"%{name} : {elem}[] = prim::ListConstruct({', '.join('%' + i for i in items)})")
            return name
        if schema_type == "Tensor" and isinstance(value, (bool, int, float)):
            kind = "Bool" if isinstance(value, bool) else "Long" if isinstance(value, int) else "Double"
            text = "{" + (str(int(value)) if isinstance(value, bool) else
                          format_float(value).rstrip(".") if isinstance(value, float) else str(value)) + "}"
            name = self.new_value()
            self.emit(f"%{name} : {kind}(requires_grad=0, device=cpu) = prim::Constant[value={text}](){loc}")
            return name
        if isinstance(value, bool):
            typ, text = "bool", str(int(value))
        elif isinstance(value, int):
            typ, text = "int", str(value)
        elif isinstance(value, float):
            typ, text = "float", format_float(value)
        elif isinstance(value, str):
            typ, text = "str", f'"{value}"'
        elif isinstance(value, _dt.dtype):
            typ, text = "int", str(_SCALAR_TYPE_CODE.get(value, -1))
        elif isinstance(value, _device_cls):
            typ, text = "Device", f'"{value}"'
        else:
            typ, text = type(value).__name__, repr(value)
        name = self.new_value()
        self.emit(f"%{name} : {typ} = prim::Constant[value={text}](){loc}")
        return name

    def operand(self, value, schema_type: str, at, arg_type: str = "") -> str:
        if _is_node(value) and value in self.names:
            if value in self.int_lines and schema_type != "Tensor" and arg_type != "Tensor":
                # a traced size used as an int: aten::Int of its 0-dim tensor
                name = self.new_value()
                self.after.setdefault(self.int_lines[value], []).append(
                    f"%{name} : int = aten::Int(%{self.names[value]})")
                return name
            return self.names[value]
        return self.constant(value, schema_type, at)

    def int_node(self, node) -> None:
        """A traced size or arithmetic on sizes (see `is_int_node`)."""
        loc = self.loc(node)
        long_type = _LONG if self.with_shapes else "Tensor"
        if node.op == "call_method":
            x = self.names[node.args[0]]
            if node.target == "size":
                c = self.new_value()
                self.emit(f"%{c} : int = prim::Constant[value={node.args[1]}](){loc}")
                s = self.new_value()
                self.emit(f"%{s} : int = aten::size(%{x}, %{c}){loc}")
            else:
                s = self.new_value()
                self.emit(f"%{s} : int = aten::numel(%{x}){loc}")
            t = self.new_value(node)
            self.emit(f"%{t} : {'Long(device=cpu)' if self.with_shapes else 'Tensor'} = prim::NumToTensor(%{s})")
        else:
            op_name, args = _int_op_name(node.target), list(node.args)
            if len(args) == 2 and not _is_node(args[0]):      # 2 * n: Tensor.__rmul__ and friends
                if node.target in (operator.add, operator.mul, operator.sub):
                    args.reverse()
                if node.target is operator.sub:
                    op_name = "aten::rsub"
            kind = "Scalar" if op_name in ("aten::rsub", "aten::pow") else "Tensor"   # these take a Scalar
            operands = [self.names[a] if _is_node(a) else self.constant(a, kind, node) for a in args]
            if node.target in (operator.add, operator.sub):
                alpha = self.new_value()
                self.emit(f"%{alpha} : int = prim::Constant[value=1](){loc}")
                operands.append(alpha)
            r = self.new_value(node)
            self.emit(f"%{r} : {long_type} = {op_name}({', '.join('%' + o for o in operands)}){loc}")
        self.int_lines[node] = len(self.lines) - 1

    # -- nodes ----------------------------------------------------------------------------
    def placeholder(self, node) -> str:
        name = self.new_value(node)
        return f"%{name} : {self.value_type(node.meta.get('val'))}"

    def get_attr(self, node) -> None:
        value = node.meta.get("jit_constant")
        typ = self.value_type(node.meta.get("val"))
        if str(node.target).startswith("_tensor_constant") and isinstance(value, Tensor):
            name = self.new_value(node)
            self.emit(f"%{name} : {typ} = prim::Constant[value={_tensor_literal(value)}](){self.loc(node)}")
        else:
            name = self.new_value(node)
            self.emit(f'%{name} : {typ} = prim::GetAttr[name="{node.target}"](%self)')

    def call(self, node) -> None:
        op = node.target
        if not _is_operator(op):
            return          # getitem nodes print as the outputs of their producer
        schema = op.schema
        op_name = op.name.split(".", 1)[0]
        positional = list(node.args)
        given = []   # (value, schema type, argument type) per printed argument
        for arg in schema.arguments:
            if arg.kwarg_only:
                if arg.name not in node.kwargs:
                    continue
                value = node.kwargs[arg.name]
            elif positional:
                value = positional.pop(0)
            else:
                continue
            wraps = arg.type == "Tensor" and op_name in _WRAPPED_NUMBER_OPS
            given.append((value, "Tensor" if wraps else "Scalar", arg.type))
        # PyTorch converts traced sizes passed as ints (aten::Int) before making the op's constants
        early = {i: self.operand(v, kind, node, typ) for i, (v, kind, typ) in enumerate(given)
                 if _is_node(v) and v in self.int_lines and kind != "Tensor" and typ != "Tensor"}
        operands = [early[i] if i in early else self.operand(v, kind, node, typ)
                    for i, (v, kind, typ) in enumerate(given)]
        args_text = ", ".join("%" + o for o in operands)
        val = node.meta.get("val")
        if isinstance(val, (tuple, list)):
            items = {u.args[1]: u for u in node.users if u.target is operator.getitem}
            if len(schema.returns) == 1 and schema.returns[0].is_list:
                whole = self.new_value()
                self.emit(f"%{whole} : Tensor[] = {op_name}({args_text}){self.loc(node)}")
                outs = self._outputs(items, val)
                self.emit(f"{outs} = prim::ListUnpack(%{whole})")
            else:
                outs = self._outputs(items, val)
                self.emit(f"{outs} = {op_name}({args_text}){self.loc(node)}")
            return
        name = self.new_value(node)
        self.emit(f"%{name} : {self.value_type(val)} = {op_name}({args_text}){self.loc(node)}")
        self.node_lines[node] = self.lines[-1].strip()

    def _outputs(self, items, val) -> str:
        parts = []
        for i, v in enumerate(val):
            name = self.new_value(items.get(i))
            parts.append(f"%{name} : {self.value_type(v)}")
        return ", ".join(parts)

    # -- outputs --------------------------------------------------------------------------
    def output_value(self, value) -> tuple:
        """(value name, type) of a returned structure, emitting its construct lines."""
        if hasattr(value, "op") and hasattr(value, "meta"):
            return self.names[value], self.value_type(value.meta.get("val"))
        if isinstance(value, tuple):
            parts = [self.output_value(v) for v in value]
            typ = "(" + ", ".join(t for _, t in parts) + ")"
            name = self.new_value()
            self.emit(f"%{name} : {typ} = prim::TupleConstruct({', '.join('%' + n for n, _ in parts)})")
            return name, typ
        if isinstance(value, list):
            parts = [self.output_value(v) for v in value]
            name = self.new_value()
            self.emit(f"%{name} : Tensor[] = prim::ListConstruct({', '.join('%' + n for n, _ in parts)})")
            return name, "Tensor[]"
        if isinstance(value, dict):
            keys = [self.constant(k, "str", None) for k in value]
            parts = [self.output_value(v) for v in value.values()]
            operands = ", ".join(f"%{k}, %{n}" for k, (n, _) in zip(keys, parts))
            name = self.new_value()
            self.emit(f"%{name} : Dict(str, Tensor) = prim::DictConstruct({operands})")
            return name, "Dict(str, Tensor)"
        return self.constant(value, "", None), ""

    def run(self, self_type: str | None = None) -> str:
        inputs = []
        if self_type is not None:
            inputs.append(f"%self : {self_type}")
        for node in self.graph.nodes:
            self.next_number += node.meta.get("jit_skip", 0)
            if node.op == "placeholder":
                inputs.append(self.placeholder(node))
            elif node.op == "get_attr":
                self.get_attr(node)
            elif is_int_node(node):
                self.int_node(node)
            elif node.op == "call_function":
                self.call(node)
            elif node.op == "output":
                result = node.args[0]
                name, _ = self.output_value(result)
                self.emit(f"return (%{name})")
        header = "graph(" + ",\n      ".join(inputs) + "):"
        lines = [header]
        for i, line in enumerate(self.lines):
            lines.append(line)
            lines.extend("  " + extra for extra in reversed(self.after.get(i, ())))
        return "\n".join(lines) + "\n"


def format_graph(graph, *, with_shapes: bool = True, with_locations: bool = True, self_type=None) -> str:
    """The TorchScript text of a traced graph (see the module docstring).

        >>> print(format_graph(ember.jit.trace(lambda a, b: a + b, (x, y)).graph.fx_graph))
    """
    return _Printer(graph, with_shapes, with_locations).run(self_type)


def node_lines(graph) -> dict:
    """Each single-result call node's printed line (for messages that quote nodes)."""
    printer = _Printer(graph, True, True)
    printer.run()
    return printer.node_lines


class TorchScriptGraph:
    """What ``traced.graph`` is: prints TorchScript-style; ``fx_graph`` is the ember.fx Graph."""

    def __init__(self, fx_graph, self_type=None):
        self.fx_graph = fx_graph
        self.self_type = self_type

    def __str__(self):
        return format_graph(self.fx_graph, self_type=self.self_type)

    __repr__ = __str__

    def nodes(self):
        """The fx nodes (TorchScript's ``graph.nodes()``)."""
        return list(self.fx_graph.nodes)

    def str(self, print_source_locations: bool = True) -> str:
        return format_graph(self.fx_graph, with_locations=print_source_locations, self_type=self.self_type)
