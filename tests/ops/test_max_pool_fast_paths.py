"""max pooling's two fast paths against PyTorch: indices from tap offsets when no window reaches
padding, and the backward's plain-write scatter when windows are disjoint (stride >= dilated kernel).
Values, indices and input gradients, for ties, NaN, -inf, 1-d/2-d, batched/unbatched, with and
without padding, ceil_mode and dilation (so both sides of each fast-path condition are covered)."""
import itertools

import numpy as np
import pytest
import torch

import ember

CONFIGS = [  # kernel, stride, padding, dilation, ceil_mode
    (2, 2, 0, 1, False), (2, 2, 0, 1, True), (3, 3, 0, 1, True), (3, 2, 0, 1, False), (3, 1, 1, 1, False),
    (2, 2, 1, 1, False), (3, 3, 1, 1, True), (2, 3, 0, 1, False), (2, 3, 0, 2, True), (2, 2, 0, 2, False),
    (3, 4, 1, 2, False), ((2, 3), (2, 3), 0, 1, False), ((3, 2), (1, 2), (1, 0), (1, 2), True),
]


def _inputs(shape, kind, seed):
    rng = np.random.default_rng(seed)
    if kind == "ties":      # few distinct values: many windows tie, the first tap must win
        return rng.integers(-2, 2, shape).astype(np.float32)
    x = rng.standard_normal(shape).astype(np.float32)
    if kind == "nan":
        x[rng.random(shape) < 0.1] = np.nan
    if kind == "neg_inf":   # whole windows at -inf equal the padding value
        x[..., : shape[-1] // 2] = -np.inf
    return x


def _both(x, nd, k, s, p, d, ceil):
    pool_t = (torch.nn.functional.max_pool1d, torch.nn.functional.max_pool2d)[nd - 1]
    pool_e = (ember.nn.functional.max_pool1d, ember.nn.functional.max_pool2d)[nd - 1]
    out = []
    for lib, pool in ((torch, pool_t), (ember, pool_e)):
        xt = lib.tensor(x, requires_grad=True)
        v, i = pool(xt, k, s, p, d, ceil, return_indices=True)
        g = lib.tensor(np.arange(v.numel(), dtype=np.float32).reshape(tuple(v.shape)) + 1)
        (v * g).sum().backward()
        xt2 = lib.tensor(x, requires_grad=True)   # the indices-free op recomputes them in backward
        (pool(xt2, k, s, p, d, ceil) * g).sum().backward()
        out.append([t.detach().numpy() for t in (v, i, xt.grad, xt2.grad)])
    return out


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("kind", ["normal", "ties", "nan", "neg_inf"])
@pytest.mark.parametrize("shape", [(2, 3, 7, 9), (3, 8, 8)])
def test_max_pool2d_values_indices_grads(config, kind, shape):
    k, s, p, d, ceil = config
    x = _inputs(shape, kind, hash((config, kind)) % 1000)
    (tv, ti, tg, tg2), (ev, ei, eg, eg2) = _both(x, 2, k, s, p, d, ceil)
    np.testing.assert_array_equal(ev, tv)
    np.testing.assert_array_equal(ei, ti)
    np.testing.assert_array_equal(eg, tg)
    np.testing.assert_array_equal(eg2, tg2)


@pytest.mark.parametrize("k,s,p,d,ceil", [c for c in CONFIGS if not isinstance(c[0], tuple)])
@pytest.mark.parametrize("kind", ["normal", "ties"])
def test_max_pool1d_values_indices_grads(k, s, p, d, ceil, kind):
    x = _inputs((2, 3, 11), kind, k * 7 + s)
    (tv, ti, tg, tg2), (ev, ei, eg, eg2) = _both(x, 1, k, s, p, d, ceil)
    for e, t in zip((ev, ei, eg, eg2), (tv, ti, tg, tg2)):
        np.testing.assert_array_equal(e, t)


def test_max_pool2d_double_backward_matches_torch():
    x = _inputs((1, 2, 6, 6), "normal", 3)
    grads = []
    for lib in (torch, ember):
        xt = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.max_pool2d(xt, 2)
        (g,) = lib.autograd.grad((y ** 2).sum(), xt, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), xt)
        grads.append(gg.detach().numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)


def test_max_pool2d_integer_input_indices():
    x = np.arange(2 * 6 * 6).reshape(2, 6, 6) % 5
    for k, s in itertools.product((2, 3), (2, 3)):
        tv, ti = torch.nn.functional.max_pool2d(torch.tensor(x), k, s, return_indices=True)
        ev, ei = ember.nn.functional.max_pool2d(ember.tensor(x), k, s, return_indices=True)
        np.testing.assert_array_equal(ev.numpy(), tv.numpy())
        np.testing.assert_array_equal(ei.numpy(), ti.numpy())
