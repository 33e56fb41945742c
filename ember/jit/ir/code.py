"""``.code``: Python-like source rebuilt from a script graph, like TorchScript's ``fn.code``.

    def forward(self, x: Tensor) -> Tensor:
      _0 = ember.tanh(x)
      if bool(ember.gt(ember.sum(_0), 0)):
        y = ember.relu(_0)
      else:
        y = _0
      for i in range(n):
        y = y + i
      return y

It is for reading, not for running: targets print under the names users write (``ember.tanh``,
``ember.nn.functional.relu``, ``x.view(-1)``, ``a + b``, ``len(xs)``, ``math.sqrt(v)``); values
assigned to a Python variable keep its name (``y``, then ``y0``, ``y1`` ... for later values, as
TorchScript does); other values used once by a later pure expression are inlined, the rest become
``_0``, ``_1`` temporaries. A ``prim::Loop`` prints as ``for i in range(n):`` when its start and
body conditions are constant True, else as a ``while`` loop carrying ``_cond``.
"""
from __future__ import annotations

import builtins
import operator

from ember._core.dtype import ALL_DTYPES
from ember.fx.node import Node

from . import prim
from .types import (DictType, ListType, ModuleType, OptionalType, ScriptType, TupleType)

_C10_NAMES = frozenset(d.c10_name for d in ALL_DTYPES)  # a tensor type prints as Float(2, 3)

_BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
           operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.lt: "<",
           operator.le: "<=", operator.gt: ">", operator.ge: ">=", operator.eq: "==", operator.ne: "!=",
           operator.and_: "&", operator.or_: "|", operator.xor: "^", operator.matmul: "@",
           operator.is_: "is", operator.is_not: "is not", operator.lshift: "<<", operator.rshift: ">>"}
_UNARY = {operator.neg: "-", operator.pos: "+", operator.not_: "not ", operator.invert: "~"}
_HUGE = 2 ** 63 - 1


def annotation(t) -> str:
    """A ScriptType as a Python annotation: ``List[int]``, ``Optional[Tensor]``, ``Tuple[Tensor, int]``."""
    if isinstance(t, ListType):
        return f"List[{annotation(t.elem)}]"
    if isinstance(t, OptionalType):
        return f"Optional[{annotation(t.elem)}]"
    if isinstance(t, TupleType):
        return f"Tuple[{', '.join(annotation(e) for e in t.elems)}]"
    if isinstance(t, DictType):
        return f"Dict[{annotation(t.key)}, {annotation(t.value)}]"
    if isinstance(t, ScriptType):
        text = str(t)
        return "Tensor" if text.split("(")[0] in _C10_NAMES else text
    return "Tensor"


def _literal(value) -> str:
    import ember
    if isinstance(value, ember.dtype):
        return "ember." + str(value).split(".")[-1]
    if isinstance(value, ember.device):
        return f'ember.device("{value}")'
    if isinstance(value, ember.Tensor):
        return f"CONSTANTS.tensor{tuple(value.shape)}"
    if isinstance(value, tuple):
        items = [_literal(v) for v in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, slice):
        parts = ["" if p is None else _literal(p) for p in (value.start, value.stop, value.step)]
        return ":".join(parts[:2]) + (f":{parts[2]}" if value.step is not None else "")
    return repr(value)


def _callable_name(target) -> str:
    if getattr(target, "__module__", None) == "builtins":
        return target.__name__
    if getattr(target, "__module__", None) == "math":
        return f"math.{target.__name__}"
    from ember.fx.node import _get_qualified_name
    try:
        return _get_qualified_name(target)
    except Exception:  # noqa: BLE001
        return repr(target)


def _movable(node: Node) -> bool:
    """The call may move past its neighbours (to be inlined into its one reader): no side effects,
    no blocks, one output (ember.fx.passes.purity decides what has effects)."""
    from ember.fx.passes.purity import is_pure
    return node.op in ("call_function", "call_method") and not node.blocks and "num_outputs" not in node.meta \
        and is_pure(node)


