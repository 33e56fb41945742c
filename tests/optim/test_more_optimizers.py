"""Adadelta, Adamax, NAdam, RAdam, Rprop, ASGD and Adafactor vs torch.optim: the same small model (copied
weights) trained on the same batches in both libraries gives the same parameters and state; state
dicts have torch's keys and round-trip; bad arguments raise torch's errors."""
import io

import numpy as np
import pytest
import torch

import ember

STEPS = 10

CONFIGS = {
    "Adadelta": [dict(), dict(lr=0.5, rho=0.8, eps=1e-5), dict(weight_decay=0.1), dict(lr=0.3, maximize=True)],
    "Adamax": [dict(), dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6), dict(lr=0.01, weight_decay=0.1),
               dict(lr=0.02, maximize=True)],
    "NAdam": [dict(), dict(lr=0.01, momentum_decay=0.01, betas=(0.8, 0.95)), dict(lr=0.01, weight_decay=0.1),
              dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True), dict(lr=0.02, maximize=True)],
    # betas[1] = 0.5 crosses rho_t > 5 within the first steps, so both branches run
    "RAdam": [dict(), dict(lr=0.01, betas=(0.8, 0.5)), dict(lr=0.01, weight_decay=0.1),
              dict(lr=0.01, betas=(0.9, 0.6), weight_decay=0.1, decoupled_weight_decay=True),
              dict(lr=0.02, maximize=True)],
    "Rprop": [dict(), dict(lr=0.05, etas=(0.3, 1.5)), dict(lr=0.1, step_sizes=(1e-3, 0.12)),
              dict(lr=0.02, maximize=True)],
    # t0 small so that the iterate averaging (mu < 1) takes part
    "ASGD": [dict(), dict(lr=0.05, lambd=1e-2, alpha=0.5, t0=3), dict(lr=0.05, weight_decay=0.1, t0=0),
             dict(lr=0.05, maximize=True)],
}
CONFIGS["Adafactor"] = [  # the weights' second moments are factored, the biases' kept whole
    dict(), dict(lr=0.05, beta2_decay=-0.5, eps=(1e-20, 1e-2), d=2.0), dict(lr=0.02, weight_decay=0.1),
    dict(lr=0.03, maximize=True), dict(lr=2.0)]   # lr above 1/sqrt(t): the relative step size takes over
CASES = [(name, i) for name, cfgs in CONFIGS.items() for i in range(len(cfgs))]


def _models(seed=0):
    """The same 4 -> 6 -> 2 tanh MLP in float64 in both libraries (torch's weights copied)."""
    torch.manual_seed(seed)
    t_model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 2)).double()
    e_model = ember.nn.Sequential(ember.nn.Linear(4, 6), ember.nn.Tanh(), ember.nn.Linear(6, 2)).double()
    with ember.no_grad():
        for e, t in zip(e_model.parameters(), t_model.parameters()):
            e.copy_(ember.tensor(t.detach().numpy().copy()))
    return e_model, t_model


def _batches(steps=STEPS, seed=1):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((8, 4)), rng.standard_normal((8, 2))) for _ in range(steps)]


def _train(lib, model, opt, batches):
    losses = []
    for x, y in batches:
        def closure():
            opt.zero_grad()
            loss = ((model(lib.tensor(x)) - lib.tensor(y)) ** 2).mean()
            loss.backward()
            return loss
        losses.append(float(opt.step(closure)))
    return losses


