"""Python source generation for ember.fx graphs (what `Graph.python_code` returns).

    code = graph.python_code("self")
    print(code.src)
    # def forward(self, x):
    #     add = x + 1;  x = None
    #     return add

The text follows torch.fx 2.13: infix operators, `;  a = b = None` after a value's last use,
`getattr(self.layers, "0")` for non-identifier attribute paths, and (verbose) `# File: f.py:9 in fn,
code: ...` comments and `"f32[4, 4]"` annotations from node.meta.
"""
from __future__ import annotations

import builtins
import dataclasses
import enum
import keyword
import linecache
import math
import operator
import re
import sys
import types
from typing import Any, Callable

from .node import Node, _get_qualified_name, _is_operator_handle

# ------------------------------------------------------------------------------------------
# unique, legal Python names (for nodes and for globals)
# ------------------------------------------------------------------------------------------
_NAME_RE = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")
_ILLEGAL_CHARS = re.compile("[^0-9a-zA-Z_]+")
_SNAKE = re.compile(r"(?<=[a-z])([A-Z])")

_CUSTOM_BUILTINS = ("inf", "nan", "NoneType", "ember", "device", "operator")
# names generated code must not shadow: keywords, builtins, and the globals every function gets
_RESERVED: dict = {k: object() for k in keyword.kwlist + list(_CUSTOM_BUILTINS)}
_RESERVED.update(builtins.__dict__)


def _custom_builtins() -> dict:
    """Globals every generated function sees (torch registers the same set for `torch`)."""
    import ember
    return dict(zip(_CUSTOM_BUILTINS, (math.inf, math.nan, type(None), ember, ember.device, operator)))


def snake_case(s: str) -> str:
    """`pascalCase` -> `pascal_case`, `add.Tensor` stays for the caller to sanitise.

        snake_case("MyModule")   # 'my_module'
    """
    return _SNAKE.sub(r"_\1", s).lower()


class Namespace:
    """Hands out unique identifiers: `add`, `add_1`, ...; never a keyword or a builtin's name
    (unless the object is that builtin), so `sum` becomes `sum_1`.

        ns = Namespace(); ns.create_name("add", None), ns.create_name("add", None)   # 'add', 'add_1'
    """

    def __init__(self):
        self._obj_to_name: dict = {}
        self._used: set = set()
        self._base_count: dict = {}

    def create_name(self, candidate: str, obj: Any) -> str:
        if obj is not None and _hashable(obj) and obj in self._obj_to_name:
            return self._obj_to_name[obj]
        match = _NAME_RE.match(candidate)
        if match is None:
            candidate = _ILLEGAL_CHARS.sub("_", candidate) or "_unnamed"
            if candidate[0].isdigit():
                candidate = f"_{candidate}"
            match = _NAME_RE.match(candidate)
        base, num = match.group(1, 2)
        if num is None or candidate in self._used:
            num = self._base_count.get(base, 0)
            if _RESERVED.get(candidate, obj) is not obj:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num)
        while candidate in self._used:
            num += 1
            candidate = f"{base}_{num}"
        self._used.add(candidate)
        self._base_count[base] = num
        if obj is not None and _hashable(obj):
            self._obj_to_name[obj] = candidate
        return candidate

    def reserve(self, name: str, obj: Any) -> None:
        """Take `name` as it is, for `obj` (a global every generated function has)."""
        self._used.add(name)
        if _hashable(obj):
            self._obj_to_name[obj] = name

    def associate_name_with_obj(self, name: str, obj: Any) -> None:
        self._obj_to_name[obj] = name

    def discard(self, name: str) -> None:
        self._used.discard(name)


def _hashable(obj) -> bool:
    try:
        hash(obj)
        return True
    except TypeError:
        return False


def target_to_str(target: Any) -> str:
    """The name hint a node gets from its target: `add`, `sum`, `add_tensor`, `layers.0`."""
    if _is_operator_handle(target):
        rest = target.name.split("::", 1)[1]
        op = rest if "." in rest else f"{rest}.default"
    elif callable(target):
        op = target.__name__
    else:
        op = target
        if op.startswith("__") and op.endswith("__") and len(op) > 4:
            op = op[2:-2]
    return snake_case(op)


