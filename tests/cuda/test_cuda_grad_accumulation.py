"""A CUDA leaf's first gradient becomes its ``.grad`` without a dispatched clone (kept when nobody
else holds it, else copied on CuPy, as the CPU path does), and a shared one is copied: two leaves
given one gradient object must not alias, and later accumulation stays in place."""
import numpy as np
import torch

import ember


def test_first_cuda_gradients_take_no_dispatched_clone_and_shared_ones_do_not_alias(monkeypatch):
    def refused(*args, **kwargs):
        raise AssertionError("AccumulateGrad dispatched a clone")
    monkeypatch.setattr(ember.Tensor, "clone", refused)
    w = ember.randn(5, 3, device="cuda", requires_grad=True)
    (w * 3).sum().backward()
    np.testing.assert_array_equal(w.grad.cpu().numpy(), np.full((5, 3), 3, np.float32))
    a, b = (ember.ones(4, device="cuda", requires_grad=True) for _ in range(2))
    (a + b).sum().backward()                # add's backward hands one gradient object to both
    a.grad.add_(1)
    np.testing.assert_array_equal(b.grad.cpu().numpy(), np.ones(4, np.float32))
    np.testing.assert_array_equal(a.grad.cpu().numpy(), np.full(4, 2, np.float32))


def test_accumulation_across_backwards_matches_torch():
    grads = []
    for lib in (ember, torch):
        w = lib.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device="cuda", requires_grad=True)
        kept = None
        for k in range(3):
            (w * (k + 1)).square().sum().backward()
            kept = w.grad if kept is None else kept
        assert kept is w.grad                       # accumulated in place into the first .grad
        grads.append(w.grad.cpu().numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)
