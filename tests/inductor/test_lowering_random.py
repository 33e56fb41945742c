"""Random ops under the fuser: by default (config.fallback_random) their eager kernels run, so
compiled dropout equals eager's; with fallback_random = False a counter-based Philox RNG in the
kernel makes them, tested for reproducibility under ember.manual_seed and for distribution."""
import math

import numpy as np
import pytest

import ember
from ember._functorch import make_fx
from ember._inductor import config
from ember._inductor.compile_fx import compile_fx

F = ember.nn.functional


@pytest.fixture
def philox(monkeypatch):
    monkeypatch.setattr(config, "fallback_random", False)


def compiled(fn, *xs):
    return compile_fx(make_fx(fn)(*xs), list(xs))


def test_by_default_compiled_dropout_equals_eagers_under_a_seed():
    x = ember.randn(64, 32)
    fn = lambda a: F.dropout(a * 2, 0.4, True) + 1      # noqa: E731
    c = compiled(fn, x)
    ember.manual_seed(3)
    want = fn(x)
    ember.manual_seed(3)
    np.testing.assert_array_equal(c(x).numpy(), want.numpy())


def test_philox_dropout_is_reproducible_under_manual_seed_and_differs_between_calls(philox):
    x = ember.randn(200, 50)
    c = compiled(lambda a: F.dropout(a, 0.5, True), x)
    ember.manual_seed(0)
    first, second = c(x).numpy(), c(x).numpy()
    ember.manual_seed(0)
    np.testing.assert_array_equal(c(x).numpy(), first)
    assert not np.array_equal(first, second)
    assert "draw_seed" in c.current.code and "dropout" not in c.current.code      # generated, not eager


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_philox_dropout_drops_p_and_scales_the_rest(philox, p):
    x = ember.rand(400, 250) + 0.5                       # no zeros of its own
    c = compiled(lambda a: F.dropout(a, p, True), x)
    out, xs = c(x).numpy(), x.numpy()
    dropped = out == 0
    n = out.size
    assert abs(dropped.mean() - p) < 5 * math.sqrt(p * (1 - p) / n)        # 5 sigma of a binomial
    np.testing.assert_allclose(out[~dropped], xs[~dropped] / (1 - p), rtol=1e-6)


def test_philox_uniform_mean_variance_and_range(philox):
    x = ember.zeros(1000, 300)
    u = compiled(lambda a: ember.rand_like(a) + a, x)(x).numpy().astype(np.float64)
    n = u.size
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 5 * math.sqrt(1 / 12 / n)
    assert abs(u.var() - 1 / 12) < 5 * math.sqrt(1 / 180 / n)             # var of (u-1/2)^2 is 1/180
    # neighbours are not correlated (a counter RNG with a weak mix would show it here)
    flat = u.ravel() - 0.5
    assert abs(np.mean(flat[1:] * flat[:-1])) < 5 * (1 / 12) / math.sqrt(n)


def test_philox_draws_do_not_depend_on_layout_or_threads(philox, monkeypatch):
    x = ember.randn(300, 200)
    fn = lambda a: F.dropout(a, 0.3, True)              # noqa: E731
    ember.manual_seed(5)
    base = compiled(fn, x)(x).numpy() != 0
    xt = x.t().contiguous().t()                          # same values, transposed memory
    ember.manual_seed(5)
    np.testing.assert_array_equal(compiled(fn, xt)(xt).numpy() != 0, base)
    monkeypatch.setattr(config, "threads", 2)
    ember.manual_seed(5)
    np.testing.assert_array_equal(compiled(fn, x)(x).numpy() != 0, base)


def test_philox_dropout_in_a_training_step_has_matching_gradients(philox):
    model = ember.nn.Sequential(ember.nn.Linear(16, 16), ember.nn.Dropout(0.5))
    step = ember.compile(model)
    x = ember.randn(8, 16)
    out = step(x)
    out.sum().backward()
    w, b = model[0].weight, model[0].bias
    # d(sum(dropout(xW^T + b)))/db = column sums of the mask / (1 - p): zero where all were dropped
    hidden = (x @ w.t() + b).detach().numpy()
    mask = out.detach().numpy() / np.where(hidden == 0, 1, hidden) * 0.5
    np.testing.assert_allclose(b.grad.numpy(), (mask * 2).sum(0), rtol=1e-4, atol=1e-5)