# ------------------------------------------------------------------------------------------
# operators printed infix
# ------------------------------------------------------------------------------------------
_REFLECTABLE = {"add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}",
                "truediv": "{} / {}", "div": "{} / {}", "mod": "{} % {}", "pow": "{} ** {}",
                "lshift": "{} << {}", "rshift": "{} >> {}", "and_": "{} & {}", "or_": "{} | {}",
                "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}"}
MAGIC_METHODS = {"eq": "{} == {}", "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}", "le": "{} <= {}",
                 "ge": "{} >= {}", "pos": "+{}", "neg": "-{}", "invert": "~{}", **_REFLECTABLE}
INPLACE_METHODS = {"iadd": "{} += {}", "iand": "{} &= {}", "ifloordiv": "{} //= {}", "ilshift": "{} <<= {}",
                   "imod": "{} %= {}", "imul": "{} *= {}", "imatmul": "{} @= {}", "ior": "{} |= {}",
                   "ipow": "{} **= {}", "irshift": "{} >>= {}", "isub": "{} -= {}",
                   "itruediv": "{} /= {}", "ixor": "{} ^= {}", "setitem": "{}[{}] = {}"}

DTYPE_ABBRS = {"bfloat16": "bf16", "float64": "f64", "float32": "f32", "float16": "f16",
               "complex32": "c32", "complex64": "c64", "complex128": "c128", "int8": "i8",
               "int16": "i16", "int32": "i32", "int64": "i64", "bool": "b8", "uint8": "u8",
               "uint16": "u16", "uint32": "u32", "uint64": "u64"}


def dtype_abbr(dtype) -> str:
    """`ember.float32` -> `f32` (torch.fx's dtype_abbrs)."""
    name = str(dtype).rsplit(".", 1)[-1]
    return DTYPE_ABBRS.get(name, name)


@dataclasses.dataclass
class PythonCode:
    """Source of the generated function, the globals it needs, and its line -> node-index map
    (lines counted from the ``def`` line as 1; `_nodes` are the emitted nodes the map indexes)."""
    src: str
    globals: dict
    _lineno_map: dict | None = None
    _nodes: list | None = None

    def node_at(self, lineno: int) -> Node | None:
        """The node whose statement is at line `lineno` of `src` (for tracebacks of the compiled source)."""
        idx = (self._lineno_map or {}).get(lineno - _SRC_PREFIX.count("\n"))
        return None if idx is None or self._nodes is None else self._nodes[idx]


@dataclasses.dataclass(frozen=True)
class CodegenOptions:
    """How a caller shapes the generated function; the defaults make GraphModule's ``forward``.

    - `fn_name`: the function's name.
    - `positional_inputs`: no ``self``; the graph's inputs are positional parameters named like
      their nodes (the jit's plans), instead of ``forward(self, <placeholder targets>)``.
    - `free_values`: ``;  x = None`` after a value's last use.
    - `embed_objects`: a constant that is not a Python literal (a tensor, a dtype, any object)
      becomes a global of the function instead of its repr (an error for tensors otherwise).
    - `emit_call(node, ctx) -> list of lines | None`: the node-level hook for call_function and
      call_method nodes; None keeps the default text. `ctx` offers ``repr(value)``,
      ``args(args, kwargs)``, ``add_global(name_hint, obj) -> name`` and ``temp(hint) -> name``.
    - `on_error(exception, node)`: called when the body raises, with the node whose statement
      raised (None if unknown), before the exception propagates (a try/except costs nothing
      until it catches).
    """
    fn_name: str = "forward"
    positional_inputs: bool = False
    free_values: bool = True
    embed_objects: bool = False
    emit_call: Callable | None = None
    on_error: Callable | None = None


_SRC_PREFIX = "\n\n\n"
_LITERAL_TYPES = (int, float, bool, str, type(None))


def format_target(base: str, target: str) -> str:
    """`self` + `layers.0.weight` -> `getattr(self.layers, "0").weight`."""
    result = base
    for elem in target.split("."):
        result = f"{result}.{elem}" if elem.isidentifier() else f'getattr({result}, "{elem}")'
    return result


