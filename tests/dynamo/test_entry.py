"""The compile entry: decorator forms, the per-code cache and its limit, capture errors, modules,
backends, reset/disable, logs and explain -- compared with torch 2.13 where it has the same API."""
import inspect
import os
import subprocess
import sys
import types
import warnings

import numpy as np
import pytest
import torch
import torch._dynamo.testing  # noqa: F401

import ember
import ember._dynamo.config as config
from ember._dynamo import convert_frame, eval_frame
from ember._dynamo.backends import InvalidBackend, list_backends, lookup_backend, register_backend
from ember._dynamo.guards import GuardKind, install_guard
from ember._dynamo.source import LocalSource
from ember._dynamo.testing import (CompileCounter, CompileCounterWithBackend, EagerAndRecordGraphs,
                                   normalize_gm)


def _pair(lib, n=10, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(lib.from_numpy(rng.standard_normal(n).astype("float32")) for _ in range(2))


def toy_example(lib, a, b):
    x = a / (lib.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


# ------------------------------------------------------------------------------------------------
# a stub translator: lets the entry layer be tested on its own

def _add(a, b):
    return a + b


def _stub(calls, guard_kinds=("TENSOR_MATCH",)):
    def compile_frame(code, f_globals, f_locals, closure, backend, *, fullgraph, wrap_resume):
        calls.append(dict(f_locals))
        guards = set()
        for name, value in f_locals.items():
            install_guard(guards, LocalSource(name), GuardKind.TENSOR_MATCH, value)
        gm_like = lambda a, b: (a + b) * 1   # noqa: E731 - stands in for the backend's callable
        src = "def _add(a, b):\n    return __stub_fn_0(a, b)\n"
        ns = {}
        exec(compile(src, code.co_filename, "exec"), ns)
        return convert_frame.CompileResult(ns["_add"].__code__, sorted(guards, key=str), {"__stub_fn_0": gm_like},
                                           [], [])
    return compile_frame


def test_stub_translator_entries_are_reused_while_guards_hold(monkeypatch):
    calls = []
    monkeypatch.setattr(convert_frame, "compile_frame", _stub(calls))
    f = ember.compile(_add, backend="eager")
    a, b = _pair(ember)
    for _ in range(3):
        assert ember.equal(f(a, b), a + b)
    assert len(calls) == 1
    c, d = ember.randn(3), ember.randn(3)
    assert ember.equal(f(c, d), c + d) and len(calls) == 2      # new shapes: a second entry
    assert ember.equal(f(a, b), a + b) and len(calls) == 2      # both entries stay
    assert inspect.signature(f) == inspect.signature(_add)      # the wrapper has the function's signature
    assert f.__wrapped__ is _add and f.__name__ == "_add"


def test_capture_error_runs_eagerly_with_a_warning(monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("translator bug")
    monkeypatch.setattr(convert_frame, "compile_frame", broken)
    a, b = _pair(ember)
    f = ember.compile(_add, backend="eager")
    with pytest.warns(UserWarning, match="could not capture _add .*translator bug"):
        out = f(a, b)
    assert ember.equal(out, a + b)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # the frame is now skipped: no second warning
        assert ember.equal(f(a, b), a + b)
    ember._dynamo.reset()
    with pytest.raises(ValueError, match="translator bug"):
        ember.compile(_add, backend="eager", fullgraph=True)(a, b)
    ember._dynamo.reset()
    with config.patch(suppress_errors=False), pytest.raises(ValueError):
        ember.compile(_add, backend="eager")(a, b)


def test_wrap_resume_compiles_the_callee_on_its_first_call(monkeypatch):
    seen = {}

    def compile_frame(code, f_globals, f_locals, closure, backend, *, fullgraph, wrap_resume):
        seen.setdefault(code.co_name, 0)
        seen[code.co_name] += 1
        if code.co_name == "outer":
            return convert_frame.CompileResult(code, [], {}, [], [])
        return None
    monkeypatch.setattr(convert_frame, "compile_frame", compile_frame)

    def inner(x):
        return x + 1
    routed = {}

    def outer(x):
        return x
    f = ember.compile(outer, backend="eager")
    f(1)
    opts = f._ember_compile_options
    routed = opts.wrap_resume(inner)
    assert routed(1) == 2 and routed(2) == 3
    assert seen == {"outer": 1, "inner": 1}   # inner captured once (it gave nothing: runs as is after)


# ------------------------------------------------------------------------------------------------
# with the real translator

def test_seed_003_toy_example_two_graphs_and_same_results_as_torch():
    for sign in (1, -1):
        rec = {}
        for lib in (torch, ember):
            lib._dynamo.reset()
            graphs = EagerAndRecordGraphs() if lib is ember else torch._dynamo.testing.EagerAndRecordGraphs()
            compiled = lib._dynamo.optimize(graphs)(toy_example)
            a, b = _pair(lib)
            b = b.abs() * sign
            rec[lib.__name__] = (compiled(lib, a, b), [len([n for n in g.graph.nodes if "call" in n.op])
                                                      for g in graphs.graphs])
            np.testing.assert_allclose(rec[lib.__name__][0].numpy(), toy_example(lib, a, b).numpy(), rtol=1e-6)
        np.testing.assert_allclose(rec["ember"][0].numpy(), rec["torch"][0].numpy(), rtol=1e-5)
        assert rec["ember"][1] == rec["torch"][1]          # two graphs, same op counts per graph


def test_toy_example_frame_counts_over_many_calls_match_torch():
    counts = []
    for lib in (torch, ember):
        lib._dynamo.reset()
        cnt = lib._dynamo.testing.CompileCounter()
        f = lib.compile(toy_example, backend=cnt)
        for i in range(20):
            a, b = _pair(lib, seed=i)
            np.testing.assert_allclose(f(lib, a, b).numpy(), toy_example(lib, a, b).numpy(), rtol=1e-6)
        counts.append((cnt.frame_count, cnt.op_count))
    assert counts[0] == counts[1]


def test_decorator_forms():
    def double(x):
        return x * 2
    x = ember.randn(3)
    for compiled in (ember.compile(double), ember.compile()(double), ember.compile(backend="eager")(double),
                     ember._dynamo.optimize("eager")(double)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # the interpreter notice of "inductor"
            assert ember.equal(compiled(x), x * 2)
    assert ember.compile(double, disable=True) is double

    @ember.compile
    def g(x, *, k=3):
        return x * k
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ember.equal(g(x), x * 3) and ember.equal(g(x, k=4), x * 4)


def test_mode_and_options_errors_match_torch():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="Either mode or options can be specified"):
            lib.compile(lambda x: x, mode="default", options={})


def test_cache_size_limit_runs_eagerly_and_warns_once_with_reason():
    cnt = CompileCounter()

    def f(a):
        return a + 1
    c = ember.compile(f, backend=cnt)
    with config.patch(cache_size_limit=2):
        c(ember.randn(1))
        c(ember.randn(2))
        with pytest.warns(UserWarning, match=r"hit config.cache_size_limit \(2\)[\s\S]*size mismatch at index 0"):
            out = c(ember.randn(3))
        assert out.shape == (3,)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            x = ember.randn(4)
            assert ember.equal(c(x), x + 1)
        assert cnt.frame_count == 2
        assert c(ember.randn(1)).shape == (1,) and cnt.frame_count == 2   # old entries still served


def test_changed_global_and_closure_recompile_and_are_never_stale():
    cnt = CompileCounter()

    def make(k):
        def inner(a):
            return a * k
        return inner
    x = ember.randn(3)
    for k in (2, 3, 2):
        f = ember.compile(make(k), backend=cnt)
        assert ember.allclose(f(x), x * k)
    assert cnt.frame_count == 2            # the closure value 2 reuses the first entry


def test_reset_forgets_compiled_entries():
    cnt = CompileCounter()
    f = ember.compile(lambda a: a - 1, backend=cnt)
    x = ember.randn(2)
    f(x), f(x)
    ember._dynamo.reset()
    f(x)
    assert cnt.frame_count == 2


def test_compiled_module_like_torch():
    results = {}
    for lib in (torch, ember):
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.ReLU(), lib.nn.Linear(3, 2))
        cm = lib.compile(m, backend="eager")
        assert isinstance(cm, lib._dynamo.eval_frame.OptimizedModule)
        assert cm._orig_mod is m and cm.training is m.training
        results[lib.__name__] = (sorted(cm.state_dict()), sorted(m.state_dict()),
                                 [n for n, _ in cm.named_parameters()])
        x = lib.ones(5, 4)
        np.testing.assert_allclose(cm(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-6)
    assert results["ember"] == results["torch"]


def test_module_training_flag_recompiles():
    cnt = CompileCounter()
    m = ember.nn.Dropout(0.5)
    cm = ember.compile(m, backend=cnt)
    x = ember.ones(100)
    cm(x)
    cm.eval()
    assert ember.equal(cm(x), x) and cnt.frame_count == 2


def test_disable():
    @ember.compiler.disable
    def helper(x):
        return x + 1
    assert ember.compile(helper) is helper
    cnt = CompileCounter()

    def f(x):
        return helper(x * 2) * 3
    x = ember.randn(3)
    assert ember.allclose(ember.compile(f, backend=cnt)(x), f(x))
    assert helper.__name__ == "helper" and ember.compiler.disable(helper) is helper


def test_backend_registry():
    assert "inductor" in list_backends() and "inductor" in torch.compiler.list_backends()
    assert "eager" not in list_backends() and "eager" in list_backends(exclude_tags=())
    with pytest.raises(InvalidBackend, match="Invalid backend: 'nope'"):
        lookup_backend("nope")
    with pytest.raises(Exception, match="Invalid backend"):
        torch._dynamo.lookup_backend("nope")

    @register_backend
    def my_test_backend(gm, example_inputs):
        return gm.forward
    assert lookup_backend("my_test_backend") is my_test_backend
    wrapped = CompileCounterWithBackend("inductor")
    x = ember.randn(4, requires_grad=True)     # a graph needing autograd: AOT autograd + the fuser
    out = ember.compile(lambda a: ember.sin(a) + 1, backend=wrapped)(x)
    out.sum().backward()
    assert ember.allclose(x.grad, ember.cos(x))
    assert ember.allclose(out, ember.sin(x) + 1) and wrapped.frame_count == 1 and len(wrapped.graphs) == 1


def test_set_logs_prints_guards_and_recompiles(capsys):
    try:
        ember._logging.set_logs(guards=True, recompiles=True)
        f = ember.compile(lambda a: a * 2, backend="eager")
        f(ember.randn(2))
        f(ember.randn(3))
    finally:
        ember._logging.set_logs()
    err = capsys.readouterr().err
    assert "GUARDS:\n - local 'a' TENSOR_MATCH" in err
    assert "triggered by the following guard failure(s):\n    - 0/0: tensor 'a' size mismatch at index 0. " \
           "expected 2, actual 3" in err


def test_ember_logs_env_var_prints_seed_003_sections():
    script = ("import ember\n"
              "def toy_example(a, b):\n"
              "    x = a / (ember.abs(a) + 1)\n"
              "    if b.sum() < 0:\n"
              "        b = b * -1\n"
              "    return x * b\n"
              "f = ember._dynamo.optimize('eager')(toy_example)\n"
              "f(ember.randn(10), ember.randn(10))\n")
    env = dict(os.environ, EMBER_LOGS="graph_code,graph,guards,bytecode,recompiles,graph_breaks",
               PYTHONPATH=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    err = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True).stderr
    for section in ("__compiled_fn_0", "opcode", "ORIGINAL BYTECODE toy_example", "MODIFIED BYTECODE",
                    "GUARDS:\n - local 'a' TENSOR_MATCH\n - local 'b' TENSOR_MATCH\n - global 'ember' FUNCTION_MATCH"):
        assert section in err, section


def test_explain_toy_example_like_torch():
    outs = {}
    for lib in (torch, ember):
        lib._dynamo.reset()
        a, b = _pair(lib)
        outs[lib.__name__] = lib._dynamo.explain(toy_example)(lib, a, b)
    t, e = outs["torch"], outs["ember"]
    assert (e.graph_count, e.graph_break_count, e.op_count) == (t.graph_count, t.graph_break_count, t.op_count)
    assert [len(o) for o in e.ops_per_graph] == [len(o) for o in t.ops_per_graph]
    assert e.break_reasons[0].user_stack[0].lineno == t.break_reasons[0].user_stack[0].lineno
    text = str(e)
    assert text.startswith(f"Graph Count: {t.graph_count}\nGraph Break Count: 1\n")
    assert "if b.sum() < 0:" in text and "Out Guards:" in text


def test_normalize_gm():
    assert normalize_gm("class G:\n    # File: x.py:3\n    x = 1  # comment\n\n") == "class G:\n    x = 1\n"


def test_compile_bound_method_and_user_class():
    class Scaler:
        def __init__(self, k):
            self.k = k

        def apply(self, x):
            return x * self.k
    s = Scaler(3.0)
    cnt = CompileCounter()
    f = ember.compile(s.apply, backend=cnt)
    x = ember.randn(4)
    assert isinstance(f, types.MethodType) and ember.allclose(f(x), x * 3.0)
    s.k = 4.0
    assert ember.allclose(f(x), x * 4.0)


def test_optimized_module_attribute_passthrough():
    for lib in (torch, ember):
        m = lib.nn.Linear(3, 2)
        cm = lib.compile(m, backend="eager")
        assert cm.weight is m.weight and cm.in_features == 3
        cm.eval()
        assert not m.training and not cm.training


@pytest.mark.parametrize("form", ["none", "varargs", "varkw", "mixed"])
def test_closures_with_any_signature_compile_as_torch(form):
    # the wrapper's generated guard call once came out as `___check(, ___closure=...)` for a closure
    # taking no arguments and `****kw` for one taking only **kwargs: a SyntaxError at compile()
    def make(lib):
        z = lib.ones(3) * 2
        return {"none": lambda: z * 3,
                "varargs": lambda *a: a[0] + z,
                "varkw": lambda **kw: kw["a"] + z,
                "mixed": lambda x, *a, k=1, **kw: x + z * k + a[0]}[form]
    call = {"none": lambda f, y: f(), "varargs": lambda f, y: f(y, y), "varkw": lambda f, y: f(a=y, b=1),
            "mixed": lambda f, y: f(y, y * 4, k=3, q=0)}[form]
    expected = call(torch.compile(make(torch), backend="eager"), torch.arange(3.0))
    for backend in ("eager", "inductor"):
        got = call(ember.compile(make(ember), backend=backend), ember.arange(3.0))
        np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_compiled_training_step_closing_over_model_and_optimizer_matches_eager():
    def run(compile):
        ember.manual_seed(0)
        m = ember.nn.Linear(4, 3)
        opt = ember.optim.Adam(m.parameters(), lr=0.1)
        x = ember.from_numpy(np.linspace(-1, 1, 32, dtype=np.float32).reshape(8, 4))

        def step():
            opt.zero_grad()
            loss = m(x).pow(2).mean()
            loss.backward()
            opt.step()
            return loss.detach()
        step = ember.compile(step) if compile else step
        return [step().item() for _ in range(3)], m.weight.detach().numpy()
    (l0, w0), (l1, w1) = run(False), run(True)
    np.testing.assert_allclose(l1, l0, rtol=1e-5)
    np.testing.assert_allclose(w1, w0, rtol=1e-5, atol=1e-6)
