"""Adam/AdamW's foreach update on CUDA (ember/_cuda/optim.py): all parameters of a group in one
launch per (device, dtype, step count). Parameters and moments match PyTorch CUDA's foreach
AdamW every step (moments to a few float32 roundings: L2 decay's `grad + wd * param` rounds as
the per-parameter kernel's, which PyTorch's foreach add does not always), and equal those of the
per-parameter kernel (foreach=False) bit for bit (maximize included: the sign flip is opaque to
the compiler, scripts/adam_kernels_ptx.py compares the two kernels' arithmetic without a GPU); a parameter the kernel cannot take
(non-contiguous gradient, AMSGrad, foreach=False) runs the for-loop update, and the launches
counted say which path ran."""
import io

import numpy as np
import pytest
import torch

import ember

SHAPES = [(33, 17), (768,), (5, 7, 3), (1,), (70000,)]     # the last spans two CHUNKs


def _run(make_opt, dtypes, steps=5, grad_layout=None, seed=0, skip=None):
    """Train ember's and torch's copies of the same parameters with the same gradients; return
    (ember params, torch params, ember optimizer, torch optimizer)."""
    rng = np.random.default_rng(seed)
    inits = [rng.standard_normal(s).astype(d) for s, d in zip(SHAPES, dtypes)]
    params = {lib: [lib.tensor(w, device="cuda", requires_grad=True) for w in inits] for lib in (ember, torch)}
    opts = {lib: make_opt(lib, params[lib]) for lib in (ember, torch)}
    for step in range(steps):
        grads = [rng.standard_normal(w.shape).astype(w.dtype) for w in inits]
        for lib in (ember, torch):
            for i, (p, g) in enumerate(zip(params[lib], grads)):
                if skip and skip(step, i):
                    p.grad = None
                    continue
                grad = lib.tensor(g, device="cuda")
                if grad_layout == "transposed" and grad.ndim == 2:
                    grad = lib.tensor(np.ascontiguousarray(g.T), device="cuda").t()
                p.grad = grad
            opts[lib].step()
        for i, (a, b) in enumerate(zip(params[ember], params[torch])):
            np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(), rtol=1e-6, atol=1e-7,
                                       err_msg=f"step {step}, parameter {i}")
    for a, b in zip(params[ember], params[torch]):
        mine, theirs = opts[ember].state[a], opts[torch].state[b]
        # (exp_avg averages gradients of both signs: where it cancels to ~1e-6, a one-ulp difference
        # in a gradient-sized term is a large relative one -- as on the CPU, for the for-loop path too)
        for key, atol in (("exp_avg", 1e-8), ("exp_avg_sq", 1e-12)):
            np.testing.assert_allclose(mine[key].cpu().numpy(), theirs[key].cpu().numpy(), rtol=1e-5, atol=atol)
        assert float(mine["step"]) == float(theirs["step"])
    return params, opts


@pytest.fixture
def launches(monkeypatch):
    from ember._cuda import optim
    seen = {"foreach": 0, "per_parameter": 0}
    batch, single = optim._launch_batch, optim._ADAM
    monkeypatch.setattr(optim, "_launch_batch", lambda *a: seen.__setitem__("foreach", seen["foreach"] + 1) or batch(*a))
    monkeypatch.setattr(optim, "_ADAM", lambda *a: seen.__setitem__("per_parameter", seen["per_parameter"] + 1)
                        or single(*a))
    return seen


CASES = {
    "adamw": lambda lib, ps: lib.optim.AdamW(ps, lr=1e-2, betas=(0.9, 0.95), weight_decay=0.1),
    "adam_l2": lambda lib, ps: lib.optim.Adam(ps, lr=1e-2, weight_decay=0.05),
    "adam_maximize": lambda lib, ps: lib.optim.Adam(ps, lr=1e-3, maximize=True),
    "adamw_maximize": lambda lib, ps: lib.optim.AdamW(ps, lr=1e-3, maximize=True, weight_decay=0.3),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_launch_per_step_matches_torch(case, launches):
    _run(CASES[case], ["float32"] * len(SHAPES))
    assert launches == {"foreach": 5, "per_parameter": 0}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", list(CASES))
def test_foreach_equals_the_per_parameter_kernel(case, dtype):
    rng = np.random.default_rng(5)
    inits = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    runs = []
    for foreach in (None, False):
        params = [ember.tensor(w, device="cuda", requires_grad=True) for w in inits]
        opt = CASES[case](ember, params)
        opt.param_groups[0]["foreach"] = foreach
        grads = np.random.default_rng(6)
        for _ in range(4):
            for p in params:
                p.grad = ember.tensor(grads.standard_normal(p.shape).astype(dtype), device="cuda")
            opt.step()
        runs.append([(p.detach().cpu().numpy(), opt.state[p]["exp_avg"].cpu().numpy(),
                      opt.state[p]["exp_avg_sq"].cpu().numpy()) for p in params])
    for mine, theirs in zip(*runs):
        for a, b in zip(mine, theirs):
            np.testing.assert_array_equal(a, b)


def test_float32_and_float64_parameters_launch_once_each(launches):
    _run(CASES["adamw"], ["float32", "float64", "float32", "float64", "float32"], steps=3)
    assert launches == {"foreach": 6, "per_parameter": 0}


def test_parameters_at_different_steps_launch_per_step_count(launches):
    # parameter 1 has no gradient at step 0: from then on it is one step behind the others
    _run(CASES["adamw"], ["float32"] * len(SHAPES), steps=4, skip=lambda step, i: step == 0 and i == 1)
    assert launches == {"foreach": 1 + 2 * 3, "per_parameter": 0}


def test_non_contiguous_gradient_takes_the_for_loop(launches):
    _run(CASES["adamw"], ["float32"] * len(SHAPES), steps=3, grad_layout="transposed")
    assert launches == {"foreach": 3, "per_parameter": 3}   # the transposed one: the strided kernel


@pytest.mark.parametrize("options", [{"foreach": False}, {"amsgrad": True}])
def test_foreach_off_and_amsgrad_take_the_for_loop(options, launches):
    _run(lambda lib, ps: lib.optim.AdamW(ps, lr=1e-2, **options), ["float32"] * len(SHAPES), steps=3)
    assert launches["foreach"] == 0


def test_state_dict_round_trip_continues_on_the_foreach_path(launches):
    params, opts = _run(CASES["adamw"], ["float32"] * len(SHAPES), steps=2)
    copy = [ember.tensor(p.detach().cpu().numpy(), device="cuda", requires_grad=True) for p in params[ember]]
    opt = ember.optim.AdamW(copy, lr=1e-2, betas=(0.9, 0.95), weight_decay=0.1)
    buffer = io.BytesIO()     # (load_state_dict shares the tensors it is given, as PyTorch's)
    ember.save(opts[ember].state_dict(), buffer)
    buffer.seek(0)
    opt.load_state_dict(ember.load(buffer))
    for p, q in zip(copy, params[ember]):
        g = ember.ones_like(p)
        p.grad, q.grad = g, g.clone()
    opt.step()
    opts[ember].step()
    for p, q in zip(copy, params[ember]):
        assert ember.equal(p, q)
    assert launches["foreach"] == 2 + 2
