"""Training steps under ``ember.compile(mode="reduce-overhead")``: AOT autograd's compiled forward
and backward replayed from CUDA graphs (ember/_dynamo/backends/cudagraphs.py), compared with
the same steps in eager ember on the same weights and batches: losses, gradients and weights after
each step. Each test also counts captures and replays, so a silent fall back to running the
compiled code as it is fails it.

Tolerances: "aot_eager" runs eager's own kernels in the graphs (float32, TF32 off: rtol 1e-5);
"inductor" runs the fuser's Triton kernels, which sum in another order (rtol 1e-4).
"""
import os
import sys

import numpy as np
import pytest

import ember
from ember._cuda import graphs as graph_impl

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from _gpt_modules import gpt_block  # noqa: E402

F = ember.nn.functional
TOL = {"aot_eager": 1e-5, "inductor": 1e-4}


@pytest.fixture
def counted(monkeypatch):
    counts = {"captured": 0, "replayed": 0}
    end, replay = graph_impl.CUDAGraph.capture_end, graph_impl.CUDAGraph.replay

    def counting_end(self):
        end(self)
        counts["captured"] += 1

    def counting_replay(self):
        counts["replayed"] += 1
        replay(self)
    monkeypatch.setattr(graph_impl.CUDAGraph, "capture_end", counting_end)
    monkeypatch.setattr(graph_impl.CUDAGraph, "replay", counting_replay)
    return counts


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    ember._dynamo.reset()
    yield
    ember._dynamo.reset()


def _mlp():
    ember.manual_seed(0)
    return ember.nn.Sequential(ember.nn.Linear(32, 64), ember.nn.GELU(), ember.nn.LayerNorm(64),
                               ember.nn.Linear(64, 10)).cuda()


def _batches(n, shape=(16, 32), classes=10, seed=1):
    rng = np.random.default_rng(seed)
    return [(ember.from_numpy(rng.standard_normal(shape).astype(np.float32)).cuda(),
             ember.from_numpy(rng.integers(0, classes, shape[:1] if len(shape) == 2 else shape[:2])).cuda())
            for _ in range(n)]


def _twins(build):
    eager, graphed = build(), build()
    graphed.load_state_dict(eager.state_dict())
    return eager, graphed


def _assert_same(got, want, tol, what):
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().cpu().numpy(), rtol=tol, atol=tol,
                               err_msg=what)


def _train(model, forward, batches, loss_of, zero_grad=True, lr=0.05):
    """Losses (tensors, kept: they must survive later replays) and gradients of each step."""
    opt = ember.optim.AdamW(model.parameters(), lr=lr)
    losses, grads = [], []
    for x, y in batches:
        if zero_grad:
            opt.zero_grad(set_to_none=True)
        loss = loss_of(forward(x), y)
        loss.backward()
        grads.append([p.grad.clone() for p in model.parameters()])
        opt.step()
        losses.append(loss)
    return losses, grads


