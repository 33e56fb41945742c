"""ember.optim.lr_scheduler vs torch.optim.lr_scheduler: the same lr (and momentum) sequences over 40
epochs, state_dict round-trips, torch's state_dict structure and errors."""
import copy
import warnings

import numpy as np
import pytest
import torch

import ember

EPOCHS = 40


def _opt(lib, kind="SGD", groups=2):
    ps = [lib.zeros(2, requires_grad=True) for _ in range(groups)]
    pgs = [{"params": [p], "lr": 0.1 * (i + 1)} for i, p in enumerate(ps)]
    if kind == "Adam":
        return lib.optim.Adam(pgs, lr=0.1)
    return lib.optim.SGD(pgs, lr=0.1, momentum=0.9)


def _factor(epoch):
    return 0.95 ** epoch


def _mfactor(epoch):
    return 0.9 if epoch % 3 else 1.0


SCHEDULERS = {
    "StepLR": ("SGD", lambda m, o: m.StepLR(o, step_size=7, gamma=0.5)),
    "MultiStepLR": ("SGD", lambda m, o: m.MultiStepLR(o, milestones=[3, 10, 10, 25], gamma=0.3)),
    "ExponentialLR": ("SGD", lambda m, o: m.ExponentialLR(o, gamma=0.9)),
    "CosineAnnealingLR": ("SGD", lambda m, o: m.CosineAnnealingLR(o, T_max=12, eta_min=0.001)),
    "LambdaLR": ("SGD", lambda m, o: m.LambdaLR(o, lr_lambda=_factor)),
    "LambdaLR-list": ("SGD", lambda m, o: m.LambdaLR(o, lr_lambda=[_factor, lambda e: 1 / (e + 1)])),
    "MultiplicativeLR": ("SGD", lambda m, o: m.MultiplicativeLR(o, lr_lambda=_mfactor)),
    "LinearLR": ("SGD", lambda m, o: m.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=15)),
    "ConstantLR": ("SGD", lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=6)),
    "PolynomialLR": ("SGD", lambda m, o: m.PolynomialLR(o, total_iters=30, power=2.0)),
    "CosineAnnealingWarmRestarts": ("SGD", lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2,
                                                                                     eta_min=0.01)),
    "OneCycleLR-cos": ("SGD", lambda m, o: m.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=EPOCHS + 1)),
    "OneCycleLR-linear-3phase": ("SGD", lambda m, o: m.OneCycleLR(o, max_lr=0.8, epochs=7, steps_per_epoch=6,
                                                                  anneal_strategy="linear", three_phase=True,
                                                                  pct_start=0.25)),
    "OneCycleLR-adam": ("Adam", lambda m, o: m.OneCycleLR(o, max_lr=0.01, total_steps=EPOCHS + 2,
                                                          base_momentum=0.8, max_momentum=0.9)),
    "OneCycleLR-nomomentum": ("Adam", lambda m, o: m.OneCycleLR(o, max_lr=0.01, total_steps=EPOCHS + 2,
                                                                cycle_momentum=False)),
    "CyclicLR-triangular": ("SGD", lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=[0.1, 0.2], step_size_up=4)),
    "CyclicLR-triangular2": ("SGD", lambda m, o: m.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=3,
                                                            step_size_down=5, mode="triangular2")),
    "CyclicLR-exp_range-adam": ("Adam", lambda m, o: m.CyclicLR(o, base_lr=0.001, max_lr=0.01, step_size_up=5,
                                                                mode="exp_range", gamma=0.97, base_momentum=0.85,
                                                                max_momentum=0.95)),
    "CyclicLR-scale_fn": ("Adam", lambda m, o: m.CyclicLR(o, base_lr=0.001, max_lr=0.01, step_size_up=2,
                                                          scale_fn=_mfactor, scale_mode="iterations",
                                                          cycle_momentum=False)),
    "SWALR-cos": ("SGD", lambda m, o: _swa(m).SWALR(o, swa_lr=0.05, anneal_epochs=8)),
    "SWALR-linear": ("SGD", lambda m, o: _swa(m).SWALR(o, swa_lr=[0.05, 0.01], anneal_epochs=5,
                                                       anneal_strategy="linear")),
    "SWALR-immediate": ("SGD", lambda m, o: _swa(m).SWALR(o, swa_lr=0.02, anneal_epochs=0)),
    "SequentialLR": ("SGD", lambda m, o: m.SequentialLR(o, [m.LinearLR(o, start_factor=0.1, total_iters=5),
                                                            m.ExponentialLR(o, gamma=0.9)], milestones=[5])),
    "ChainedScheduler": ("SGD", lambda m, o: m.ChainedScheduler([m.ConstantLR(o, factor=0.5, total_iters=4),
                                                                 m.ExponentialLR(o, gamma=0.9)])),
}


