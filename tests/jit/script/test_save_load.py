"""ember.jit.save / ember.jit.load: round trips in this process and in a FRESH process (started
with sys.executable and PYTHONPATH=<repo>) that never imports this module or ir_programs, and
files that were tampered with.

Functions and the module come from ir_programs (graphs built with the ir helpers, as the
frontend emits them) until ember.jit.script exists; traced programs from ember.jit.trace.
"""
import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
import ir_programs as P
from ember.jit import ir
from ember.jit.ir.printer import format_graph
from ember.jit.ir.types import Argument, Signature, TensorType

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

_RUNNER = r'''
import json, os, sys
import numpy as np
import ember
spec = json.load(open(sys.argv[1]))
def dec(v):
    if isinstance(v, dict) and "npy" in v:
        return ember.from_numpy(np.load(v["npy"], allow_pickle=False))
    return v
def enc(v, prefix):
    if isinstance(v, ember.Tensor):
        name = prefix + ".npy"
        np.save(name, v.detach().numpy(), allow_pickle=False)
        return {"npy": name}
    if isinstance(v, (tuple, list)):
        return [enc(x, f"{prefix}_{i}") for i, x in enumerate(v)]
    return v
results = []
for k, case in enumerate(spec):
    obj = ember.jit.load(case["file"])
    try:
        out = obj(*[dec(a) for a in case["args"]])
        results.append({"ok": enc(out, f"out{k}")})
    except Exception as exc:
        results.append({"exc": type(exc).__name__, "msg": str(exc)})
leaked = sorted(m for m in sys.modules if "ir_programs" in m or "test_save_load" in m or m == "torch")
json.dump({"results": results, "leaked": leaked}, open(sys.argv[2], "w"))
'''


def _run_fresh(tmp_path, cases: list) -> list:
    """Run each (saved file, args) in a new interpreter; returns each result (or ("exc", ...))."""
    spec = []
    for k, (path, args) in enumerate(cases):
        enc_args = []
        for j, a in enumerate(args):
            if isinstance(a, ember.Tensor):
                name = str(tmp_path / f"in{k}_{j}.npy")
                np.save(name, a.detach().numpy(), allow_pickle=False)
                enc_args.append({"npy": name})
            else:
                enc_args.append(a)
        spec.append({"file": str(path), "args": enc_args})
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    env = dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", _RUNNER, str(tmp_path / "spec.json"), str(tmp_path / "out.json")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "out.json").read_text())
    assert report["leaked"] == []

    def dec(v):
        if isinstance(v, dict) and "npy" in v:
            return ember.from_numpy(np.load(tmp_path / v["npy"], allow_pickle=False))
        if isinstance(v, list):
            return tuple(dec(x) for x in v)
        return v
    return [("exc", r["exc"], r["msg"]) if "exc" in r else dec(r["ok"]) for r in report["results"]]


def _same(got, want) -> bool:
    if isinstance(want, ember.Tensor):
        return isinstance(got, ember.Tensor) and got.shape == want.shape and \
            np.allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    if isinstance(want, (tuple, list)):
        return len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want))
    return got == want


def _save(obj, path):
    ember.jit.save(obj, path)
    return path


# ---------------------------------------------------------------------------------------------
# functions with control flow
# ---------------------------------------------------------------------------------------------
FUNCTION_CASES = [
    (P.seed, lambda: [(ember.randn(4), ember.randn(4)), (ember.randn(2, 3), ember.randn(2, 3))]),
    (P.if_loop, lambda: [(ember.randn(5), 3), (-ember.rand(5), 0), (ember.randn(5),)]),
    (P.misc, lambda: [(ember.randn(6), 2), (ember.randn(3), 9)]),
    (P.raises, lambda: [(ember.randn(3), 1)]),
]


