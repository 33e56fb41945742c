"""compile_fx end to end: fusion, the wrapper's contract (fresh outputs, aliasing views, input
checks, recompiles), fallbacks, logs, threads, the dynamo backend, and a differential fuzzer."""
import warnings

import numpy as np
import pytest

import ember
from ember._functorch import make_fx
from ember._inductor import config, compile_fx as compile_fx_module
from ember._inductor.compile_fx import compile_fx
from ember._core.dispatch import OperatorHandle
from fuzz_programs import fuzz

F = ember.nn.functional


def kernels_of(compiled):
    gm = compiled.current
    assert gm is not None, "the graph fell back to eager"
    return [n for n in gm.graph.nodes if n.op == "call_function" and getattr(n.target, "__name__", "").startswith("ember_k")]


def compiled_for(fn, *inputs):
    return compile_fx(make_fx(fn)(*inputs), list(inputs))


def test_softmax_and_layer_norm_are_one_kernel_per_row_block():
    x = ember.randn(32, 1024)
    for fn in (lambda t: ember.softmax(t, -1), lambda t: F.layer_norm(t, (1024,)), lambda t: ember.log_softmax(t, 1),
               lambda t: (ember.softmax(t, -1), F.layer_norm(t, (1024,)))):
        compiled = compiled_for(fn, x)
        assert len(kernels_of(compiled)) == 1
        assert compiled.current._ember_pool_blocks == []        # row values live in registers / a row array
        got, want = compiled(x), fn(x)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)


def test_pointwise_chain_is_one_flat_loop(capsys):
    x, y = ember.randn(64, 64), ember.randn(64, 64)
    ember._logging.set_logs(output_code=True, fusion=True)
    try:
        compiled = compiled_for(lambda a, b: ((a * 2 + 1).sigmoid() * b - a).tanh(), x, y)
    finally:
        ember._logging.set_logs()
    err = capsys.readouterr().err
    assert len(kernels_of(compiled)) == 1
    assert "i1 < 4096" in err and "#pragma omp simd" in err and "WRAPPER" in err
    np.testing.assert_allclose(compiled(x, y).numpy(), ((x * 2 + 1).sigmoid() * y - x).tanh().numpy(), rtol=1e-5, atol=1e-6)


def test_values_shared_inside_one_kernel_never_reach_memory():
    x = ember.randn(64, 32)

    def f(t):
        shared = ((t * 2 + 1).sigmoid() * t - 3).tanh() * (t + 0.5).exp() / (t.abs() + 1) + t.sin()   # realised
        return shared * 2, shared.sum(-1), shared + 1
    compiled = compiled_for(f, x)
    assert compiled.current._ember_pool_blocks == []
    for g, w in zip(compiled(x), f(x)):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-5)


def test_fusion_log_gives_reasons(capsys):
    x = ember.randn(8, 8)
    ember._logging.set_logs(fusion=True, schedule=True)
    try:
        compiled_for(lambda t: (t.sum(0) + 1, (t * 2).t().sum(1)), x)
    finally:
        ember._logging.set_logs()
    err = capsys.readouterr().err
    assert "LOOP IR" in err and "SCHEDULE" in err and "fuse buf" in err


def test_outputs_are_fresh_tensors_and_views_of_inputs_alias_like_eager():
    x = ember.randn(6, 4)
    compiled = compiled_for(lambda t: (t * 2, t[1:3], t.t(), t), x)
    a1, view, tr, same = compiled(x)
    a2, *_ = compiled(x)
    assert a1.data_ptr() != a2.data_ptr()
    a1.add_(100)                                 # the next call is not affected by a caller's write
    np.testing.assert_allclose(compiled(x)[0].numpy(), (x * 2).numpy())
    assert same is x or same.data_ptr() == x.data_ptr()
    assert view.data_ptr() == x[1:3].data_ptr() and view.stride() == x[1:3].stride()
    assert tr.stride() == (1, 4)
    x[1, 0] = 42.0
    assert view[0, 0].item() == 42.0


def test_intermediates_share_pool_memory_between_calls():
    x = ember.randn(16, 16)
    fn = lambda t: ember.mm(ember.exp(t) + 1, t).relu() + ember.mm(t * 3, t)     # extern between kernels
    compiled = compiled_for(fn, x)
    for _ in range(3):
        np.testing.assert_allclose(compiled(x).numpy(), fn(x).numpy(), rtol=1e-5, atol=1e-5)


def test_benchmark_compiled_module_times_the_current_variant(capsys):
    x = ember.randn(32, 8).t()
    compiled = compiled_for(lambda t: (t * 2).exp().sum(0), x)
    ms = compiled.benchmark_compiled_module(times=3, repeat=2)
    assert ms > 0 and "ms per call" in capsys.readouterr().out
    eager = compile_fx(make_fx(lambda t: t.add_(1))(ember.randn(3)), [ember.randn(3)])
    with pytest.raises(RuntimeError, match="runs eagerly"):
        eager.benchmark_compiled_module()


def test_a_new_layout_compiles_another_variant_and_old_ones_stay():
    f = lambda t: (t * 2).sum(-1)
    x = ember.randn(4, 6)
    compiled = compiled_for(f, x)
    for arg in (ember.randn(6, 4).t(), ember.randn(3, 5), ember.randn(4, 6), ember.randn(4, 6).double()):
        np.testing.assert_allclose(compiled(arg).numpy(), f(arg).numpy(), rtol=1e-6, atol=1e-6)
    assert len(compiled.variants) == 4


