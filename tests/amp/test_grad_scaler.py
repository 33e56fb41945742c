"""ember.amp.GradScaler against torch.amp.GradScaler on the CPU: the same training run, with an
overflowing step, gives the same losses, scales, skipped steps, weights and state dicts."""
import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(0)
BATCHES = [RNG.standard_normal((8, 5)).astype(np.float32) for _ in range(9)]
BATCHES[4][0, 0] = np.inf    # this step's gradients overflow: the scaler skips it and backs off


def _run(lib):
    torch.manual_seed(0)
    model = torch.nn.Linear(5, 3)
    weights = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    m = lib.nn.Linear(5, 3)
    m.load_state_dict({k: lib.tensor(v) for k, v in weights.items()})
    opt = lib.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    scaler = lib.amp.GradScaler("cpu", init_scale=2.0 ** 6, growth_interval=2)
    record = []
    for x in BATCHES:
        opt.zero_grad()
        loss = m(lib.tensor(x)).square().mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        record.append((float(loss.detach()), scaler.get_scale()))
    return record, {k: v.detach().numpy() for k, v in m.state_dict().items()}, scaler.state_dict()


def test_training_with_an_overflow_matches_torch():
    (t_rec, t_w, t_sd), (e_rec, e_w, e_sd) = _run(torch), _run(ember)
    assert [s for _, s in e_rec] == [s for _, s in t_rec]          # growth, then the back-off at the inf
    np.testing.assert_allclose([l for l, _ in e_rec], [l for l, _ in t_rec], rtol=1e-5)
    for k in t_w:
        np.testing.assert_allclose(e_w[k], t_w[k], rtol=1e-5, atol=1e-6)
    assert e_sd == t_sd


def test_errors_and_disabled_scaler_like_torch():
    for lib in (torch, ember):
        m = lib.nn.Linear(2, 1)
        opt = lib.optim.SGD(m.parameters(), lr=0.1)
        scaler = lib.amp.GradScaler("cpu")
        scaler.scale(m(lib.ones(1, 2)).sum()).backward()
        scaler.unscale_(opt)
        with pytest.raises(RuntimeError, match="already been called"):
            scaler.unscale_(opt)
        with pytest.raises(RuntimeError, match="Closure"):
            scaler.step(opt, closure=lambda: 0)
        off = lib.amp.GradScaler("cpu", enabled=False)
        loss = m(lib.ones(1, 2)).sum()
        assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
        fresh = lib.amp.GradScaler("cpu")
        fresh.load_state_dict({"scale": 8.0, "growth_factor": 3.0, "backoff_factor": 0.25, "growth_interval": 5,
                               "_growth_tracker": 2})
        assert fresh.get_scale() == 8.0 and fresh.state_dict()["_growth_tracker"] == 2
