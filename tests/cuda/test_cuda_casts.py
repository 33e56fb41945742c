"""float32 <-> float16/bfloat16 casts on CUDA (ember/_cuda/fused.py `cast`: autocast's casts and
their gradients) against PyTorch CUDA, bit for bit: ties rounding to even, overflow to inf,
subnormals, inf and NaN; non-contiguous, 0-d and empty tensors (CuPy's astype) too."""
import numpy as np
import pytest
import torch

import ember

PAIRS = [("float32", "bfloat16"), ("float32", "float16"), ("bfloat16", "float32"), ("float16", "float32")]


def _values():
    rng = np.random.default_rng(0)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, 1.0 + 2.0 ** -11,
                        65504.0, 65520.0, 70000.0, 3.0e38, 1e-8, -1e-8, 6e-8, 1e-40, -1e-40], np.float32)
    return np.concatenate([special, (rng.standard_normal(5000) * 10.0 ** rng.integers(-6, 6, 5000)).astype(np.float32)])


def _bits_equal(e, t):
    a, b = e.cpu(), t.cpu()
    assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1]
    af, bf = a.float().numpy(), b.float().numpy()
    nan = np.isnan(bf)
    assert (np.isnan(af) == nan).all()
    np.testing.assert_array_equal(af[~nan], bf[~nan])
    np.testing.assert_array_equal(np.signbit(af[~nan]), np.signbit(bf[~nan]))


@pytest.mark.parametrize("src,dst", PAIRS)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "0-d", "empty"])
def test_casts_match_torch_bit_for_bit(src, dst, layout):
    v = _values()
    t = torch.tensor(v, device="cuda").to(getattr(torch, src))
    e = ember.tensor(v, device="cuda").to(getattr(ember, src))
    _bits_equal(e, t)
    view = {"contiguous": lambda x: x.reshape(50, -1) if x.numel() % 50 == 0 else x,
            "transposed": lambda x: x[:5000].reshape(50, 100).mT, "0-d": lambda x: x[7], "empty": lambda x: x[:0]}[layout]
    got, want = view(e).to(getattr(ember, dst)), view(t).to(getattr(torch, dst))
    assert tuple(got.shape) == tuple(want.shape)
    _bits_equal(got, want)


def test_autocast_gradient_casts_match_torch():
    """A float32 weight's gradient comes back through the half -> float32 cast."""
    grads = []
    for lib in (ember, torch):
        w = lib.tensor(_values()[17:17 + 64 * 32].reshape(64, 32) / 1e3, device="cuda", requires_grad=True)
        x = lib.ones(8, 32, device="cuda")
        with lib.autocast("cuda", dtype=lib.bfloat16):
            y = x @ w.t()
        y.float().sum().backward()
        grads.append(w.grad)
    _bits_equal(*grads)