def _swa(lr_scheduler_module):
    """The swa_utils module of the library whose lr_scheduler module is given."""
    return torch.optim.swa_utils if lr_scheduler_module is torch.optim.lr_scheduler else ember.optim.swa_utils


def _momenta(opt):
    return [(g.get("momentum"), g.get("betas")) for g in opt.param_groups]


def _trace(opt, sched, epochs, metrics=None):
    out = []
    for e in range(epochs):
        opt.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[e])
        out.append((list(sched.get_last_lr()), [g["lr"] for g in opt.param_groups], _momenta(opt)))
    return out


def _make(lib, name):
    kind, build = SCHEDULERS[name]
    opt = _opt(lib, kind)
    return opt, build(lib.optim.lr_scheduler, opt)


def _plain(sd):
    """A scheduler state dict with nested schedulers' dicts compared recursively."""
    return {k: ([_plain(s) for s in v] if k == "_schedulers" else v) for k, v in sd.items()}


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_lr_sequence_matches_torch(name):
    e_opt, e_s = _make(ember, name)
    t_opt, t_s = _make(torch, name)
    assert e_s.get_last_lr() == t_s.get_last_lr()
    assert [g["lr"] for g in e_opt.param_groups] == [g["lr"] for g in t_opt.param_groups]
    assert _trace(e_opt, e_s, EPOCHS) == _trace(t_opt, t_s, EPOCHS)
    assert _plain(e_s.state_dict()) == _plain(t_s.state_dict())


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_state_dict_round_trip(name):
    """Save optimizer + scheduler after 12 epochs, load into fresh ones: the rest of the schedule matches."""
    e_opt, e_s = _make(ember, name)
    t_opt, t_s = _make(torch, name)
    _trace(e_opt, e_s, 12)
    _trace(t_opt, t_s, 12)
    sd_opt, sd_s = copy.deepcopy(e_opt.state_dict()), copy.deepcopy(e_s.state_dict())
    e2_opt, e2_s = _make(ember, name)
    e2_opt.load_state_dict(sd_opt)
    e2_s.load_state_dict(sd_s)
    expected = _trace(t_opt, t_s, EPOCHS - 12)
    assert _trace(e2_opt, e2_s, EPOCHS - 12) == expected
    assert _trace(e_opt, e_s, EPOCHS - 12) == expected


PLATEAU = [
    dict(),
    dict(mode="min", factor=0.5, patience=2, threshold=0.01, cooldown=1, min_lr=0.002),
    dict(mode="max", factor=0.3, patience=1, threshold_mode="abs", threshold=0.05, min_lr=[0.01, 0.0]),
    dict(mode="min", factor=0.5, patience=0, threshold_mode="abs", eps=0.05),
    dict(mode="max", patience=3, cooldown=2),
]


@pytest.mark.parametrize("kwargs", PLATEAU)
def test_reduce_lr_on_plateau(kwargs):
    rng = np.random.default_rng(1)
    metrics = list(np.round(rng.standard_normal(EPOCHS) * 0.1 + np.linspace(1, 0.2, EPOCHS), 2))
    metrics[10:20] = [0.5] * 10  # a plateau
    e_opt, t_opt = _opt(ember), _opt(torch)
    e_s = ember.optim.lr_scheduler.ReduceLROnPlateau(e_opt, **kwargs)
    t_s = torch.optim.lr_scheduler.ReduceLROnPlateau(t_opt, **kwargs)
    assert _trace(e_opt, e_s, 15, metrics) == _trace(t_opt, t_s, 15, metrics)
    assert e_s.state_dict() == t_s.state_dict()
    e2_opt = _opt(ember)
    e2_opt.load_state_dict(copy.deepcopy(e_opt.state_dict()))
    e2_s = ember.optim.lr_scheduler.ReduceLROnPlateau(e2_opt)
    e2_s.load_state_dict(copy.deepcopy(e_s.state_dict()))
    expected = _trace(t_opt, t_s, EPOCHS - 15, metrics[15:])
    assert _trace(e2_opt, e2_s, EPOCHS - 15, metrics[15:]) == expected
    # a 0-d tensor metric works like a float
    for m in (0.1, 5.0, 5.0, 5.0, 5.0):
        e2_s.step(ember.tensor(m))
        t_s.step(torch.tensor(m))
        assert e2_s.get_last_lr() == t_s.get_last_lr()


