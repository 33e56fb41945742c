"""``.code``: Python-like source of a script graph, like TorchScript's ``fn.code``.

    def forward(self, x: Tensor, h: Tensor) -> Tensor:
        tanh = ember.tanh(x)
        if bool_1:
            ...
        for i in range(n):
            ...
        return add

It is written by ember.fx's code generator (`ember.fx._codegen`, the one Python writer: it also
writes ``GraphModule.forward`` and the jit's plans, ``if``/``for``/``while`` from the blocks),
with a hook that spells prim ops as the Python users write (``[a, b]``, ``self.lin``,
``raise ValueError(...)``, ``ember.set_grad_enabled(False)``) and a signature with the script
types. It is for reading; run the program itself to run it.
"""
from __future__ import annotations

from ember.fx.node import Node

from . import callee_name, prim
from .types import ModuleType, py_type_str


# prim op -> its text from (node, argument texts): expressions, then statements (no value)
_PRIM_TEXT = {
    prim.ListConstruct: lambda n, a: "[" + ", ".join(a) + "]",
    prim.TupleConstruct: lambda n, a: "(" + ", ".join(a) + ("," if len(a) == 1 else "") + ")",
    prim.DictConstruct: lambda n, a: "{" + ", ".join(f"{k}: {v}" for k, v in zip(a[0::2], a[1::2])) + "}",
    prim.TupleIndex: lambda n, a: f"{a[0]}[{a[1]}]",
    prim.TupleUnpack: lambda n, a: a[0],
    prim.ListUnpack: lambda n, a: a[0],
    prim.GetAttr: lambda n, a: f"{a[0]}.{n.args[1]}" if n.args[1].isidentifier() else f'getattr({a[0]}, "{n.args[1]}")',
    prim.CallMethod: lambda n, a: f"{a[0]}.{n.args[1]}({', '.join(a[2:])})",
    prim.CallFunction: lambda n, a: f"{callee_name(n) or 'function'}({', '.join(a)})",
    prim.Uninitialized: lambda n, a: f"uninitialized({py_type_str(n.type)})",
    prim.unchecked_cast: lambda n, a: f"unchecked_cast({a[0]})",
    prim.IsGradEnabled: lambda n, a: "ember.is_grad_enabled()",   # `with no_grad():` lowered: save, set, restore
    prim.SetGradEnabled: lambda n, a: f"ember.set_grad_enabled({a[0]})",
    prim.Print: lambda n, a: f"print({', '.join(a)})",
    prim.SetAttr: lambda n, a: f"{a[0]}.{n.args[1]} = {a[2]}",
    prim.RaiseException: lambda n, a: f"raise {n.args[1] if len(n.args) > 1 else 'Exception'}({a[0]})",
}
# operator functions fx's generator writes as ``operator.<name>(...)`` calls
_OPERATOR_TEXT = {"contains": "{1} in {0}", "not_": "not {0}", "is_": "{0} is {1}", "is_not": "{0} is not {1}",
                  "truth": "bool({0})", "abs": "abs({0})"}


def _readable_call(node: Node, ctx):
    t = node.target
    if node.op != "call_function" or not (prim.is_prim(t) or getattr(t, "__module__", None) in ("math", "_operator")):
        return None   # fx's own text: `ember.tanh(x)`, `a + b`, `x.view(-1)`, `len(xs)`
    args = [ctx.repr(a) for a in node.args]
    if prim.is_prim(t):
        text = _PRIM_TEXT[t](node, args) if t in _PRIM_TEXT else f"ops.{t.name.replace('::', '.')}({', '.join(args)})"
    elif t.__module__ == "math":
        text = f"math.{t.__name__}({', '.join(args)})"
    elif t.__name__ in _OPERATOR_TEXT and not node.kwargs:
        text = _OPERATOR_TEXT[t.__name__].format(*args)
    else:
        return None
    return [text if t in (prim.SetAttr, prim.RaiseException) or not node.users else f"{node.name} = {text}"]


def format_code(graph, name: str = "forward") -> str:
    """Python-like source for `graph` (see the module docstring).

        print(format_code(fn._graph, "f"))   # def f(a: Tensor, b: Tensor) -> Tensor: ...
    """
    from ember.fx._codegen import CodegenOptions, generate_python_code
    options = CodegenOptions(fn_name=name, positional_inputs=True, free_values=False, embed_objects=True,
                             emit_call=_readable_call)
    body = generate_python_code(graph, options=options).src.strip().split("\n", 1)[1]
    params = [n.name if isinstance(n.type, ModuleType) else f"{n.name}: {py_type_str(n.type)}"
              for n in graph.nodes if n.op == "placeholder"]
    result = next((n.args[0] for n in graph.nodes if n.op == "output"), None)
    ret_type = py_type_str(result.type) if isinstance(result, Node) else "Any"
    return f"def {name}({', '.join(params)}) -> {ret_type}:\n{body}\n"
