"""A half-precision linear layer's backward (autocast's layers) through the direct GEMM path: float32
products rounded once, the composed formula's gradients (which round each matmul once too) bit for
bit, and PyTorch's within half precision; refused where it does not apply."""
import ml_dtypes  # noqa: F401  (bfloat16 for NumPy, as ember's)
import numpy as np
import pytest
import torch

import ember

CASES = [((2, 4, 6), True), ((5, 6), True), ((2, 3, 4, 6), False), ((0, 6), True), ((3, 1, 6), True)]
DTYPES = {"bfloat16": (ember.bfloat16, torch.bfloat16), "float16": (ember.float16, torch.float16)}


def _grads(lib, dtype, arrays):
    leaves = [lib.tensor(a).to(dtype).requires_grad_() for a in arrays]
    out = lib.nn.functional.linear(*leaves)
    (out.float() * lib.tensor(np.linspace(-1, 1, out.numel(), dtype=np.float32).reshape(out.shape))).sum().backward()
    return [t.grad.float().detach().numpy() for t in leaves]


def _spy(monkeypatch, calls):
    from ember.ops.derivatives import nn as derivatives
    original = derivatives.native_linear

    def spy(*args):
        out = original(*args)
        calls.append("taken" if out is not None else "declined")
        return out
    monkeypatch.setattr("ember.ops.derivatives.nn.native_linear", spy)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("shape,with_bias", CASES)
def test_half_linear_backward_is_the_composed_formulas(dtype, shape, with_bias, monkeypatch):
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(shape).astype(np.float32), rng.standard_normal((7, 6)).astype(np.float32)]
    if with_bias:
        arrays.append(rng.standard_normal(7).astype(np.float32))
    e_dt, t_dt = DTYPES[dtype]
    calls = []
    _spy(monkeypatch, calls)
    got = _grads(ember, e_dt, arrays)
    assert calls == ["taken"]
    monkeypatch.setattr("ember.ops.derivatives.nn.native_linear", lambda *args: None)   # the composed formula
    want = _grads(ember, e_dt, arrays)
    for g, w in zip(got, want):
        assert g.shape == w.shape and np.array_equal(g, w)
    for g, t in zip(got, _grads(torch, t_dt, arrays)):
        np.testing.assert_allclose(g, t, rtol=2e-2, atol=2e-2)


def test_mixed_dtypes_and_create_graph_take_the_formula(monkeypatch):
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((5, 4)).astype(np.float32)
    calls = []
    _spy(monkeypatch, calls)
    xb = ember.tensor(x).to(ember.bfloat16).requires_grad_()
    wf = ember.tensor(w).to(ember.float16).requires_grad_()
    with pytest.raises(RuntimeError) as e_err:
        ember.nn.functional.linear(xb, wf)
    with pytest.raises(RuntimeError):
        torch.nn.functional.linear(torch.tensor(x).bfloat16(), torch.tensor(w).half())
    assert "dtype" in str(e_err.value)
    # second order: grad mode on while differentiating, so the composed (differentiable) formula
    xb, wb = (ember.tensor(a).to(ember.bfloat16).requires_grad_() for a in (x, w))
    out = ember.nn.functional.linear(xb, wb).float().pow(2).sum()
    (gx,) = ember.autograd.grad(out, [xb], create_graph=True)
    assert calls == ["declined"] and gx.requires_grad


def test_autocast_training_step_gradients_unchanged_by_the_direct_path(monkeypatch):
    """A layer under autocast: the float32 parameters' gradients (through the casts) are the same
    with the direct path and with the composed formula."""
    rng = np.random.default_rng(7)
    x = ember.tensor(rng.standard_normal((2, 3, 8)).astype(np.float32))

    def step():
        ember.manual_seed(0)
        layer = ember.nn.Linear(8, 5)
        with ember.autocast("cpu", dtype=ember.bfloat16):
            loss = layer(x).float().square().mean()
        loss.backward()
        return [p.grad.numpy() for p in layer.parameters()]
    got = step()
    monkeypatch.setattr("ember.ops.derivatives.nn.native_linear", lambda *args: None)
    want = step()
    assert all(g.dtype == np.float32 and np.array_equal(g, w) for g, w in zip(got, want))
