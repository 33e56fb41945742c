"""AccumulateGrad keeps an incoming gradient as `.grad` only when nobody else holds it (graph.py's
_sole_owner, PyTorch's use_count rule); every case where something else can see the gradient gets a
copy, so writing to `.grad` never changes another tensor. Checked against PyTorch's behaviour."""
import numpy as np
import pytest
import torch

import ember


def _pair(values):
    return ember.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)


def test_a_gradient_a_hook_kept_is_copied():
    for lib, x in zip((ember, torch), _pair([1.0, 2.0, 3.0])):
        kept = []
        x.register_hook(lambda g: kept.append(g))
        (x * 2).sum().backward()
        x.grad.zero_()
        assert kept[0].tolist() == [2.0, 2.0, 2.0], lib.__name__


def test_one_gradient_reaching_two_leaves_gives_two_grads():
    a, b = ember.ones(3, requires_grad=True), ember.ones(3, requires_grad=True)
    (a + b).sum().backward()
    a.grad.add_(5)
    assert b.grad.tolist() == [1.0, 1.0, 1.0]
    assert a.grad is not b.grad


def test_a_gradient_a_custom_function_keeps_is_copied():
    store = []

    class Twice(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            out = g * 2
            store.append(out)
            return out
    x = ember.ones(4, requires_grad=True)
    Twice.apply(x).sum().backward()
    x.grad.mul_(0)
    assert store[0].tolist() == [2.0] * 4


def test_a_view_gradient_is_copied_and_accumulation_stays_right():
    w = ember.ones(2, 3, requires_grad=True)
    for _ in range(3):
        (w * ember.arange(6.0).reshape(2, 3)).sum().backward(retain_graph=True)
    np.testing.assert_array_equal(w.grad.numpy(), 3 * np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("set_to_none", [True, False])
def test_compiled_training_grads_equal_eager_and_are_the_optimizers_own(set_to_none):
    def model():
        ember.manual_seed(0)
        return ember.nn.Sequential(ember.nn.Linear(6, 8), ember.nn.ReLU(), ember.nn.Linear(8, 3))
    x = ember.from_numpy(np.random.default_rng(0).standard_normal((5, 6)).astype(np.float32))
    y = ember.tensor([0, 2, 1, 1, 0])
    eager, compiled = model(), model()
    step = ember.compile(compiled)
    opts = [ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (eager, compiled)]
    for _ in range(4):
        for m, fwd, opt in ((eager, eager, opts[0]), (compiled, step, opts[1])):
            opt.zero_grad(set_to_none=set_to_none)
            ember.nn.functional.cross_entropy(fwd(x), y).backward()
            opt.step()
    for a, b in zip(eager.parameters(), compiled.parameters()):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    grads = [p.grad for p in compiled.parameters()]
    assert len({id(g._data) for g in grads}) == len(grads)       # no two .grad share memory


def test_post_accumulate_hooks_see_the_grad():
    x = ember.ones(3, requires_grad=True)
    seen = []
    x.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.clone()))
    (x * 3).sum().backward()
    assert seen[0].tolist() == [3.0, 3.0, 3.0] and x.grad.tolist() == [3.0, 3.0, 3.0]
