"""ember.compile on CUDA tensors: the fuser's Triton kernels (codegen_triton) against eager ember on
the same GPU (whose kernels are CuPy's): pointwise chains on every layout, reductions persistent,
looped and split, softmax / layer_norm rows, 16-bit floats, indexing with its error, a matmul with
its epilogue fused after cuBLAS, a compiled training step, and a warm graph-cache hit."""
import os

import numpy as np
import pytest

if os.environ.get("TRITON_INTERPRET") == "1":
    pytest.skip("TRITON_INTERPRET=1: Triton's interpreter, not the GPU", allow_module_level=True)
pytest.importorskip("triton", reason="triton is not installed (pip install ember[gpu])")

import ember  # noqa: E402
from ember._functorch import make_fx  # noqa: E402
from ember._inductor.compile_fx import compile_fx  # noqa: E402

from cuda_pairs import cuda  # noqa: E402

F = ember.nn.functional
pytestmark = pytest.mark.usefixtures("strict_fuser")


def _leaves(x):
    return [leaf for v in x for leaf in _leaves(v)] if isinstance(x, (tuple, list)) else [x]


def check(fn, *inputs, tol=1e-5):
    want = fn(*inputs)
    compiled = compile_fx(make_fx(fn)(*inputs), list(inputs))
    assert compiled.current is not None and "ember_k" in compiled.current.code
    got = compiled(*inputs)
    for g, w in zip(_leaves(got), _leaves(want)):
        assert g.device.type == "cuda" and g.shape == w.shape and g.dtype == w.dtype
        a, b = g.cpu().numpy(), w.cpu().numpy()
        if w.dtype.is_floating_point:
            np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=tol, atol=tol, equal_nan=True)
        else:
            np.testing.assert_array_equal(a, b)
    return compiled