def _assert_close(e, t, rtol=1e-6):
    tn = t.detach().numpy()
    scale = float(np.abs(tn).max()) if tn.size else 0.0
    np.testing.assert_allclose(e.detach().numpy(), tn, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("name,i", CASES)
def test_training_matches_torch(name, i):
    cfg = CONFIGS[name][i]
    e_model, t_model = _models()
    e_opt = getattr(ember.optim, name)(e_model.parameters(), **cfg)
    t_opt = getattr(torch.optim, name)(t_model.parameters(), **cfg)
    batches = _batches()
    np.testing.assert_allclose(_train(ember, e_model, e_opt, batches), _train(torch, t_model, t_opt, batches),
                               rtol=1e-6)
    for e, t in zip(e_model.parameters(), t_model.parameters()):
        _assert_close(e, t)
    es, ts = e_opt.state_dict(), t_opt.state_dict()
    assert es["param_groups"] == ts["param_groups"]
    assert list(es["state"]) == list(ts["state"])
    for k, t_state in ts["state"].items():
        assert list(es["state"][k]) == list(t_state)
        for key, tv in t_state.items():
            ev = es["state"][k][key]
            assert isinstance(ev, ember.Tensor) and ev.dtype == getattr(ember, str(tv.dtype).split(".")[1])
            _assert_close(ev, tv)


def _to_ember(value):
    if isinstance(value, torch.Tensor):
        return ember.tensor(value.numpy().copy())
    if isinstance(value, dict):
        return {k: _to_ember(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("name,i", CASES)
def test_state_dict_round_trip(name, i):
    """Train 5 steps, save (ember.save / load), load into a fresh optimizer, train 5 more: equal to 10
    uninterrupted steps, and torch's state dict converted to ember tensors loads the same way."""
    cfg = CONFIGS[name][i]
    batches = _batches()
    e_model, t_model = _models()
    opt = getattr(ember.optim, name)(e_model.parameters(), **cfg)
    t_opt = getattr(torch.optim, name)(t_model.parameters(), **cfg)
    _train(ember, e_model, opt, batches[:5])
    _train(torch, t_model, t_opt, batches[:5])
    buffer = io.BytesIO()
    ember.save(opt.state_dict(), buffer)
    buffer.seek(0)
    fresh = getattr(ember.optim, name)(e_model.parameters(), **cfg)
    fresh.load_state_dict(ember.load(buffer))
    from_torch_model = _models()[0]
    with ember.no_grad():
        for e, t in zip(from_torch_model.parameters(), t_model.parameters()):
            e.copy_(ember.tensor(t.detach().numpy().copy()))
    from_torch = getattr(ember.optim, name)(from_torch_model.parameters(), **cfg)
    from_torch.load_state_dict(_to_ember(t_opt.state_dict()))
    _train(ember, e_model, fresh, batches[5:])
    _train(ember, from_torch_model, from_torch, batches[5:])
    _train(torch, t_model, t_opt, batches[5:])
    for e, f, t in zip(e_model.parameters(), from_torch_model.parameters(), t_model.parameters()):
        _assert_close(e, t)
        _assert_close(f, t)


BAD_ARGUMENTS = [
    ("Adadelta", dict(lr=-1)), ("Adadelta", dict(rho=1.5)), ("Adadelta", dict(eps=-1.0)),
    ("Adadelta", dict(weight_decay=-0.1)), ("Adadelta", dict(lr=float("nan"))),
    ("Adamax", dict(lr=-1)), ("Adamax", dict(betas=(1.0, 0.9))), ("Adamax", dict(betas=(0.9, -0.1))),
    ("Adamax", dict(eps=-1e-8)), ("Adamax", dict(weight_decay=-1)),
    ("NAdam", dict(lr=-1)), ("NAdam", dict(momentum_decay=-1)), ("NAdam", dict(betas=(0.9, 1.0))),
    ("NAdam", dict(weight_decay=-1)), ("NAdam", dict(eps=-1)),
    ("RAdam", dict(lr=-1)), ("RAdam", dict(betas=(-0.1, 0.9))), ("RAdam", dict(weight_decay=-1)),
    ("Rprop", dict(lr=-1)), ("Rprop", dict(etas=(1.0, 1.2))), ("Rprop", dict(etas=(0.5, 1.0))),
    ("Rprop", dict(etas=(0.0, 2.0))),
    ("ASGD", dict(lr=-1)), ("ASGD", dict(weight_decay=-1)),
    ("Adafactor", dict(lr=-1)), ("Adafactor", dict(beta2_decay=0.5)), ("Adafactor", dict(eps=(-1.0, 1e-3))),
    ("Adafactor", dict(eps=(None, -1e-3))), ("Adafactor", dict(d=0.5)), ("Adafactor", dict(weight_decay=-1)),
    ("SparseAdam", dict(lr=0.0)), ("SparseAdam", dict(eps=0.0)), ("SparseAdam", dict(betas=(1.0, 0.9))),
    ("SparseAdam", dict(betas=(0.9, 1.0))),
]


@pytest.mark.parametrize("name,kwargs", BAD_ARGUMENTS)
def test_bad_arguments_raise_like_torch(name, kwargs):
    with pytest.raises(Exception) as t_info:
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kwargs)
    with pytest.raises(type(t_info.value)) as e_info:
        getattr(ember.optim, name)([ember.zeros(2, requires_grad=True)], **kwargs)
    assert str(e_info.value) == str(t_info.value)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_defaults_and_flags_like_torch(name):
    """Same default param group; foreach=None/True/False accepted (ember runs one algorithm)."""
    e_opt = getattr(ember.optim, name)([ember.zeros(2, requires_grad=True)], foreach=False)
    t_opt = getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], foreach=False)
    assert e_opt.defaults == t_opt.defaults
    assert e_opt.state_dict()["param_groups"] == t_opt.state_dict()["param_groups"]


