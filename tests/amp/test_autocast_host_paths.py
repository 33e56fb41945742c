"""Autocast's cheap paths give PyTorch's results: arguments that need no cast (None, a tensor already
in the autocast dtype, float64, integers, another device), the weight-cache test (only leaves that
require grad and are not views are cached), and the kernel's one-frame redispatch next to the keys
that must still see the call (a profiler, meta tensors). Each program runs in ember and PyTorch."""
import numpy as np
import pytest
import torch

import ember

X = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.5]], dtype=np.float32)
W = np.array([[0.2, -0.1, 0.4], [0.7, 0.3, -0.5], [-0.6, 0.9, 0.1], [0.05, -0.3, 0.8]], dtype=np.float32)


def _np(t):
    return None if t is None else t.detach().float().numpy()


def _same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(g, (ember.Tensor, torch.Tensor)):
            assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
            np.testing.assert_allclose(_np(g), _np(w), rtol=1e-2, atol=1e-2)
        else:
            assert g == w


def _in_both(program):
    return _same(program(ember), program(torch))


@pytest.mark.parametrize("x_dtype", ["float32", "bfloat16", "float16", "float64"])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_arguments_that_need_no_cast(x_dtype, bias):
    def program(T):
        w = T.tensor(W, requires_grad=True)
        b = T.tensor(W[:, 0].copy(), requires_grad=True) if bias else None
        x = T.tensor(X).to(getattr(T, x_dtype)).requires_grad_()
        with T.autocast("cpu", dtype=T.bfloat16):
            y = T.nn.functional.linear(x, w, b)
            z = T.nn.functional.linear(x, w, b)     # the second use: the cached weight cast
        (y.float().sum() + z.float().pow(2).sum()).backward()
        return [y, z, x.grad, w.grad, None if b is None else b.grad]
    if x_dtype == "float64":    # float64 is never cast down: linear refuses the mix, in both
        for T in (ember, torch):
            with pytest.raises(RuntimeError):
                program(T)
        return
    _in_both(program)


def test_integer_and_no_grad_arguments():
    def program(T):
        w = T.tensor(W)
        idx = T.tensor([0, 2])
        with T.no_grad(), T.autocast("cpu", dtype=T.bfloat16):
            y = T.mm(T.tensor(X), w.t())
            e = T.nn.functional.embedding(idx, w)     # not listed: passes through in float32
        return [y, e]
    _in_both(program)


@pytest.mark.parametrize("source", ["view", "non-leaf", "no-grad-leaf"])
def test_uncached_sources_see_in_place_updates_within_one_region(source):
    """Only a leaf that requires grad and is not a view is cached: anything else is cast at each use,
    so an in-place update between two uses shows in the second."""
    def program(T):
        leaf = T.tensor(W, requires_grad=source != "no-grad-leaf")
        with T.autocast("cpu", dtype=T.bfloat16):
            if source == "view":
                w = leaf.t()
                base = leaf
            elif source == "non-leaf":
                w = base = leaf * 1
            else:
                w = base = leaf
            w = w if source != "view" else w.t()
            first = T.mm(T.tensor(X), w.t())
            with T.no_grad():
                base.mul_(2) if source != "view" else base.data.mul_(2)
            second = T.mm(T.tensor(X), w.t())
        return [first, second]
    _in_both(program)


def test_an_op_autocast_passes_through_records_as_pytorch():
    def program(T):
        x = T.tensor(X, requires_grad=True)
        with T.autocast("cpu", dtype=T.bfloat16):
            y = x.relu() * 2
        y.sum().backward()
        return [y, y.grad_fn.name(), x.grad]
    _in_both(program)


def test_meta_tensors_are_not_on_the_autocast_device():
    for T in (ember, torch):
        w = T.empty(4, 3, device="meta")
        with T.autocast("cpu", dtype=T.bfloat16):
            y = T.nn.functional.linear(T.empty(2, 3, device="meta"), w)
        assert y.is_meta and str(y.dtype).endswith("float32") and tuple(y.shape) == (2, 4)


def test_under_the_profiler_the_cast_and_the_op_are_recorded():
    x, w = ember.tensor(X), ember.tensor(W, requires_grad=True)
    with ember.profiler.profile() as prof, ember.autocast("cpu", dtype=ember.bfloat16):
        y = ember.nn.functional.linear(x, w)
    names = {e.name for e in prof.events()}
    assert {"aten::linear", "aten::_to_copy"} <= names
    assert y.dtype is ember.bfloat16