class _Coder:
    def __init__(self):
        self.names: dict = {}       # node -> variable name or inlined expression
        self.used: set = set()
        self.temps = 0
        self.lines: list = []

    def var(self, node: Node | None, hint: str | None = None) -> str:
        base = hint or (node.meta.get("jit_name") if node is not None else None)
        if base is None:
            name = f"_{self.temps}"
            self.temps += 1
        else:
            name, k = base, 0
            while name in self.used:
                name = f"{base}{k}"
                k += 1
        self.used.add(name)
        if node is not None:
            self.names[node] = name
        return name

    def expr(self, value) -> str:
        if isinstance(value, Node):
            return self.names.get(value, value.name)
        if isinstance(value, (list, tuple)) and not isinstance(value, slice):
            items = [self.expr(v) for v in value]
            if isinstance(value, list):
                return "[" + ", ".join(items) + "]"
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return _literal(value)

    def call_text(self, node: Node) -> str:
        args = [_bare(self.expr(a)) for a in node.args]
        kw = [f"{k}={_bare(self.expr(v))}" for k, v in node.kwargs.items()]
        target = node.target
        if node.op == "call_method":
            return f"{_paren(args[0])}.{target}({', '.join(args[1:] + kw)})"
        if node.op == "get_attr":
            return f"self.{target}"
        if prim.is_prim(target):
            return self.prim_text(node, args)
        if target in _BINARY and len(args) == 2:
            return f"{_paren(args[0])} {_BINARY[target]} {_paren(args[1])}"
        if target in _UNARY and len(args) == 1:
            return f"{_UNARY[target]}{_paren(args[0])}"
        if target is operator.getitem:
            return f"{_paren(args[0])}[{args[1]}]"
        if target is operator.contains:
            return f"{_paren(args[1])} in {_paren(args[0])}"
        if target is builtins.getattr and len(node.args) == 2 and isinstance(node.args[1], str):
            return f"{_paren(args[0])}.{node.args[1]}"
        return f"{_callable_name(target)}({', '.join(args + kw)})"

    def prim_text(self, node: Node, args: list) -> str:
        t = node.target
        if t is prim.Constant:
            return _literal(node.args[0])
        if t is prim.ListConstruct:
            return "[" + ", ".join(args) + "]"
        if t is prim.TupleConstruct:
            return "(" + ", ".join(args) + ("," if len(args) == 1 else "") + ")"
        if t is prim.DictConstruct:
            return "{" + ", ".join(f"{k}: {v}" for k, v in zip(args[0::2], args[1::2])) + "}"
        if t is prim.TupleIndex:
            return f"{_paren(args[0])}[{args[1]}]"
        if t is prim.GetAttr:
            attr = node.args[1]
            return f"{_paren(args[0])}.{attr}" if attr.isidentifier() else f'getattr({args[0]}, "{attr}")'
        if t is prim.CallMethod:
            return f"{_paren(args[0])}.{node.args[1]}({', '.join(args[2:])})"
        if t is prim.CallFunction:
            callee = node.meta.get("callee")
            name = getattr(callee, "name", None) or getattr(callee, "__name__", None) or "function"
            return f"{name}({', '.join(args)})"
        if t is prim.Uninitialized:
            return f"uninitialized({annotation(node.type)})"
        if t is prim.unchecked_cast:
            return f"unchecked_cast({args[0]})"
        if t is prim.Print:
            return f"print({', '.join(args)})"
        if t is prim.IsGradEnabled:   # `with no_grad():` lowered: save, set, ..., restore
            return "ember.is_grad_enabled()"
        if t is prim.SetGradEnabled:
            return f"ember.set_grad_enabled({args[0]})"
        return f"ops.{t.name.replace('::', '.')}({', '.join(args)})"

    # -- statements ---------------------------------------------------------------------
    def emit(self, text: str, indent: str) -> None:
        self.lines.append(indent + text)

    def block(self, graph, indent: str) -> None:
        for node in graph.nodes:
            if node.op in ("placeholder", "output"):
                continue
            if node.op == "call_function" and node.target is operator.getitem and \
                    isinstance(node.args[0], Node) and "num_outputs" in node.args[0].meta:
                continue  # named when their producer is emitted
            self.statement(node, indent)

    def outputs(self, node: Node) -> list:
        from . import outputs_of
        return [self.var(o) if o is not None else self.var(None) for o in outputs_of(node)]

    def statement(self, node: Node, indent: str) -> None:
        t = node.target
        if t is prim.If:
            self.if_stmt(node, indent)
            return
        if t is prim.Loop:
            self.loop_stmt(node, indent)
            return
        if t is prim.RaiseException:
            args = [self.expr(a) for a in node.args]
            cls = node.args[1] if len(node.args) > 1 and isinstance(node.args[1], str) else "Exception"
            self.emit(f"raise {cls}({args[0] if args else ''})", indent)
            return
        if t is prim.SetAttr:
            self.emit(f"{self.expr(node.args[0])}.{node.args[1]} = {self.expr(node.args[2])}", indent)
            return
        if t is operator.setitem:
            a = [self.expr(x) for x in node.args]
            self.emit(f"{a[0]}[{a[1]}] = {a[2]}", indent)
            return
        if t in (prim.TupleUnpack, prim.ListUnpack):
            outs = self.outputs(node)
            self.emit(f"{', '.join(outs)}{',' if len(outs) == 1 else ''} = {self.expr(node.args[0])}", indent)
            return
        text = self.call_text(node)
        if not node.users:
            self.emit(text, indent)
            return
        if self.inlinable(node):
            self.names[node] = text if t is prim.Constant or _atomic(text) else f"({text})"
            return
        self.emit(f"{self.var(node)} = {text}", indent)

    def inlinable(self, node: Node) -> bool:
        if node.target is prim.Constant and not isinstance(node.args[0], __import__("ember").Tensor):
            return node.meta.get("jit_name") is None or len(node.users) == 1
        if node.meta.get("jit_name") is not None or len(node.users) != 1 or not _movable(node):
            return False
        user = next(iter(node.users))
        if user.graph is not node.graph:
            return False
        cur = node.next  # reordering past a side effect could change what the value reads
        while cur is not user and cur.op != "output":
            if not _movable(cur) and not (cur.target is operator.getitem and "output_of" in cur.meta):
                return False
            cur = cur.next
        return cur is user

    def if_stmt(self, node: Node, indent: str) -> None:
        outs = self.outputs(node)
        self.emit(f"if {_bare(self.expr(node.args[0]))}:", indent)
        for i, block in enumerate(node.blocks):
            if i == 1:
                self.emit("else:", indent)
            start = len(self.lines)
            self.block(block, indent + "  ")
            self.assign(outs, self.returns(block), indent + "  ")
            if len(self.lines) == start:
                self.emit("pass", indent + "  ")

    def returns(self, block) -> list:
        from . import block_returns
        return [_bare(self.expr(v)) for v in block_returns(block)]

    def assign(self, names: list, values: list, indent: str) -> None:
        pairs = [(n, _bare(v)) for n, v in zip(names, values) if n != v]
        if len(pairs) == 1:
            self.emit(f"{pairs[0][0]} = {pairs[0][1]}", indent)
        elif pairs:
            self.emit(f"{', '.join(n for n, _ in pairs)} = {', '.join(v for _, v in pairs)}", indent)

    def loop_stmt(self, node: Node, indent: str) -> None:
        from . import block_params, block_returns
        body = node.blocks[0]
        params = block_params(body)
        trip, start, *init = node.args
        rets = block_returns(body)
        carried = [self.var(p) for p in params[1:]]
        self.assign(carried, [self.expr(v) for v in init], indent)
        i_name = self.var(params[0], hint=params[0].meta.get("jit_name") or "i")
        always = _is_true(start) and rets and _is_true(rets[0])
        if always:
            self.emit(f"for {i_name} in range({self.expr(trip)}):", indent)
            self.block(body, indent + "  ")
            self.assign(carried, [self.expr(v) for v in rets[1:]], indent + "  ")
        else:
            cond = self.var(None, hint="_cond")
            bounded = not (isinstance(trip, Node) and trip.target is prim.Constant and trip.args[0] == _HUGE)
            self.emit(f"{cond} = {self.expr(start)}", indent)
            if bounded or params[0].users:
                self.emit(f"{i_name} = 0", indent)
            self.emit(f"while {cond}" + (f" and {i_name} < {self.expr(trip)}:" if bounded else ":"), indent)
            self.block(body, indent + "  ")
            self.assign([cond] + carried, [self.expr(v) for v in rets], indent + "  ")
            if bounded or params[0].users:
                self.emit(f"{i_name} = {i_name} + 1", indent + "  ")
        self.assign(self.outputs(node), carried, indent)


