"""Half-precision (float16 / bfloat16: autocast's) backward of linear, gelu and attention through the
native paths, computed in float32 and rounded once as ATen's CPU kernels compute half types.

linear: the composed formula's gradients (which round each matmul once too) bit for bit. gelu and
scaled_dot_product_attention: the float32 path's gradients of the same inputs, rounded once, bit for
bit (the composed formulas round every intermediate op). All within half precision of PyTorch's, and
refused (the formula) where they do not apply."""
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


def _activation_grads(lib, fn, dtype, arrays, weight):
    leaves = [lib.tensor(a).to(dtype).requires_grad_() for a in arrays]
    out = fn(lib, *leaves)
    (out.float() * lib.tensor(weight)).sum().backward()
    return [t.grad for t in leaves]


def _upcast_grads_rounded(fn, dtype, arrays, weight):
    """The float32 path on the half inputs' values, its gradients rounded to `dtype` once."""
    rounded = [ember.tensor(a).to(dtype).float().numpy() for a in arrays]
    leaves = [ember.tensor(a).requires_grad_() for a in rounded]
    out = fn(ember, *leaves).to(dtype).float()      # (the forward's rounding: its grad is passed through)
    (out * ember.tensor(weight)).sum().backward()
    return [t.grad.to(dtype) for t in leaves]


def _gelu(approximate):
    return lambda lib, x: lib.nn.functional.gelu(x, approximate=approximate)


def _attention(lib, q, k, v):
    return lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


HALF_CASES = [("gelu none", _gelu("none"), [(2, 3, 16)]), ("gelu tanh", _gelu("tanh"), [(5, 7)]),
              ("sdpa causal", _attention, [(1, 2, 5, 8), (1, 2, 5, 8), (1, 2, 5, 8)])]


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("name,fn,shapes", HALF_CASES, ids=[c[0] for c in HALF_CASES])
def test_half_backward_is_float32_rounded_once(name, fn, shapes, dtype):
    rng = np.random.default_rng(9)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    e_dt, t_dt = DTYPES[dtype]
    out_shape = fn(ember, *[ember.tensor(a) for a in arrays]).shape
    weight = rng.standard_normal(tuple(out_shape)).astype(np.float32)
    got = _activation_grads(ember, fn, e_dt, arrays, weight)
    want = _upcast_grads_rounded(fn, e_dt, arrays, weight)
    for g, w in zip(got, want):
        assert g.dtype is e_dt and np.array_equal(g.float().numpy(), w.float().numpy())
    for g, t in zip(got, _activation_grads(torch, fn, t_dt, arrays, weight)):
        np.testing.assert_allclose(g.float().numpy(), t.float().numpy(), rtol=3e-2, atol=3e-2)


def test_half_paths_are_refused_where_they_do_not_apply():
    """Mixed half dtypes and a non-contiguous input take the composed formulas: same gradients as
    PyTorch's within half precision (no native kernel reads a strided or mismatched array)."""
    rng = np.random.default_rng(10)
    x = rng.standard_normal((6, 4)).astype(np.float32)
    for lib, dt in ((ember, ember.bfloat16), (torch, torch.bfloat16)):
        t = lib.tensor(x).to(dt).requires_grad_()
        lib.nn.functional.gelu(t.t(), approximate="tanh").float().sum().backward()   # a strided input
        if lib is ember:
            e_grad = t.grad.float().numpy()
        else:
            np.testing.assert_allclose(e_grad, t.grad.float().numpy(), rtol=3e-2, atol=3e-2)
    q = ember.tensor(rng.standard_normal((1, 3, 4)).astype(np.float32)).to(ember.bfloat16).requires_grad_()
    k = ember.tensor(rng.standard_normal((1, 3, 4)).astype(np.float32)).to(ember.float16).requires_grad_()
    with pytest.raises(RuntimeError):      # mixed dtypes: the forward refuses, as PyTorch's
        ember.nn.functional.scaled_dot_product_attention(q, k, k)