def _cross_entropy(out, y):
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("zero_grad", [True, False])
def test_mlp_trains_as_eager_with_forward_and_backward_replayed(counted, backend, zero_grad):
    eager, graphed = _twins(_mlp)
    batches = _batches(6)
    compiled = ember.compile(graphed, backend=backend, mode="reduce-overhead")
    want_losses, want_grads = _train(eager, eager, batches, _cross_entropy, zero_grad)
    got_losses, got_grads = _train(graphed, compiled, batches, _cross_entropy, zero_grad)
    tol = TOL[backend]
    for step, (got, want) in enumerate(zip(got_losses, want_losses)):     # held since their step
        _assert_same(got, want, tol, f"loss of step {step}")
    for step, (got, want) in enumerate(zip(got_grads, want_grads)):
        for i, (g, w) in enumerate(zip(got, want)):
            _assert_same(g, w, tol, f"grad {i} of step {step}")
    for (name, p), q in zip(graphed.named_parameters(), eager.parameters()):
        _assert_same(p, q, tol, name)
    # step 1 warms up, step 2 records the forward and the backward, steps 2-6 replay both
    assert counted["captured"] == 2 and counted["replayed"] == 2 * 5


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_gpt_block_trains_as_eager(counted, backend):
    def build():
        ember.manual_seed(0)
        block = gpt_block(ember, d=64, heads=4)
        return ember.nn.Sequential(block, ember.nn.Linear(64, 50)).cuda()
    eager, graphed = _twins(build)
    batches = _batches(5, shape=(2, 16, 64), classes=50, seed=3)
    compiled = ember.compile(graphed, backend=backend, mode="reduce-overhead")
    want_losses, want_grads = _train(eager, eager, batches, _cross_entropy, lr=1e-3)
    got_losses, got_grads = _train(graphed, compiled, batches, _cross_entropy, lr=1e-3)
    tol = 10 * TOL[backend]     # softmax, layer norm and GELU over 16 x 64: a few more roundings
    for step, (got, want) in enumerate(zip(got_losses, want_losses)):
        _assert_same(got, want, tol, f"loss of step {step}")
    for i, (g, w) in enumerate(zip(got_grads[-1], want_grads[-1])):
        _assert_same(g, w, tol, f"grad {i} of the last step")
    assert counted["captured"] >= 2 and counted["replayed"] >= 2 * 3


def test_outputs_held_across_steps_keep_their_values(counted):
    eager, graphed = _twins(_mlp)
    compiled = ember.compile(graphed, backend="aot_eager", mode="reduce-overhead")
    batches = _batches(5)
    with ember.no_grad():                                      # the inference graph replays too
        got = [compiled(x) for x, _ in batches]
        want = [eager(x) for x, _ in batches]
    for step, (g, w) in enumerate(zip(got, want)):
        _assert_same(g, w, 1e-5, f"output of call {step}")
    assert counted["captured"] == 1 and counted["replayed"] == 4


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_forward_run_twice_before_one_backward_gives_eager_grads(counted, backend):
    eager, graphed = _twins(_mlp)
    compiled = ember.compile(graphed, backend=backend, mode="reduce-overhead")
    tol = TOL[backend]
    for step, (x1, x2) in enumerate(zip(_batches(4, seed=5), _batches(4, seed=6))):
        for model, forward in ((eager, eager), (graphed, compiled)):
            model.zero_grad(set_to_none=True)
            first = forward(x1[0])                    # its saved activations live in the forward's pool ...
            second = forward(x2[0])                   # ... when the forward replays again
            (first.square().mean() * 2.0).backward()  # the first graph's backward after the second forward
            second.square().mean().backward()
        for (name, p), q in zip(graphed.named_parameters(), eager.parameters()):
            _assert_same(p.grad, q.grad, tol, f"{name}.grad, step {step}")
    assert counted["replayed"] > 0


def test_random_forward_runs_as_it_is_and_matches_eager(counted, capsys):
    def build():
        ember.manual_seed(0)
        return ember.nn.Sequential(ember.nn.Linear(32, 64), ember.nn.Dropout(0.3), ember.nn.Linear(64, 10)).cuda()
    eager, graphed = _twins(build)
    compiled = ember.compile(graphed, backend="aot_eager", mode="reduce-overhead")
    ember._logging.set_logs(cudagraphs=True)
    try:
        for step, (x, y) in enumerate(_batches(4)):
            results = []
            for model, forward in ((eager, eager), (graphed, compiled)):
                model.zero_grad(set_to_none=True)
                ember.manual_seed(step)
                ember.cuda.manual_seed(step)
                loss = _cross_entropy(forward(x), y)
                loss.backward()
                results.append((loss, [p.grad for p in model.parameters()]))
            (want, want_grads), (got, got_grads) = results
            _assert_same(got, want, 1e-5, f"loss of step {step}")
            for g, w in zip(got_grads, want_grads):
                _assert_same(g, w, 1e-5, f"grad of step {step}")
    finally:
        ember._logging.set_logs()
    assert "random ops (dropout)" in capsys.readouterr().err