def _is_true(value) -> bool:
    if value is True:
        return True
    return isinstance(value, Node) and value.target is prim.Constant and value.args[0] is True


def _wrapped(text: str) -> bool:
    """True if `text` is one bracketed group: ``(a + b)``, ``[x, y]`` (not ``(a) + (b)``)."""
    if not text or text[0] not in "([{" or text[-1] not in ")]}":
        return False
    depth = 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth == 0 and i < len(text) - 1:
            return False
    return True


def _bare(text: str) -> str:
    """Drop one pair of parentheses around a whole expression (where no precedence is at stake)."""
    if text.startswith("(") and _wrapped(text) and not text.endswith(",)") and "," not in text[1:-1].split("(")[0]:
        return text[1:-1]
    return text


def _atomic(text: str) -> bool:
    """No operator at the top level (a name, literal, call, attribute or subscript chain)."""
    depth, quote = 0, None
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == " " and depth == 0:
            return False
    return not text.startswith(("-", "~", "not "))


def _paren(text: str) -> str:
    return text if _atomic(text) else f"({text})"


def format_code(graph, name: str = "forward") -> str:
    """Python-like source for `graph` (see the module docstring).

        print(format_code(fn._graph, "f"))   # def f(a: Tensor, b: Tensor) -> Tensor: ...
    """
    coder = _Coder()
    params = []
    for node in graph.nodes:
        if node.op != "placeholder":
            continue
        pname = coder.var(node, hint=node.meta.get("jit_name") or node.target)
        params.append(pname if isinstance(node.type, ModuleType) else f"{pname}: {annotation(node.type)}")
    out = [n for n in graph.nodes if n.op == "output"]
    result = out[0].args[0] if out else None
    ret_type = annotation(result.type) if isinstance(result, Node) else "Any"
    coder.block(graph, "  ")
    coder.emit(f"return {_bare(coder.expr(result))}", "  ")
    return f"def {name}({', '.join(params)}) -> {ret_type}:\n" + "\n".join(coder.lines) + "\n"
