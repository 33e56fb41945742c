"""Adam/AdamW on CUDA parameters with foreach=False run as one kernel per parameter (ember/_cuda/optim.py); the
parameters and moments match PyTorch CUDA's (foreach) every step, for L2 and decoupled weight
decay, maximize, and a float64 parameter; AMSGrad keeps the op-by-op algorithm."""
import numpy as np
import pytest
import torch

import ember

CASES = {
    "adamw": lambda lib, ps: lib.optim.AdamW(ps, lr=1e-2, betas=(0.9, 0.95), weight_decay=0.1),
    "adam_l2": lambda lib, ps: lib.optim.Adam(ps, lr=1e-2, weight_decay=0.05),
    "adam_maximize": lambda lib, ps: lib.optim.Adam(ps, lr=1e-3, maximize=True),
    "adamw_amsgrad": lambda lib, ps: lib.optim.AdamW(ps, lr=1e-2, amsgrad=True),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", list(CASES))
def test_fused_adam_matches_torch_every_step(case, dtype, monkeypatch):
    from ember._cuda import optim as fused
    calls = []
    real = fused._ADAM
    monkeypatch.setattr(fused, "_ADAM", lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((33, 17)).astype(dtype)
    params = [lib.tensor(w0, device="cuda", requires_grad=True) for lib in (ember, torch)]
    opts = [CASES[case](lib, [p]) for lib, p in zip((ember, torch), params)]
    opts[0].param_groups[0]["foreach"] = False     # (the default, foreach: test_cuda_adam_foreach.py)
    for step in range(5):
        g = rng.standard_normal(w0.shape).astype(dtype)
        for lib, p, opt in zip((ember, torch), params, opts):
            p.grad = lib.tensor(g, device="cuda")
            opt.step()
        np.testing.assert_allclose(params[0].detach().cpu().numpy(), params[1].detach().cpu().numpy(),
                                   rtol=1e-6, atol=1e-7, err_msg=f"step {step}")
    state = opts[0].state[params[0]]
    np.testing.assert_allclose(state["exp_avg_sq"].cpu().numpy(), opts[1].state[params[1]]["exp_avg_sq"].cpu().numpy(),
                               rtol=1e-6, atol=1e-12)
    assert len(calls) == (0 if "amsgrad" in case else 5)
    assert params[0]._version > 0
