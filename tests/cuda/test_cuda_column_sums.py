"""``sum`` over leading dims on CUDA (ember/_cuda/reduce.py: a bias gradient's reduction) against
PyTorch CUDA: dtypes, keepdim, dims given as an int, negative or out of order, many rows (several
partial sums), and the sums the kernels leave to the CPU source (other dims, other output dtypes,
non-contiguous inputs, short rows), which must agree too."""
import numpy as np
import pytest
import torch

import ember

DTYPES = [("float32", 1e-5), ("bfloat16", 1e-2), ("float16", 2e-3)]


def _pair(shape, dtype, seed):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return ember.tensor(a, device="cuda").to(getattr(ember, dtype)), torch.tensor(a, device="cuda").to(getattr(torch, dtype))


def _close(e, t, tol):
    assert e.dtype == getattr(ember, str(t.dtype).split(".")[1]) and tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.float().cpu().numpy(), t.float().cpu().numpy(), rtol=tol, atol=tol * 10)


CASES = [((4, 64, 96), (0, 1), False), ((4, 64, 96), (0, 1), True), ((300, 40), 0, False), ((300, 40), (0,), True),
         ((3, 5, 7, 33), (-4, -3), False), ((3, 5, 7, 33), (1, 0), True), ((70000, 48), (0,), False),
         ((2, 3, 4, 32), (0, 1, 2), False)]


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("shape,dim,keepdim", CASES)
def test_leading_dim_sums_match_torch_and_take_the_kernels(dtype, tol, shape, dim, keepdim, monkeypatch):
    from ember._cuda import reduce
    calls = []
    real = reduce.column_sums
    monkeypatch.setattr(reduce, "column_sums", lambda *a: calls.append(a[1:]) or real(*a))
    e, t = _pair(shape, dtype, 0)
    _close(e.sum(dim, keepdim=keepdim), t.sum(dim, keepdim=keepdim), tol * (10 if shape[0] > 1000 else 1))
    assert len(calls) == 1


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("program", ["last dim", "middle dim", "to float64", "transposed", "short rows", "all dims",
                                     "empty"])
def test_other_sums_match_torch(dtype, tol, program, monkeypatch):
    from ember._cuda import reduce
    calls = []
    monkeypatch.setattr(reduce, "column_sums", lambda *a: calls.append(a))
    programs = {"last dim": lambda x: x.sum(-1), "middle dim": lambda x: x.sum(1),
                "to float64": lambda x, lib: x.sum(0, dtype=lib.float64), "transposed": lambda x: x.mT.sum(0),
                "short rows": lambda x: x[..., :8].contiguous().sum((0, 1)), "all dims": lambda x: x.sum(),
                "empty": lambda x: x[:0].sum(0)}
    fn = programs[program]
    e, t = _pair((6, 10, 40), dtype, 1)
    run = (lambda x, lib: fn(x, lib)) if program == "to float64" else (lambda x, lib: fn(x))
    _close(run(e, ember), run(t, torch), tol)
    assert not calls


def test_bias_gradient_of_a_half_linear_matches_torch():
    """Up to the GEMMs' own differences: each bfloat16 output may differ from PyTorch's by an ulp,
    and the bias gradient sums 1024 of them, so the tolerance is relative to the largest sum."""
    e, t = _pair((8, 128, 64), "bfloat16", 2)
    ew, w = (x.detach().requires_grad_() for x in _pair((96, 64), "float32", 3))
    eb, b = (x.detach().requires_grad_() for x in _pair((96,), "float32", 4))
    for lib, x, ww, bb in ((ember, e, ew, eb), (torch, t, w, b)):
        with lib.autocast("cuda", dtype=lib.bfloat16):
            y = lib.nn.functional.linear(x, ww, bb)
        y.float().square().sum().backward()
    for e, t in ((eb.grad, b.grad), (ew.grad, w.grad)):
        assert e.dtype == ember.float32
        np.testing.assert_allclose(e.cpu().numpy(), t.cpu().numpy(), rtol=0, atol=1e-2 * float(t.abs().max()))
