"""mode="reduce-overhead" without a GPU, and the CUDA-graph API of a build without CUDA.

On CPU tensors reduce-overhead is the default mode (PyTorch skips cudagraphs for CPU graphs): the
same values as eager and as default mode, the reason logged under EMBER_LOGS=cudagraphs, no CuPy
imported. Graphs with random ops are never captured, whatever the device; dropout with
training=False is not random. The CUDA-graph API exists and, without CUDA, raises what a CPU
build of PyTorch raises (tests/cuda/test_cuda_graphs.py runs the rest on a GPU)."""
import subprocess
import sys

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F


def _fn(x, w):
    return ((x @ w).relu() * 2.0 + x.sum(1, keepdim=True)).sin()


@pytest.fixture
def cudagraph_logs(capsys):
    ember._logging.set_logs(cudagraphs=True)
    capsys.readouterr()
    yield lambda: capsys.readouterr().err
    ember._logging.set_logs()


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_reduce_overhead_on_cpu_is_the_default_mode(backend, cudagraph_logs):
    rng = np.random.default_rng(0)
    default = ember.compile(_fn, backend=backend)
    reduce_overhead = ember.compile(_fn, backend=backend, mode="reduce-overhead")
    for shape in ((4, 5), (4, 5), (4, 5), (2, 5)):
        x, w = ember.from_numpy(rng.standard_normal(shape).astype(np.float32)), ember.randn(5, 3)
        got = reduce_overhead(x, w)
        np.testing.assert_array_equal(got.numpy(), default(x, w).numpy())
        np.testing.assert_allclose(got.numpy(), _fn(x, w).numpy(), rtol=1e-5, atol=1e-6)
    assert "skipping cudagraphs due to cpu device" in cudagraph_logs()


def test_reduce_overhead_module_with_grad_on_cpu(cudagraph_logs):
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(5, 4), ember.nn.Tanh())
    twin = ember.nn.Sequential(ember.nn.Linear(5, 4), ember.nn.Tanh())
    twin.load_state_dict(model.state_dict())
    compiled = ember.compile(model, backend="eager", mode="reduce-overhead")
    x = ember.randn(3, 5)
    for _ in range(3):
        compiled(x).sum().backward()
        twin(x).sum().backward()
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
    assert "skipping cudagraphs" in cudagraph_logs()


def test_graphs_with_random_ops_are_never_captured(cudagraph_logs):
    f = ember.compile(lambda x: F.dropout(x, 0.5, training=True) + ember.rand(3), backend="eager",
                      mode="reduce-overhead")
    ember.manual_seed(1)
    got = f(ember.ones(3))
    ember.manual_seed(1)
    np.testing.assert_array_equal(got.numpy(), (F.dropout(ember.ones(3), 0.5, training=True) + ember.rand(3)).numpy())
    assert "skipping cudagraphs due to the graph has random ops (dropout)" in cudagraph_logs()
    g = ember.compile(lambda x: F.dropout(x, 0.5, training=False) * 2.0, backend="eager", mode="reduce-overhead")
    np.testing.assert_array_equal(g(ember.ones(3)).numpy(), np.full(3, 2.0, np.float32))
    log = cudagraph_logs()
    assert "random ops" not in log and "skipping cudagraphs due to cpu device" in log


def test_random_op_detection_reads_the_training_argument():
    from ember._dynamo.backends.cudagraphs import _random_op
    seen = []

    def backend(gm, example_inputs):
        seen.append(_random_op(gm))
        return gm.forward
    cases = [(lambda x: F.dropout(x, 0.1), "dropout"), (lambda x: F.dropout(x, 0.1, False), None),
             (lambda x: F.dropout(x, 0.1, training=False), None), (lambda x: F.rrelu(x), None),
             (lambda x: x.bernoulli(), "bernoulli"),
             (lambda x: x + ember.randn_like(x), "randn_like"), (lambda x: x.exp() * 2.0, None)]
    for fn, _ in cases:
        ember.compile(fn, backend=backend)(ember.ones(4))
    assert seen == [want for _, want in cases]