# -- LBFGS: a closure-based step of several iterations ---------------------------------------------
# Quasi-Newton iterations amplify last-bit differences (dot products summed in another order)
# about tenfold per step here, so the iteration counts stay small enough for 1e-6 after 10 steps.
LBFGS_CONFIGS = [dict(max_iter=4), dict(lr=0.5, max_iter=5, history_size=3),
                 dict(max_iter=6, line_search_fn="strong_wolfe"),
                 dict(lr=0.8, max_iter=4, max_eval=5, history_size=2, line_search_fn="strong_wolfe"),
                 dict(max_iter=5, tolerance_grad=0.2, tolerance_change=0.05, line_search_fn="strong_wolfe")]


def _assert_state_value_close(ev, tv):
    if isinstance(tv, torch.Tensor):
        assert isinstance(ev, ember.Tensor)
        _assert_close(ev, tv)
    elif isinstance(tv, list):
        assert isinstance(ev, list) and len(ev) == len(tv)
        for e, t in zip(ev, tv):
            _assert_state_value_close(e, t)
    elif isinstance(tv, float):
        assert isinstance(ev, float) and ev == pytest.approx(tv, rel=1e-6)
    else:
        assert type(ev) is type(tv) and ev == tv


@pytest.mark.parametrize("i", range(len(LBFGS_CONFIGS)))
def test_lbfgs_matches_torch(i):
    cfg = LBFGS_CONFIGS[i]
    e_model, t_model = _models()
    e_opt = ember.optim.LBFGS(e_model.parameters(), **cfg)
    t_opt = torch.optim.LBFGS(t_model.parameters(), **cfg)
    batches = _batches()
    np.testing.assert_allclose(_train(ember, e_model, e_opt, batches), _train(torch, t_model, t_opt, batches),
                               rtol=1e-6)
    for e, t in zip(e_model.parameters(), t_model.parameters()):
        _assert_close(e, t)
    es, ts = e_opt.state_dict(), t_opt.state_dict()
    assert es["param_groups"] == ts["param_groups"]
    assert list(es["state"]) == list(ts["state"]) == [0]
    assert list(es["state"][0]) == list(ts["state"][0])
    for key, tv in ts["state"][0].items():
        _assert_state_value_close(es["state"][0][key], tv)


def test_lbfgs_state_dict_round_trip():
    cfg = LBFGS_CONFIGS[3]
    batches = _batches()
    e_model, t_model = _models()
    opt = ember.optim.LBFGS(e_model.parameters(), **cfg)
    t_opt = torch.optim.LBFGS(t_model.parameters(), **cfg)
    _train(ember, e_model, opt, batches[:5])
    _train(torch, t_model, t_opt, batches[:5])
    buffer = io.BytesIO()
    ember.save(opt.state_dict(), buffer)
    buffer.seek(0)
    fresh = ember.optim.LBFGS(e_model.parameters(), **cfg)
    fresh.load_state_dict(ember.load(buffer))
    _train(ember, e_model, fresh, batches[5:])
    _train(torch, t_model, t_opt, batches[5:])
    for e, t in zip(e_model.parameters(), t_model.parameters()):
        _assert_close(e, t)


def test_lbfgs_optimal_start_and_errors_like_torch():
    """A zero gradient returns after one evaluation; bad lr, several groups and an unknown line
    search raise torch's errors."""
    for lib in (torch, ember):
        p = lib.zeros(3, requires_grad=True)
        opt = lib.optim.LBFGS([p])
        assert float(opt.step(lambda: (p * 0).sum().backward() or lib.tensor(2.0))) == 2.0
        assert opt.state[p]["func_evals"] == 1 and opt.state[p]["n_iter"] == 0
    cases = [dict(lr=-1), dict(params=[{"params": [0]}, {"params": [1]}])]
    for kwargs in cases:
        with pytest.raises(Exception) as t_info:
            t_params = [torch.zeros(2, requires_grad=True) for _ in range(2)]
            t_kwargs = dict(kwargs)
            groups = t_kwargs.pop("params", [{"params": [0, 1]}])
            torch.optim.LBFGS([{"params": [t_params[j] for j in g["params"]]} for g in groups], **t_kwargs)
        with pytest.raises(type(t_info.value)) as e_info:
            e_params = [ember.zeros(2, requires_grad=True) for _ in range(2)]
            ember.optim.LBFGS([{"params": [e_params[j] for j in g["params"]]} for g in groups], **t_kwargs)
        assert str(e_info.value) == str(t_info.value)
    for lib in (torch, ember):
        p = lib.ones(3, requires_grad=True)
        opt = lib.optim.LBFGS([p], line_search_fn="wolfe")
        with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
            opt.step(lambda: (p * p).sum().backward() or (p * p).sum())