@pytest.mark.parametrize("builder,inputs", FUNCTION_CASES, ids=[b.__name__ for b, _ in FUNCTION_CASES])
def test_function_round_trip_in_process(builder, inputs):
    g, schema, eager = builder()
    buf = io.BytesIO()
    ember.jit.save(P.FakeFunction(g, schema), buf)
    buf.seek(0)
    loaded = ember.jit.load(buf)
    for args in inputs():
        full = args if len(args) == len(schema.arguments) else args + (schema.arguments[-1].default,)
        assert _same(loaded(*args), eager(*full))
    assert loaded.schema == schema
    with pytest.raises(RuntimeError, match="expected at most"):
        loaded(*([1] * (len(schema.arguments) + 1)))
    assert str(loaded.graph) == format_graph(g)
    compile(loaded.code, "<code>", "exec")


def test_functions_run_in_fresh_process(tmp_path):
    cases, expected = [], []
    for builder, inputs in FUNCTION_CASES:
        g, schema, eager = builder()
        path = _save(P.FakeFunction(g, schema), tmp_path / f"{builder.__name__}.pt")
        for args in inputs():
            full = args if len(args) == len(schema.arguments) else args + (schema.arguments[-1].default,)
            cases.append((path, args))
            expected.append(eager(*full))
    g, schema, _ = P.raises()
    cases.append((_save(P.FakeFunction(g, schema), tmp_path / "raises_neg.pt"), (ember.randn(3), -1)))
    results = _run_fresh(tmp_path, cases)
    for got, want in zip(results, expected):
        assert _same(got, want), (got, want)
    assert results[-1] == ("exc", "ValueError", "k must be positive")


def test_printed_graph_survives_round_trip():
    g, schema, _ = P.if_loop()
    buf = io.BytesIO()
    ember.jit.save(P.FakeFunction(g, schema), buf)
    buf.seek(0)
    loaded = ember.jit.load(buf)
    assert str(loaded.graph) == format_graph(g)   # names, types, locations, blocks all kept
    buf2 = io.BytesIO()
    ember.jit.save(loaded, buf2)                    # a loaded function saves again
    buf2.seek(0)
    assert str(ember.jit.load(buf2).graph) == format_graph(g)


# ---------------------------------------------------------------------------------------------
# modules
# ---------------------------------------------------------------------------------------------
def _fake_scripted_cell():
    cell = P.Cell()
    g, schema = P.cell_graph()
    cell.__dict__["_methods"] = {"forward": P.FakeMethod(g, schema)}
    return cell


def test_module_round_trip(tmp_path):
    cell = _fake_scripted_cell()
    cell.eval()
    path = _save(cell, tmp_path / "cell.pt")
    loaded = ember.jit.load(str(path), map_location="cpu")
    assert isinstance(loaded, ember.nn.Module) and isinstance(loaded, ember.jit.ScriptModule)
    assert loaded.original_name == "ir_programs.Cell" or loaded.original_name.endswith("Cell")
    assert isinstance(loaded.lin, ember.nn.Module) and loaded.steps.shape == ()
    assert loaded.training is False and loaded.lin.training is False
    assert list(loaded.state_dict()) == list(cell.state_dict())
    for (n1, p1), (n2, p2) in zip(cell.named_parameters(), loaded.named_parameters()):
        assert n1 == n2 and isinstance(p2, ember.nn.Parameter) and p2.requires_grad
        assert np.array_equal(p1.detach().numpy(), p2.detach().numpy())
    assert loaded.scale == 0.5
    x, h = ember.randn(3), ember.randn(3)
    assert _same(loaded(x, h), cell(x, h))
    assert 'prim::GetAttr[name="scale"](%self)' in str(loaded.graph)
    assert loaded.code.startswith("def forward(self, x: Tensor, h: Tensor) -> Tensor:")
    # the loaded module's attributes and parameters are live: changing them changes the result
    loaded.scale = 2.0
    with ember.no_grad():
        loaded.bias.add_(1.0)
    cell.scale = 2.0
    with ember.no_grad():
        cell.bias.add_(1.0)
    assert _same(loaded(x, h), cell(x, h))
    # gradients flow to the loaded parameters
    loaded(x, h).sum().backward()
    assert loaded.lin.weight.grad is not None