def test_inputs_that_record_autograd_run_eagerly_with_grad():
    x = ember.randn(5)
    compiled = compiled_for(lambda t: (t * t).sum(), x)
    y = ember.randn(5, requires_grad=True)
    out = compiled(y)
    out.backward()
    np.testing.assert_allclose(y.grad.numpy(), (2 * y).detach().numpy(), rtol=1e-6)
    with ember.no_grad():
        np.testing.assert_allclose(compiled(y).numpy(), (y * y).sum().numpy(), rtol=1e-6)


def test_in_place_ops_make_the_graph_run_eagerly():
    def f(t):
        u = t * 2
        u.add_(1)
        return u.exp()
    x = ember.randn(3)
    compiled = compiled_for(f, x)
    np.testing.assert_allclose(compiled(x).numpy(), f(x).numpy(), rtol=1e-6)
    config.strict = True
    try:
        with pytest.raises(Exception, match="writes to its arguments"):
            compiled_for(f, x)
    finally:
        config.strict = False


def test_no_compiler_warns_once_and_runs_eagerly(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "cc", str(tmp_path / "no-such-cc"))
    monkeypatch.setattr(config, "cache_dir", str(tmp_path / "cache"))
    monkeypatch.setattr(compile_fx_module, "_warned", set())
    x = ember.randn(3)
    with pytest.warns(RuntimeWarning, match="CompilerUnavailable"):
        compiled = compiled_for(lambda t: t.exp() + 1, x)
    np.testing.assert_allclose(compiled(x).numpy(), (x.exp() + 1).numpy(), rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled_for(lambda t: t.exp() + 2, x)         # shown once
    monkeypatch.setattr(config, "strict", True)
    from ember._inductor.codecache import CompilerUnavailable
    with pytest.raises(CompilerUnavailable):
        compiled_for(lambda t: t.exp() + 3, x)


def test_two_threads_give_the_same_values():
    x = ember.randn(256, 1024)
    fns = lambda t: (ember.softmax(t, -1), (t * t).sum(), t.amax(), (t * 2 + 1).sigmoid(), t.sum(0))
    old = config.threads
    config.threads = 2
    try:
        compiled = compiled_for(fns, x)
        for g, w in zip(compiled(x), fns(x)):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-5)
    finally:
        config.threads = old


def test_ember_compile_default_backend_runs_compiled_kernels():
    calls = []

    def f(a, b):
        return ember.softmax(a * 2, -1) + b.mean()
    real = compile_fx_module.compile_graph
    counting = lambda gm, inputs: calls.append(1) or real(gm, inputs)
    compile_fx_module.compile_graph = counting
    try:
        cf = ember.compile(f)
        x, y = ember.randn(4, 8), ember.randn(3)
        np.testing.assert_allclose(cf(x, y).numpy(), f(x, y).numpy(), rtol=1e-5, atol=1e-6)
    finally:
        compile_fx_module.compile_graph = real
    assert calls == [1]

# -- the differential fuzzer (tests/fuzz_programs.py: random programs, compiled vs eager) ----------


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int64])
def test_differential_fuzzer(dtype):
    assert fuzz(dtype, "cpu") == []


def test_row_kernels_propagate_nan_and_inf_like_eager():
    """softmax/log_softmax/amax rows holding NaN, +-inf or all -inf: the vectorised max keeps a NaN flag."""
    import math
    rows = [[1.0, math.nan, 3.0] + [0.0] * 61, [math.inf, 2.0] + [0.0] * 62, [-math.inf] * 64,
            [0.5, -math.inf] + [1.0] * 62, list(range(64))]
    x = ember.tensor(rows * 3)
    for fn in (lambda t: ember.softmax(t, -1), lambda t: ember.log_softmax(t, -1), lambda t: t.amax(-1),
               lambda t: t.amin(0), lambda t: (t * 2).max()):
        compiled = compiled_for(fn, x)
        np.testing.assert_allclose(compiled(x).numpy(), fn(x).numpy(), rtol=1e-5, atol=1e-6)   # NaN where eager has NaN


def test_the_ctypes_fallback_runs_the_same_kernels(monkeypatch):
    """With the launcher extension unavailable, launch.ctypes_launch (same convention) runs every
    kernel: pool intermediates, an extern matmul between kernels, the integer error flag."""
    from ember._inductor import launch
    monkeypatch.setattr(launch, "_launcher", launch.ctypes_launch)
    x, w = ember.randn(6, 8), ember.randn(8, 5)
    fn = lambda x, w: (ember.softmax((x * 2).exp() @ w, -1) + 1).sum(0)   # noqa: E731
    compiled = compiled_for(fn, x, w)
    assert kernels_of(compiled) and all(n.target.func is launch.ctypes_launch for n in kernels_of(compiled))
    np.testing.assert_allclose(compiled(x, w).numpy(), fn(x, w).numpy(), rtol=1e-5, atol=1e-6)
    a, b = ember.tensor([4, 5]), ember.tensor([2, 0])
    divide = compiled_for(lambda a, b: a // b, a, ember.tensor([2, 1]))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        divide(a, b)
    np.testing.assert_array_equal(divide(a, ember.tensor([2, 1])).numpy(), [2, 5])
