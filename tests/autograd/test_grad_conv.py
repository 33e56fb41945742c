"""Gradients of convolutions, pooling, im2col/col2im and pixel shuffle vs finite differences
(float64 gradcheck) and PyTorch."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _grad_oracle import grad_check, rand  # noqa: E402

import ember  # noqa: E402


def F(L):
    return L.nn.functional


CASES = [
    ("conv1d", lambda L, x, w, b: F(L).conv1d(x, w, b, stride=2, padding=1), [rand(2, 2, 5), rand(3, 2, 3),
                                                                              rand(3)], {}),
    ("conv1d", lambda L, x, w: F(L).conv1d(x, w, dilation=2, groups=2), [rand(1, 4, 6), rand(2, 2, 2)], {}),
    ("conv1d.padding", lambda L, x, w: F(L).conv1d(x, w, padding="same"), [rand(2, 4), rand(2, 2, 2)], {}),
    ("conv2d", lambda L, x, w, b: F(L).conv2d(x, w, b, padding=1), [rand(1, 2, 4, 4), rand(2, 2, 3, 3), rand(2)],
     {}),
    ("conv2d", lambda L, x, w: F(L).conv2d(x, w, stride=(2, 1), padding=(0, 1), dilation=(1, 2), groups=2),
     [rand(2, 2, 5, 4), rand(4, 1, 2, 2)], {}),
    ("conv2d", lambda L, x, w: F(L).conv2d(x, w, stride=2), [rand(1, 5, 5), rand(1, 1, 2, 2)], {}),  # unbatched
    ("conv2d.padding", lambda L, x, w: F(L).conv2d(x, w, padding="same", dilation=2),
     [rand(1, 1, 4, 4), rand(1, 1, 2, 3)], {}),
    ("conv3d", lambda L, x, w, b: F(L).conv3d(x, w, b, padding=(1, 0, 0)), [rand(1, 1, 3, 3, 3),
                                                                             rand(2, 1, 2, 2, 2), rand(2)], {}),
    ("conv_transpose1d", lambda L, x, w, b: F(L).conv_transpose1d(x, w, b, stride=2, padding=1, output_padding=1),
     [rand(1, 2, 3), rand(2, 3, 3), rand(3)], {}),
    ("conv_transpose2d.input", lambda L, x, w, b: F(L).conv_transpose2d(x, w, b, stride=2, groups=2, dilation=1),
     [rand(1, 4, 2, 3), rand(4, 1, 2, 2), rand(2)], {}),
    ("conv_transpose2d.input", lambda L, x, w: F(L).conv_transpose2d(x, w, stride=(1, 2), padding=1, dilation=2),
     [rand(1, 1, 3, 3), rand(1, 2, 2, 2)], {}),
    ("max_pool1d", lambda L, x: F(L).max_pool1d(x, 2), [rand(2, 2, 5)], {}),
    ("max_pool2d", lambda L, x: F(L).max_pool2d(x, 2, 1, padding=1), [rand(1, 2, 3, 4)], {}),
    ("max_pool2d", lambda L, x: F(L).max_pool2d(x, 3, 2, ceil_mode=True, dilation=1), [rand(1, 5, 5)], {}),
    ("max_pool2d_with_indices", lambda L, x: F(L).max_pool2d(x, 2, return_indices=True),
     [rand(1, 2, 4, 4)], {}),
    ("max_pool1d_with_indices", lambda L, x: F(L).max_pool1d(x, 2, 1, return_indices=True, dilation=2),
     [rand(1, 2, 5)], {}),
    ("avg_pool1d", lambda L, x: F(L).avg_pool1d(x, 3, 2, padding=1, ceil_mode=True, count_include_pad=False),
     [rand(2, 2, 6)], {}),
    ("avg_pool2d", lambda L, x: F(L).avg_pool2d(x, 2), [rand(1, 2, 4, 4)], {"noncontig": False}),
    ("avg_pool2d", lambda L, x: F(L).avg_pool2d(x, 3, 2, padding=1, ceil_mode=True), [rand(1, 1, 5, 4)], {}),
    ("avg_pool2d", lambda L, x: F(L).avg_pool2d(x, 2, 1, padding=1, count_include_pad=False),
     [rand(2, 3, 3)], {}),
    ("avg_pool2d", lambda L, x: F(L).avg_pool2d(x, 2, divisor_override=3), [rand(1, 1, 4, 4)], {}),
    ("adaptive_avg_pool1d", lambda L, x: F(L).adaptive_avg_pool1d(x, 3), [rand(2, 2, 5)], {}),
    ("adaptive_avg_pool2d", lambda L, x: F(L).adaptive_avg_pool2d(x, (2, 3)), [rand(1, 2, 5, 4)], {}),
    ("adaptive_avg_pool2d", lambda L, x: F(L).adaptive_avg_pool2d(x, 1), [rand(2, 3, 3)], {}),
    ("adaptive_max_pool1d", lambda L, x: F(L).adaptive_max_pool1d(x, 3), [rand(1, 2, 7)], {}),
    ("adaptive_max_pool2d", lambda L, x: F(L).adaptive_max_pool2d(x, (2, 2)), [rand(1, 2, 5, 3)], {}),
    ("im2col", lambda L, x: F(L).unfold(x, 2, padding=1, stride=2), [rand(1, 2, 3, 4)], {}),
    ("im2col", lambda L, x: F(L).unfold(x, (2, 2), dilation=(1, 2)), [rand(2, 4, 4)], {}),
    ("col2im", lambda L, x: F(L).fold(x, (3, 3), 2), [rand(1, 8, 4)], {}),
    ("pixel_shuffle", lambda L, x: F(L).pixel_shuffle(x, 2), [rand(1, 8, 2, 2)], {}),
    ("pixel_unshuffle", lambda L, x: F(L).pixel_unshuffle(x, 2), [rand(2, 4, 4)], {}),
]


@pytest.mark.parametrize("key,fn,inputs,opts", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_grad(key, fn, inputs, opts):
    grad_check(fn, *inputs, **opts)


def test_conv2d_float32_matches_torch():
    """A CNN-sized layer in float32: gradients equal PyTorch's (rtol 1e-4)."""
    import torch
    rng = np.random.default_rng(3)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((4, 3, 9, 9), (8, 3, 3, 3), (8,)))
    go = rng.standard_normal((4, 8, 4, 4)).astype(np.float32)
    res = []
    for L in (ember, torch):
        ts = [L.tensor(a, requires_grad=True) for a in (x, w, b)]
        y = F(L).max_pool2d(F(L).relu(F(L).conv2d(*ts, padding=1)), 2)
        y.backward(L.tensor(go))
        res.append([t.grad.numpy() for t in ts])
    for a, b_ in zip(*res):
        np.testing.assert_allclose(a, b_, rtol=1e-4, atol=1e-4)


def test_conv_double_backward_raises():
    x = ember.tensor(rand(1, 1, 3, 3), requires_grad=True)
    w = ember.tensor(rand(1, 1, 2, 2), requires_grad=True)
    y = ember.nn.functional.conv2d(x, w).sum()
    (gx,) = ember.autograd.grad(y, [x], create_graph=True)
    with pytest.raises(NotImplementedError, match="double backward of conv2d"):
        gx.sum().backward()
