"""nn.Module machinery vs PyTorch: registration, named_*, state_dict/load_state_dict errors, modes,
conversion, hooks, repr, containers, Parameter, clip_grad and parameters_to_vector."""
import copy
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
import ember.nn as enn


def _net(nn):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 4)
            self.block = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.BatchNorm1d(4))
            self.shared = self.fc  # a duplicate: named_* lists it once
            self.register_buffer("steps", (torch if nn is torch.nn else ember).zeros(2))
            self.register_buffer("tmp", (torch if nn is torch.nn else ember).ones(1), persistent=False)
            self.scale = nn.Parameter((torch if nn is torch.nn else ember).ones(1))
            self.register_parameter("unused", None)

        def forward(self, x):
            return self.block(self.fc(x)) * self.scale
    return Net()


def both():
    torch.manual_seed(0)
    return _net(torch.nn), _net(enn)


def test_named_members_match_torch():
    t, e = both()
    for fn in ["named_parameters", "named_buffers", "named_modules", "named_children"]:
        assert [n for n, _ in getattr(e, fn)()] == [n for n, _ in getattr(t, fn)()], fn
    assert [n for n, _ in e.named_parameters(prefix="m", recurse=False)] == \
        [n for n, _ in t.named_parameters(prefix="m", recurse=False)]
    assert [n for n, _ in e.named_parameters(remove_duplicate=False)] == \
        [n for n, _ in t.named_parameters(remove_duplicate=False)]
    assert [n for n, _ in e.named_modules(remove_duplicate=False)] == \
        [n for n, _ in t.named_modules(remove_duplicate=False)]
    assert len(list(e.parameters())) == len(list(t.parameters()))
    assert len(list(e.buffers(recurse=False))) == len(list(t.buffers(recurse=False)))
    assert len(list(e.children())) == len(list(t.children()))
    assert repr(e) == repr(t)
    assert list(e.state_dict()) == list(t.state_dict())
    assert e.get_submodule("block.2") is e.block[2]
    assert e.get_parameter("block.0.bias") is e.block[0].bias
    assert e.get_buffer("block.2.running_mean") is e.block[2].running_mean
    for mod in (e, t):
        with pytest.raises(AttributeError) as err:
            mod.get_submodule("block.x")
        assert str(err.value) == "Sequential has no attribute `x`"
    assert "fc" in dir(e) and "steps" in dir(e) and "scale" in dir(e)


def test_setattr_rules_and_errors():
    e = _net(enn)
    t = _net(torch.nn)
    for mod in (e, t):
        mod.fc = None  # a registered module may be set to None
        assert mod.fc is None and "fc" in mod._modules
        mod.steps = None
        assert "steps" in mod._buffers
        mod.x = 3
        assert mod.x == 3 and "x" not in mod._parameters
        del mod.scale
        assert "scale" not in mod._parameters
    with pytest.raises(TypeError, match="cannot assign 'int' as child module 'block'"):
        e.block = 3
    with pytest.raises(TypeError, match=r"as parameter 'unused' \(torch.nn.Parameter or None expected\)"):
        e.unused = ember.ones(2)
    with pytest.raises(KeyError, match="attribute 'x' already exists"):
        e.register_buffer("x", ember.ones(1))
    with pytest.raises(KeyError, match='contain "."'):
        e.register_parameter("a.b", None)
    with pytest.raises(TypeError, match="is not a Module subclass"):
        e.add_module("m", 3)
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'nope'"):
        e.nope
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor"):
        p = enn.Parameter(ember.ones(2))
        e.register_parameter("q", p * 2 if False else _nonleaf_param())

    class Early(enn.Module):
        def __init__(self):
            self.w = enn.Parameter(ember.ones(1))
    with pytest.raises(AttributeError, match="cannot assign parameters before Module.__init__"):
        Early()


def _nonleaf_param():
    p = enn.Parameter(ember.ones(2))
    q = object.__new__(enn.Parameter)
    y = p * 2
    q._data, q._keys, q._autograd = y._data, y._keys, y._autograd
    return q


