"""ember.optim optimizers vs torch.optim: same parameters, same gradient sequence -> same parameters,
same state, state dicts of torch's structure that round-trip, and torch's errors."""
import copy
import re

import numpy as np
import pytest
import torch

import ember

SHAPES = [(3, 4), (5,), ()]
STEPS = 20

CONFIGS = {
    "SGD": [dict(lr=0.1), dict(lr=0.1, momentum=0.9), dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.1),
            dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.01), dict(lr=0.1, momentum=0.5, maximize=True)],
    "Adam": [dict(), dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6), dict(lr=0.01, weight_decay=0.1),
             dict(lr=0.01, amsgrad=True), dict(lr=0.01, maximize=True, weight_decay=0.05, amsgrad=True)],
    "AdamW": [dict(), dict(lr=0.01, weight_decay=0.1), dict(lr=0.01, amsgrad=True, weight_decay=0.3),
              dict(lr=0.02, maximize=True)],
    "RMSprop": [dict(), dict(lr=0.01, alpha=0.9, eps=1e-6), dict(lr=0.01, momentum=0.9),
                dict(lr=0.01, centered=True), dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.1),
                dict(lr=0.01, maximize=True)],
    "Adagrad": [dict(), dict(lr=0.1, lr_decay=0.01), dict(lr=0.1, weight_decay=0.1),
                dict(lr=0.1, initial_accumulator_value=0.5, eps=1e-6), dict(lr=0.1, maximize=True)],
}
CASES = [(name, i) for name, cfgs in CONFIGS.items() for i in range(len(cfgs))]


def _data(dtype, steps=STEPS, seed=0):
    rng = np.random.default_rng(seed)
    params = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(steps)]
    return params, grads


def _pair(params):
    e = [ember.tensor(a.copy(), requires_grad=True) for a in params]
    t = [torch.tensor(a.copy(), requires_grad=True) for a in params]
    return e, t


def _run(opt, ps, lib, grads):
    for g in grads:
        for p, a in zip(ps, g):
            p.grad = lib.tensor(a.copy())
        opt.step()


def _assert_close(e_tensors, t_tensors, dtype):
    """Equal within 1e-6 (float32) / 1e-12 (float64) relative to each tensor's scale: elements that
    cancel down to small values carry the rounding of the tensor's larger ones (torch's vectorised
    kernels round differently from NumPy in the last bit)."""
    rtol = 1e-6 if dtype == np.float32 else 1e-12
    for e, t in zip(e_tensors, t_tensors):
        assert e.dtype == getattr(ember, str(t.dtype).split(".")[1])
        tn = t.detach().numpy()
        scale = float(np.abs(tn).max()) if tn.size else 0.0
        np.testing.assert_allclose(e.detach().numpy(), tn, rtol=rtol, atol=rtol * scale)