def parse_stack_trace(stack_trace: str | None) -> str | None:
    """The innermost frame as torch prints it: `File: /x.py:9 in fn, code: return a + b`."""
    if not stack_trace:
        return None
    pattern = re.compile(r'^File "(.+)", line (\d+), in (.+)$')
    lines = stack_trace.strip().split("\n")
    for idx in range(len(lines) - 2, -1, -1):
        m = pattern.match(lines[idx].strip())
        if m:
            return f"File: {m.group(1)}:{m.group(2)} in {m.group(3)}, code: {lines[idx + 1].strip()}"
    return None


def _meta_annotation(node: Node) -> str:
    """`: "f32[4, 4]"` from meta["val"]; empty when unknown."""
    from ember._core.tensor import Tensor
    val = node.meta.get("val")
    if isinstance(val, Tensor):
        return f': "{dtype_abbr(val.dtype)}[{", ".join(str(s) for s in val.shape)}]"'
    return ""


def generate_python_code(graph, root_module: str = "self", *, verbose: bool = False,
                         options: CodegenOptions = CodegenOptions()) -> PythonCode:
    """Build `def forward(self, ...)` for `graph` (see module docstring).

    Nodes holding blocks become statements: ``prim::If`` an ``if``/``else`` assigning its output
    nodes, ``prim::Loop`` a ``for i in range(n)`` (its conditions constant True) or a ``while``
    loop carrying its block's parameters; ``prim::Constant`` values are written where they are read.

        generate_python_code(graph).src
    """
    if sys.modules.get(f"{__package__}.prim") is None and not any(n.blocks for n in graph.nodes):
        # no graph holds a prim op before ember.fx.prim is first imported: plain nodes, and the
        # compiler's warm start does not import prim, blocks and the op-properties table (~2 ms)
        all_nodes, control_flow = list(graph.nodes), ()

        def is_constant(node):
            return False
    else:
        from . import prim
        from .blocks import block_params, block_returns, is_constant, num_outputs, output_getitems, walk
        all_nodes, control_flow = list(walk(graph)), (prim.If, prim.Loop)
    namespace = Namespace()
    globals_: dict = {}

    def add_global(name_hint: str, obj: Any) -> str:
        if name_hint.startswith("ember.") or name_hint == "ember":
            return name_hint  # reached through the `ember` global
        if name_hint.startswith("operator."):
            return name_hint
        gname = namespace.create_name(name_hint, obj)
        if gname in globals_ and globals_[gname] is not obj:
            raise AssertionError(f"fx codegen: global {gname} already names another object")
        globals_[gname] = obj
        return gname

    for name, obj in _custom_builtins().items():
        namespace.reserve(name, obj)
        globals_[name] = obj
    for node in all_nodes:  # node names are taken first: globals never shadow them
        namespace.create_name(node.name, None)
    temps: dict = {}

    def temp(hint: str) -> str:
        """One local name per hint, unused by nodes and globals."""
        if hint not in temps:
            temps[hint] = namespace.create_name(hint, None)
        return temps[hint]

    def is_true(arg) -> bool:
        return arg is True or (is_constant(arg) and arg.args[0] is True)

    def get_repr(arg: Any) -> str:
        if is_constant(arg):
            text = get_repr(arg.args[0])
            return f"({text})" if text.startswith("-") else text   # -1 ** 2 is not (-1) ** 2
        if isinstance(arg, Node):
            return arg.name
        if isinstance(arg, tuple) and hasattr(arg, "_fields"):
            cls = type(arg)
            return f"{add_global(_get_qualified_name(cls), cls)}{tuple(arg)!r}"
        if _is_operator_handle(arg):
            return add_global(_get_qualified_name(arg), arg)
        if isinstance(arg, enum.Enum):
            return f"{add_global(type(arg).__name__, type(arg))}.{arg.name}"
        if isinstance(arg, tuple):
            return f"({get_repr(arg[0])},)" if len(arg) == 1 else "(" + ", ".join(get_repr(a) for a in arg) + ")"
        if isinstance(arg, list):
            return "[" + ", ".join(get_repr(a) for a in arg) + "]"
        if isinstance(arg, dict):
            return "{" + ", ".join(f"{get_repr(k)}: {get_repr(v)}" for k, v in arg.items()) + "}"
        if isinstance(arg, slice):
            return f"slice({get_repr(arg.start)}, {get_repr(arg.stop)}, {get_repr(arg.step)})"
        if isinstance(arg, type) or (callable(arg) and hasattr(arg, "__name__") and not hasattr(arg, "shape")):
            return add_global(_get_qualified_name(arg), arg)
        if isinstance(arg, float) and (math.isinf(arg) or math.isnan(arg)):
            return repr(arg) if not math.isinf(arg) else ("inf" if arg > 0 else "-inf")
        if options.embed_objects and type(arg) not in _LITERAL_TYPES:
            return add_global("_const", arg)
        from ember._core.tensor import Tensor
        if isinstance(arg, Tensor):
            raise NotImplementedError("fx codegen: a Tensor constant inside node args cannot be printed as "
                                      "code; register it as an attribute and use get_attr")
        return repr(arg)

    def format_args(args, kwargs) -> str:
        parts = [get_repr(a) for a in args]
        parts += [f"{k} = {get_repr(v)}" if k.isidentifier() and not keyword.iskeyword(k)
                  else f"**{{{k!r}: {get_repr(v)}}}" for k, v in kwargs.items()]
        return ", ".join(parts)

    def is_folded_output(node: Node) -> bool:
        """A getitem reading an output of an If/Loop: assigned by the block statement."""
        return node.op == "call_function" and node.target is operator.getitem and \
            isinstance(node.args[0], Node) and bool(node.args[0].blocks) and isinstance(node.args[1], int)

    def reads_whole(node: Node) -> bool:
        return any(not (u.target is operator.getitem and u.args[0] is node and isinstance(u.args[1], int))
                   for u in node.users)

    def has_value(node: Node) -> bool:
        """False for nodes whose value is never a local: constants, If/Loop read through getitems;
        and for a block's parameters (a loop's state: its trip count and carried values)."""
        return not is_constant(node) and not (node.blocks and not reads_whole(node)) and \
            not (node.op == "placeholder" and node.graph is not graph)

    ctx = types.SimpleNamespace(repr=get_repr, args=format_args, add_global=add_global, temp=temp)

    # the last use of each value, per graph level: a use inside a block counts as a use by the
    # node holding the block, at the level where the value is defined
    user_to_last_uses: dict = {}
    if options.free_values:
        for level in [graph] + [b for n in all_nodes for b in n.blocks]:
            seen: set = set()
            for node in reversed(level.nodes):
                uses = list(node.all_input_nodes)
                for block in node.blocks:
                    uses += [i for inner in walk(block) for i in inner.all_input_nodes]
                for inp in uses:
                    if inp.graph is level and inp not in seen and has_value(inp):
                        seen.add(inp)
                        user_to_last_uses.setdefault(node, []).append(inp)

    body: list = []
    free_vars: list = []
    emitted: list = []
    prev_summary = [None]

    def delete_unused_values(user: Node) -> None:
        if user.op == "placeholder":
            return
        if user.op == "output":
            body.append("\n")
            return
        to_delete = list(user_to_last_uses.get(user, []))
        if options.free_values and not user.users and has_value(user):
            to_delete.append(user)  # an impure node nobody reads: free its result at once
        if to_delete:
            body.append(f";  {' = '.join([n.name for n in to_delete] + ['None'])}\n")
        else:
            body.append("\n")

    def stack_trace_summary(node: Node, indent: str) -> None:
        if node.op in ("placeholder", "output"):
            return
        summary = parse_stack_trace(node.stack_trace) or "No stacktrace found for following nodes"
        text = f"\n{indent}# {summary}\n"
        if text != prev_summary[0]:
            prev_summary[0] = text
            body.append(text)

    def emit(node: Node, indent: str) -> None:
        ann = _meta_annotation(node) if verbose else ""
        name = node.name
        if node.op == "placeholder":
            if options.positional_inputs:
                free_vars.append(name)
                return
            default = f" = {get_repr(node.args[0])}" if node.args else ""
            free_vars.append(f"{node.target}{ann}{default}")
            raw = node.target.replace("*", "")
            if raw != name:
                body.append(f"{name} = {raw}\n")
            return
        if options.emit_call is not None and node.op in ("call_function", "call_method"):
            lines = options.emit_call(node, ctx)
            if lines is not None:
                body.append(("\n" + indent).join(lines))
                return
        if node.op == "call_method":
            recv = get_repr(node.args[0])
            recv = recv if isinstance(node.args[0], Node) and not is_constant(node.args[0]) else f"({recv})"
            body.append(f"{name}{ann} = {format_target(recv, node.target)}"
                        f"({format_args(node.args[1:], node.kwargs)})")
            return
        if node.op == "call_function":
            target = node.target
            fn_name = getattr(target, "__name__", None)
            if getattr(target, "__module__", "") == "_operator" and fn_name in MAGIC_METHODS and not node.kwargs:
                operands = [get_repr(a) for a in node.args]
                if fn_name == "pow" and not isinstance(node.args[0], Node) and operands[0].startswith("-"):
                    operands[0] = f"({operands[0]})"
                body.append(f"{name}{ann} = {MAGIC_METHODS[fn_name].format(*operands)}")
                return
            if getattr(target, "__module__", "") == "_operator" and fn_name in INPLACE_METHODS and not node.kwargs:
                body.append(f"{INPLACE_METHODS[fn_name].format(*(get_repr(a) for a in node.args))};  "
                            f"{name}{ann} = {get_repr(node.args[0])}")
                return
            gname = add_global(_get_qualified_name(target), target)
            if (gname == "getattr" and len(node.args) == 2 and isinstance(node.args[1], str)
                    and node.args[1].isidentifier()):
                body.append(f"{name}{ann} = {format_target(get_repr(node.args[0]), node.args[1])}")
                return
            body.append(f"{name}{ann} = {gname}({format_args(node.args, node.kwargs)})")
            return
        if node.op == "call_module":
            body.append(f"{name}{ann} = {format_target(root_module, node.target)}({format_args(node.args, node.kwargs)})")
            return
        if node.op == "get_attr":
            body.append(f"{name}{ann} = {format_target(root_module, node.target)}")
            return
        if node.op == "output":
            body.append(f"return {get_repr(node.args[0])}")
            return
        raise NotImplementedError(f"fx codegen: node {node.name} has unknown op {node.op!r}")

    def output_names(node: Node) -> list:
        """Per output of an If/Loop, the names it is assigned to (a temporary where the tuple is read
        whole and no getitem reads that output)."""
        items, whole = output_getitems(node), reads_whole(node)
        names = []
        for i in range(num_outputs(node)):
            found = [g.name for g in items.get(i, [])]
            names.append(found or ([temp(f"{node.name}_{i}")] if whole else []))
        return names

    def assign(indent: str, targets: list, values: list) -> None:
        """One parallel assignment `a, b = x, y` (identity pairs dropped)."""
        pairs = [(t, v) for t, v in zip(targets, values) if t != v]
        if pairs:
            body.append(f"{indent}{', '.join(t for t, _ in pairs)} = {', '.join(v for _, v in pairs)}\n")

    def emit_block(block, indent: str, tail) -> None:
        start = len(body)
        emit_nodes(block, indent)
        tail()
        if not any(line.strip() and not line.strip().startswith("#") for line in "".join(body[start:]).split("\n")):
            body.append(f"{indent}pass\n")

    def emit_if(node: Node, indent: str) -> None:
        names = output_names(node)
        body.append(f"{indent}if {get_repr(node.args[0])}:\n")
        for i, block in enumerate(node.blocks):
            if i:
                body.append(f"{indent}else:\n")
            rets = block_returns(block)

            def tail(rets=rets, inner=indent + "    "):
                for targets, value in zip(names, rets):
                    if targets:
                        body.append(f"{inner}{' = '.join(targets)} = {get_repr(value)}\n")
            emit_block(block, indent + "    ", tail)
        finish_outputs(node, names, indent, [])

    def emit_loop(node: Node, indent: str) -> None:
        loop_body = node.blocks[0]
        max_trips, start_cond, *init = node.args
        trip, *carried = [p.name for p in block_params(loop_body)]
        cond, *nexts = [get_repr(r) for r in block_returns(loop_body)]
        inner = indent + "    "
        assign(indent, carried, [get_repr(v) for v in init])
        if is_true(start_cond) and is_true(block_returns(loop_body)[0]):
            body.append(f"{indent}for {trip} in range({get_repr(max_trips)}):\n")
            emit_block(loop_body, inner, lambda: assign(inner, carried, nexts))
        else:
            flag = temp(f"{node.name}_cond")
            # a `while` statement's loop has the largest int64 as its trip count: no bound to test
            bound = "" if is_constant(max_trips) and max_trips.args[0] == 2 ** 63 - 1 else \
                f" and {trip} < {get_repr(max_trips)}"
            body.append(f"{indent}{trip} = 0\n")
            body.append(f"{indent}{flag} = {get_repr(start_cond)}\n")
            body.append(f"{indent}while {flag}{bound}:\n")

            def tail():
                assign(inner, [flag] + carried, [cond] + nexts)
                body.append(f"{inner}{trip} += 1\n")
            emit_block(loop_body, inner, tail)
        finish_outputs(node, output_names(node), indent, carried)

    def finish_outputs(node: Node, names: list, indent: str, carried: list) -> None:
        for targets, value in zip(names, carried):   # a loop's outputs are its carried values
            if targets:
                body.append(f"{indent}{' = '.join(targets)} = {value}\n")
        if reads_whole(node):   # something other than the getitems reads the tuple
            body.append(f"{indent}{node.name} = ({', '.join(t[0] for t in names)},)\n")

    def emit_nodes(g, indent: str) -> None:
        for node in g.nodes:
            if node.graph is not graph and node.op in ("placeholder", "output"):
                continue   # a block's parameters and returns belong to the statement holding it
            if is_constant(node) or is_folded_output(node):
                continue
            if verbose:
                stack_trace_summary(node, indent)
            body.append(f"{indent}# COUNTER: {len(emitted)}\n")
            emitted.append(node)
            if node.op == "call_function" and node.target in control_flow:
                (emit_if if node.target is control_flow[0] else emit_loop)(node, indent)
                if user_to_last_uses.get(node):
                    body.append(f"{indent}{' = '.join(n.name for n in user_to_last_uses[node])} = None\n")
            else:
                if indent:
                    body.append(indent)
                emit(node, indent)
                delete_unused_values(node)

    emit_nodes(graph, "")
    if not body or all(b.startswith("# COUNTER") for b in body):
        body.append("pass\n")

    params = free_vars if options.positional_inputs else ["self"] + free_vars
    prologue = f"def {options.fn_name}({', '.join(params)}):"
    lineno_map: dict = {}
    new_lines: list = []
    cur_idx = None
    for line in "".join(body).split("\n"):
        m = re.search(r"# COUNTER: (\d+)", line)
        if m:
            cur_idx = int(m.group(1))
        else:
            new_lines.append((line, cur_idx))
    while new_lines and not new_lines[0][0]:
        new_lines.pop(0)
    code = PythonCode("", globals_, lineno_map, emitted)
    if options.on_error is not None:
        exc, handler, this = temp("_e"), add_global("_on_error", options.on_error), add_global("_code", code)
        new_lines = [("try:", None)] + [("    " + line, idx) for line, idx in new_lines] + [
            (f"except BaseException as {exc}:", None),
            (f"    {handler}({exc}, {this}.node_at({exc}.__traceback__.tb_lineno))", None), ("    raise", None)]
    for i, (_, idx) in enumerate(new_lines):
        lineno_map[i + 2] = idx
    code.src = f"{_SRC_PREFIX}{prologue}\n" + "\n".join("    " + line for line, _ in new_lines)
    return code


def load_function(code: PythonCode, filename: str):
    """Compile `code` under `filename` (registered with linecache, so tracebacks show its lines)
    and return the function it defines."""
    linecache.cache[filename] = (len(code.src), None, code.src.splitlines(True), filename)
    scope = dict(code.globals)
    exec(compile(code.src, filename, "exec"), scope)
    return scope[re.search(r"^def (\w+)\(", code.src, re.M).group(1)]

