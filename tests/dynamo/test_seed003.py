"""Seed 003's toy_example, run as the seed writes it (``import ember as torch``): the two graphs a
recording backend receives, the guards, the same results as eager for either sign of b.sum(), the
resume functions compiled on their first call, and the logs (tabular graph, ORIGINAL BYTECODE,
MODIFIED BYTECODE, GUARDS) in the seed's shape. Counts and graph contents are also checked
against torch 2.13 running the same source."""
import dis
import importlib.util
import logging
import os
import operator
import re
import tempfile

import numpy as np
import pytest
import torch
import torch._dynamo.testing  # noqa: F401

import ember
from dynamo_harness import assert_close

# The seed's program, verbatim apart from the import line, written to a real file example.py (so
# logs can show its source lines) and imported once per library: `import ember as torch`.
SEED_SOURCE = '''
def toy_example(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b
'''
_SEED_DIR = tempfile.mkdtemp(prefix="seed003_")


def make_toy_example(lib):
    """A fresh toy_example function from <tmp>/<lib>/example.py, whose global `torch` is `lib`."""
    folder = os.path.join(_SEED_DIR, lib.__name__)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "example.py")
    with open(path, "w") as f:
        f.write(f"import {lib.__name__} as torch\n" + SEED_SOURCE)
    spec = importlib.util.spec_from_file_location(f"seed003_example_{lib.__name__}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.toy_example


def inputs(lib, seed, sign):
    """a, b of 10 elements with b.sum() of the given sign."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(10).astype(np.float32)
    b = np.abs(rng.standard_normal(10).astype(np.float32)) * sign
    return lib.from_numpy(a), lib.from_numpy(b)


def resume_offsets(fn):
    """Offsets of the two continuations of `if b.sum() < 0`: the instruction after the conditional jump
    (the branch body, __resume_at_30 in the seed's 3.8 listing) and the jump target (__resume_at_38)."""
    instructions = list(dis.get_instructions(fn))
    for i, inst in enumerate(instructions):
        if "JUMP" in inst.opname and "IF" in inst.opname:
            return instructions[i + 1].offset, inst.argval
    raise AssertionError("no conditional jump in toy_example")


def target_name(node):
    target = node.target
    return target if isinstance(target, str) else getattr(target, "__name__", str(target))


def call_nodes(gm):
    return [(n.op, target_name(n)) for n in gm.graph.nodes if n.op not in ("placeholder", "output")]


def record(lib, signs):
    """Compile the toy example with a recording backend and call it once per sign."""
    lib._dynamo.reset()
    recorder = lib._dynamo.testing.EagerAndRecordGraphs()
    fn = make_toy_example(lib)
    compiled = lib._dynamo.optimize(recorder)(fn)
    for i, sign in enumerate(signs):
        a, b = inputs(lib, i, sign)
        assert_close(compiled(a, b), fn(a, b), f"{lib.__name__} call {i} (sign {sign})")
    return recorder.graphs


# ---- graphs ------------------------------------------------------------------------------------
def test_negative_sum_gives_two_graphs_like_the_seed():
    graphs = record(ember, [-1])
    assert len(graphs) == 2, "the graph before the break and the graph of __resume_at_<body>"
    first, second = graphs
    nodes = list(first.graph.nodes)
    assert [(n.op, n.name) for n in nodes] == [
        ("placeholder", "a"), ("placeholder", "b"), ("call_function", "abs_1"), ("call_function", "add"),
        ("call_function", "truediv"), ("call_method", "sum_1"), ("call_function", "lt"), ("output", "output")]
    assert nodes[2].target is ember.abs
    assert nodes[3].target is operator.add and nodes[3].args == (nodes[2], 1)
    assert nodes[4].target is operator.truediv and nodes[4].args == (nodes[0], nodes[3])
    assert nodes[5].target == "sum" and nodes[5].args == (nodes[1],)
    assert nodes[6].target is operator.lt and nodes[6].args == (nodes[5], 0)
    assert nodes[7].args == ((nodes[4], nodes[6]),)
    # the resume function's graph: b = b * -1; return x * b
    assert call_nodes(second) == [("call_function", "mul"), ("call_function", "mul")]
    assert sorted(n.name for n in second.graph.nodes if n.op == "placeholder") == ["b", "x"]


def test_graph_ops_match_torch():
    """Same sequence of graph ops as torch 2.13 for both branches (node names and output order may differ:
    torch 2.13 names `truediv` after the variable `x`)."""
    for signs in ([-1, 1], [1, -1]):
        ours = [call_nodes(g) for g in record(ember, signs)]
        theirs = [call_nodes(g) for g in record(torch, signs)]
        assert ours == theirs


@pytest.mark.parametrize("sign", [1, -1], ids=["positive", "negative"])
def test_same_results_as_eager_for_either_sign(sign):
    fn = make_toy_example(ember)
    compiled = ember._dynamo.optimize(ember._dynamo.testing.CompileCounter())(fn)
    for seed in range(5):
        a, b = inputs(ember, seed, sign)
        assert_close(compiled(a, b), fn(a, b), f"seed {seed}")


def test_resume_functions_compiled_on_first_call_only():
    """Frame count after each call: the first call compiles the graph and the branch taken; the other
    branch's resume function is compiled on the first call that reaches it, and never again."""
    signs = [-1, -1, 1, 1, -1, 1]
    sequences = {}
    for lib in (torch, ember):
        lib._dynamo.reset()
        counter = lib._dynamo.testing.CompileCounter()
        fn = make_toy_example(lib)
        compiled = lib._dynamo.optimize(counter)(fn)
        seq = []
        for i, sign in enumerate(signs):
            a, b = inputs(lib, 10 + i, sign)
            assert_close(compiled(a, b), fn(a, b), f"{lib.__name__} call {i}")
            seq.append(counter.frame_count)
        sequences[lib.__name__] = seq
    assert sequences["ember"] == sequences["torch"] == [2, 2, 3, 3, 3, 3]


def test_seed_loop_of_100_random_calls():
    """The seed's driver loop: 100 calls on randn inputs; three graphs in all, every result as eager."""
    ember.manual_seed(0)
    counter = ember._dynamo.testing.CompileCounter()
    fn = make_toy_example(ember)
    compiled = ember._dynamo.optimize(counter)(fn)
    for _ in range(100):
        a, b = ember.randn(10), ember.randn(10)
        assert_close(compiled(a, b), fn(a, b))
    assert counter.frame_count == 3


def test_seed_my_compiler_prints_tabular_graphs(capsys):
    """The seed's own backend: my_compiler prints each graph with print_tabular and returns gm.forward."""
    source = '''
from typing import List
import ember as torch
from ember import _dynamo as torchdynamo
def my_compiler(gm: torch.fx.GraphModule, example_inputs: List[torch.Tensor]):
    print("my_compiler() called with FX graph:")
    gm.graph.print_tabular()
    return gm.forward  # return a python callable
@torchdynamo.optimize(my_compiler)
def toy_example(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b
torch.manual_seed(0)
for _ in range(100):
    toy_example(torch.randn(10), torch.randn(10))
'''
    exec(compile(source, "example.py", "exec"), {"__name__": "seed003_example"})
    out = capsys.readouterr().out
    assert out.count("my_compiler() called with FX graph:") == 3
    assert re.search(r"opcode\s+name\s+target\s+args\s+kwargs", out), out
    assert re.search(r"call_method\s+sum_1\s+sum\s+\(b,\)\s+\{\}", out), out


# ---- logs ----------------------------------------------------------------------------------
def captured_logs(capsys, caplog, fn, *args):
    """Everything the compile prints (stdout, stderr, or the logging module) while fn(*args) runs."""
    ember._logging.set_logs(graph=True, graph_code=True, guards=True, bytecode=True)
    try:
        with caplog.at_level(logging.DEBUG):
            fn(*args)
    finally:
        ember._logging.set_logs()
    out = capsys.readouterr()
    return out.out + out.err + "\n".join(r.getMessage() for r in caplog.records)


@pytest.fixture
def toy_logs(capsys, caplog):
    fn = make_toy_example(ember)
    compiled = ember._dynamo.optimize(ember._dynamo.testing.EagerAndRecordGraphs())(fn)
    a, b = inputs(ember, 0, -1)
    return fn, captured_logs(capsys, caplog, compiled, a, b)


def test_logs_show_tabular_graph(toy_logs):
    _, text = toy_logs
    assert re.search(r"__compiled_fn_\d+", text), text
    assert re.search(r"opcode\s+name\s+target\s+args\s+kwargs", text), text
    for row in (r"placeholder\s+a\s+a\s+\(\)\s+\{\}", r"placeholder\s+b\s+b\s+\(\)\s+\{\}",
                r"call_function\s+abs_1\s+.*\(a,\)\s+\{\}", r"call_function\s+add\s+\S+.*\(abs_1, 1\)\s+\{\}",
                r"call_function\s+truediv\s+\S+.*\(a, add\)\s+\{\}", r"call_method\s+sum_1\s+sum\s+\(b,\)\s+\{\}",
                r"call_function\s+lt\s+\S+.*\(sum_1, 0\)\s+\{\}", r"output\s+output\s+output\s+\(\(truediv, lt\),\)\s+\{\}"):
        assert re.search(row, text), f"row {row!r} missing from:\n{text}"


def test_logs_show_original_bytecode(toy_logs):
    fn, text = toy_logs
    match = re.search(r"ORIGINAL BYTECODE toy_example (\S+) (?:line )?(\d+)", text)
    assert match, text
    assert match.group(1) == fn.__code__.co_filename and int(match.group(2)) == fn.__code__.co_firstlineno
    header = text[match.start():text.index("\n", match.start())]
    assert header.count("toy_example") == 1, f"the header names the function once: {header!r}"
    listing = text[match.end():]
    for inst in dis.get_instructions(fn):
        if inst.opname in ("LOAD_FAST", "STORE_FAST", "RETURN_VALUE", "COMPARE_OP"):
            assert re.search(rf"\b{inst.offset}\s+{inst.opname}\b", listing), f"{inst.offset} {inst.opname} missing"


def test_logs_show_modified_bytecode_with_resume_functions(toy_logs):
    fn, text = toy_logs
    start = text.find("MODIFIED BYTECODE")
    assert start >= 0, text
    modified = text[start:]
    assert re.search(r"LOAD_GLOBAL\s+\d+\s+\((NULL \+ )?__compiled_fn_\d+\)", modified), modified
    body, join = resume_offsets(fn)
    assert re.search(rf"__resume_at_{body}_\d+", modified), f"__resume_at_{body}_N missing:\n{modified}"
    assert re.search(rf"__resume_at_{join}_\d+", modified), f"__resume_at_{join}_N missing:\n{modified}"


def test_logs_show_guards(toy_logs):
    _, text = toy_logs
    start = text.find("GUARDS:")
    assert start >= 0, text
    guards = text[start:]
    for line in ("- local 'a' TENSOR_MATCH", "- local 'b' TENSOR_MATCH", "- global 'torch' FUNCTION_MATCH"):
        assert line in guards, f"{line!r} missing from:\n{guards}"


def test_resume_offsets_match_torch():
    """The resume functions torch 2.13 generates for this code object carry the same offsets."""
    fn = make_toy_example(torch)
    torch._dynamo.reset()
    torch._dynamo.optimize("eager")(fn)(*inputs(torch, 0, -1))
    torch._dynamo.optimize("eager")(fn)(*inputs(torch, 1, 1))
    names = [k for k in fn.__globals__ if k.startswith("__resume_at_")]
    offsets = sorted({int(k.split("_")[4]) for k in names})
    assert offsets == sorted(resume_offsets(fn)), names


def test_graph_breaks_log_names_reason_and_source_line(capsys, caplog):
    fn = make_toy_example(ember)
    compiled = ember._dynamo.optimize("eager")(fn)
    ember._logging.set_logs(graph_breaks=True)
    try:
        with caplog.at_level(logging.DEBUG):
            compiled(*inputs(ember, 0, 1))
    finally:
        ember._logging.set_logs()
    out = capsys.readouterr()
    text = out.out + out.err + "\n".join(r.getMessage() for r in caplog.records)
    assert "if b.sum() < 0" in text, text
    assert "example.py" in text, text


def test_ember_logs_environment_variable():
    """EMBER_LOGS="guards,bytecode" in the environment turns the same logs on at import."""
    import os
    import subprocess
    import sys
    example = make_toy_example(ember).__code__.co_filename
    script = "\n".join([
        "import importlib.util, ember",
        f"spec = importlib.util.spec_from_file_location('example', {example!r})",
        "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)",
        "f = ember._dynamo.optimize('eager')(module.toy_example)",
        "f(ember.randn(10), -ember.ones(10))",
    ])
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, EMBER_LOGS="guards,bytecode", PYTHONPATH=root)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout + proc.stderr
    assert "ORIGINAL BYTECODE toy_example" in text and "MODIFIED BYTECODE" in text, text
    assert "- local 'a' TENSOR_MATCH" in text and "- global 'torch' FUNCTION_MATCH" in text, text