def _assert_state_like_torch(e_opt, t_opt, dtype):
    es, ts = e_opt.state_dict(), t_opt.state_dict()
    assert es["param_groups"] == ts["param_groups"]
    assert list(es["state"]) == list(ts["state"])
    for k in ts["state"]:
        assert list(es["state"][k]) == list(ts["state"][k])
        for name, tv in ts["state"][k].items():
            ev = es["state"][k][name]
            assert isinstance(ev, ember.Tensor)
            if name == "step":
                assert ev.dtype == ember.float32 and ev.shape == () and ev.item() == tv.item()
            else:
                _assert_close([ev], [tv], dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,i", CASES)
def test_matches_torch(name, i, dtype):
    kwargs = CONFIGS[name][i]
    params, grads = _data(dtype)
    e, t = _pair(params)
    e_opt, t_opt = getattr(ember.optim, name)(e, **kwargs), getattr(torch.optim, name)(t, **kwargs)
    originals = list(e)
    _run(e_opt, e, ember, grads)
    _run(t_opt, t, torch, grads)
    assert all(a is b for a, b in zip(e, originals))  # updated in place
    _assert_close(e, t, dtype)
    _assert_state_like_torch(e_opt, t_opt, dtype)


@pytest.mark.parametrize("name,i", [(n, 1) for n in CONFIGS])
def test_param_groups_and_missing_grads(name, i):
    """Two groups with their own options; a parameter whose grad is None is skipped (no state)."""
    kwargs = CONFIGS[name][i]
    params, grads = _data(np.float64)
    e, t = _pair(params)

    def groups(ps):
        return [{"params": ps[:1], "lr": 0.003}, {"params": ps[1:], "weight_decay": 0.2}]

    e_opt, t_opt = getattr(ember.optim, name)(groups(e), **kwargs), getattr(torch.optim, name)(groups(t), **kwargs)
    for step, g in enumerate(grads):
        for ps, lib in ((e, ember), (t, torch)):
            for j, (p, a) in enumerate(zip(ps, g)):
                p.grad = None if (j == 2 and step < 5) else lib.tensor(a.copy())
        e_opt.step()
        t_opt.step()
    _assert_close(e, t, np.float64)
    _assert_state_like_torch(e_opt, t_opt, np.float64)


@pytest.mark.parametrize("name,i", [(n, len(c) - 1) for n, c in CONFIGS.items()] + [("SGD", 1), ("Adam", 3)])
def test_state_dict_round_trip(name, i):
    """Save mid-run, load into a fresh ember optimizer (and torch's state into ember): continuing matches."""
    kwargs = CONFIGS[name][i]
    params, grads = _data(np.float32)
    e, t = _pair(params)
    e_opt, t_opt = getattr(ember.optim, name)(e, **kwargs), getattr(torch.optim, name)(t, **kwargs)
    _run(e_opt, e, ember, grads[:10])
    _run(t_opt, t, torch, grads[:10])
    saved = copy.deepcopy(e_opt.state_dict())

    e2 = [ember.tensor(p.detach().numpy().copy(), requires_grad=True) for p in e]
    e2_opt = getattr(ember.optim, name)(e2, lr=123.0)  # options come from the state dict
    e2_opt.load_state_dict(saved)
    assert e2_opt.param_groups[0]["lr"] == kwargs.get("lr", e_opt.defaults["lr"])
    assert e2_opt.param_groups[0]["params"][0] is e2[0]

    # torch's own state dict, converted tensor by tensor, loads into ember too
    tsd = t_opt.state_dict()
    e3 = [ember.tensor(p.detach().numpy().copy(), requires_grad=True) for p in t]
    e3_opt = getattr(ember.optim, name)(e3, **kwargs)
    e3_opt.load_state_dict({"state": {k: {n: ember.tensor(v.numpy().copy()) for n, v in s.items()}
                                      for k, s in tsd["state"].items()},
                            "param_groups": copy.deepcopy(tsd["param_groups"])})

    _run(e_opt, e, ember, grads[10:])
    _run(e2_opt, e2, ember, grads[10:])
    _run(e3_opt, e3, ember, grads[10:])
    _run(t_opt, t, torch, grads[10:])
    for a, b in zip(e, e2):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    _assert_close(e3, t, np.float32)
    _assert_close(e, t, np.float32)


def test_load_state_dict_errors():
    e = [ember.zeros(2, requires_grad=True), ember.zeros(3, requires_grad=True)]
    t = [torch.zeros(2, requires_grad=True), torch.zeros(3, requires_grad=True)]
    sd_e = ember.optim.SGD([{"params": e[:1]}, {"params": e[1:]}], lr=0.1).state_dict()
    sd_t = torch.optim.SGD([{"params": t[:1]}, {"params": t[1:]}], lr=0.1).state_dict()
    for bad_e, bad_t in ((ember.optim.SGD(e, lr=0.1), torch.optim.SGD(t, lr=0.1)),
                         (ember.optim.SGD([{"params": e}, {"params": [ember.zeros(1, requires_grad=True)]}], lr=0.1),
                          torch.optim.SGD([{"params": t}, {"params": [torch.zeros(1, requires_grad=True)]}], lr=0.1))):
        with pytest.raises(ValueError) as te:
            bad_t.load_state_dict(sd_t)
        with pytest.raises(ValueError, match=str(te.value)):
            bad_e.load_state_dict(sd_e)


ERROR_CASES = [
    ("SGD", dict(lr=-1)), ("SGD", dict(lr=0.1, momentum=-0.5)), ("SGD", dict(lr=0.1, weight_decay=-1)),
    ("SGD", dict(lr=0.1, nesterov=True)), ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)),
    ("Adam", dict(lr=-0.01)), ("Adam", dict(eps=-1.0)), ("Adam", dict(betas=(1.0, 0.9))),
    ("Adam", dict(betas=(0.9, -0.1))), ("Adam", dict(weight_decay=-1.0)), ("Adam", dict(betas=(0.9, 1))),
    ("AdamW", dict(lr=-1.0)), ("AdamW", dict(betas=(0.9, 1.5))),
    ("RMSprop", dict(lr=-1.0)), ("RMSprop", dict(alpha=-0.5)), ("RMSprop", dict(eps=-1.0)),
    ("RMSprop", dict(momentum=-1.0)), ("RMSprop", dict(weight_decay=-1.0)),
    ("Adagrad", dict(lr=-1.0)), ("Adagrad", dict(lr_decay=-1.0)), ("Adagrad", dict(weight_decay=-1.0)),
    ("Adagrad", dict(initial_accumulator_value=-1.0)), ("Adagrad", dict(eps=-1.0)),
]