def test_random_op_detection_in_aot_graphs():
    # the AOT backends hand cudagraphify aten graphs: dropout is aten.dropout.default there (a mask of
    # ones dropped, when the input requires grad); p=0 and train=False return the input, drawing nothing
    from ember._dynamo.backends.cudagraphs import _random_op
    from ember._functorch.aot_autograd import aot_function
    seen = []

    def compiler(gm, example_inputs):
        seen.append(_random_op(gm))
        return gm.forward
    cases = [((0.3, True), "dropout"), ((0.0, True), None), ((0.3, False), None)]
    for (p, train), _ in cases:
        x = ember.randn(4, 3, requires_grad=True)
        aot_function(lambda t: F.dropout(t, p, train) * 2.0, compiler)(x).sum().backward()
    # (forward, backward) per case: a backward multiplies by the saved mask, drawing nothing
    assert seen == [r for _, want in cases for r in (want, None)]


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_reduce_overhead_training_on_cpu_is_the_default_mode(backend, cudagraph_logs, monkeypatch):
    monkeypatch.setattr(ember._dynamo.config, "cudagraph_training", True)
    # the AOT backends wrap their compiled forward and backward (not the dynamo graph's callable):
    # on the CPU both say why they run as they are, and train as default mode does
    def build():
        ember.manual_seed(0)
        return ember.nn.Sequential(ember.nn.Linear(5, 8), ember.nn.GELU(), ember.nn.Linear(8, 2))
    models = [build(), build()]
    compiled = [ember.compile(models[0], backend=backend, mode="reduce-overhead"),
                ember.compile(models[1], backend=backend)]
    for step in range(3):
        x = ember.randn(4, 5)
        for m in compiled:
            m(x).square().sum().backward()
    for p, q in zip(models[0].parameters(), models[1].parameters()):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
    log = cudagraph_logs()
    assert log.count("skipping cudagraphs due to cpu device (an input is not on the GPU)") == 2   # fw, bw


def test_only_aot_backends_replay_their_forward_and_backward():
    from ember._dynamo.backends import lookup_backend
    from ember._dynamo.backends.cudagraphs import aot_backend
    assert aot_backend(lookup_backend("inductor")) is not None
    assert aot_backend(lookup_backend("aot_eager")) is not None
    assert aot_backend(lookup_backend("eager")) is None
    assert aot_backend(lambda gm, example_inputs: gm.forward) is None     # a user backend: its callable


def test_compile_refuses_unknown_modes_as_torch():
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="Unrecognized mode"):
            lib.compile(lambda x: x, mode="fastest")(lib.ones(1))
        with pytest.raises(RuntimeError, match="Either mode or options"):
            lib.compile(lambda x: x, mode="reduce-overhead", options={"a": 1})


def test_reduce_overhead_on_cpu_imports_no_cupy():
    code = ("import sys, ember\n"
            "f = ember.compile(lambda x: x * 2 + 1, backend='eager', mode='reduce-overhead')\n"
            "for _ in range(3): f(ember.ones(4))\n"
            "print(sorted(m for m in sys.modules if m == 'cupy' or m.startswith('ember._cuda')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_cuda_graph_api_without_cuda_raises_as_a_cpu_build_of_torch():
    if ember.cuda.is_available() or torch.cuda.is_available():
        pytest.skip("a GPU is present: tests/cuda/test_cuda_graphs.py covers the API there")
    for name in ("CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing", "make_graphed_callables"):
        assert callable(getattr(ember.cuda, name)) and callable(getattr(torch.cuda, name))
    calls = [lambda lib: lib.cuda.CUDAGraph(), lambda lib: lib.cuda.graph_pool_handle(),
             lambda lib: lib.cuda.graph(None), lambda lib: lib.cuda.is_current_stream_capturing(),
             lambda lib: lib.cuda.make_graphed_callables(lambda x: x * 2, (lib.ones(2),))]
    for call in calls:
        with pytest.raises(RuntimeError) as expected:
            call(torch)
        with pytest.raises(RuntimeError) as got:
            call(ember)
        assert str(got.value).replace("ember", "torch") == str(expected.value)
    with pytest.raises(AttributeError):
        ember.cuda.no_such_graph_api


def test_make_graphed_callables_validates_arguments_as_torch():
    for lib in (ember, torch):
        model = lib.nn.Linear(2, 2)
        model.register_forward_hook(lambda *args: None)
        with pytest.raises(AssertionError, match="must not have hooks"):
            lib.cuda.make_graphed_callables(model, (lib.ones(1, 2),))
        with pytest.raises(AssertionError, match="must contain only Tensors"):
            lib.cuda.make_graphed_callables(lambda x, n: x * n, (lib.ones(2), 3))


def test_a_refused_capture_names_the_ember_function_that_raised():
    from ember._dynamo.backends.cudagraphs import _where
    with pytest.raises(RuntimeError) as error:
        ember.ones(2).view(3)
    where = _where(error.value)
    assert where.startswith("ember/") and ".py:" in where
    assert _where(RuntimeError("made outside")) == "outside ember"
