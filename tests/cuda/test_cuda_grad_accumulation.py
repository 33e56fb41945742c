"""A CUDA leaf's first gradient is kept as its ``.grad`` when nobody else holds it (no copy, as
PyTorch steals it), and copied when it is shared: two leaves given one gradient object must not
alias, and later accumulation stays in place."""
import numpy as np
import torch

import ember
from ember.autograd import graph


def test_a_sole_cuda_gradient_is_kept_and_a_shared_one_copied(monkeypatch):
    verdicts = []
    real = graph._sole_owner
    monkeypatch.setattr(graph, "_sole_owner", lambda g, arr: verdicts.append(real(g, arr)) or verdicts[-1])
    w = ember.randn(5, 3, device="cuda", requires_grad=True)
    (w * 3).sum().backward()
    assert verdicts == [True]
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