def test_state_dict_roundtrip_and_strict_errors():
    t, e = both()
    sd = {k: ember.tensor(v.numpy().copy()) for k, v in t.state_dict().items()}
    res = e.load_state_dict(sd)
    assert repr(res) == "<All keys matched successfully>" and res.missing_keys == []
    for k, v in e.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), t.state_dict()[k].numpy())
    assert not e.state_dict()["fc.weight"].requires_grad
    assert e.state_dict(keep_vars=True)["fc.weight"] is e.fc.weight

    bad = dict(sd)
    del bad["fc.bias"]
    bad["extra.weight"] = ember.ones(1)
    tbad = {k: torch.tensor(v.numpy()) for k, v in bad.items()}
    with pytest.raises(RuntimeError) as te:
        t.load_state_dict(tbad)
    before = e.block[0].bias.detach().clone()
    bad["block.0.bias"] = ember.zeros(4)
    with pytest.raises(RuntimeError) as ee:
        e.load_state_dict(bad)
    assert str(ee.value) == str(te.value)
    assert str(ee.value).startswith("Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "
                                    '"fc.bias". \n\tUnexpected key(s) in state_dict: "extra.weight". ')
    assert (e.block[0].bias == before).all().item()  # nothing copied when it raises
    res_t = t.load_state_dict(tbad, strict=False)
    res_e = e.load_state_dict(bad, strict=False)
    assert res_e.missing_keys == res_t.missing_keys and res_e.unexpected_keys == res_t.unexpected_keys
    assert (e.block[0].bias == 0).all().item()

    shape = dict(sd)
    shape["fc.weight"] = ember.ones(5, 3)
    with pytest.raises(RuntimeError) as te:
        t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in shape.items()})
    with pytest.raises(RuntimeError) as ee:
        e.load_state_dict(shape)
    assert str(ee.value) == str(te.value).replace("torch.Size", "ember.Size")
    assert "size mismatch for fc.weight: copying a param with shape ember.Size([5, 3]) from checkpoint, the " \
           "shape in current model is ember.Size([4, 3])." in str(ee.value)
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        e.load_state_dict([1])
    # BatchNorm checkpoints without num_batches_tracked load (PyTorch's version-1 rule)
    bn = enn.BatchNorm1d(2)
    bn.load_state_dict({"weight": ember.ones(2), "bias": ember.zeros(2), "running_mean": ember.zeros(2),
                        "running_var": ember.ones(2)})
    # assign=True replaces the parameter objects
    lin = enn.Linear(2, 2)
    lin.load_state_dict({"weight": ember.zeros(2, 2), "bias": ember.zeros(2)}, assign=True)
    assert isinstance(lin.weight, enn.Parameter) and lin.weight.requires_grad


def test_train_eval_zero_grad_requires_grad():
    e = _net(enn)
    assert e.training and e.block[2].training
    assert e.eval() is e and not e.block[2].training
    e.train()
    assert e.block[2].training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        e.train("yes")
    for p in e.parameters():
        p.grad = ember.ones(p.shape)
    e.zero_grad(set_to_none=False)
    assert all((p.grad == 0).all().item() for p in e.parameters())
    e.zero_grad()
    assert all(p.grad is None for p in e.parameters())
    e.requires_grad_(False)
    assert not any(p.requires_grad for p in e.parameters())


def test_to_float_double_apply():
    e = _net(enn)
    w = e.fc.weight
    e.double()
    assert e.fc.weight is w and w.dtype == ember.float64 and e.steps.dtype == ember.float64
    assert e.block[2].num_batches_tracked.dtype == ember.int64
    e.to(ember.float32)
    assert w.dtype == ember.float32
    e.to("cpu")
    e.to(device="cpu", dtype=ember.float64)
    assert w.dtype == ember.float64
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex dtypes"):
        e.to(ember.int32)
    e.float()
    seen = []
    e.apply(lambda m: seen.append(type(m).__name__))
    t = _net(torch.nn)
    tseen = []
    t.apply(lambda m: tseen.append(type(m).__name__))
    assert seen == tseen
    c = copy.deepcopy(e)
    assert c.fc.weight is not e.fc.weight and isinstance(c.fc.weight, enn.Parameter)
    assert (c.fc.weight == e.fc.weight).all().item() and c.shared is c.fc


def test_forward_hooks():
    lin = enn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append(out.shape) or out + 1)
    h3 = lin.register_forward_pre_hook(lambda m, args, kwargs: calls.append("kw") or None, with_kwargs=True,
                                       prepend=True)
    out = lin(ember.ones(1, 2))
    np.testing.assert_allclose(out.detach().numpy(), lin.bias.detach().numpy()[None] + 1, rtol=1e-6)
    assert calls == ["kw", ember.Size([1, 2])]
    for h in (h1, h2, h3):
        h.remove()
    with lin.register_forward_hook(lambda m, a, o: o * 0):
        assert (lin(ember.ones(1, 2)) == 0).all().item()
    assert not (lin(ember.ones(1, 2)) == 0).all().item()

    class NoForward(enn.Module):
        pass
    with pytest.raises(NotImplementedError, match=r'Module \[NoForward\] is missing the required "forward"'):
        NoForward()(1)