def test_pointwise_on_every_layout():
    base = np.random.default_rng(0).uniform(-3, 3, (64, 48)).astype(np.float32)
    xs = [cuda(base), cuda(base.T).t(), cuda(np.repeat(base, 2, -1))[:, ::2], cuda(base[:1]).expand(64, 48)]
    for x in xs:
        for y in xs:
            check(lambda a, b: (a * 2 + 1).tanh() * b.sigmoid() - ember.maximum(a, b) / (b.abs() + 1), x, y)
    i = cuda(np.arange(-20, 20).reshape(4, 10))
    check(lambda a: (a // 3, a % 7, a * a - 1), i)


@pytest.mark.parametrize("cols", [7, 1024, 20000])
def test_reductions_rows(cols):
    x = cuda(np.random.default_rng(cols).standard_normal((33, cols)).astype(np.float32))
    check(lambda a: (a.sum(1), a.mean(1), a.amax(1), a.amin(1), a.argmax(1), a.argmin(1), a.var(1),
                     ember.var_mean(a, 1)), x, tol=1e-4)
    check(lambda a: (a.softmax(-1), a.log_softmax(-1), F.layer_norm(a, (cols,))), x, tol=1e-4)


def test_split_reductions_and_nan():
    x = cuda(np.random.default_rng(1).standard_normal((1 << 20,)).astype(np.float32))
    check(lambda a: ((a * a).sum(), a.amax(), a.amin(), a.mean()), x, tol=1e-3)
    y = x.clone()
    y[12345] = float("nan")
    check(lambda a: (a.amax(), a.amax(0), a.argmax()), y)


@pytest.mark.parametrize("dtype", [ember.bfloat16, ember.float16])
def test_half_floats(dtype):
    x = cuda(np.random.default_rng(2).standard_normal((16, 256)).astype(np.float32)).to(dtype)
    check(lambda a: ((a * 2 + 1).tanh(), a.softmax(-1), F.layer_norm(a, (256,)), a.sum(1)), x, tol=2e-2)


def test_indexing_and_its_error():
    w, good = cuda(np.random.default_rng(3).standard_normal((50, 16)).astype(np.float32)), cuda(np.array([[1, 49]]))
    compiled = check(lambda e, t: F.embedding(t, e) * 2, w, good)
    with pytest.raises(IndexError):     # found on the device, raised where the host synchronises
        compiled(w, cuda(np.array([[1, 50]])))
        ember.cuda.synchronize()
    x = cuda(np.random.default_rng(4).standard_normal((8, 6)).astype(np.float32))
    check(lambda a: (ember.cat([a, a * 2], 1), F.pad(a, (1, 1)), a.gather(1, cuda(np.zeros((8, 2), np.int64)))), x)


def test_matmul_stays_extern_with_fused_epilogue():
    a = cuda(np.random.default_rng(5).standard_normal((64, 32)).astype(np.float32))
    w = cuda(np.random.default_rng(6).standard_normal((48, 32)).astype(np.float32))
    compiled = check(lambda x, y: F.gelu(x @ y.t() + 1), a, w, tol=1e-4)
    externs = [n.target.name for n in compiled.current.graph.nodes if hasattr(n.target, "name")]
    assert any("mm" in name or "matmul" in name for name in externs), externs   # cuBLAS: ember's CUDA matmul


def test_unaligned_input_views_relaunch_through_the_jit():
    base = cuda(np.random.default_rng(7).standard_normal(4097).astype(np.float32))
    check(lambda a: a * 3 + 1, base[1:])


def test_ember_compile_training_step_matches_eager():
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(32, 64), ember.nn.GELU(), ember.nn.LayerNorm(64),
                                ember.nn.Linear(64, 10)).cuda()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    x = cuda(np.random.default_rng(8).standard_normal((16, 32)).astype(np.float32))
    y = cuda(np.random.default_rng(9).integers(0, 10, (16,)))

    def losses(step_fn):
        model.load_state_dict(state)
        opt = ember.optim.SGD(model.parameters(), lr=0.1)
        out = []
        for _ in range(4):
            opt.zero_grad()
            loss = step_fn(x, y)
            loss.backward()
            opt.step()
            out.append(float(loss.cpu()))
        return out

    def step(a, b):
        return F.cross_entropy(model(a), b)
    eager = losses(step)
    compiled = losses(ember.compile(step))
    np.testing.assert_allclose(compiled, eager, rtol=1e-4, atol=1e-5)


def test_graph_cache_serves_cuda_graphs():
    from ember._inductor import codecache
    x = cuda(np.random.default_rng(10).standard_normal((40, 30)).astype(np.float32))
    fn = lambda a: (a.softmax(-1) * 3).sum(0)          # noqa: E731
    check(fn, x, tol=1e-4)
    codecache.reset_counters()
    check(fn, x, tol=1e-4)                              # a new compile of the same graph: the cache
    assert codecache.counters.get("graph_hit", 0) >= 1


def test_benchmark_compiled_module_runs_on_the_device(capsys):
    x = cuda(np.ones((256, 256), np.float32))
    compiled = check(lambda a: (a * 2).softmax(-1), x)
    assert compiled.benchmark_compiled_module(times=3, repeat=2) > 0
    assert "ms per call" in capsys.readouterr().out


def test_row_kernel_tuned_per_row_count_and_its_winners_stored(capsys, monkeypatch, tmp_path):
    # softmax over rows of 1024 at 128 and 256 rows: the same kernel source, each row count tuned on
    # its first call (GPU-timed: EMBER_LOGS=autotuning prints the three warps' times), each winner
    # stored under its own key among the candidates, and the results eager's after the tuning
    import glob
    import ember._logging
    from ember._inductor import config, diskstore
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))        # this test's tune files alone
    diskstore.forget_roots()
    ember._logging.set_logs(autotuning=True)
    try:
        for rows in (128, 256):
            x = cuda(np.random.default_rng(rows).standard_normal((rows, 1024)).astype(np.float32))
            compiled = check(lambda a: (a * 2).softmax(-1), x)
            np.testing.assert_allclose(compiled(x).cpu().numpy(), (x * 2).softmax(-1).cpu().numpy(),
                                       rtol=1e-5, atol=1e-6)
    finally:
        ember._logging.set_logs()
        monkeypatch.undo()
        diskstore.forget_roots()
    logged = [ln for ln in capsys.readouterr().err.splitlines() if " -> (None, " in ln]
    assert len(logged) == 2 and all(ln.count(" us") == 3 for ln in logged), logged
    keys = {k: v for p in glob.glob(str(tmp_path) + "/**/*.tune.json", recursive=True)
            for k, v in diskstore.read_json(p).items()}
    assert len(keys) == 2 and all(v[0] is None and v[1] in (2, 4, 8) for v in keys.values()), keys


def test_flat_kernel_tuned_once_and_its_winner_stored():
    import glob
    from ember._inductor import diskstore
    x = cuda(np.random.default_rng(11).standard_normal(1 << 18).astype(np.float32))
    compiled = check(lambda a: (a * 3).exp() - a, x)
    check(lambda a: (a * 3).exp() - a, x[1:])            # an unaligned view: Triton's JIT path
    tuned = [diskstore.read_json(p) for p in glob.glob(diskstore.subdir("triton") + "/*.tune.json")]
    assert any(len(t) for t in tuned), tuned
    np.testing.assert_allclose(compiled(x).cpu().numpy(), ((x * 3).exp() - x).cpu().numpy(), rtol=1e-5, atol=1e-5)
