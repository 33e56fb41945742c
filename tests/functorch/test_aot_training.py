"""Training under ``ember.compile(backend="aot_eager")`` (AOT autograd: joint graph, partition, an
autograd.Function per graph) against eager ember and PyTorch 2.13: the MLP and the two CNNs of
tests/test_training.py and a GPT block (causal attention, LayerNorm, GELU, dropout), 20 SGD-momentum
steps in float64 from the same weights and batches; the loss at every step within 1e-5 relative,
and the final weights."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
import torch

import ember
from ember._dynamo.backends.common import aot_autograd, nop
from ember._functorch.partitioners import min_cut_rematerialization_partition

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from test_training import cnn, cnn_bn, digits_batches, mlp  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "bench"))
from _gpt_modules import gpt_block as _gpt_block  # noqa: E402  (the one GPT block, shared with bench/)

STEPS = 20
MIN_CUT = aot_autograd(fw_compiler=nop, bw_compiler=nop, partition_fn=min_cut_rematerialization_partition)


def gpt_block(lib, dropout, d=16, heads=2):
    return _gpt_block(lib, dropout, d, heads)


def gpt_batches(n, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((4, 8, 16)), rng.standard_normal((4, 8, 16))) for _ in range(n)]


def _train(lib, model, batches, loss_fn, forward):
    opt = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model.train()
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = loss_fn(lib, forward(lib.from_numpy(x).double()), lib.from_numpy(y))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def _classify(lib, out, y):
    return lib.nn.functional.cross_entropy(out, y)


def _regress(lib, out, y):
    return ((out - y.double()) ** 2).mean()


def _ember_copy(tmodel, build):
    emodel = build().double()
    emodel.load_state_dict({k: ember.from_numpy(v.detach().double().numpy().copy()) if v.is_floating_point()
                            else ember.from_numpy(v.numpy().copy()) for k, v in tmodel.state_dict().items()})
    return emodel


CLASSIFIERS = {"mlp": (mlp, False), "cnn": (cnn, True), "cnn_bn": (cnn_bn, True)}


@pytest.mark.parametrize("backend", ["aot_eager", "min_cut"])
@pytest.mark.parametrize("name", list(CLASSIFIERS))
def test_classifier_training_matches_eager_and_torch(name, backend, capsys):
    """cnn_bn mutates its BatchNorm buffers (running stats, num_batches_tracked): its graph is
    functionalised and compiled (no eager fallback), the buffers written back after each step."""
    build, image = CLASSIFIERS[name]
    torch.manual_seed(0)
    tmodel = build(torch.nn).double()
    batches = digits_batches(STEPS, image)
    t_losses = _train(torch, tmodel, batches, _classify, tmodel)
    torch.manual_seed(0)
    reference = build(torch.nn).double()
    eager_model = _ember_copy(reference, lambda: build(ember.nn))
    e_losses = _train(ember, eager_model, batches, _classify, eager_model)
    compiled_model = _ember_copy(reference, lambda: build(ember.nn))
    ember._logging.set_logs(aot_graphs=True)
    try:
        compiled = ember.compile(compiled_model, backend="aot_eager" if backend == "aot_eager" else MIN_CUT)
        c_losses = _train(ember, compiled_model, batches, _classify, compiled)
    finally:
        ember._logging.set_logs()
    log = capsys.readouterr().err
    assert t_losses[-1] < t_losses[0]
    np.testing.assert_allclose(c_losses, e_losses, rtol=1e-5, atol=0)
    np.testing.assert_allclose(c_losses, t_losses, rtol=1e-5, atol=0)
    for (k, v), (_, w), (_, e) in zip(compiled_model.state_dict().items(), tmodel.state_dict().items(),
                                      eager_model.state_dict().items()):
        np.testing.assert_allclose(v.numpy(), w.numpy(), rtol=1e-5, atol=1e-8, err_msg=k)
        np.testing.assert_allclose(v.numpy(), e.numpy(), rtol=1e-9, atol=1e-12, err_msg=k)
    if name == "cnn_bn":     # the running stats and the step count were really written, as in eager
        tracked = [v for k, v in compiled_model.state_dict().items() if k.endswith("num_batches_tracked")]
        assert [int(v) for v in tracked] == [STEPS]
    assert "===== Backward graph" in log
    assert "runs eagerly" not in log


class CountingCompiler:
    """fw/bw compilers for aot_autograd that count the graphs they get (so a test knows the model
    really ran through AOT autograd, not eagerly)."""

    def __init__(self, partition_fn=None):
        self.fw = self.bw = 0
        options = {"partition_fn": partition_fn} if partition_fn else {}
        self.backend = aot_autograd(fw_compiler=self.fw_compiler, bw_compiler=self.bw_compiler, **options)

    def fw_compiler(self, gm, inputs):
        self.fw += 1
        return gm.forward

    def bw_compiler(self, gm, inputs):
        self.bw += 1
        return gm.forward


def _compiler(backend):
    return CountingCompiler(None if backend == "aot_eager" else min_cut_rematerialization_partition)


@pytest.mark.parametrize("backend", ["aot_eager", "min_cut"])
def test_gpt_block_without_dropout_matches_torch(backend):
    torch.manual_seed(0)
    tmodel = gpt_block(torch, 0.0).double()
    reference = {k: v.clone() for k, v in tmodel.state_dict().items()}
    batches = gpt_batches(STEPS)
    t_losses = _train(torch, tmodel, batches, _regress, tmodel)
    emodel = gpt_block(ember, 0.0).double()
    emodel.load_state_dict({k: ember.from_numpy(v.numpy().copy()) for k, v in reference.items()})
    counter = _compiler(backend)
    compiled = ember.compile(emodel, backend=counter.backend)
    c_losses = _train(ember, emodel, batches, _regress, compiled)
    assert counter.fw >= 1 and counter.bw == counter.fw
    assert t_losses[-1] < t_losses[0]
    np.testing.assert_allclose(c_losses, t_losses, rtol=1e-5, atol=0)


@pytest.mark.parametrize("backend", ["aot_eager", "min_cut"])
def test_gpt_block_with_dropout_matches_eager_under_a_seed(backend):
    """Dropout draws the same masks compiled and eager, 20 steps. (ember.compile's first call of a
    frame draws random numbers of its own today -- with backend="eager" too -- so the compiled model
    is called once before seeding.)"""
    batches = gpt_batches(STEPS)
    ember.manual_seed(0)
    eager_model = gpt_block(ember, 0.1).double()
    state = {k: v.clone() for k, v in eager_model.state_dict().items()}
    compiled_model = gpt_block(ember, 0.1).double()
    compiled_model.load_state_dict(state)
    counter = _compiler(backend)
    compiled = ember.compile(compiled_model, backend=counter.backend)
    with ember.no_grad():
        compiled(ember.zeros(4, 8, 16, dtype=ember.float64))
    compiled(ember.zeros(4, 8, 16, dtype=ember.float64)).sum().backward()    # compile the training graphs too
    compiled_model.zero_grad()
    ember.manual_seed(1)
    e_losses = _train(ember, eager_model, batches, _regress, eager_model)
    ember.manual_seed(1)
    c_losses = _train(ember, compiled_model, batches, _regress, compiled)
    assert len(set(e_losses)) == STEPS
    assert counter.fw >= 1 and counter.bw >= 1
    np.testing.assert_allclose(c_losses, e_losses, rtol=1e-5, atol=0)
    for (k, v), (_, w) in zip(compiled_model.state_dict().items(), eager_model.state_dict().items()):
        np.testing.assert_allclose(v.numpy(), w.numpy(), rtol=1e-5, atol=1e-8, err_msg=k)
