"""nn.init vs PyTorch: gains, fan computations, errors (exact), and the statistics of the draws
(ember's generator differs from PyTorch's, so values are compared by distribution)."""
import math
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.nn as enn
from ember.nn import init as einit

tinit = torch.nn.init


@pytest.mark.parametrize("args", [("linear",), ("conv2d",), ("sigmoid",), ("tanh",), ("relu",), ("selu",),
                                  ("leaky_relu",), ("leaky_relu", 0.2), ("leaky_relu", 1)])
def test_calculate_gain(args):
    assert einit.calculate_gain(*args) == tinit.calculate_gain(*args)


@pytest.mark.parametrize("args", [("foo",), ("leaky_relu", "x"), ("leaky_relu", True)])
def test_calculate_gain_errors(args):
    with pytest.raises(ValueError) as te:
        tinit.calculate_gain(*args)
    with pytest.raises(ValueError) as ee:
        einit.calculate_gain(*args)
    assert str(ee.value) == str(te.value)


@pytest.mark.parametrize("shape", [(3, 4), (5, 2, 3), (8, 4, 3, 2), (2, 3, 1, 1, 4)])
def test_fans(shape):
    assert einit._calculate_fan_in_and_fan_out(ember.empty(shape)) == \
        tinit._calculate_fan_in_and_fan_out(torch.empty(shape))
    for mode in ("fan_in", "fan_out", "FAN_OUT"):
        assert einit._calculate_correct_fan(ember.empty(shape), mode) == \
            tinit._calculate_correct_fan(torch.empty(shape), mode)


def _same_error(fn_name, shape, *args, exc=ValueError, **kwargs):
    with pytest.raises(exc) as te:
        getattr(tinit, fn_name)(torch.empty(shape), *args, **kwargs)
    with pytest.raises(exc) as ee:
        getattr(einit, fn_name)(ember.empty(shape), *args, **kwargs)
    assert str(ee.value) == str(te.value)


def test_errors_match_torch():
    _same_error("xavier_uniform_", (3,))
    _same_error("kaiming_normal_", (3,))
    _same_error("kaiming_uniform_", (3, 4), mode="fan_avg")
    _same_error("orthogonal_", (3,))
    _same_error("eye_", (3, 4, 5))
    _same_error("dirac_", (3, 4))
    _same_error("dirac_", (3, 4, 3), groups=2)


def _draw(name, shape, *args, **kwargs):
    ember.manual_seed(0)
    t = ember.empty(shape)
    out = getattr(einit, name)(t, *args, **kwargs)
    assert out is t
    return t.numpy().astype(np.float64)


@pytest.mark.parametrize("name,shape,args,kwargs,bound,std", [
    ("uniform_", (200, 300), (-2.0, 3.0), {}, None, 5 / math.sqrt(12)),
    ("normal_", (200, 300), (1.0, 0.5), {}, None, 0.5),
    ("xavier_uniform_", (200, 300), (), {"gain": 2.0}, 2 * math.sqrt(6 / 500), None),
    ("xavier_normal_", (200, 300), (), {}, None, math.sqrt(2 / 500)),
    ("kaiming_uniform_", (200, 30, 3, 3), (), {"a": math.sqrt(5)}, 1 / math.sqrt(270), None),
    ("kaiming_uniform_", (200, 300), (), {"mode": "fan_out", "nonlinearity": "relu"},
     math.sqrt(2) * math.sqrt(3 / 200), None),
    ("kaiming_normal_", (200, 300), (), {"nonlinearity": "relu"}, None, math.sqrt(2 / 300)),
])
def test_random_init_statistics(name, shape, args, kwargs, bound, std):
    v = _draw(name, shape, *args, **kwargs)
    if bound is not None:
        assert np.abs(v).max() <= bound * (1 + 1e-6) and np.abs(v).max() > 0.99 * bound
        std = bound / math.sqrt(3)
    mean = (args[0] + args[1]) / 2 if name == "uniform_" else (args[0] if name == "normal_" else 0.0)
    assert abs(v.mean() - mean) < 0.02 * max(std, 1e-3) * 10
    assert abs(v.std() - std) < 0.02 * std


def test_trunc_normal_and_orthogonal_and_constants():
    v = _draw("trunc_normal_", (300, 300), mean=0.5, std=2.0, a=-1.0, b=3.0)
    assert v.min() >= -1.0 and v.max() <= 3.0
    t = torch.empty(300, 300)
    torch.manual_seed(0)
    tinit.trunc_normal_(t, mean=0.5, std=2.0, a=-1.0, b=3.0)
    assert abs(v.mean() - t.mean().item()) < 0.02 and abs(v.std() - t.std().item()) < 0.02
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        einit.trunc_normal_(ember.empty(3), mean=10.0)
    assert "mean is more than 2 std from [a, b]" in str(w[0].message)
    for shape in [(4, 6), (6, 4), (3, 2, 2)]:
        q = _draw("orthogonal_", shape, gain=2.0).reshape(shape[0], -1)
        prod = q @ q.T if shape[0] <= q.shape[1] else q.T @ q
        np.testing.assert_allclose(prod, 4 * np.eye(prod.shape[0]), atol=1e-5)
    for name, args, value in [("zeros_", (), 0.0), ("ones_", (), 1.0), ("constant_", (0.3,), np.float32(0.3))]:
        assert (_draw(name, (2, 3), *args) == value).all()
    np.testing.assert_array_equal(_draw("eye_", (3, 4)), np.eye(3, 4))
    td = torch.empty(6, 2, 3, 3)
    tinit.dirac_(td, groups=2)
    np.testing.assert_array_equal(_draw("dirac_", (6, 2, 3, 3), groups=2), td.numpy())


def test_in_place_under_no_grad_and_generator():
    p = enn.Parameter(ember.empty(3, 4))
    einit.kaiming_uniform_(p)
    assert p.is_leaf and p.grad_fn is None and p.requires_grad
    g1 = ember.Generator().manual_seed(5)
    g2 = ember.Generator().manual_seed(5)
    a = einit.normal_(ember.empty(5), generator=g1)
    b = einit.normal_(ember.empty(5), generator=g2)
    assert (a == b).all().item()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        einit.kaiming_uniform_(ember.empty(0, 3))
    assert "Initializing zero-element tensors is a no-op" in str(w[0].message)
