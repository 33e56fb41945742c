"""Random ops on CUDA draw on the device (ember/_cuda/random.py, cuRAND Philox): reproducible under
ember.cuda.manual_seed and ember.manual_seed, PyTorch's argument errors, the CPU ops'
distributions (checked with sample moments at a few standard errors), values unlike the CPU's."""
import math

import numpy as np
import pytest
import torch

import ember

N = 1 << 18
SAMPLERS = {
    "rand": lambda: ember.rand(N, device="cuda"),
    "randn": lambda: ember.randn(N, device="cuda", dtype=ember.bfloat16),
    "randint": lambda: ember.randint(-3, 7, (N,), device="cuda"),
    "randperm": lambda: ember.randperm(1000, device="cuda"),
    "normal_": lambda: ember.empty(N, device="cuda").normal_(2.0, 3.0),
    "uniform_": lambda: ember.empty(N, device="cuda", dtype=ember.float16).uniform_(-1, 1),
    "bernoulli": lambda: ember.bernoulli(ember.full((N,), 0.3, device="cuda")),
    "exponential_": lambda: ember.empty(N, device="cuda").exponential_(4.0),
    "dropout": lambda: ember.nn.functional.dropout(ember.ones(N, device="cuda"), 0.25),
}


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_draws_happen_on_the_device_and_reproduce(name, monkeypatch):
    from ember._cuda import random as device_random
    calls = []
    real = device_random.draw
    monkeypatch.setattr(device_random, "draw", lambda *a: calls.append(a[1]) or real(*a))
    ember.cuda.manual_seed(5)
    a = SAMPLERS[name]()
    assert calls and a.device.type == "cuda"
    ember.manual_seed(5)                 # seeds CUDA too, as torch.manual_seed
    b = SAMPLERS[name]()
    np.testing.assert_array_equal(a.cpu().float().numpy(), b.cpu().float().numpy())
    c = SAMPLERS[name]()
    assert not np.array_equal(a.cpu().float().numpy(), c.cpu().float().numpy())


def _moments(t):
    x = t.double().cpu().numpy()
    return x.mean(), x.std(), x.min(), x.max()


def test_distributions_match_the_cpu_ops():
    ember.cuda.manual_seed(0)
    se = 5 / math.sqrt(N)
    m, s, lo, hi = _moments(SAMPLERS["rand"]())
    assert abs(m - 0.5) < se and 0 <= lo and hi < 1
    m, s, _, _ = _moments(SAMPLERS["randn"]())
    assert abs(m) < se and abs(s - 1) < 2 * se
    m, s, _, _ = _moments(SAMPLERS["normal_"]())
    assert abs(m - 2) < 3 * se and abs(s - 3) < 6 * se
    x = SAMPLERS["randint"]().cpu().numpy()
    assert x.dtype == np.int64 and set(np.unique(x)) == set(range(-3, 7))
    assert sorted(SAMPLERS["randperm"]().cpu().numpy()) == list(range(1000))
    m, _, lo, hi = _moments(SAMPLERS["uniform_"]())
    assert abs(m) < 2 * se and -1 <= lo and hi < 1
    m, _, lo, _ = _moments(SAMPLERS["bernoulli"]())
    assert abs(m - 0.3) < se and lo == 0
    m, _, lo, _ = _moments(SAMPLERS["exponential_"]())
    assert abs(m - 0.25) < se and lo >= 0
    kept = SAMPLERS["dropout"]().cpu().numpy()
    values = np.unique(kept)
    assert len(values) == 2 and values[0] == 0 and np.isclose(values[1], 1 / 0.75)
    assert abs((kept > 0).mean() - 0.75) < se
    g = ember.Generator("cuda").manual_seed(1)
    assert ember.randint(0, 2 ** 62, (N,), device="cuda", generator=g).cpu().numpy().max() > 2 ** 61


def test_values_differ_from_the_cpu_generator_with_the_same_seed():
    ember.manual_seed(3)
    assert not np.array_equal(ember.rand(64).numpy(), ember.rand(64, device="cuda").cpu().numpy())


@pytest.mark.parametrize("call", [
    lambda lib: lib.randint(5, 3, (4,), device="cuda"),
    lambda lib: lib.empty(4, device="cuda").normal_(0, -1),
    lambda lib: lib.randint(0, 3, (4,), device="cuda").exponential_(1),
    lambda lib: lib.rand(3, device="cuda", generator=lib.Generator("cpu")),
    lambda lib: lib.empty(3, device="cuda").uniform_(2, 1),
])
def test_argument_errors_are_pytorchs(call):
    with pytest.raises(Exception) as expected:
        call(torch)
    with pytest.raises(type(expected.value)):
        call(ember)
