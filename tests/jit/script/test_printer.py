"""ember.jit.ir.printer (TorchScript-style graph text) and ember.jit.ir.code (``.code``).

The graphs come from ir_programs (built with the ir helpers as the frontend emits them) and
from ``ember.jit.script``; the text is compared with what
``torch.jit.script(...).graph`` prints for the same program: the op sequence, the block
structure and the value names (numbers and TorchScript-only operands like ``alpha`` aside).
"""
import math
import operator
import re
import typing

import pytest
import torch

import ember
import ember.nn.functional as F
import ir_programs as P
from ember.jit import ir
from ember.jit.ir import prim
from ember.jit.ir.code import format_code
from ember.jit.ir.evaluate import evaluate
from ember.jit.ir.printer import ScriptGraph, format_graph, op_name
from ember.jit.ir.types import (BoolType, FloatType, IntType, ListType, ModuleType, OptionalType, StrType,
                                TensorType, TupleType)

T = TensorType()


def _structure(text: str) -> list:
    """(depth, kind, outputs) per line: ops by name, block headers, block returns, return;
    constants dropped (TorchScript hoists them to the top), value numbers ignored."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.rstrip().endswith("):")) + 1
    out = []
    for line in lines[start:]:
        s = line.split(" # ")[0].strip()
        if not s or "prim::Constant" in s:
            continue
        depth = (len(line) - len(line.lstrip())) // 2
        if s.startswith("block"):
            out.append((depth, "block", s.count(":")))
        elif s.startswith("->"):
            out.append((depth, "->", s.count("%")))
        elif s.startswith("return"):
            out.append((depth, "return", s.count("%")))
        else:
            lhs, rhs = s.split(" = ", 1)
            out.append((depth, re.match(r"[\w:]+", rhs).group(0), lhs.count("%")))
    return out


def _named_lines(text: str) -> list:
    """`%name.N : Type = kind` for every line defining a named (non-numbered) value."""
    found = []
    for line in text.splitlines():
        m = re.match(r"\s*(%[A-Za-z_]\w*\.\d+ : [^=]+) = ([\w:]+)", line)
        if m:
            found.append(f"{m.group(1).strip()} = {m.group(2)}")
    return found


def _torch_seed(a, b):
    c = a + b
    d = c * c
    e = torch.tanh(d * c)
    return d + (e + e)


def _torch_if_loop(x, n: int):
    if bool(x.sum() > 0):
        y = torch.relu(x)
    else:
        y = x * 2.0
    for i in range(n):
        y = y + i
    j = 0
    while j < 3:
        j += 1
        y = y - 1
    return y, j


def test_seed_example_matches_torch_structure_and_names():
    g, _, _ = P.seed()
    text = format_graph(g)
    want = str(torch.jit.script(_torch_seed).graph)
    assert _structure(text) == _structure(want)
    assert _named_lines(text) == _named_lines(want)
    assert text.startswith("graph(%a.1 : Tensor,\n      %b.1 : Tensor):\n")
    assert "%e.1 : Tensor = aten::tanh(%4) # prog.py:7:8" in text
    assert text.rstrip().endswith("return (%7)")


def test_if_loop_program_matches_torch_structure():
    g, _, _ = P.if_loop()
    text = format_graph(g)
    want = str(torch.jit.script(_torch_if_loop).graph)
    assert _structure(text) == _structure(want)
    # multi-output loops print their outputs on one line, blocks their params
    assert re.search(r"%y\.\d+ : Tensor, %j\.\d+ : int = prim::Loop\(", text)
    assert re.search(r"block0\(%i\.1 : int, %y\.\d+ : Tensor\):", text)
    assert "    block1():\n" in text


def test_scripted_programs_match_torch():
    script = ember.jit.script

    def seed(a, b):
        c = a + b
        d = c * c
        e = ember.tanh(d * c)
        return d + (e + e)
    text = str(script(seed).graph)
    want = str(torch.jit.script(_torch_seed).graph)
    assert _structure(text) == _structure(want)
    assert _named_lines(text) == _named_lines(want)


def test_without_locations():
    g, _, _ = P.if_loop()
    assert "#" in format_graph(g)
    assert "#" not in format_graph(g, with_locations=False)
    assert ScriptGraph(g).str(print_source_locations=False) == format_graph(g, with_locations=False)


def _constant_line(value, type_=None) -> str:
    g = ir.new_graph()
    c = ir.constant(g, value, type_)
    g.output(c)
    return format_graph(g).splitlines()[1].strip()


@pytest.mark.parametrize("value", [0.1, 2.0, 1e20, "x", 'a "q"', 3, True, None, -7])
def test_constants_print_like_torch(value):
    cu = torch.jit.CompilationUnit(f"def f():\n    return {value!r}\n")
    want = [line.strip() for line in str(cu.f.graph).splitlines() if "prim::Constant" in line][0]
    norm = lambda s: re.sub(r"%\d+", "%N", s.split(" # ")[0])  # noqa: E731
    assert norm(_constant_line(value)) == norm(want)


def test_target_names():
    g = ir.new_graph()
    x = g.placeholder("x", type_expr=T)
    xs = g.placeholder("xs", type_expr=ListType(IntType()))
    m = g.placeholder("self", type_expr=ModuleType("M"))
    cases = [
        (ember.tanh, (x,), "aten::tanh"), (F.relu, (x,), "aten::relu"), (operator.add, (x, x), "aten::add"),
        (operator.truediv, (x, x), "aten::div"), (operator.mod, (x, x), "aten::remainder"),
        (operator.getitem, (xs, 0), "aten::__getitem__"), (operator.not_, (True,), "aten::__not__"),
        (operator.is_, (x, None), "aten::__is__"), (operator.is_not, (x, None), "aten::__isnot__"),
        (operator.contains, (xs, 1), "aten::__contains__"), (operator.matmul, (x, x), "aten::matmul"),
        (operator.floordiv, (x, x), "aten::floordiv"), (operator.neg, (x,), "aten::neg"),
        (len, (xs,), "aten::len"), (int, (x,), "aten::Int"), (float, (x,), "aten::Float"),
        (bool, (x,), "aten::Bool"), (min, (xs,), "prim::min"), (max, (xs,), "prim::max"),
        (math.sqrt, (2.0,), "aten::sqrt"), (getattr, (x, "dtype"), "prim::dtype"),
        (ember.ops.aten.add.Tensor, (x, x), "aten::add"), (prim.ListConstruct, (x,), "prim::ListConstruct"),
        ("view", (x, -1), "aten::view"), ("append", (xs, 1), "aten::append"),
    ]
    nodes = [ir.call(g, target, args, type_=T) for target, args, _ in cases]
    assert [op_name(n) for n in nodes] == [want for _, _, want in cases]
    ga = ir.call(g, prim.GetAttr, (m, "weight"), type_=T)
    cm = ir.call(g, prim.CallMethod, (m, "forward", x), type_=T)
    g.output(ga)
    text = format_graph(g)
    assert re.search(r'%\d+ : Tensor = prim::GetAttr\[name="weight"\]\(%self\)', text)
    assert re.search(r'%\d+ : Tensor = prim::CallMethod\[name="forward"\]\(%self, %x\.1\)', text)
    assert re.search(r"%\d+ : Tensor = prim::dtype\(%x\.1\)", text)  # the attribute name is not an operand
    assert cm.name and "%self : __torch__.M" in text


def test_multi_output_if_and_unused_outputs():
    g = ir.new_graph()
    c = g.placeholder("c", type_expr=BoolType())
    x = g.placeholder("x", type_expr=T)
    node, (a, b) = ir.add_if(g, c, [T, IntType()])
    a.meta["jit_name"] = "a"
    for blk in node.blocks:
        ir.set_block_returns(blk, [x, ir.constant(blk, 1)])
    g.output(a)   # b unused: still printed as an output of the If
    text = format_graph(g)
    assert re.search(r"  %a\.1 : Tensor, %\d+ : int = prim::If\(%c\.1\)\n", text)
    assert text.count("-> (%x.1, %") == 2


def test_script_graph_wrapper():
    g, _, _ = P.seed()
    sg = ScriptGraph(g)
    assert str(sg) == repr(sg) == format_graph(g)
    assert sg.fx_graph is g
    kinds = [op_name(n) for n in sg.nodes()]
    assert kinds == ["aten::add", "aten::mul", "aten::mul", "aten::tanh", "aten::add", "aten::add"]
    assert [n.target for n in sg.inputs()] == ["a", "b"]
    g2, _, _ = P.if_loop()
    assert len(ScriptGraph(g2).findAllNodes("prim::Loop")) == 2
    assert len(ScriptGraph(g2).findAllNodes("aten::relu")) == 1   # found inside a block


# ---------------------------------------------------------------------------------------------
# .code
# ---------------------------------------------------------------------------------------------
def _run_code(code: str, name: str, *args):
    scope = {"ember": ember, "math": math, "Tensor": ember.Tensor, "Tuple": typing.Tuple, "List": typing.List,
             "Optional": typing.Optional, "Dict": typing.Dict}
    exec(compile(code, "<code>", "exec"), scope)  # noqa: S102  (our own generated text)
    return scope[name](*args)


def test_code_seed_reads_like_python_and_runs():
    g, _, eager = P.seed()
    code = format_code(g, "forward")
    assert code.splitlines()[0] == "def forward(a: Tensor, b: Tensor) -> Tensor:"
    assert "ember.tanh(" in code and "aten" not in code
    a, b = ember.randn(4), ember.randn(4)
    assert ember.allclose(_run_code(code, "forward", a, b), eager(a, b))


@pytest.mark.parametrize("builder,args", [
    (P.if_loop, lambda: (ember.randn(5), 4)), (P.if_loop, lambda: (-ember.rand(5), 0)),
    (P.misc, lambda: (ember.randn(6), 7)),
])
def test_code_control_flow_runs_like_the_graph(builder, args):
    g, schema, eager = builder()
    code = format_code(g, schema.name)
    inputs = args()
    got, want = _run_code(code, schema.name, *inputs), evaluate(g, list(inputs))
    for x, y in zip(got, want):
        assert (ember.allclose(x, y) if isinstance(x, ember.Tensor) else x == y)
    if builder is P.if_loop:
        # fx's writer (the one Python writer) names values after their nodes
        assert "    if bool_1:" in code and "    else:" in code
        assert "    for i in range(n):" in code and "    while loop_1_cond:" in code


def test_code_module_method_and_raise():
    g, _ = P.cell_graph()
    code = format_code(g)
    assert code.startswith("def forward(self, x: Tensor, h: Tensor) -> Tensor:")
    assert "self.lin" in code and "ember.nn.functional.linear(" in code
    cell = P.Cell()
    x, h = ember.randn(3), ember.randn(3)
    assert ember.allclose(_run_code(code, "forward", cell, x, h), cell(x, h))
    g2, _, _ = P.raises()
    code2 = format_code(g2, "f")
    assert "raise ValueError('k must be positive')" in code2
    with pytest.raises(ValueError, match="k must be positive"):
        _run_code(code2.replace("uninitialized(Tensor)", "None"), "f", ember.ones(2), -1)


def test_code_while_with_bounded_trip_count():
    g = ir.new_graph()
    n = g.placeholder("n", type_expr=IntType())
    start = g.placeholder("go", type_expr=BoolType())
    loop, (acc,) = ir.add_loop(g, n, start, [ir.constant(g, 0)], [IntType()])
    body = loop.blocks[0]
    i, a = ir.block_params(body)
    nxt = ir.call(body, operator.add, (a, i), type_=IntType())
    ir.set_block_returns(body, [ir.call(body, operator.lt, (nxt, 10), type_=BoolType()), nxt])
    g.output(acc)
    code = format_code(g, "f")
    assert "while loop_cond and i < n:" in code
    for args in [(3, True), (100, True), (5, False)]:
        assert _run_code(code, "f", *args) == evaluate(g, list(args))


def test_code_types_in_signature():
    g = ir.new_graph()
    g.placeholder("xs", type_expr=ListType(IntType()))
    g.placeholder("s", type_expr=StrType())
    y = g.placeholder("y", type_expr=OptionalType(FloatType()))
    g.output(ir.call(g, prim.TupleConstruct, (y, y), type_=TupleType((OptionalType(FloatType()),) * 2)))
    head = format_code(g, "h").splitlines()[0]
    assert head == "def h(xs: List[int], s: str, y: Optional[float]) -> Tuple[Optional[float], Optional[float]]:"


def test_profile_typecheck_and_fusion_group_print():
    g = ir.new_graph()
    x = g.placeholder("x", type_expr=T)
    p = ir.call(g, prim.profile, (x,), type_=T)
    p.meta["val"] = ember.empty(2, 3, device="meta")
    tc = ir.call(g, prim.TypeCheck, (x,), type_=BoolType())
    tc.meta["types"] = [TensorType(ember.float32, (2, 3), False)]
    sub, _, _ = P.seed()
    fg = ir.call(g, prim.FusionGroup, (p, x), type_=T)
    fg.meta["subgraph"] = sub
    g.output(fg)
    text = format_graph(g, with_locations=False)
    assert "prim::profile[profiled_type=Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)](%x.1)" in text
    assert "prim::TypeCheck[types=[Float(2, 3, requires_grad=0)]](%x.1)" in text
    assert "= prim::FusionGroup_0(%1, %x.1)" in text
    assert "with prim::FusionGroup_0 = graph(%a.1 : Tensor,\n" in text
    assert "\n    %e.1 : Tensor = aten::tanh(%4)\n" in text


_LOOP_IF_SRC = '''
def prog(x, n: int):
    y = x
    for i in range(n):
        if i > 1:
            y = T.relu(y)
        else:
            y = y * 2.0
    return y
'''


def test_scripted_loop_if_matches_torch_structure(tmp_path):
    script = ember.jit.script
    import importlib.util
    path = tmp_path / "loop_if_prog.py"
    path.write_text("import ember as T\n" + _LOOP_IF_SRC)
    spec = importlib.util.spec_from_file_location("loop_if_prog", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    text = str(script(mod.prog).graph)
    want = str(torch.jit.CompilationUnit(_LOOP_IF_SRC.replace("T.", "torch.")).prog.graph)
    assert _structure(text) == _structure(want)
    assert re.search(r"block0\(%i\.1 : int, %y\.\d+ : Tensor\):", text)
    assert re.search(r"%y\.\d+ : Tensor = aten::relu\(%y\.\d+\) # .*loop_if_prog\.py:7:16", text)
