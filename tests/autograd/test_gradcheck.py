"""gradcheck / gradgradcheck: pass on correct formulas (contiguous or not, broadcasting, several
outputs), and detect wrong first and second derivatives."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck, gradgradcheck, GradcheckError


def t(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).uniform(0.5, 1.5, size=shape), requires_grad=True)


def test_gradcheck_passes_on_correct_formulas():
    assert gradcheck(lambda x, y: (x * y).exp() + x.tanh(), (t(2, 3), t(2, 3, seed=1)))
    assert gradcheck(lambda x, y: x * y + y.sigmoid(), (t(2, 3), t(3, seed=1)))       # broadcasting
    assert gradcheck(lambda x: (x.sum(0), x.mean(1).log()), (t(3, 2),))               # several outputs
    assert gradcheck(lambda x, k: x * k, (t(3), 2.5))                                 # non-tensor argument


def test_gradcheck_non_contiguous_inputs():
    base = ember.tensor(np.random.default_rng(0).uniform(0.5, 1.5, size=(3, 4)))
    x = base.t().requires_grad_()
    assert not x.is_contiguous()
    y = ember.tensor(np.random.default_rng(1).uniform(0.5, 1.5, size=(6,)))[::2].requires_grad_()
    assert gradcheck(lambda a, b: (a * b).exp(), (x, y))
    np.testing.assert_array_equal(x.detach().numpy(), base.t().numpy())   # inputs restored


def test_gradcheck_detects_wrong_custom_function():
    class WrongExp(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y * 1.01   # deliberately wrong

    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradcheck(WrongExp.apply, (t(3),))
    assert gradcheck(WrongExp.apply, (t(3),), raise_exception=False) is False
    assert issubclass(GradcheckError, RuntimeError)
    from torch.autograd.gradcheck import GradcheckError as TorchGradcheckError
    assert issubclass(TorchGradcheckError, RuntimeError)


def _cube(wrong_second: bool):
    class Cube(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            if wrong_second:   # right value, but written with a detached x: wrong second derivative
                return g * 3 * x.detach() * x.detach()
            return g * 3 * x * x
    return Cube


def test_gradgradcheck():
    assert gradgradcheck(lambda x: (x * x * x).tanh(), (t(3),))
    assert gradgradcheck(lambda x, y: x.exp() * y, (t(2, 2), t(2, 2, seed=1)))
    good, bad = _cube(False), _cube(True)
    assert gradcheck(bad.apply, (t(3),))
    assert gradgradcheck(good.apply, (t(3),))
    with pytest.raises(GradcheckError):
        gradgradcheck(bad.apply, (t(3),))


def test_gradcheck_matches_torch_verdicts():
    """The same wrong custom Function fails torch's gradcheck too (same program in both)."""
    for lib in (ember, torch):
        class Half(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g

        x = lib.tensor([0.5, 1.0, 2.0], dtype=lib.float64, requires_grad=True)
        assert lib.autograd.gradcheck(Half.apply, (x,), raise_exception=False) is False
        assert lib.autograd.gradcheck(lambda a: a * 2, (x,))


def test_gradcheck_warns_for_float32_and_needs_an_input():
    x = ember.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="double precision"):
        gradcheck(lambda a: a * 2, (x,), atol=1e-2, rtol=1e-2, eps=1e-3)
    with pytest.raises(ValueError):
        gradcheck(lambda a: a * 2, (ember.ones(2, dtype=ember.float64),))
