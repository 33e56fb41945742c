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
import math
import re
from typing import Any

from .node import Node, _get_qualified_name, _is_operator_handle

# ------------------------------------------------------------------------------------------
# unique, legal Python names (for nodes and for globals)
# ------------------------------------------------------------------------------------------
_NAME_RE = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")
_ILLEGAL_CHARS = re.compile("[^0-9a-zA-Z_]+")
_SNAKE = re.compile(r"(?<=[a-z])([A-Z])")

# names generated code must not shadow: keywords, builtins, and the globals every module gets
_RESERVED: dict = {k: object() for k in keyword.kwlist}
_RESERVED.update(builtins.__dict__)


def _custom_builtins() -> dict:
    """Globals every generated function sees (torch registers the same set for `torch`)."""
    import ember
    import operator
    return {"inf": math.inf, "nan": math.nan, "NoneType": type(None), "ember": ember,
            "device": ember.device, "operator": operator}


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
    """Source of the generated function, the globals it needs, and its line -> node-index map."""
    src: str
    globals: dict
    _lineno_map: dict | None = None


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


def generate_python_code(graph, root_module: str = "self", *, verbose: bool = False) -> PythonCode:
    """Build `def forward(self, ...)` for `graph` (see module docstring).

        generate_python_code(graph).src
    """
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
        globals_[namespace.create_name(name, obj)] = obj
    for node in graph.nodes:  # node names are taken first: globals never shadow them
        namespace.create_name(node.name, None)

    def get_repr(arg: Any) -> str:
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
        from ember._core.tensor import Tensor
        if isinstance(arg, Tensor):
            raise NotImplementedError("fx codegen: a Tensor constant inside node args cannot be printed as "
                                      "code; register it as an attribute and use get_attr")
        return repr(arg)

    def format_args(args, kwargs) -> str:
        parts = [get_repr(a) for a in args] + [f"{k} = {get_repr(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    nodes = list(graph.nodes)
    last_use: dict = {}
    user_to_last_uses: dict = {}
    for node in reversed(nodes):
        for inp in node.all_input_nodes:
            if inp not in last_use:
                last_use[inp] = node
                user_to_last_uses.setdefault(node, []).append(inp)

    body: list = []
    free_vars: list = []
    prev_summary = [None]

    def delete_unused_values(user: Node) -> None:
        if user.op == "placeholder":
            return
        if user.op == "output":
            body.append("\n")
            return
        to_delete = list(user_to_last_uses.get(user, []))
        if not user.users:
            to_delete.append(user)  # an impure node nobody reads: free its result at once
        if to_delete:
            body.append(f";  {' = '.join([n.name for n in to_delete] + ['None'])}\n")
        else:
            body.append("\n")

    def stack_trace_summary(node: Node) -> None:
        if node.op in ("placeholder", "output"):
            return
        summary = parse_stack_trace(node.stack_trace) or "No stacktrace found for following nodes"
        text = f"\n# {summary}\n"
        if text != prev_summary[0]:
            prev_summary[0] = text
            body.append(text)

    def emit(node: Node) -> None:
        ann = _meta_annotation(node) if verbose else ""
        name = node.name
        if node.op == "placeholder":
            default = f" = {get_repr(node.args[0])}" if node.args else ""
            free_vars.append(f"{node.target}{ann}{default}")
            raw = node.target.replace("*", "")
            if raw != name:
                body.append(f"{name} = {raw}\n")
            return
        if node.op == "call_method":
            body.append(f"{name}{ann} = {format_target(get_repr(node.args[0]), node.target)}"
                        f"({format_args(node.args[1:], node.kwargs)})")
            return
        if node.op == "call_function":
            target = node.target
            fn_name = getattr(target, "__name__", None)
            if getattr(target, "__module__", "") == "_operator" and fn_name in MAGIC_METHODS and not node.kwargs:
                body.append(f"{name}{ann} = {MAGIC_METHODS[fn_name].format(*(get_repr(a) for a in node.args))}")
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

    lineno_map: dict = {}
    for i, node in enumerate(nodes):
        if verbose:
            stack_trace_summary(node)
        body.append(f"# COUNTER: {i}\n")
        emit(node)
        delete_unused_values(node)
    if not body or all(b.startswith("# COUNTER") for b in body):
        body.append("pass\n")

    prologue = f"def forward({', '.join(['self'] + free_vars)}):"
    new_lines: list = []
    cur_idx = None
    for line in "".join(body).split("\n"):
        m = re.search(r"# COUNTER: (\d+)", line)
        if m:
            cur_idx = int(m.group(1))
        else:
            lineno_map[len(new_lines) + 2] = cur_idx
            new_lines.append(line)
    code = "\n".join(new_lines).lstrip("\n")
    code = "\n".join("    " + line for line in code.split("\n"))
    return PythonCode(f"\n\n\n{prologue}\n{code}", globals_, lineno_map)
