"""autocast's weight-cast cache against torch.autocast on the CPU: a float32 leaf that requires
grad is cast once per region however many listed ops take it, its gradient sums every use, and
the cache goes when the outermost region exits. The count of `_to_copy` calls each library's
dispatcher sees (a dispatch mode below autocast) is compared, along with values and gradients."""
import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode as TorchMode

import ember
from ember.utils._python_dispatch import TorchDispatchMode as EmberMode
from oracle import assert_same

RNG = np.random.default_rng(1)
X, X2 = RNG.standard_normal((5, 8)).astype(np.float32), RNG.standard_normal((5, 8)).astype(np.float32)
W, B = RNG.standard_normal((6, 8)).astype(np.float32), RNG.standard_normal(6).astype(np.float32)


def _counting(lib):
    base = TorchMode if lib is torch else EmberMode

    class CountCasts(base):
        def __init__(self):
            super().__init__()
            self.casts = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if "_to_copy" in str(func):
                self.casts += 1
            return func(*args, **(kwargs or {}))
    return CountCasts()


def _run(lib, program, **autocast_kwargs):
    """program(lib, x, x2, w, b) under autocast(bfloat16): (output, casts in the forward, w.grad, b.grad)."""
    w, b = lib.tensor(W, requires_grad=True), lib.tensor(B, requires_grad=True)
    x, x2 = lib.tensor(X), lib.tensor(X2)
    counter = _counting(lib)
    with lib.autocast("cpu", dtype=lib.bfloat16, **autocast_kwargs):
        with counter:
            out = program(lib, x, x2, w, b)
    out.float().square().sum().backward()
    return out, counter.casts, w.grad, b.grad


def _linear(lib, *args):
    return lib.nn.functional.linear(*args)


PROGRAMS = {
    "weight in two linears": lambda lib, x, x2, w, b: _linear(lib, x, w, b) + _linear(lib, x2, w, b),
    "weight in three products": lambda lib, x, x2, w, b: x @ w.t() + x2 @ w.t() + _linear(lib, x, w),
    "a view is cast each time": lambda lib, x, x2, w, b: _linear(lib, x, w[:], b) + _linear(lib, x2, w[:], b),
    "a non-leaf is cast each time": lambda lib, x, x2, w, b: _linear(lib, x, w * 2, b) + _linear(lib, x2, w * 2, b),
    "a leaf without grad is cast each time": lambda lib, x, x2, w, b: _linear(lib, x, w.detach(), b) + _linear(
        lib, x2, w.detach(), b),
    "nested regions share the cache": lambda lib, x, x2, w, b: _nested(lib, x, x2, w, b),
    "a disabled inner region keeps it": lambda lib, x, x2, w, b: _disabled_inside(lib, x, x2, w, b),
}


def _nested(lib, x, x2, w, b):
    y = _linear(lib, x, w, b)
    with lib.autocast("cpu", dtype=lib.bfloat16):
        y = y + _linear(lib, x2, w, b)
    return y + _linear(lib, x, w, b)


def _disabled_inside(lib, x, x2, w, b):
    y = _linear(lib, x, w, b)
    with lib.autocast("cpu", enabled=False):
        z = _linear(lib, x2, w, b)              # float32: no cast at all
    return y + _linear(lib, x2, w, b) + z.to(y.dtype)


@pytest.mark.parametrize("name", list(PROGRAMS))
@pytest.mark.parametrize("cache_enabled", [None, False])
def test_weight_casts_values_and_grads_like_torch(name, cache_enabled):
    kwargs = {} if cache_enabled is None else {"cache_enabled": cache_enabled}
    t_out, t_casts, t_gw, t_gb = _run(torch, PROGRAMS[name], **kwargs)
    e_out, e_casts, e_gw, e_gb = _run(ember, PROGRAMS[name], **kwargs)
    assert e_casts == t_casts
    assert_same(e_out, t_out, rtol=2e-2, atol=2e-2)
    assert_same(e_gw, t_gw, rtol=2e-2, atol=5e-2)
    if t_gb is not None or e_gb is not None:
        assert_same(e_gb, t_gb, rtol=2e-2, atol=5e-2)


def test_cache_reuses_one_cast_and_its_gradient_sums_the_uses():
    """Bit-exact against torch: the uses' bfloat16 gradients meet in the one cast, whose backward
    adds them to the float32 weight once (no cache: each use's gradient would be widened first)."""
    grads = []
    for lib in (torch, ember):
        w = lib.tensor(W, requires_grad=True)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            a, b, c = (_linear(lib, lib.tensor(v), w) for v in (X, X2, X * 3))
            assert a.dtype == lib.bfloat16
        (a.float().sum() + (b.float() * 2).sum() + (c.float() * 3).sum()).backward()
        grads.append(w.grad)
    np.testing.assert_array_equal(grads[1].numpy(), grads[0].numpy())


def test_cache_is_dropped_when_the_outermost_region_exits():
    """Inside the region a weight updated in place keeps its stale cast (PyTorch's documented
    behaviour); the next region casts it afresh."""
    results = []
    for lib in (torch, ember):
        w, x = lib.tensor(W, requires_grad=True), lib.tensor(X)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            first = _linear(lib, x, w)
            with lib.no_grad():
                w.mul_(2)
            stale = _linear(lib, x, w)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            fresh = _linear(lib, x, w)
        results.append([t.float().detach().numpy() for t in (first, stale, fresh)])
    for e, t in zip(results[1], results[0]):
        np.testing.assert_array_equal(e, t)
    np.testing.assert_array_equal(results[1][0], results[1][1])
    assert not np.array_equal(results[1][1], results[1][2])


def test_regions_of_other_dtypes_get_their_own_casts():
    """A float16 region inside a bfloat16 one multiplies in float16 (the cache is per dtype)."""
    w, x = ember.tensor(W, requires_grad=True), ember.tensor(X)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        assert _linear(ember, x, w).dtype == ember.bfloat16
        with ember.autocast("cpu", dtype=ember.float16):
            assert _linear(ember, x, w).dtype == ember.float16
        assert _linear(ember, x, w).dtype == ember.bfloat16


def test_clear_autocast_cache_forgets_the_casts():
    from ember.amp.autocast_mode import clear_autocast_cache
    w, x = ember.tensor(W, requires_grad=True), ember.tensor(X)
    counter = _counting(ember)
    with ember.autocast("cpu", dtype=ember.bfloat16), counter:
        _linear(ember, x, w)
        clear_autocast_cache()
        _linear(ember, x, w)
    assert counter.casts == 4          # x and w, twice