@pytest.mark.parametrize("name,kwargs", ERROR_CASES)
def test_hyperparameter_errors_match_torch(name, kwargs):
    with pytest.raises(Exception) as te:
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kwargs)
    with pytest.raises(type(te.value)) as ee:
        getattr(ember.optim, name)([ember.zeros(2, requires_grad=True)], **kwargs)
    assert str(ee.value) == str(te.value)


def _construction_error(lib, make):
    with pytest.raises(Exception) as info:
        make(lib)
    return info


@pytest.mark.parametrize("make", [
    lambda lib: lib.optim.SGD([], lr=0.1),
    lambda lib: lib.optim.SGD(lib.zeros(2, requires_grad=True), lr=0.1),
    lambda lib: lib.optim.SGD([lib.zeros(2, requires_grad=True) * 2], lr=0.1),
    lambda lib: lib.optim.SGD([1.0], lr=0.1),
    lambda lib: lib.optim.SGD([{"params": {lib.zeros(2, requires_grad=True)}}], lr=0.1),
    lambda lib: lib.optim.SGD([("w", lib.zeros(2, requires_grad=True)), lib.zeros(2, requires_grad=True)], lr=0.1),
])
def test_param_errors_match_torch(make):
    te, ee = _construction_error(torch, make), _construction_error(ember, make)
    assert type(ee.value) is type(te.value)
    assert str(ee.value).replace("ember.", "torch.") == str(te.value)


def test_overlapping_groups_and_add_param_group():
    a, b = ember.zeros(2, requires_grad=True), ember.zeros(3, requires_grad=True)
    opt = ember.optim.SGD([a], lr=0.1, momentum=0.9)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": [a]})
    opt.add_param_group({"params": b, "lr": 0.5})
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["momentum"] == 0.9
    assert opt.param_groups[1]["params"] == [b] or opt.param_groups[1]["params"][0] is b
    with pytest.raises(TypeError, match="param_group must be a dict"):
        opt.add_param_group([b])


