"""ember.optim.swa_utils vs torch.optim.swa_utils: averaged weights (SWA and EMA, per tensor and over
lists, with and without buffers), update_bn's recomputed BatchNorm statistics. SWALR's lr sequences
are in test_lr_scheduler.py with the other schedulers."""
import numpy as np
import pytest
import torch

import ember


def _pair(seed=0):
    torch.manual_seed(seed)
    t_model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.Tanh(),
                                  torch.nn.Linear(6, 2)).double()
    e_model = ember.nn.Sequential(ember.nn.Linear(4, 6), ember.nn.BatchNorm1d(6), ember.nn.Tanh(),
                                  ember.nn.Linear(6, 2)).double()
    e_model.load_state_dict({k: ember.tensor(v.numpy().copy()) for k, v in t_model.state_dict().items()})
    return e_model, t_model


def _batches(n=6, seed=1):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((8, 4)), rng.standard_normal((8, 2))) for _ in range(n)]


def _assert_same_state(e_module, t_module):
    t_state = t_module.state_dict()
    e_state = e_module.state_dict()
    assert list(e_state) == list(t_state)
    for k, t in t_state.items():
        np.testing.assert_allclose(e_state[k].numpy(), t.numpy(), rtol=1e-10, atol=1e-12, err_msg=k)


AVERAGING = {
    "swa": lambda swa: dict(),
    "ema-avg_fn": lambda swa: dict(avg_fn=swa.get_ema_avg_fn(0.8)),
    "ema-multi": lambda swa: dict(multi_avg_fn=swa.get_ema_multi_avg_fn(0.9)),
    "swa-multi-buffers": lambda swa: dict(multi_avg_fn=swa.get_swa_multi_avg_fn(), use_buffers=True),
    "swa-avg_fn-buffers": lambda swa: dict(avg_fn=swa.get_swa_avg_fn(), use_buffers=True),
    "ema-buffers": lambda swa: dict(multi_avg_fn=swa.get_ema_multi_avg_fn(0.5), use_buffers=True),
}


@pytest.mark.parametrize("name", list(AVERAGING))
def test_averaged_model_matches_torch(name):
    e_model, t_model = _pair()
    e_avg = ember.optim.swa_utils.AveragedModel(e_model, **AVERAGING[name](ember.optim.swa_utils))
    t_avg = torch.optim.swa_utils.AveragedModel(t_model, **AVERAGING[name](torch.optim.swa_utils))
    e_opt, t_opt = ember.optim.SGD(e_model.parameters(), lr=0.1), torch.optim.SGD(t_model.parameters(), lr=0.1)
    for x, y in _batches():
        for lib, model, opt, avg in ((torch, t_model, t_opt, t_avg), (ember, e_model, e_opt, e_avg)):
            opt.zero_grad()
            ((model(lib.tensor(x)) - lib.tensor(y)) ** 2).mean().backward()
            opt.step()
            try:
                avg.update_parameters(model)
            except RuntimeError as torch_error:   # torch refuses integer buffers here: so must ember
                assert lib is torch
                with pytest.raises(type(torch_error)):
                    e_avg.update_parameters(e_model)
                return
    _assert_same_state(e_avg, t_avg)
    assert int(e_avg.n_averaged) == int(t_avg.n_averaged) == 6
    x = _batches(1, seed=5)[0][0]
    e_avg.eval(), t_avg.eval()
    np.testing.assert_allclose(e_avg(ember.tensor(x)).detach().numpy(), t_avg(torch.tensor(x)).detach().numpy(),
                               rtol=1e-10)


def test_update_bn_matches_torch():
    e_model, t_model = _pair()
    e_model.eval(), t_model.eval()
    batches = _batches(5, seed=3)
    ember.optim.swa_utils.update_bn([(ember.tensor(x), ember.tensor(y)) for x, y in batches], e_model)
    torch.optim.swa_utils.update_bn([(torch.tensor(x), torch.tensor(y)) for x, y in batches], t_model)
    _assert_same_state(e_model, t_model)
    assert not e_model.training
    assert e_model[1].momentum == t_model[1].momentum == 0.1


def test_avg_fn_errors_like_torch():
    for bad in (-0.1, 1.5):
        for fn in ("get_ema_avg_fn", "get_ema_multi_avg_fn"):
            with pytest.raises(ValueError) as t_info:
                getattr(torch.optim.swa_utils, fn)(bad)
            with pytest.raises(ValueError) as e_info:
                getattr(ember.optim.swa_utils, fn)(bad)
            assert str(e_info.value) == str(t_info.value)
    e_model, _ = _pair()
    swa = ember.optim.swa_utils
    with pytest.raises(AssertionError):
        swa.AveragedModel(e_model, avg_fn=swa.get_swa_avg_fn(), multi_avg_fn=swa.get_swa_multi_avg_fn())


def test_swa_utils_is_not_imported_by_import_ember():
    import subprocess
    import sys
    code = "import sys, ember; print('ember.optim.swa_utils' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