def test_module_runs_in_fresh_process(tmp_path):
    cell = _fake_scripted_cell()
    path = _save(cell, tmp_path / "cell.pt")
    inputs = [(ember.randn(3), ember.randn(3)), (ember.randn(2, 3), ember.randn(2, 3))]
    results = _run_fresh(tmp_path, [(path, args) for args in inputs])
    for got, args in zip(results, inputs):
        assert _same(got, cell(*args))


# ---------------------------------------------------------------------------------------------
# traced programs
# ---------------------------------------------------------------------------------------------
def _traced_fn(x):
    return x * ember.tensor([1.0, 2.0, 3.0]) + 2, x.view(-1)[0]


def test_traced_module_and_function(tmp_path):
    net = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU(), ember.nn.Linear(4, 2))
    traced = ember.jit.trace(net, ember.randn(2, 3))
    tfn = ember.jit.trace(_traced_fn, ember.randn(3))
    mpath, fpath = _save(traced, tmp_path / "net.pt"), _save(tfn, tmp_path / "fn.pt")
    loaded = ember.jit.load(mpath)
    assert list(loaded.state_dict()) == list(net.state_dict())
    x, v = ember.randn(5, 3), ember.randn(3)
    assert _same(loaded(x), net(x))
    assert _same(ember.jit.load(fpath)(v), _traced_fn(v))
    assert "aten::linear" in str(loaded.graph) and 'prim::GetAttr[name="weight"]' in str(loaded.graph)
    results = _run_fresh(tmp_path, [(mpath, (x,)), (fpath, (v,))])
    assert _same(results[0], net(x))
    assert _same(results[1], _traced_fn(v))


# ---------------------------------------------------------------------------------------------
# via ember.jit.script
# ---------------------------------------------------------------------------------------------
def _script():
    return ember.jit.script


