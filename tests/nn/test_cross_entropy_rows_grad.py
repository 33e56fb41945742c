"""cross_entropy's input gradient for class-index targets over [N, C] (the NumPy row formula in
ops/derivatives/losses.py) against PyTorch, and against the general formula (weights, smoothing,
double backward) where the row formula does not apply."""
import numpy as np
import pytest
import torch

import ember


def grads(x, t, scale=1.0, **kw):
    out = []
    for lib in (ember, torch):
        xi = lib.from_numpy(x.copy()).requires_grad_()
        loss = lib.nn.functional.cross_entropy(xi, lib.from_numpy(t.copy()), **kw)
        (loss.sum() * scale if kw.get("reduction") == "none" else loss * scale).backward()
        out.append(xi.grad.numpy())
    return out


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_row_gradient_matches_torch(reduction, dtype, ignore_index):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((9, 5)) * 4).astype(dtype)
    t = rng.integers(0, 5, 9)
    t[:2] = 2
    ours, theirs = grads(x, t, 3.0, reduction=reduction, ignore_index=ignore_index)
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-7)


def test_every_target_ignored_gives_zero_gradient_like_torch():
    x = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    ours, theirs = grads(x, np.full(4, 1), ignore_index=1)
    np.testing.assert_array_equal(ours, theirs)
    assert not np.signbit(ours).any()


def test_large_logits_stay_finite_and_one_class():
    x = np.array([[1000.0, -1000.0, 0.0], [88.0, 89.0, 90.0]], np.float32)
    ours, theirs = grads(x, np.array([0, 2]))
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-7)
    ours, theirs = grads(np.zeros((3, 1), np.float32), np.zeros(3, np.int64))
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("kw", [dict(label_smoothing=0.1), dict(weight=np.array([1.0, 2.0, 0.5], np.float32))])
def test_other_forms_still_match_torch(kw):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 3)).astype(np.float32)
    t = rng.integers(0, 3, 6)
    e_kw = {k: ember.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    t_kw = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    xe, xt = ember.from_numpy(x).requires_grad_(), torch.from_numpy(x).requires_grad_()
    ember.nn.functional.cross_entropy(xe, ember.from_numpy(t), **e_kw).backward()
    torch.nn.functional.cross_entropy(xt, torch.from_numpy(t), **t_kw).backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_double_backward_uses_the_differentiable_formula():
    x = np.random.default_rng(3).standard_normal((4, 3))
    t = np.array([0, 1, 2, 1])
    xe, xt = ember.from_numpy(x).requires_grad_(), torch.from_numpy(x).requires_grad_()
    ge, = ember.autograd.grad(ember.nn.functional.cross_entropy(xe, ember.from_numpy(t)), xe, create_graph=True)
    gt, = torch.autograd.grad(torch.nn.functional.cross_entropy(xt, torch.from_numpy(t)), xt, create_graph=True)
    (ge * ge).sum().backward()
    (gt * gt).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-6, atol=1e-9)
