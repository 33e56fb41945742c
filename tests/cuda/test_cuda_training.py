"""Training on the GPU: the MLP and CNNs of tests/test_training.py, with SGD (momentum, Nesterov,
weight decay) and AdamW, in ember on CUDA and in PyTorch on CUDA from the same weights and
batches; the losses agree at every step, parameters and gradients stay on the device, and the
trained weights agree. Also checkpoints (ember.load with map_location) and autocast."""
import numpy as np
import pytest
import torch

import ember
from test_training import MODELS, OPTIMIZERS, STEPS, digits_batches, train


def _pair(model_name):
    build, image = MODELS[model_name]
    torch.manual_seed(0)
    tmodel = build(torch.nn).cuda()
    emodel = build(ember.nn)
    emodel.load_state_dict({k: ember.from_numpy(v.detach().cpu().numpy().copy())
                            for k, v in tmodel.state_dict().items()})
    returned = emodel.to("cuda")
    assert returned is emodel
    return tmodel, emodel, image


@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
@pytest.mark.parametrize("model_name", list(MODELS))
def test_training_on_gpu_matches_torch_cuda_every_step(model_name, opt_name):
    tmodel, emodel, image = _pair(model_name)
    assert all(p.device.type == "cuda" for p in emodel.parameters())
    batches = digits_batches(STEPS, image)
    topt = OPTIMIZERS[opt_name](torch.optim, tmodel.parameters())
    eopt = OPTIMIZERS[opt_name](ember.optim, emodel.parameters())
    t_losses = train(torch, tmodel, topt, [(torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda())
                                           for x, y in batches])
    e_losses = train(ember, emodel, eopt, [(ember.from_numpy(x).cuda(), ember.from_numpy(y).cuda())
                                           for x, y in batches])
    assert t_losses[-1] < t_losses[0]
    np.testing.assert_allclose(e_losses, t_losses, rtol=2e-4, atol=1e-6)
    for p in emodel.parameters():    # gradients and optimizer state stay on the device
        assert p.device.type == "cuda" and p.grad.device.type == "cuda"
    for state in eopt.state.values():
        for v in state.values():
            if isinstance(v, ember.Tensor) and v.ndim:
                assert v.device.type == "cuda"
    t_state, e_state = tmodel.state_dict(), emodel.state_dict()
    for k, v in t_state.items():
        np.testing.assert_allclose(e_state[k].cpu().numpy(), v.cpu().numpy(), rtol=1e-3, atol=1e-5, err_msg=k)


def test_checkpoint_saved_on_gpu_loads_anywhere(tmp_path):
    _, emodel, _ = _pair("mlp")
    path = tmp_path / "m.pt"
    ember.save(emodel.state_dict(), path)
    on_cpu = ember.load(path, map_location="cpu")
    on_gpu = ember.load(path, map_location="cuda")
    for k, v in emodel.state_dict().items():
        assert on_cpu[k].device.type == "cpu" and on_gpu[k].device.type == "cuda"
        np.testing.assert_array_equal(on_cpu[k].numpy(), v.cpu().numpy())
        np.testing.assert_array_equal(on_gpu[k].cpu().numpy(), v.cpu().numpy())


def test_gradients_of_a_small_graph_match_torch_cuda():
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((8, 5)), rng.standard_normal((4, 8))
    grads = []
    for lib in (ember, torch):
        wt = lib.tensor(w, device="cuda", requires_grad=True)
        xt = lib.tensor(x, device="cuda", requires_grad=True)
        y = (lib.tanh(xt @ wt).softmax(-1) * lib.arange(5.0, device="cuda")).sum() + (xt ** 2).mean()
        y.backward()
        assert wt.grad.device.type == "cuda"
        grads.append((wt.grad.cpu().numpy(), xt.grad.cpu().numpy()))
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_autocast_bfloat16_on_the_gpu_like_torch():
    """PyTorch's CUDA lists: matmul/linear in bfloat16, softmax and sums in float32, and a training
    step's gradients back in float32. (Written with the rest of tests/cuda; run by device_cuda.sh.)"""
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((8, 16)).astype(np.float32), rng.standard_normal((4, 16)).astype(np.float32)
    results = []
    for lib in (torch, ember):
        xt = lib.tensor(x, device="cuda")
        wt = lib.tensor(w, device="cuda", requires_grad=True)
        with lib.autocast("cuda", dtype=lib.bfloat16):
            h = lib.nn.functional.linear(xt, wt)
            p = h.softmax(-1)
            loss = p.sum()
        assert h.dtype == lib.bfloat16 and p.dtype == lib.float32 and loss.dtype == lib.float32
        loss.backward()
        assert wt.grad.dtype == lib.float32 and wt.grad.device.type == "cuda"
        results.append((h.float().cpu().detach().numpy(), p.cpu().detach().numpy(), wt.grad.cpu().numpy()))
    for e, t in zip(results[1], results[0]):
        np.testing.assert_allclose(e, t, rtol=2e-2, atol=2e-2)