def test_zero_grad_and_version_counter():
    p = ember.ones(3, requires_grad=True)
    opt = ember.optim.SGD([p], lr=0.5)
    p.grad = ember.ones(3)
    g = p.grad
    v = p._version
    opt.step()
    assert p._version > v
    np.testing.assert_allclose(p.detach().numpy(), np.full(3, 0.5, np.float32))
    opt.zero_grad(set_to_none=False)
    assert p.grad is g and np.all(g.numpy() == 0)
    opt.zero_grad()
    assert p.grad is None
    assert not p.requires_grad or p.grad_fn is None  # still a leaf


def test_step_runs_under_no_grad_and_closure_with_grad():
    x = np.array([1.0, -2.0, 3.0], np.float32)
    results = {}
    for lib in (ember, torch):
        w = lib.tensor(x.copy(), requires_grad=True)
        opt = lib.optim.Adam([w], lr=0.1)
        seen = []

        def closure():
            opt.zero_grad()
            seen.append(lib.is_grad_enabled())
            loss = (w * w).sum()
            loss.backward()
            return loss

        losses = [opt.step(closure).item() for _ in range(5)]
        results[lib.__name__] = (losses, w.detach().numpy().copy(), seen)
        assert w.grad_fn is None and w.requires_grad
    (le, we, se), (lt, wt, st) = results["ember"], results["torch"]
    assert se == st == [True] * 5
    np.testing.assert_allclose(le, lt, rtol=1e-6)
    np.testing.assert_allclose(we, wt, rtol=1e-6)


def test_step_hooks_and_repr():
    p = ember.zeros(2, requires_grad=True)
    opt = ember.optim.SGD([p], lr=0.1)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: calls.append("post"))
    opt.step()
    h1.remove()
    opt.step()
    assert calls == ["pre", "post", "post"]
    t = torch.optim.SGD([torch.zeros(2, requires_grad=True)], lr=0.1)
    assert repr(opt) == repr(t)
    a = ember.optim.AdamW([ember.zeros(2, requires_grad=True)])
    assert repr(a) == repr(torch.optim.AdamW([torch.zeros(2, requires_grad=True)]))


def test_unsupported_options_raise():
    p = ember.zeros(2, requires_grad=True)
    with pytest.raises(NotImplementedError, match="fused"):     # SGD, Adam and AdamW have it
        ember.optim.Adagrad([p], fused=True)
    with pytest.raises(NotImplementedError, match="Tensor lr"):
        ember.optim.SGD([p], lr=ember.tensor(0.1))


def test_step_dtype_follows_default_dtype():
    old = ember.get_default_dtype()
    try:
        for lib in (ember, torch):
            lib.set_default_dtype(lib.float64)
        pe, pt = ember.zeros(2, requires_grad=True), torch.zeros(2, requires_grad=True)
        pe.grad, pt.grad = ember.ones(2), torch.ones(2)
        e_opt, t_opt = ember.optim.Adam([pe]), torch.optim.Adam([pt])
        e_opt.step()
        t_opt.step()
        assert str(e_opt.state[pe]["step"].dtype).split(".")[1] == str(t_opt.state[pt]["step"].dtype).split(".")[1]
    finally:
        ember.set_default_dtype(old)
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("name,kwargs,dropped", [
    ("SGD", dict(lr=0.1, momentum=0.9), ("nesterov", "maximize", "foreach", "differentiable")),
    ("Adam", dict(lr=0.01, amsgrad=True), ("amsgrad", "maximize", "foreach", "capturable", "differentiable",
                                           "decoupled_weight_decay", "fused")),
    ("AdamW", dict(lr=0.01), ("maximize", "decoupled_weight_decay")),
    ("RMSprop", dict(momentum=0.5), ("momentum", "centered", "foreach", "maximize", "differentiable",
                                     "capturable")),
    ("Adagrad", dict(), ("foreach", "maximize", "differentiable", "fused")),
])
def test_setstate_completes_old_pickles_like_torch(name, kwargs, dropped):
    """State pickled by older versions lacks newer group options and keeps 'step' as a number:
    __setstate__ fills both in as torch does, and the optimizer continues to match torch."""
    params, grads = _data(np.float64)
    e, t = _pair(params)
    opts = {}
    for lib, ps in ((ember, e), (torch, t)):
        opt = getattr(lib.optim, name)(ps, **kwargs)
        _run(opt, ps, lib, grads[:3])
        old = opt.__getstate__()
        for group in old["param_groups"]:
            for key in dropped:
                group.pop(key)
        for s in old["state"].values():
            if "step" in s:
                s["step"] = s["step"].item()
        opt.__setstate__(old)
        opts[lib.__name__] = opt
    e_opt, t_opt = opts["ember"], opts["torch"]
    assert e_opt.param_groups[0].keys() == t_opt.param_groups[0].keys()
    for key in t_opt.param_groups[0]:
        if key != "params":
            assert e_opt.param_groups[0][key] == t_opt.param_groups[0][key], key
    _run(e_opt, e, ember, grads[3:])
    _run(t_opt, t, torch, grads[3:])
    _assert_close(e, t, np.float64)


