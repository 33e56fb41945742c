"""compile_fx end to end: fusion, the wrapper's contract (fresh outputs, aliasing views, input
checks, recompiles), fallbacks, logs, threads, the dynamo backend, and a differential fuzzer."""
import random
import warnings
import zlib

import numpy as np
import pytest

import ember
from ember._functorch import make_fx
from ember._inductor import config, compile_fx as compile_fx_module
from ember._inductor.compile_fx import compile_fx
from ember._core.dispatch import OperatorHandle

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

# -- a differential fuzzer: random pointwise/reduction/view programs, compiled vs eager ----------


FLOAT_UNARY = ["exp", "tanh", "sigmoid", "neg", "abs", "sin", "relu", "sqrt", "log1p", "floor", "square"]
BINARY = ["add", "sub", "mul", "maximum", "minimum", "div"]
INT_BINARY = ["add", "sub", "mul", "maximum", "minimum"]


def random_program(rng, nin, dtype):
    """A function of `nin` inputs of shape (5, 7) built from random ops."""
    steps = []
    for _ in range(rng.randint(2, 7)):
        kind = rng.choice(["unary", "binary", "scalar", "reduce", "view", "where", "cat", "pad", "index", "scatter"])
        steps.append((kind, rng.choice(FLOAT_UNARY), rng.choice(BINARY if dtype.is_floating_point else INT_BINARY),
                      rng.randrange(nin), rng.choice([0, 1, -1]), rng.random() < 0.5, rng.choice([-2, 0.5, 3])))

    def program(*xs):
        v = xs[0]
        for kind, u, b, other, dim, keep, scalar in steps:
            if v.dim() == 0 and kind in ("reduce", "view"):
                kind = "scalar"
            dim = dim if v.dim() > 1 else 0
            if kind == "unary" and v.dtype.is_floating_point:
                v = getattr(ember, u)(v.clamp(-4, 4) if u == "exp" else (v.abs() if u in ("sqrt", "log1p") else v))
            elif kind == "binary":
                o = xs[other]
                o = o.sum(0) if v.dim() == 1 else (o.amax() if v.dim() == 0 else o)
                v = getattr(ember, b)(v, o) if b != "div" else v / (o.abs() + 1)
            elif kind == "scalar":
                v = v * scalar if v.dtype.is_floating_point else v * int(scalar) + 1
            elif kind == "reduce":
                v = [v.sum, v.amax, v.amin][abs(dim) % 3](dim, keepdim=keep)
            elif kind == "view":
                v = v.transpose(0, 1) if keep else v[::2]
            elif kind == "cat":               # with a computed value and an input slice of v's shape
                o = xs[other][tuple(slice(0, n) for n in v.shape)] if v.dim() == 2 else v.neg()
                v = ember.cat([v, o * 2 if o.dtype.is_floating_point else o], dim if v.dim() else 0) \
                    if v.dim() else ember.stack([v, o])
            elif kind == "pad":
                v = ember.nn.functional.pad(v, (1, 2) if keep else (-1, 1, 2, 0)[:2 * min(v.dim(), 2)],
                                            value=int(scalar))
            elif kind == "index" and v.dim():  # gather / index / index_select with wrapped indices
                n = v.shape[dim]
                picks = ember.tensor([n - 1, 0, n // 2, -1 if keep else 0])
                v = v[picks] if dim == 0 else (v.index_select(dim, picks % n) if keep else
                                               ember.gather(v, dim, (picks % n).expand(*v.shape[:-1], 4)
                                                            if v.dim() > 1 else picks % n))
            elif kind == "scatter" and v.dim():  # duplicate rows: accumulated or the last one written
                v = v.index_put((ember.tensor([0, -1, 0]),), v[:1] * 2, accumulate=keep) if scalar != 3 else \
                    v.scatter_add(v.dim() - 1, (v[..., :2] > 0).long(), v[..., :2])
            elif kind == "where":
                v = ember.where(v > 0, v, xs[other].sum() if v.dim() == 0 else xs[other][..., :1])
        return v
    return program


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int64])
def test_differential_fuzzer(dtype):
    rng = random.Random(1234 + zlib.crc32(str(dtype).encode()) % 1000)     # not hash(): PYTHONHASHSEED varies
    gen = np.random.default_rng(7)
    base = [gen.uniform(-3, 3, size=(5, 7)) for _ in range(3)]
    xs = [ember.from_numpy(b.astype(dtype.np) if dtype.is_floating_point else (b * 3).astype(np.int64)) for b in base]
    xs[1] = ember.from_numpy(np.ascontiguousarray(xs[1].numpy().T)).t()        # transposed layout
    xs[2] = xs[2][:1].expand(5, 7)                                              # broadcast layout
    mismatches = []
    for graph in range(4):
        programs = []
        while len(programs) < 12:
            program = random_program(rng, len(xs), dtype)
            try:
                program(*xs)
            except (RuntimeError, IndexError):   # shapes or dims the program cannot use: eager refuses too
                continue
            programs.append(program)
        everything = lambda *t: tuple(p(*t) for p in programs)
        want = everything(*xs)
        got = compile_fx(make_fx(everything)(*xs), xs)(*xs)
        for i, (g, w) in enumerate(zip(got, want)):
            a, b = g.numpy(), w.numpy()
            scale = max(1.0, float(np.nanmax(np.abs(np.where(np.isinf(b), 0, b)))) if b.size else 1.0)
            if g.shape != w.shape or g.dtype != w.dtype or not np.allclose(a, b, rtol=1e-4, atol=1e-5 * scale,
                                                                            equal_nan=True):
                mismatches.append((graph, i, a, b))
    assert mismatches == []


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
