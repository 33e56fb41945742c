"""Inference tensors as PyTorch makes them: every program runs in ember and PyTorch and must
give the same result or raise the same exception type. Covers which tensors are inference
tensors (made inside inference_mode, views of them, Python constructors; not views of normal
tensors, not in-place / out= results), what outside inference mode refuses (in-place updates of
inference tensors — before anything is written —, saving them for backward, requires_grad=True),
version counters, nesting with inference_mode(False), the decorator forms, custom Functions and
nn modules."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember


def _norm(v):
    if isinstance(v, (ember.Tensor, torch.Tensor)):
        return ("tensor", str(v.dtype).split(".")[-1], tuple(v.shape), v.detach().tolist(), v.requires_grad)
    if isinstance(v, (list, tuple)):
        return tuple(_norm(x) for x in v)
    if v is not None and hasattr(v, "name") and callable(v.name):  # a grad_fn
        return ("node", v.name())
    return v


def _outcome(prog, lib):
    try:
        return "ok", _norm(prog(lib))
    except Exception as e:  # noqa: BLE001 - compared below
        return type(e), str(e)


def fresh(L, *shape, **kw):
    """An inference tensor."""
    with L.inference_mode():
        return L.ones(*(shape or (3,)), **kw)


def inside(L, fn):
    with L.inference_mode():
        return fn()


def _nested_false(L, fn):
    with L.inference_mode():
        with L.inference_mode(False):
            return fn()


def _writes_then_reads(L, write):
    """An in-place update of an inference tensor outside inference mode: refused, and (in ember)
    the tensor is left as it was (PyTorch writes before it raises; ember checks first)."""
    x = fresh(L)
    try:
        write(L, x)
    except RuntimeError:
        pass
    return x


def _custom_save(L):
    class Save(L.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(y)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g, None
    return Save.apply(L.ones(3, requires_grad=True), fresh(L))


def _custom_inside(L):
    class Double(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g
    return inside(L, lambda: Double.apply(L.ones(3, requires_grad=True)).is_inference())


def _optimizer_step_inside(L):
    w = L.ones(2, requires_grad=True)
    (w * 2).sum().backward()
    opt = L.optim.SGD([w], lr=0.1)
    with L.inference_mode():
        opt.step()
    return w.detach(), w._version


def _module_inside(L):
    m = L.nn.Linear(3, 2)
    with L.inference_mode():
        y = m(L.ones(1, 3))
    return y.is_inference(), y.requires_grad, m.weight.is_inference()


def _module_trained_on_inference_input(L, clone):
    m = L.nn.Linear(3, 2)
    x = fresh(L, 1, 3)
    m(x.clone() if clone else x).sum().backward()
    return m.weight.grad is not None


def _batchnorm_inside(L):
    bn = L.nn.BatchNorm1d(3)
    with L.inference_mode():
        bn(L.ones(2, 3))
    return bn.running_mean.is_inference(), bn.num_batches_tracked._version, bn.running_mean


def _decorated(L):
    @L.inference_mode()
    def f():
        return L.ones(2).is_inference()

    @L.inference_mode
    def g():
        return L.ones(2).is_inference()

    @L.inference_mode(False)
    def h():
        return L.ones(2).is_inference()
    return f(), g(), inside(L, h), L.ones(2).is_inference()


def _generator(L):
    @L.inference_mode()
    def gen():
        yield L.ones(1).is_inference()
        yield L.is_inference_mode_enabled()
    return list(gen()), L.is_inference_mode_enabled()


def _exception_restores(L):
    try:
        with L.inference_mode():
            raise KeyError("boom")
    except KeyError:
        pass
    return L.is_inference_mode_enabled(), L.is_grad_enabled(), L.ones(1).is_inference()


def _nested_state(L):
    with L.inference_mode():
        with L.inference_mode(False):
            a = (L.ones(2).is_inference(), L.is_inference_mode_enabled(), L.is_grad_enabled())
        b = (L.ones(2).is_inference(), L.is_inference_mode_enabled(), L.is_grad_enabled())
    return a, b, L.is_inference_mode_enabled(), L.is_grad_enabled()


def _inside_no_grad(L):
    with L.no_grad():
        with L.inference_mode():
            a = L.ones(1).is_inference()
        b = L.is_grad_enabled()
    return a, b, L.is_grad_enabled()


n = lambda L: L.ones(3)  # noqa: E731 - a normal tensor
nreq = lambda L: L.ones(3, requires_grad=True)  # noqa: E731

PROGRAMS = {
    # which tensors are inference tensors
    "made inside": lambda L: (fresh(L).is_inference(), n(L).is_inference(), fresh(L).requires_grad),
    "factories inside": lambda L: inside(L, lambda: (
        L.empty(2).is_inference(), L.rand(2).is_inference(), L.zeros(2).is_inference(),
        L.ones_like(L.ones(1)).is_inference(), L.arange(3).is_inference(), L.full((2,), 1.).is_inference(),
        L.ones(2, device="meta").is_inference())),
    "constructors inside": lambda L: inside(L, lambda: (
        L.tensor([1.]).is_inference(), L.from_numpy(np.ones(2)).is_inference(),
        L.as_tensor([1.]).is_inference(), L.as_tensor(np.ones(2)).is_inference(),
        L.ones(2).new_tensor([1.]).is_inference())),
    "as_tensor of a normal tensor inside": lambda L: (lambda m: inside(L, lambda: L.as_tensor(m).is_inference()))(n(L)),
    "ops on normal inside": lambda L: (lambda m: inside(L, lambda: (
        (m + 1).is_inference(), m.clone().is_inference(), m.double().is_inference(), m.sum().is_inference(),
        [t.is_inference() for t in L.ones(2, 2).max(1)], L.ones(2, 2).t().reshape(4).is_inference())))(n(L)),
    "views of normal inside": lambda L: (lambda m: inside(L, lambda: (
        m.view(3).is_inference(), m[0].is_inference(), m[1:].is_inference(), m.detach().is_inference(),
        m.reshape(3).is_inference(), m.unsqueeze(0).is_inference(), m.data.is_inference(),
        [t.is_inference() for t in m.split(1)], m.contiguous().is_inference(), m.float().is_inference())))(n(L)),
    "in-place results inside keep their kind": lambda L: (lambda m: inside(L, lambda: (
        m.add_(1).is_inference(), L.add(m, 1, out=m).is_inference(), m.zero_().is_inference())))(n(L)),
    "views of inference outside": lambda L: (lambda x: (
        x.view(3).is_inference(), x[0].is_inference(), x[1:].is_inference(), x.detach().is_inference(),
        x.data.is_inference(), x.contiguous().is_inference(), x.float().is_inference(),
        [t.is_inference() for t in x.split(1)], [t.is_inference() for t in x.unbind()]))(fresh(L)),
    "copies of inference outside": lambda L: (lambda x: (
        (x + 1).is_inference(), x.clone().is_inference(), x.double().is_inference(), x[[0]].is_inference(),
        L.tensor(x).is_inference(), x.sum().is_inference()))(fresh(L)),
    "is_inference_mode_enabled": lambda L: (L.is_inference_mode_enabled(), inside(L, L.is_inference_mode_enabled),
                                            inside(L, L.is_grad_enabled)),
    "nested inference_mode(False)": _nested_state,
    "inside no_grad": _inside_no_grad,
    "decorators": _decorated,
    "generator": _generator,
    "exception restores the mode": _exception_restores,
    # version counters
    "_version of inference": lambda L: fresh(L)._version,
    "_version of inference view": lambda L: fresh(L).view(3)._version,
    "_version of inference inside": lambda L: inside(L, lambda: fresh(L)._version),
    "normal bumped inside": lambda L: (lambda m: (inside(L, lambda: m.add_(1)), m._version)[1])(n(L)),
    "normal bumped through a view made inside": lambda L: (
        lambda m: (inside(L, lambda: m.view(3).add_(1)), m._version)[1])(n(L)),
    "normal setitem inside": lambda L: (lambda m: (inside(L, lambda: m.__setitem__(0, 5.)), m._version,
                                                   m.is_inference(), m)[1:])(n(L)),
    "view of normal made inside, used outside": lambda L: (lambda v: (
        v.add_(1), v.is_inference(), (v * nreq(L)).grad_fn))(inside(L, lambda: n(L).view(3))),
    # in place outside inference mode
    "add_": lambda L: fresh(L).add_(1),
    "mul_ by a tensor requiring grad": lambda L: fresh(L).mul_(nreq(L)),
    "setitem number": lambda L: fresh(L).__setitem__(0, 1.),
    "setitem tensor": lambda L: fresh(L).__setitem__(0, L.tensor(2.)),
    "setitem mask": lambda L: fresh(L).__setitem__(L.tensor([True, False, True]), 2.),
    "zero_": lambda L: fresh(L).zero_(),
    "fill_": lambda L: fresh(L).fill_(2),
    "copy_": lambda L: fresh(L).copy_(L.zeros(3)),
    "uniform_": lambda L: fresh(L).uniform_(),
    "clamp_": lambda L: fresh(L).clamp_(0, 0.5),
    "index_put_": lambda L: fresh(L).index_put_((L.tensor([0]),), L.tensor(5.)),
    "in place on a view": lambda L: fresh(L)[1:].add_(1),
    "in place under no_grad": lambda L: _no_grad_exp_(L, fresh(L)),
    "out= inference": lambda L: L.add(n(L), 1, out=fresh(L)),
    "out= normal from inference": lambda L: L.add(fresh(L), 1, out=n(L)).is_inference(),
    "copy_ normal from inference": lambda L: n(L).copy_(fresh(L)).is_inference(),
    "in place inside inference_mode(False)": lambda L: (lambda x: _nested_false(L, lambda: x.add_(1)))(fresh(L)),
    "in place inside": lambda L: inside(L, lambda: fresh(L).add_(1)),
    "in place on leaf requiring grad inside": lambda L: (lambda m: (inside(L, lambda: m.add_(1)), m)[1])(nreq(L)),
    # saved for backward
    "mul saves": lambda L: fresh(L) * nreq(L),
    "rmul saves": lambda L: nreq(L) * fresh(L),
    "matmul saves": lambda L: fresh(L) @ nreq(L),
    "exp result times inference": lambda L: nreq(L).exp() * fresh(L),
    "add saves nothing": lambda L: (fresh(L) + nreq(L)).grad_fn,
    "functional no grad": lambda L: (fresh(L) * n(L)).is_inference(),
    "saved inside inference_mode(False)": lambda L: (lambda x: _nested_false(L, lambda: x * nreq(L)))(fresh(L)),
    "custom Function saves inference": _custom_save,
    "custom Function inside": _custom_inside,
    "module trained on inference input": lambda L: _module_trained_on_inference_input(L, False),
    "module trained on a clone": lambda L: _module_trained_on_inference_input(L, True),
    # requires_grad
    "requires_grad_()": lambda L: fresh(L).requires_grad_(),
    "requires_grad = True": lambda L: setattr(fresh(L), "requires_grad", True),
    "requires_grad_(False)": lambda L: fresh(L).requires_grad_(False).is_inference(),
    "Parameter(inference)": lambda L: L.nn.Parameter(fresh(L)),
    "Parameter(inference, requires_grad=False)": lambda L: L.nn.Parameter(fresh(L), requires_grad=False).is_inference(),
    "detach_": lambda L: fresh(L).detach_().is_inference(),
    "factory requires_grad inside": lambda L: inside(L, lambda: (lambda a: (a.requires_grad, a.is_inference()))(
        L.ones(3, requires_grad=True))),
    "requires_grad_ inside": lambda L: inside(L, lambda: fresh(L).requires_grad_().requires_grad),
    "graph not recorded inside": lambda L: (lambda m: inside(L, lambda: (lambda b: (b.requires_grad, b.grad_fn))(
        m * 2)))(nreq(L)),
    "Parameter inside": lambda L: inside(L, lambda: (lambda p: (p.is_inference(), p.requires_grad))(
        L.nn.Parameter(L.ones(2)))),
    # modules and optimizers
    "optimizer step inside": _optimizer_step_inside,
    "module inside": _module_inside,
    "batchnorm running stats inside": _batchnorm_inside,
}


def _no_grad_exp_(L, x):
    with L.no_grad():
        x.exp_()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_inference_mode_program(name):
    prog = PROGRAMS[name]
    got, expected = _outcome(prog, ember), _outcome(prog, torch)
    assert got[0] is expected[0], f"ember {got}; torch {expected}"
    if got[0] == "ok":
        assert got[1] == expected[1]
    else:
        assert got[1].split(".")[0] == expected[1].split(".")[0], (got[1], expected[1])


@pytest.mark.parametrize("write", [lambda L, x: _no_grad_exp_(L, x), lambda L, x: x.add_(1),
                                   lambda L, x: x.__setitem__(0, 9.),
                                   lambda L, x: L.mul(L.ones(3), 4, out=x), lambda L, x: x.copy_(L.zeros(3)),
                                   lambda L, x: x.uniform_(), lambda L, x: x[1:].zero_()])
def test_refused_update_writes_nothing(write):
    x = _writes_then_reads(ember, write)
    assert x.tolist() == [1.0, 1.0, 1.0]


def test_ops_on_normal_tensors_outside_do_not_reach_the_inference_kernel():
    # the Inference key is only in the key set of inference tensors and inside inference mode,
    # so the eager fast path of normal tensors is untouched
    from ember._core.dispatch import INFERENCE_BIT, tls
    x = ember.ones(3)
    assert not x._keys & INFERENCE_BIT and not tls.include & INFERENCE_BIT
    with ember.inference_mode():
        assert tls.include & INFERENCE_BIT
    assert not tls.include & INFERENCE_BIT