def test_deepcopy_continues_identically():
    params, grads = _data(np.float32)
    e, _ = _pair(params)
    opt = ember.optim.Adam(e, lr=0.01, amsgrad=True)
    _run(opt, e, ember, grads[:5])
    e2 = copy.deepcopy(e)
    opt2 = ember.optim.Adam(e2, lr=0.01, amsgrad=True)
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
    _run(opt, e, ember, grads[5:])
    _run(opt2, e2, ember, grads[5:])
    for a, b in zip(e, e2):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


@pytest.mark.parametrize("name,kwargs", [
    ("SGD", dict(lr=0.1, momentum=float("nan"))), ("SGD", dict(lr=float("nan"))),
    ("Adam", dict(eps=float("nan"))), ("RMSprop", dict(momentum=float("nan"))),
    ("Adagrad", dict(lr_decay=float("nan"))), ("Adam", dict(betas=[0.8, 0.9])),
])
def test_hyperparameter_edge_values_like_torch(name, kwargs):
    """NaN passes SGD's `v < 0` checks but fails the others' `0 <= v`; betas keep their container type."""
    try:
        t_opt = getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kwargs)
    except ValueError as err:
        with pytest.raises(ValueError, match=re.escape(str(err))):
            getattr(ember.optim, name)([ember.zeros(2, requires_grad=True)], **kwargs)
        return
    e_opt = getattr(ember.optim, name)([ember.zeros(2, requires_grad=True)], **kwargs)
    eg, tg = e_opt.param_groups[0], t_opt.param_groups[0]
    assert eg.keys() == tg.keys() and list(eg) == list(tg)
    for key in tg:
        if key != "params":
            assert type(eg[key]) is type(tg[key]) and repr(eg[key]) == repr(tg[key]), key


def test_pre_hook_can_replace_arguments_and_bad_return_raises_like_torch():
    results = {}
    for lib in (ember, torch):
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1)
        calls = []

        def closure():
            calls.append("closure")
            opt.zero_grad()
            (w * w).sum().backward()
            return (w * w).sum()

        handle = opt.register_step_pre_hook(lambda o, args, kwargs: ((o, closure), {}))
        post = opt.register_step_post_hook(lambda o, args, kwargs: calls.append(("post", len(args))))
        loss = opt.step()
        handle.remove()
        post.remove()
        opt.register_step_pre_hook(lambda o, args, kwargs: 3)
        with pytest.raises(RuntimeError) as info:
            opt.step()
        results[lib.__name__] = (loss.item(), w.detach().numpy().copy(), calls, str(info.value))
    (le, we, ce, me), (lt, wt, ct, mt) = results["ember"], results["torch"]
    assert le == lt and ce == ct
    assert re.sub(" at 0x[0-9a-f]+", "", me) == re.sub(" at 0x[0-9a-f]+", "", mt)
    np.testing.assert_allclose(we, wt)
