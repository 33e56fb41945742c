"""Batch norm's float32 precision against PyTorch's (issue 20's DCGAN drift).

ATen's CPU batch norm sums each channel's statistics (forward mean and variance, backward sum(dy)
and sum(dy * xhat)) in double; ember summed them in float32, and a float32 sum over the strided
N*H*W elements of a channel lost up to ~10x more than PyTorch does: on a batch offset from zero
(the activations a GAN's generator feeds its BatchNorm2d layers) the output was 8x, the weight
gradient 12x further from float64 than PyTorch's float32. The oracle is PyTorch in float64; ember's
float32 error must stay within 2x PyTorch's float32 error (plus a half-ulp floor), output by output.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

HALF_ULP = 2.0 ** -24
# shape, offset of the data from zero: the DCGAN's generator layer, a large offset batch (the
# failing case before the fix), a 3-D (N, C, L) input, one with big planes and a small batch
CASES = [((64, 32, 4, 4), 1.0), ((256, 8, 8, 8), 100.0), ((32, 8, 100), 50.0), ((8, 4, 64, 64), 10.0)]
OUTPUTS = ["output", "grad_input", "grad_weight", "grad_bias", "running_mean", "running_var"]


def _run(lib, dtype, x, dy, w, b, op):
    X = lib.from_numpy(x).to(dtype).requires_grad_()
    W = lib.from_numpy(w).to(dtype).requires_grad_()
    B = lib.from_numpy(b).to(dtype).requires_grad_()
    c = x.shape[1]
    running_mean, running_var = lib.zeros(c, dtype=dtype), lib.ones(c, dtype=dtype)
    if op == "batch_norm":
        y = lib.nn.functional.batch_norm(X, running_mean, running_var, W, B, training=True, momentum=0.1)
    else:
        y = lib.nn.functional.instance_norm(X, running_mean, running_var, W, B, use_input_stats=True)
    y.backward(lib.from_numpy(dy).to(dtype))
    return [v.detach().to(lib.float64).numpy() for v in (y, X.grad, W.grad, B.grad, running_mean, running_var)]


def _relative_error(got, reference):
    return float(np.abs(got - reference).max() / max(np.abs(reference).max(), 1e-30))


@pytest.mark.parametrize("op", ["batch_norm", "instance_norm"])
@pytest.mark.parametrize("shape,offset", CASES, ids=[f"{'x'.join(map(str, s))}+{o:g}" for s, o in CASES])
def test_float32_error_within_torch_float32_error(op, shape, offset):
    rng = np.random.default_rng(0)
    x = (offset + rng.standard_normal(shape)).astype(np.float32)
    dy = rng.standard_normal(shape).astype(np.float32)
    w = (1 + 0.1 * rng.standard_normal(shape[1])).astype(np.float32)
    b = (0.1 * rng.standard_normal(shape[1])).astype(np.float32)
    reference = _run(torch, torch.float64, x, dy, w, b, op)
    torch32 = _run(torch, torch.float32, x, dy, w, b, op)
    ember32 = _run(ember, ember.float32, x, dy, w, b, op)
    for name, ref, t, e in zip(OUTPUTS, reference, torch32, ember32):
        t_err, e_err = _relative_error(t, ref), _relative_error(e, ref)
        assert e_err <= 2 * t_err + HALF_ULP, f"{op} {name}: ember float32 error {e_err:.2e}, torch's {t_err:.2e}"


def test_float64_and_half_unchanged_in_kind():
    """float64 stays float64 throughout (its sums are already double); float16 input (computed in
    float32, accumulated in double) gives PyTorch's float16 result to float16 precision."""
    rng = np.random.default_rng(1)
    x = (3 + rng.standard_normal((16, 4, 5, 5)))
    for dtype, tol in (("float64", 1e-12), ("float16", 2e-3)):
        outs = {}
        for lib in (torch, ember):
            X = lib.from_numpy(x).to(getattr(lib, dtype)).requires_grad_()
            y = lib.nn.functional.batch_norm(X, None, None, training=True)
            (y * y * y).sum().backward()  # a gradient that is not all-zero after centring
            assert y.dtype == X.grad.dtype == getattr(lib, dtype)
            outs[lib.__name__] = (y.detach().to(lib.float64).numpy(), X.grad.to(lib.float64).numpy())
        np.testing.assert_allclose(outs["ember"][0], outs["torch"][0], rtol=tol, atol=tol)
        np.testing.assert_allclose(outs["ember"][1], outs["torch"][1], rtol=tol, atol=tol * 10)