def test_closed_form_epoch_argument():
    for name in ("StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR", "PolynomialLR",
                 "CosineAnnealingWarmRestarts"):
        e_opt, e_s = _make(ember, name)
        t_opt, t_s = _make(torch, name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for epoch in (3, 11, 7, 20):
                e_s.step(epoch)
                t_s.step(epoch)
                assert e_s.get_last_lr() == t_s.get_last_lr(), name


def test_warns_when_scheduler_steps_before_optimizer():
    for lib in (ember, torch):
        opt = _opt(lib)
        s = lib.optim.lr_scheduler.StepLR(opt, 3)
        with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
            s.step()


def _error(lib, make):
    with pytest.raises(Exception) as info:
        make(lib, _opt(lib))
    return info


@pytest.mark.parametrize("make", [
    lambda lib, o: lib.optim.lr_scheduler.StepLR(object(), 3),
    lambda lib, o: lib.optim.lr_scheduler.StepLR(o, 3, last_epoch=4),
    lambda lib, o: lib.optim.lr_scheduler.LambdaLR(o, [_factor]),
    lambda lib, o: lib.optim.lr_scheduler.MultiplicativeLR(o, 0.5),
    lambda lib, o: lib.optim.lr_scheduler.LinearLR(o, start_factor=0),
    lambda lib, o: lib.optim.lr_scheduler.LinearLR(o, end_factor=1.5),
    lambda lib, o: lib.optim.lr_scheduler.ConstantLR(o, factor=2.0),
    lambda lib, o: lib.optim.lr_scheduler.ReduceLROnPlateau(o, factor=1.0),
    lambda lib, o: lib.optim.lr_scheduler.ReduceLROnPlateau(o, mode="mid"),
    lambda lib, o: lib.optim.lr_scheduler.ReduceLROnPlateau(o, threshold_mode="x"),
    lambda lib, o: lib.optim.lr_scheduler.ReduceLROnPlateau(o, min_lr=[0.1]),
    lambda lib, o: lib.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0),
    lambda lib, o: lib.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=0),
    lambda lib, o: lib.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=10, pct_start=1.5),
    lambda lib, o: lib.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=10, anneal_strategy="x"),
    lambda lib, o: lib.optim.lr_scheduler.OneCycleLR(o, max_lr=[1.0], total_steps=10),
    lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=0),
    lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0),
    lambda lib, o: lib.optim.lr_scheduler.SequentialLR(o, [lib.optim.lr_scheduler.StepLR(o, 2)], [3]),
    lambda lib, o: lib.optim.lr_scheduler.ChainedScheduler([]),
    lambda lib, o: lib.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, mode="square"),
    lambda lib, o: lib.optim.lr_scheduler.CyclicLR(o, [0.01], 0.1),
    lambda lib, o: lib.optim.lr_scheduler.CyclicLR(lib.optim.Adagrad(o.param_groups[0]["params"]), 0.01, 0.1),
    lambda lib, o: lib.optim.lr_scheduler.CyclicLR("not an optimizer", 0.01, 0.1),
    lambda lib, o: lib.optim.swa_utils.SWALR(o, swa_lr=0.1, anneal_strategy="step"),
    lambda lib, o: lib.optim.swa_utils.SWALR(o, swa_lr=0.1, anneal_epochs=-1),
    lambda lib, o: lib.optim.swa_utils.SWALR(o, swa_lr=[0.1, 0.2, 0.3]),
])
def test_errors_match_torch(make):
    te, ee = _error(torch, make), _error(ember, make)
    assert type(ee.value) is type(te.value)
    assert str(ee.value) == str(te.value)


def test_one_cycle_overrun_raises_like_torch():
    msgs = []
    for lib in (ember, torch):
        opt = _opt(lib)
        s = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=3)
        for _ in range(3):
            opt.step()
            s.step()
        opt.step()
        with pytest.raises(ValueError) as info:
            s.step()
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("kind,build", [
    ("SGD", lambda m, o: m.StepLR(o, step_size=3, gamma=0.5)),
    ("Adam", lambda m, o: m.OneCycleLR(o, max_lr=0.05, total_steps=15)),
])
def test_scheduled_training_matches_torch(kind, build):
    """The optimizer reads the lr (and Adam's betas) the scheduler writes into its param groups."""
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((3, 2)).astype(np.float32)
    grads = [rng.standard_normal((3, 2)).astype(np.float32) for _ in range(14)]
    out = []
    for lib in (ember, torch):
        w = lib.tensor(w0.copy(), requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1, momentum=0.9) if kind == "SGD" else lib.optim.Adam([w])
        sched = build(lib.optim.lr_scheduler, opt)
        for g in grads:
            w.grad = lib.tensor(g.copy())
            opt.step()
            sched.step()
        out.append(w.detach().numpy().copy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-6, atol=1e-6)