def test_containers():
    torch.manual_seed(0)
    for nn, lib in ((torch.nn, torch), (enn, ember)):
        s = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
        assert len(s) == 3 and isinstance(s[-1], nn.Linear) and len(s[1:]) == 2
        sliced = repr(s[1:])  # keeps the original keys, as in PyTorch
        del s[1]
        assert list(s._modules) == ["0", "1"]
        s.append(nn.Tanh())
        s.insert(0, nn.Identity())
        assert [type(m).__name__ for m in s] == ["Identity", "Linear", "Linear", "Tanh"]
        with pytest.raises(IndexError, match="index 9 is out of range"):
            s[9]
        od = nn.Sequential(OrderedDict([("a", nn.Linear(2, 2)), ("b", nn.ReLU())]))
        assert od.a is od[0]
        ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
        ml.append(nn.ReLU())
        ml += [nn.ReLU()]
        md = nn.ModuleDict({"x": nn.Linear(1, 1)})
        md["y"] = nn.ReLU()
        pl = nn.ParameterList([nn.Parameter(lib.ones(2)), lib.zeros(3)])
        pd = nn.ParameterDict({"a": nn.Parameter(lib.ones(2))})
        if nn is torch.nn:
            reprs_t = [sliced, repr(s), repr(od), repr(ml), repr(md), repr(pl), repr(pd), len(ml), list(md.keys())]
        else:
            reprs_e = [sliced, repr(s), repr(od), repr(ml), repr(md), repr(pl), repr(pd), len(ml), list(md.keys())]
    reprs_t = [r.replace("torch.", "ember.") if isinstance(r, str) else r for r in reprs_t]
    assert reprs_e == reprs_t
    s = enn.Sequential(enn.Linear(2, 3), enn.ReLU())
    x = ember.randn(4, 2)
    np.testing.assert_allclose(s(x).detach().numpy(), s[1](s[0](x)).detach().numpy())
    assert isinstance(pl[1], enn.Parameter)


def test_parameter():
    t = ember.ones(2, 3)
    p = enn.Parameter(t)
    assert isinstance(p, ember.Tensor) and p.requires_grad and p.is_leaf
    assert repr(p) == repr(torch.nn.Parameter(torch.ones(2, 3))).replace("torch", "ember") or \
        repr(p).startswith("Parameter containing:\ntensor(")
    assert repr(p) == repr(torch.nn.Parameter(torch.ones(2, 3)))
    p.data.fill_(2)
    assert (t == 2).all().item()  # shares storage
    assert not enn.Parameter(t, requires_grad=False).requires_grad
    assert enn.Parameter().shape == (0,)
    y = (p * 2).sum()
    assert type(p * 2) is ember.Tensor
    y.backward()
    assert (p.grad == 2).all().item()
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        enn.Parameter(ember.ones(2, dtype=ember.int64))


def test_clip_grad_and_vectors():
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (4,), (2, 2)]]
    for norm_type, max_norm in [(2.0, 1.0), (1.0, 0.5), (float("inf"), 0.3), (2.0, 100.0)]:
        tp = [torch.nn.Parameter(torch.zeros(a.shape)) for a in arrays]
        ep = [enn.Parameter(ember.zeros(a.shape)) for a in arrays]
        for p, a in zip(tp, arrays):
            p.grad = torch.tensor(a)
        for p, a in zip(ep, arrays):
            p.grad = ember.tensor(a)
        tn = torch.nn.utils.clip_grad_norm_(tp, max_norm, norm_type)
        en = enn.utils.clip_grad_norm_(ep, max_norm, norm_type)
        np.testing.assert_allclose(en.item(), tn.item(), rtol=1e-5)
        for a, b in zip(ep, tp):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-7)
    enn.utils.clip_grad_value_(ep, 0.1)
    assert max(float(p.grad.abs().max()) for p in ep) <= np.float32(0.1)
    ep[0].grad = ember.tensor(np.full((3, 4), np.inf, np.float32))
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        enn.utils.clip_grad_norm_(ep, 1.0, error_if_nonfinite=True)
    assert enn.utils.clip_grad_norm_([enn.Parameter(ember.ones(1))], 1.0).item() == 0.0
    lin_t = torch.nn.Linear(3, 2)
    lin_e = enn.Linear(3, 2)
    lin_e.load_state_dict({k: ember.tensor(v.detach().numpy().copy()) for k, v in lin_t.state_dict().items()})
    vt = torch.nn.utils.parameters_to_vector(lin_t.parameters())
    ve = enn.utils.parameters_to_vector(lin_e.parameters())
    np.testing.assert_array_equal(ve.detach().numpy(), vt.detach().numpy())
    enn.utils.vector_to_parameters(ember.arange(8.0), lin_e.parameters())
    assert lin_e.bias.tolist() == [6.0, 7.0] and isinstance(lin_e.weight, enn.Parameter)
    with pytest.raises(TypeError, match="expected torch.Tensor, but got"):
        enn.utils.vector_to_parameters([1.0], lin_e.parameters())
