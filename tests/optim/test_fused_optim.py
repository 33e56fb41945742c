"""fused=True of SGD, Adam and AdamW (one generated kernel per group, ember/_inductor/fused_optim.py):
parameters equal to the for-loop implementation's to the bit over several steps, for every option the
kernel takes, the cases it leaves to the for-loop (first step, AMSGrad, odd layouts, mixed steps),
and close to PyTorch's own fused=True."""
import numpy as np
import pytest
import torch

import ember

SHAPES = [(7, 5), (13,), (1,), (0, 3), (33, 17)]


def _params(lib, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [lib.from_numpy(rng.standard_normal(s).astype(dtype)).requires_grad_() for s in SHAPES]


def _run(lib, make, dtype, steps=4, fused=None, params=None, skip_grad=()):
    params = params or _params(lib, dtype)
    opt = make(lib, params) if fused is None else make(lib, params, fused=fused)
    rng = np.random.default_rng(1)
    for step in range(steps):
        for i, p in enumerate(params):
            g = rng.standard_normal(p.shape).astype(dtype)
            p.grad = None if (step, i) in skip_grad else lib.from_numpy(g)
        opt.step()
    return [p.detach().numpy().copy() for p in params], opt


OPTIMIZERS = {
    "sgd_momentum": lambda lib, p, **k: lib.optim.SGD(p, lr=0.05, momentum=0.9, **k),
    "sgd_everything": lambda lib, p, **k: lib.optim.SGD(p, lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.01,
                                                        maximize=True, **k),
    "sgd_nesterov": lambda lib, p, **k: lib.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1, **k),
    "sgd_plain": lambda lib, p, **k: lib.optim.SGD(p, lr=0.05, **k),
    "adam": lambda lib, p, **k: lib.optim.Adam(p, lr=0.01, **k),
    "adam_l2_maximize": lambda lib, p, **k: lib.optim.Adam(p, lr=0.01, weight_decay=0.1, maximize=True, **k),
    "adamw": lambda lib, p, **k: lib.optim.AdamW(p, lr=0.01, betas=(0.8, 0.95), eps=1e-6, **k),
    "adamw_amsgrad": lambda lib, p, **k: lib.optim.AdamW(p, lr=0.01, amsgrad=True, **k),
    "adam_large_beta1": lambda lib, p, **k: lib.optim.Adam(p, lr=0.01, betas=(0.4, 0.9), **k),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_fused_equals_the_for_loop_to_the_bit(name, dtype):
    loop, _ = _run(ember, OPTIMIZERS[name], dtype)
    fused, _ = _run(ember, OPTIMIZERS[name], dtype, fused=True)
    for a, b in zip(loop, fused):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["sgd_everything", "adam_l2_maximize", "adamw"])
def test_fused_matches_torch_fused(name):
    ours, _ = _run(ember, OPTIMIZERS[name], np.float32, fused=True)
    theirs, _ = _run(torch, OPTIMIZERS[name], np.float32, fused=True)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_missing_gradients_and_late_parameters_fall_back_exactly():
    # a parameter without a gradient on some steps keeps its own step count: Adam's groups then mix
    # step counts (the for-loop update runs); SGD creates a buffer late (its first step is the loop's)
    skip = {(0, 1), (1, 1), (2, 3)}
    for name in ("adamw", "sgd_momentum"):
        loop, _ = _run(ember, OPTIMIZERS[name], np.float32, skip_grad=skip)
        fused, _ = _run(ember, OPTIMIZERS[name], np.float32, fused=True, skip_grad=skip)
        for a, b in zip(loop, fused):
            np.testing.assert_array_equal(a, b)


def test_layouts_the_kernel_cannot_take_run_the_for_loop():
    def odd_params():
        base = _params(ember, np.float32)
        base[0] = ember.from_numpy(np.random.default_rng(3).standard_normal((5, 7)).astype(np.float32)).t() \
            .detach().requires_grad_()                             # a transposed parameter
        return base
    for name in ("adamw", "sgd_momentum"):
        loop, _ = _run(ember, OPTIMIZERS[name], np.float32, params=odd_params())
        fused, _ = _run(ember, OPTIMIZERS[name], np.float32, fused=True, params=odd_params())
        for a, b in zip(loop, fused):
            np.testing.assert_array_equal(a, b)


def test_state_is_the_for_loops_so_a_checkpoint_moves_between_them():
    _, fused_opt = _run(ember, OPTIMIZERS["adamw"], np.float32, fused=True)
    _, loop_opt = _run(ember, OPTIMIZERS["adamw"], np.float32)
    for (pa, sa), (pb, sb) in zip(fused_opt.state.items(), loop_opt.state.items()):
        assert sa["step"].item() == sb["step"].item() == 4
        np.testing.assert_array_equal(sa["exp_avg"].numpy(), sb["exp_avg"].numpy())
        np.testing.assert_array_equal(sa["exp_avg_sq"].numpy(), sb["exp_avg_sq"].numpy())


def test_fused_is_refused_where_ember_has_no_kernel():
    p = ember.zeros(2, requires_grad=True)
    for cls in ("Adagrad",):
        with pytest.raises(NotImplementedError, match="fused"):
            getattr(ember.optim, cls)([p], fused=True)


@pytest.mark.parametrize("name,launches", [("sgd_momentum", 3), ("adamw", 3), ("adamw_amsgrad", 0), ("sgd_plain", 0)])
def test_the_kernel_runs_from_the_second_step(monkeypatch, name, launches):
    from ember._inductor import fused_optim
    calls = []
    real = fused_optim._launch
    monkeypatch.setattr(fused_optim, "_launch", lambda *a: calls.append(a[0]) or real(*a))
    _run(ember, OPTIMIZERS[name], np.float32, steps=4, fused=True)
    assert len(calls) == launches


@pytest.mark.parametrize("name", ["sgd_momentum", "adamw"])
def test_a_graph_that_saved_a_parameter_refuses_after_a_fused_step(name):
    # the kernel writes in place: like the for-loop's in-place ops it bumps the versions, so a
    # backward through a graph that saved the old values raises instead of using the new ones
    for fused in (None, True):
        params = _params(ember, np.float32)
        opt = OPTIMIZERS[name](ember, params, fused=fused)
        for _ in range(2):
            for p in params:
                p.grad = ember.ones(p.shape)
            if _ == 1:
                loss = (params[0] * params[0]).sum()     # saves params[0]
            opt.step()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()