RESUMABLE = ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR", "MultiplicativeLR",
             "LinearLR", "ConstantLR", "PolynomialLR", "CosineAnnealingWarmRestarts"]


@pytest.mark.parametrize("name", RESUMABLE)
def test_resume_with_last_epoch_matches_torch(name):
    """A scheduler built with last_epoch >= 0 over a checkpointed optimizer continues like torch's."""
    kind, build = SCHEDULERS[name]
    out = []
    for lib in (ember, torch):
        opt = _opt(lib, kind)
        _trace(opt, build(lib.optim.lr_scheduler, opt), 9)
        opt2 = _opt(lib, kind)
        opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
        m = lib.optim.lr_scheduler
        sched = {"StepLR": lambda: m.StepLR(opt2, step_size=7, gamma=0.5, last_epoch=6),
                 "MultiStepLR": lambda: m.MultiStepLR(opt2, milestones=[3, 10, 10, 25], gamma=0.3, last_epoch=9),
                 "ExponentialLR": lambda: m.ExponentialLR(opt2, gamma=0.9, last_epoch=8),
                 "CosineAnnealingLR": lambda: m.CosineAnnealingLR(opt2, T_max=12, eta_min=0.001, last_epoch=8),
                 "LambdaLR": lambda: m.LambdaLR(opt2, lr_lambda=_factor, last_epoch=8),
                 "MultiplicativeLR": lambda: m.MultiplicativeLR(opt2, lr_lambda=_mfactor, last_epoch=8),
                 "LinearLR": lambda: m.LinearLR(opt2, start_factor=0.25, end_factor=0.9, total_iters=15,
                                                last_epoch=8),
                 "ConstantLR": lambda: m.ConstantLR(opt2, factor=0.5, total_iters=6, last_epoch=5),
                 "PolynomialLR": lambda: m.PolynomialLR(opt2, total_iters=30, power=2.0, last_epoch=8),
                 "CosineAnnealingWarmRestarts": lambda: m.CosineAnnealingWarmRestarts(opt2, T_0=5, T_mult=2,
                                                                                      eta_min=0.01, last_epoch=8),
                 }[name]()
        out.append((sched.get_last_lr(), _trace(opt2, sched, 20), _plain(sched.state_dict())))
    assert out[0] == out[1]


class _Halve:
    """A callable object: LambdaLR saves its __dict__ in state_dict."""

    def __init__(self):
        self.scale = 0.5

    def __call__(self, epoch):
        return self.scale ** (epoch // 4)


@pytest.mark.parametrize("children", [
    lambda m, o: [m.LambdaLR(o, _Halve()), m.CosineAnnealingLR(o, T_max=6), m.MultiplicativeLR(o, _mfactor)],
    # a composite child can only come first (torch restarts later children through get_lr)
    lambda m, o: [m.ChainedScheduler([m.ExponentialLR(o, gamma=0.8), m.StepLR(o, 2)]),
                  m.ConstantLR(o, factor=0.2, total_iters=3), m.CosineAnnealingWarmRestarts(o, T_0=3)],
])
def test_sequential_nested_matches_torch(children):
    out = []
    for lib in (ember, torch):
        opt = _opt(lib)
        m = lib.optim.lr_scheduler
        s = m.SequentialLR(opt, children(m, opt), milestones=[5, 11])
        first = _trace(opt, s, 8)
        sd = copy.deepcopy(s.state_dict())
        opt2 = _opt(lib)
        opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
        s2 = m.SequentialLR(opt2, children(m, opt2), milestones=[5, 11])
        s2.load_state_dict(sd)
        out.append((first, _trace(opt2, s2, 14), _plain(sd)))
    assert out[0] == out[1]


def test_warning_texts_match_torch():
    texts = []
    for lib in (ember, torch):
        opt = _opt(lib)
        s = lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s.get_lr()
            s.step()
            s.step(3)
        texts.append([(x.category, str(x.message)) for x in w])
    assert texts[0] == texts[1] and len(texts[0]) == 3
