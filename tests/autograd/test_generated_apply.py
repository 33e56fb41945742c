"""The generated FormulaNode.apply (ember/autograd/kernel_codegen.generate_apply) computes what the
generic apply computes: each program runs backward with the generated applies, again with every
node class forced back onto the generic apply, and in PyTorch; gradients must agree. Also: the
errors a node raises (a saved tensor modified in place, a second backward) are the same, classes
with Tensor[] arguments keep the generic apply, and a node whose recorded values lack a parameter
falls back to the generic apply's error."""
import numpy as np
import pytest
import torch

import ember
from ember.autograd import kernel as K

RNG = np.random.default_rng(3)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal((3, 4)).astype(np.float32)
W = RNG.standard_normal((5, 4)).astype(np.float32)
R = RNG.standard_normal((4,)).astype(np.float32)

PROGRAMS = {
    "pointwise": lambda T, a, b, w, r: (a * b + a.sigmoid() / (b.abs() + 1)).tanh(),
    "broadcast-sum_to": lambda T, a, b, w, r: a * r - r,
    "scalar-args": lambda T, a, b, w, r: T.add(a, b, alpha=0.5).clamp(-0.3, 0.7) * 3,
    "linear-layer_norm": lambda T, a, b, w, r: T.nn.functional.layer_norm(
        T.nn.functional.linear(a, w, w[:, 1]), (5,)),
    "casts": lambda T, a, b, w, r: (a.to(T.bfloat16) * b.to(T.bfloat16)).float() + a.double().sum(0).float(),
    "multi-output": lambda T, a, b, w, r: T.max(a, 1)[0] + T.sort(b, 1)[0].sum(1),
    "list-arg": lambda T, a, b, w, r: T.cat([a, b * 2], 0).split(2, 0)[1],
    "one-input-no-grad": lambda T, a, b, w, r: a * b.detach() + T.where(a > 0, a, b),
}


def _grads(T, program):
    leaves = [T.tensor(x, requires_grad=True) for x in (A, B, W, R)]
    out = program(T, *leaves)
    out.backward(T.ones_like(out))
    return [None if t.grad is None else t.grad.detach().numpy() for t in leaves]


class _GenericApply:
    """Every formula node class runs the generic apply while inside."""

    def __enter__(self):
        self.saved = {cls: cls.__dict__["apply"] for cls in K._NODE_TYPES.values() if "apply" in cls.__dict__}
        for cls in self.saved:
            cls.apply = K.FormulaNode.apply

    def __exit__(self, *exc):
        for cls, apply in self.saved.items():
            cls.apply = apply


def _close(got, want):
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if g is not None:
            np.testing.assert_allclose(g, w, rtol=2e-2 if g.dtype != np.float32 else 1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_generated_apply_matches_generic_and_pytorch(name):
    program = PROGRAMS[name]
    for _ in range(2):      # the first backward of a class generates its apply; the second runs it
        generated = _grads(ember, program)
    with _GenericApply():
        generic = _grads(ember, program)
    want = _grads(torch, program)
    _close(generated, want)
    _close(generic, want)


def test_generated_apply_is_installed_for_plain_ops_only():
    a = ember.tensor(A, requires_grad=True)
    for _ in range(2):
        (a * a).sum().backward()
        ember.cat([a, a]).sum().backward()
    mul = type((a * a).grad_fn)
    assert mul.apply.__code__.co_filename.startswith("<ember autograd apply MulBackward0")
    cat = type(ember.cat([a, a]).grad_fn)      # a Tensor[] argument: the generic apply
    assert "apply" not in cat.__dict__ and cat.apply is K.FormulaNode.apply


def test_errors_are_the_generic_applys():
    def run(T):
        errors = []
        a = T.tensor(A, requires_grad=True)
        b = a * 2
        c = b * b               # saves b
        b.add_(1)
        with pytest.raises(RuntimeError) as info:
            c.sum().backward()
        errors.append(str(info.value))
        d = (a * a).sum()
        d.backward()
        with pytest.raises(RuntimeError) as info:
            d.backward()
        errors.append(str(info.value))
        return errors
    for _ in range(2):
        generated = run(ember)
    with _GenericApply():
        generic = run(ember)
    assert "is at version 1; expected version 0" in generated[0]
    assert generated == generic
    assert generated[1] == run(torch)[1]


def test_a_missing_recorded_value_raises_the_generic_error():
    a = ember.tensor(A, requires_grad=True)
    for _ in range(2):
        (a * 3).sum().backward()
    node = (a * a).grad_fn
    assert "apply" in type(node).__dict__ and type(node).apply is not K.FormulaNode.apply
    node.saved.pop("other")
    with pytest.raises((RuntimeError, KeyError)) as generated:
        node.apply([ember.ones(3, 4)])
    with _GenericApply():
        with pytest.raises((RuntimeError, KeyError)) as generic:
            node.apply([ember.ones(3, 4)])
    assert type(generated.value) is type(generic.value) and str(generated.value) == str(generic.value)
