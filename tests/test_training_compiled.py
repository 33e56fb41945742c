"""Training under ``ember.compile(model)`` with the default backend (AOT autograd with the fuser's
compile_fx as forward and backward compiler: generated C kernels) against eager ember and PyTorch
2.13, float64, 20 steps from the same weights and batches; the loss at every step within 1e-5
relative. Models: the MLP 784-512-512-10 (SGD momentum), a CNN (SGD momentum) and a GPT block
(d=256, 4 heads, seq 128, batch 8, AdamW; dropout 0 against torch, dropout 0.1 under a seed against
eager ember). Every test asserts that the compiled wrappers really ran -- forward and backward
graphs, once per step -- so a silent fallback to eager fails it."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
import torch

import ember
from ember._inductor import compile_fx as compile_fx_module

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
from _gpt_modules import gpt_block  # noqa: E402  (the one GPT block, shared with bench/)

STEPS = 20


class WrapperCalls:
    """Counts the calls of every compiled wrapper that compile_fx builds while installed (the
    wrapper runs only generated kernels and extern ops; an eager fallback never reaches it)."""

    def __init__(self, monkeypatch):
        self.built = self.calls = 0
        self.graphs = []
        real = compile_fx_module.compile_graph

        def counting_compile_graph(gm, inputs):
            wrapper_gm = real(gm, inputs)
            self.built += 1
            self.graphs.append(wrapper_gm)
            forward = wrapper_gm.forward

            def counted(*args):
                self.calls += 1
                return forward(*args)
            wrapper_gm.forward = counted
            return wrapper_gm
        monkeypatch.setattr(compile_fx_module, "compile_graph", counting_compile_graph)


def mlp(nn):
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


def cnn(nn):
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 7 * 7, 10))


def classifier_batches(shape, seed=0):
    """10 random prototypes plus noise, so that the loss falls within 20 steps."""
    rng = np.random.default_rng(seed)
    prototypes = rng.standard_normal((10,) + shape[1:])
    out = []
    for _ in range(STEPS):
        y = rng.integers(0, 10, shape[0])
        out.append((prototypes[y] + 0.8 * rng.standard_normal(shape), y))
    return out


def gpt_batches(seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((8, 128, 256)), rng.standard_normal((8, 128, 256))) for _ in range(STEPS)]


def classify(lib, out, y):
    return lib.nn.functional.cross_entropy(out, y)


def regress(lib, out, y):
    return ((out - y) ** 2).mean()


def sgd_momentum(lib, params):
    return lib.optim.SGD(params, lr=0.01, momentum=0.9)


def adamw(lib, params):
    return lib.optim.AdamW(params, lr=1e-3, weight_decay=0.01)


def train(lib, model, forward, batches, loss_fn, make_opt):
    opt = make_opt(lib, model.parameters())
    model.train()
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = loss_fn(lib, forward(lib.from_numpy(x.copy())), lib.from_numpy(y.copy()))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def ember_copy(tmodel, build):
    emodel = build().double()
    emodel.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy()) for k, v in tmodel.state_dict().items()})
    return emodel


def assert_same_weights(model, reference):
    for (k, v), (_, w) in zip(model.state_dict().items(), reference.state_dict().items()):
        np.testing.assert_allclose(v.numpy(), w.detach().numpy(), rtol=1e-5, atol=1e-8, err_msg=k)


CASES = {
    "mlp": (mlp, (64, 784), classify, sgd_momentum),
    "cnn": (cnn, (16, 1, 28, 28), classify, sgd_momentum),
}


@pytest.mark.parametrize("name", list(CASES))
def test_classifier_trains_like_eager_and_torch(name, monkeypatch):
    build, shape, loss_fn, make_opt = CASES[name]
    batches = classifier_batches(shape)
    torch.manual_seed(0)
    tmodel = build(torch.nn).double()
    emodel_eager = ember_copy(tmodel, lambda: build(ember.nn))
    emodel = ember_copy(tmodel, lambda: build(ember.nn))
    t_losses = train(torch, tmodel, tmodel, batches, loss_fn, make_opt)
    e_losses = train(ember, emodel_eager, emodel_eager, batches, loss_fn, make_opt)
    calls = WrapperCalls(monkeypatch)
    c_losses = train(ember, emodel, ember.compile(emodel), batches, loss_fn, make_opt)
    assert t_losses[-1] < t_losses[0]
    np.testing.assert_allclose(c_losses, e_losses, rtol=1e-5, atol=0)
    np.testing.assert_allclose(c_losses, t_losses, rtol=1e-5, atol=0)
    assert_same_weights(emodel, tmodel)
    assert calls.built == 2 and calls.calls == 2 * STEPS      # forward and backward, every step


def test_gpt_block_without_dropout_trains_like_eager_and_torch(monkeypatch):
    batches = gpt_batches()
    torch.manual_seed(0)
    tmodel = gpt_block(torch, 0.0).double()
    emodel_eager = ember_copy(tmodel, lambda: gpt_block(ember, 0.0))
    emodel = ember_copy(tmodel, lambda: gpt_block(ember, 0.0))
    t_losses = train(torch, tmodel, tmodel, batches, regress, adamw)
    e_losses = train(ember, emodel_eager, emodel_eager, batches, regress, adamw)
    calls = WrapperCalls(monkeypatch)
    c_losses = train(ember, emodel, ember.compile(emodel), batches, regress, adamw)
    assert t_losses[-1] < t_losses[0]
    np.testing.assert_allclose(c_losses, e_losses, rtol=1e-5, atol=0)
    np.testing.assert_allclose(c_losses, t_losses, rtol=1e-5, atol=0)
    assert_same_weights(emodel, tmodel)
    assert calls.built == 2 and calls.calls == 2 * STEPS


def test_gpt_block_with_dropout_trains_like_eager_under_a_seed(monkeypatch):
    """Dropout 0.1: compiled and eager draw the same masks from the same seed, 20 steps (the losses
    all differ, so the masks really change from step to step)."""
    batches = gpt_batches()
    ember.manual_seed(0)
    eager_model = gpt_block(ember, 0.1).double()
    compiled_model = gpt_block(ember, 0.1).double()
    compiled_model.load_state_dict({k: v.clone() for k, v in eager_model.state_dict().items()})
    calls = WrapperCalls(monkeypatch)
    compiled = ember.compile(compiled_model)
    ember.manual_seed(1)
    e_losses = train(ember, eager_model, eager_model, batches, regress, adamw)
    ember.manual_seed(1)
    c_losses = train(ember, compiled_model, compiled, batches, regress, adamw)
    assert len(set(e_losses)) == STEPS
    np.testing.assert_allclose(c_losses, e_losses, rtol=1e-5, atol=0)
    assert_same_weights(compiled_model, eager_model)
    assert calls.built == 2 and calls.calls == 2 * STEPS


# -- the bugs these models found, each as its own case ------------------------------------------

VIEWS_OF_WINDOWS = {
    "split then view": lambda x: x.split(4, dim=2)[1].view(2, 3, 2, 2) * 2,
    "slice then reshape": lambda x: x[..., 4:8].reshape(2, 3, 2, 2) * 2,
    "strided slice then reshape": lambda x: x[..., ::2].reshape(6, 6) * 2,
    "transpose then reshape": lambda x: x.transpose(0, 1).reshape(6, 12) * 2,
    "transpose then view keeps the last dim": lambda x: x.transpose(0, 1).reshape(3, 2, 3, 4) * 2,
    "matmul of split heads": lambda x: x.split(4, 2)[0].view(2, 3, 2, 2).transpose(1, 2)
    @ x.split(4, 2)[1].view(2, 3, 2, 2).transpose(1, 2).transpose(-2, -1),
    "flatten of a sliced extern": lambda x: (x @ x.transpose(1, 2))[:, 1:].flatten(1) + 1,
    "empty": lambda x: x[:, :, :0].reshape(2, 0, 5) + 1,
}


@pytest.mark.parametrize("name", list(VIEWS_OF_WINDOWS))
def test_reshape_of_a_strided_window_reads_the_window(name):
    """view/reshape of a non-contiguous buffer window (a split of qkv, a slice, a transpose)
    compiled gave the wrong elements (read as if contiguous): the GPT block's loss was off by 1%."""
    fn = VIEWS_OF_WINDOWS[name]
    x = ember.from_numpy(np.random.default_rng(0).standard_normal((2, 3, 12)))
    np.testing.assert_array_equal(ember.compile(fn)(x).numpy(), fn(x).numpy())


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_compiling_draws_no_random_numbers(backend):
    """The first (compiling) call of a frame with dropout draws the same mask as eager and leaves the
    generator where eager leaves it (capture ran random ops on example values)."""
    x = ember.ones(4, 8, dtype=ember.float64, requires_grad=True)

    def fn(x):
        return ember.nn.functional.dropout(x * 2, 0.5, True).sum(1)
    ember.manual_seed(1)
    eager, after_eager = fn(x), ember.rand(3)
    ember.manual_seed(1)
    compiled, after_compiled = ember.compile(fn, backend=backend)(x), ember.rand(3)
    np.testing.assert_array_equal(compiled.detach().numpy(), eager.detach().numpy())
    np.testing.assert_array_equal(after_compiled.numpy(), after_eager.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_exp_near_and_below_underflow_matches_eager(dtype):
    """exp keeps arguments whose result is 0 (a causal mask's -inf) off the vector expf, which
    would send the whole vector to scalar code: the values at and around that cut stay eager's."""
    values = [-np.inf, -1e30, -800.0, -746.0, -745.5, -745.0, -200.0, -105.5, -105.0, -104.5, -103.9,
              -100.0, -90.0, -87.5, -20.0, 0.0, 1.0, 88.0, 89.0, 700.0, np.inf, np.nan]
    x = ember.from_numpy(np.array(values * 3, dtype=dtype))
    np.testing.assert_array_equal(ember.compile(ember.exp)(x).numpy(), ember.exp(x).numpy())


def test_causal_softmax_reads_its_bool_mask_as_eager():
    """The mask is loaded as its bytes (GCC vectorises no _Bool load); values as eager's."""
    a = ember.from_numpy(np.random.default_rng(0).standard_normal((2, 3, 37, 37)).astype(np.float32))
    mask = ember.from_numpy(np.random.default_rng(1).random((37, 37)) < 0.5)

    def fn(a, mask):
        return ember.nn.functional.softmax(a.masked_fill(mask, float("-inf")), dim=-1)
    np.testing.assert_allclose(ember.compile(fn)(a, mask).numpy(), fn(a, mask).numpy(), rtol=1e-6, atol=1e-7)