def test_scripted_function_and_module_in_fresh_process(tmp_path):
    script = _script()
    src = tmp_path / "prog_src.py"   # defined in a file the fresh process never sees
    src.write_text(
        "import ember\n"
        "def f(x, n: int):\n"
        "    y = x\n"
        "    for i in range(n):\n"
        "        if y.sum() > 0:\n"
        "            y = y - 1.5\n"
        "        else:\n"
        "            y = y * 2.0 + i\n"
        "    return y\n"
        "class M(ember.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.lin = ember.nn.Linear(3, 3)\n"
        "        self.k = 3\n"
        "    def helper(self, x):\n"
        "        return x * self.k\n"
        "    def forward(self, x):\n"
        "        for _ in range(self.k):\n"
        "            x = ember.tanh(self.lin(x))\n"
        "        return self.helper(x)\n")
    import importlib.util
    spec = importlib.util.spec_from_file_location("prog_src", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fpath = _save(script(mod.f), tmp_path / "f.pt")
    m = mod.M()
    mpath = _save(script(m), tmp_path / "m.pt")
    x = ember.randn(4, 3)
    loaded = ember.jit.load(mpath)
    assert _same(loaded(x), m(x)) and _same(loaded.helper(x), m.helper(x))
    assert "prim::CallMethod" not in str(loaded.graph)   # saved inlined
    src.unlink()
    results = _run_fresh(tmp_path, [(fpath, (x, 3)), (mpath, (x,))])
    assert _same(results[0], mod.f(x, 3))
    assert _same(results[1], m(x))


# ---------------------------------------------------------------------------------------------
# what loading refuses
# ---------------------------------------------------------------------------------------------
def _tamper(data: bytes, old: str, new: str) -> io.BytesIO:
    """The archive `data` with every string `old` of its program (a value or a key) replaced by `new`."""
    from ember.serialization import JIT_MAGIC, read, write
    src = io.BytesIO(data)
    found = []

    def swap(v):
        if type(v) is str and v == old:
            found.append(v)
            return new
        if type(v) is dict:
            return {swap(k): swap(x) for k, x in v.items()}
        return type(v)(swap(x) for x in v) if type(v) in (list, tuple) else v
    program = swap(read(src, src.read(len(JIT_MAGIC)), None, True, JIT_MAGIC))
    assert found
    out = io.BytesIO()
    write(program, out, JIT_MAGIC)
    out.seek(0)
    return out


def _saved_bytes(obj) -> bytes:
    buf = io.BytesIO()
    ember.jit.save(obj, buf)
    return buf.getvalue()


@pytest.mark.parametrize("old,new,message", [
    ("aten::tanh", "os.system", "os.system"),
    ("operator.mul", "builtins.eval", "builtins.eval"),
    ("operator.mul", "operator.attrgetter", "operator.attrgetter"),
    ("aten::tanh", "prim::Nope", "prim::Nope"),
    ("aten::tanh", "ember.load", "ember.load"),   # public, but reads pickles
    ("aten::tanh", "prim::CallMethod", "prim::CallMethod"),
])
def test_tampered_target_is_refused(old, new, message):
    g, schema, _ = P.seed()
    g2 = ir.clone(g)
    for n in g2.nodes:   # make the tanh a registry operator, so both kinds of name are in the file
        if n.target is ember.tanh:
            n.target = ember.ops.aten.tanh.default
    data = _saved_bytes(P.FakeFunction(g2, schema))
    with pytest.raises(RuntimeError, match=message.replace(".", r"\.")):
        ember.jit.load(_tamper(data, old, new))


def test_tampered_method_and_attribute_names_are_refused():
    g, schema, _ = P.misc()
    data = _saved_bytes(P.FakeFunction(g, schema))
    with pytest.raises(RuntimeError, match="__class__"):
        ember.jit.load(_tamper(data, "append", "__class__"))
    with pytest.raises(RuntimeError, match="__dict__"):
        ember.jit.load(_tamper(data, "dtype", "__dict__"))
    cell = _fake_scripted_cell()
    data = _saved_bytes(cell)
    with pytest.raises(RuntimeError, match="__globals__"):
        ember.jit.load(_tamper(data, "scale", "__globals__"))


def test_unsaveable_programs_fail_at_save():
    def helper(x):
        return x
    g = ir.new_graph()
    x = g.placeholder("x", type_expr=TensorType())
    g.output(ir.call(g, helper, (x,), type_=TensorType()))
    fn = P.FakeFunction(g, Signature("f", (Argument("x", TensorType()),), TensorType()))
    with pytest.raises(RuntimeError, match="cannot save a call of .*helper"):
        ember.jit.save(fn, io.BytesIO())
    with pytest.raises(TypeError, match="scripted or traced"):
        ember.jit.save(object(), io.BytesIO())
    with pytest.raises(RuntimeError, match="not an ember.jit archive"):
        ember.jit.load(io.BytesIO(b"not an archive"))


class _WithUnused(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = ember.nn.Linear(3, 3)

    def debug(self, x):
        return x.numpy()

    def forward(self, x, verbose: bool = False):
        if verbose:
            return self.debug(x)
        return self.lin(x)


def test_unused_method_saves_as_raise_and_ignored_method_refuses():
    script = _script()

    class Unused(_WithUnused):
        @ember.jit.unused
        def debug(self, x):
            return x.numpy()

    class Ignored(_WithUnused):
        @ember.jit.ignore
        def debug(self, x):
            return x.numpy()

    m = Unused()
    loaded = ember.jit.load(io.BytesIO(_saved_bytes(script(m))))
    x = ember.randn(2, 3)
    assert _same(loaded(x), m(x))
    with pytest.raises(RuntimeError, match="unused"):
        loaded(x, True)
    assert "prim::RaiseException" in str(loaded.graph)
    with pytest.raises(RuntimeError, match="'debug'.*ignore"):
        ember.jit.save(script(Ignored()), io.BytesIO())