# -- SparseAdam: ember's gradients are dense, which SparseAdam refuses as torch does ------------------
def test_sparse_adam_refuses_dense_gradients_like_torch():
    e_model, t_model = _models()
    e_opt, t_opt = ember.optim.SparseAdam(e_model.parameters()), torch.optim.SparseAdam(t_model.parameters())
    assert e_opt.defaults == t_opt.defaults
    assert e_opt.state_dict()["param_groups"] == t_opt.state_dict()["param_groups"]
    before = [p.detach().clone() for p in e_model.parameters()]
    x, y = _batches(1)[0]
    for lib, model, opt in ((torch, t_model, t_opt), (ember, e_model, e_opt)):
        ((model(lib.tensor(x)) - lib.tensor(y)) ** 2).mean().backward()
        with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
            opt.step()
    for p, b in zip(e_model.parameters(), before):
        np.testing.assert_array_equal(p.detach().numpy(), b.numpy())
    assert not e_opt.state


def test_sparse_adam_refuses_complex_parameters_like_torch():
    with pytest.raises(ValueError) as t_info:
        torch.optim.SparseAdam([torch.zeros(2), torch.zeros(2, dtype=torch.complex64)])
    with pytest.raises(ValueError) as e_info:
        ember.optim.SparseAdam([ember.zeros(2), ember.zeros(2, dtype=ember.complex64)])
    assert str(e_info.value) == str(t_info.value)


def test_every_torch_optimizer_exists():
    """Every optimizer class torch.optim exports."""
    names = {n for n in dir(torch.optim) if isinstance(getattr(torch.optim, n), type)
             and issubclass(getattr(torch.optim, n), torch.optim.Optimizer) and n != "Optimizer"}
    missing = sorted(n for n in names if not hasattr(ember.optim, n))
    assert missing == [], missing


# -- Muon: orthogonalized momentum on 2-D weights, computed in bfloat16 as torch does ------------------
MUON_CONFIGS = [dict(), dict(lr=0.02, nesterov=False), dict(lr=0.01, adjust_lr_fn="match_rms_adamw", momentum=0.8),
                dict(lr=0.01, weight_decay=0.0, ns_steps=3, adjust_lr_fn="original")]


@pytest.mark.parametrize("cfg", MUON_CONFIGS)
def test_muon_matches_torch(cfg):
    """Weights only (Muon refuses 1-D parameters). The Newton-Schulz iterations run in bfloat16, where a
    different summation order in a matmul moves the last bit, so parameters are compared to 2% of
    how far training moved them."""
    torch.manual_seed(0)
    t_model = torch.nn.Sequential(torch.nn.Linear(4, 6, bias=False), torch.nn.Tanh(), torch.nn.Linear(6, 2, bias=False))
    e_model = ember.nn.Sequential(ember.nn.Linear(4, 6, bias=False), ember.nn.Tanh(), ember.nn.Linear(6, 2, bias=False))
    with ember.no_grad():
        for e, t in zip(e_model.parameters(), t_model.parameters()):
            e.copy_(ember.tensor(t.detach().numpy().copy()))
    start = [t.detach().clone() for t in t_model.parameters()]
    e_opt, t_opt = ember.optim.Muon(e_model.parameters(), **cfg), torch.optim.Muon(t_model.parameters(), **cfg)
    batches = [(x.astype(np.float32), y.astype(np.float32)) for x, y in _batches()]
    _train(ember, e_model, e_opt, batches)
    _train(torch, t_model, t_opt, batches)
    for e, t, s in zip(e_model.parameters(), t_model.parameters(), start):
        moved = float((t.detach() - s).abs().max())
        assert moved > 0
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), atol=0.02 * moved, rtol=0)
    es, ts = e_opt.state_dict(), t_opt.state_dict()
    assert es["param_groups"] == ts["param_groups"]
    assert [list(v) for v in es["state"].values()] == [list(v) for v in ts["state"].values()]


@pytest.mark.parametrize("make", [
    lambda lib: lib.optim.Muon([lib.zeros(2, 2, requires_grad=True)], lr=-1),
    lambda lib: lib.optim.Muon([lib.zeros(2, 2, requires_grad=True)], momentum=-0.5),
    lambda lib: lib.optim.Muon([lib.zeros(2, 2, requires_grad=True)], weight_decay=-0.1),
    lambda lib: lib.optim.Muon([lib.zeros(2, 2, requires_grad=True)], adjust_lr_fn="spectral"),
    lambda lib: lib.optim.Muon([lib.zeros(3, requires_grad=True)]),
])
def test_muon_bad_arguments_raise_like_torch(make):
    with pytest.raises(Exception) as t_info:
        make(torch)
    with pytest.raises(type(t_info.value)) as e_info:
        make(ember)
    assert str(e_info.value).replace("ember.Size", "torch.Size") == str(t_info.value)
