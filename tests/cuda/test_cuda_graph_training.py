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

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from _gpt_modules import gpt2_classes  # noqa: E402

F = ember.nn.functional
TOL = {"aot_eager": 1e-5, "inductor": 1e-4}


@pytest.fixture(autouse=True)
def _fresh_dynamo(monkeypatch):
    monkeypatch.setattr(ember._dynamo.config, "cudagraph_training", True)    # (the default; a test may have changed it)
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
        loss = forward(x, y) if loss_of is None else loss_of(forward(x), y)
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


def _gpt():
    ember.manual_seed(0)
    return gpt2_classes(ember)(vocab_size=64, block_size=16, n_layer=2, n_head=2, n_embd=32).cuda()


def _gpt_batches():
    rng = np.random.default_rng(3)
    return [tuple(ember.from_numpy(rng.integers(0, 64, (2, 16))).cuda() for _ in range(2)) for _ in range(5)]


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_gpt_trains_as_eager_with_its_loss_a_graph_output(counted, backend, capsys):
    # the loss is computed in the graph: each step's loss tensor, kept, is an output of the graph
    eager, graphed = _twins(_gpt)
    batches = _gpt_batches()
    compiled = ember.compile(graphed, backend=backend, mode="reduce-overhead")
    want_losses, want_grads = _train(eager, eager, batches, None, lr=1e-3)
    ember._logging.set_logs(cudagraphs=True)
    try:
        got_losses, got_grads = _train(graphed, compiled, batches, None, lr=1e-3)
    finally:
        ember._logging.set_logs()
    tol = 10 * TOL[backend]     # softmax, layer norm and GELU: a few more roundings than the MLP
    for step, (got, want) in enumerate(zip(got_losses, want_losses)):
        _assert_same(got, want, tol, f"loss of step {step}")
    for i, (g, w) in enumerate(zip(got_grads[-1], want_grads[-1])):
        _assert_same(g, w, tol, f"grad {i} of the last step")
    if counted["replayed"] < 2 * 3:     # a graph that does not replay says why
        assert "skipping cudagraphs due to" in capsys.readouterr().err


def test_gpt_forward_and_backward_replay(counted):
    graphed = _gpt()
    compiled = ember.compile(graphed, mode="reduce-overhead")
    _train(graphed, compiled, _gpt_batches(), None, lr=1e-3)
    assert counted["replayed"] >= 2 * 3


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


def test_random_forward_runs_as_it_is_as_default_mode_does(counted, capsys):
    # (the oracle is default mode: compiled dropout draws on the device, eager's autograd kernel on the host)
    def build():
        ember.manual_seed(0)
        return ember.nn.Sequential(ember.nn.Linear(32, 64), ember.nn.Dropout(0.3), ember.nn.Linear(64, 10)).cuda()
    default_model, graphed = _twins(build)
    default = ember.compile(default_model, backend="aot_eager")
    compiled = ember.compile(graphed, backend="aot_eager", mode="reduce-overhead")
    ember._logging.set_logs(cudagraphs=True)
    try:
        for step, (x, y) in enumerate(_batches(4)):
            results = []
            for model, forward in ((default_model, default), (graphed, compiled)):
                model.zero_grad(set_to_none=True)
                ember.manual_seed(step)
                ember.cuda.manual_seed(step)
                loss = _cross_entropy(forward(x), y)
                loss.backward()
                results.append((loss, [p.grad for p in model.parameters()]))
            (want, want_grads), (got, got_grads) = results
            _assert_same(got, want, 1e-6, f"loss of step {step}")
            for g, w in zip(got_grads, want_grads):
                _assert_same(g, w, 1e-6, f"grad of step {step}")
    finally:
        ember._logging.set_logs()
    assert "random ops (dropout)" in capsys.readouterr().err
    assert counted["replayed"] >= 2          # the backward (no draw: it reads the saved mask) replays


@pytest.mark.parametrize("backend, case", [
    ("eager", "index_add"),
    ("inductor", "embedding")])
def test_out_of_range_indices_at_a_replay_raise_eagers_error(counted, backend, case):
    # a capture cannot read the device: index_add's bounds and the fuser's kernel error flags are
    # checked after each replay (graphs.defer_check), raising what eager raises
    fns = {"index_add": lambda w, i: w.index_add(0, i, ember.ones(3, 4, device="cuda")) * 2.0,
           "embedding": lambda w, i: F.embedding(i, w) * 2.0}
    fn = fns[case]
    compiled = ember.compile(fn, backend=backend, mode="reduce-overhead")
    w = ember.from_numpy(np.arange(20, dtype=np.float32).reshape(5, 4)).cuda()
    good, bad = ember.tensor([0, 4, 4]).cuda(), ember.tensor([1, 7, 2]).cuda()
    with ember.no_grad():
        for _ in range(3):
            _assert_same(compiled(w, good), fn(w, good), 1e-6, "in range")
        # (the embedding's indices are checked on the device: reported at the next sync, eager too)
        with pytest.raises(Exception) as eager_error:
            fn(w, bad)
            ember.cuda.synchronize()
        with pytest.raises(eager_error.type) as replay_error:
            compiled(w, bad)
            ember.cuda.synchronize()
        assert str(replay_error.value) == str(eager_error.value)
        _assert_same(compiled(w, good), fn(w, good), 1e-6, "in range after the error")
    assert counted["captured"] == 1 and counted["replayed"] == 4
