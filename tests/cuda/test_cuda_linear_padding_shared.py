"""A half linear's backward with an odd output dim (the tied LM head, scaled down) pads its
gradient once for both products (ember/_cuda/attention.linear_backward: blas.gemm's `memo`): the
gradients equal, bit for bit, those of the two products padded separately, and match PyTorch
CUDA; small-integer operands make every float32 sum exact, so torch agrees bit for bit in float16
(in bfloat16 to 2 ulps: its product rounds partial sums)."""
import numpy as np
import pytest
import torch

import ember

M, C, V = 2048, 768, 2047      # M * C * V >= gemm_padding.PAD_MIN_MACS, V odd


def _ints(shape, seed):
    return np.random.default_rng(seed).integers(-3, 4, shape).astype(np.float32)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_head_backward_pads_its_gradient_once(dtype, monkeypatch):
    from ember._cuda import blas
    x0, w0, g0 = _ints((4, M // 4, C), 0), _ints((V, C), 1), _ints((4, M // 4, V), 2)
    made = []
    real = blas.cupy.empty
    monkeypatch.setattr(blas.cupy, "empty", lambda shape, *a, **k: made.append(tuple(shape)) or real(shape, *a, **k))
    grads = {}
    for lib in (ember, torch):
        half = getattr(lib, dtype)
        x = lib.tensor(x0, device="cuda").to(half).requires_grad_()
        w = lib.tensor(w0, device="cuda").to(half).requires_grad_()
        y = lib.nn.functional.linear(x, w)     # (its padded product is an (M, V + 1) array too)
        g = lib.tensor(g0, device="cuda").to(half)
        made.clear()
        y.backward(g)
        if lib is ember:
            in_backward = list(made)
        grads[lib] = [t.grad.float().cpu().numpy() for t in (x, w)]
    assert in_backward.count((M, V + 1)) == 1, in_backward     # the gradient, padded once for dx and dw
    for mine, theirs in zip(grads[ember], grads[torch]):
        if dtype == "float16":
            np.testing.assert_array_equal(mine, theirs)
        else:   # PyTorch's bf16 product rounds partial sums (2 ulps apart, H100): bf16's ulp at 512 is 4
            np.testing.assert_allclose(mine, theirs, rtol=2 ** -6, atol=4)
    # the same products without sharing: the same bits
    G = ember.tensor(g0.reshape(M, V), device="cuda").to(getattr(ember, dtype))._data
    X = ember.tensor(x0.reshape(M, C), device="cuda").to(getattr(ember, dtype))._data
    W = ember.tensor(w0, device="cuda").to(getattr(ember, dtype))._data
    from ember._cuda.kernels import wrap_cuda
    np.testing.assert_array_equal(wrap_cuda(blas.gemm(G, W)).float().cpu().numpy(), grads[ember][0].reshape(M, C))
    np.testing.assert_array_equal(wrap_cuda(blas.gemm(G.T, X)).float().cpu().numpy(), grads[ember][1])
