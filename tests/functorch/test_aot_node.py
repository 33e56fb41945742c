"""The node a compiled training graph records (_functorch/_aot_node.py, instead of autograd.Function):
gradients, missing output gradients, saved-tensor version checks, retain_graph and double backward
behave as in eager (and as the autograd.Function path did)."""
import numpy as np
import pytest

import ember


def close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def fn(x, w, b):
    h = (x @ w.t() + b).relu()
    return h.sum(1), (h * 2).mean(0), h.argmax(1)


def inputs():
    ember.manual_seed(0)
    x = ember.randn(5, 4)
    w = ember.randn(3, 4, requires_grad=True)
    b = ember.randn(3, requires_grad=True)
    return x, w, b


@pytest.mark.parametrize("use", ["first", "second", "both"])
def test_gradients_match_eager_when_some_outputs_get_none(use):
    x, w, b = inputs()
    compiled = ember.compile(fn)
    got = compiled(x, w, b)
    ref = fn(x, w, b)
    assert got[0].grad_fn.name() == "CompiledFunctionBackward"
    assert got[2].grad_fn is None and not got[2].requires_grad
    pick = {"first": lambda o: o[0].sum(), "second": lambda o: o[1].sum(), "both": lambda o: o[0].sum() + o[1].sum()}
    pick[use](got).backward()
    gw, gb = w.grad.clone(), b.grad.clone()
    w.grad = b.grad = None
    pick[use](ref).backward()
    close(gw, w.grad)
    close(gb, b.grad)


@pytest.mark.parametrize("compiled", [False, True])
def test_a_saved_input_modified_in_place_is_refused_at_backward(compiled):
    x, w, b = inputs()          # x is saved (w's gradient reads it), as in eager
    out = (ember.compile(fn) if compiled else fn)(x, w, b)
    x.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out[0].sum().backward()


def test_second_backward_needs_retain_graph():
    x, w, b = inputs()
    out = ember.compile(fn)(x, w, b)
    out[0].sum().backward(retain_graph=True)
    first = w.grad.clone()
    out[0].sum().backward()
    close(w.grad, first * 2)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out[0].sum().backward()


def test_double_backward_is_refused():
    x, w, b = inputs()
    out = ember.compile(fn)(x, w, b)
    with pytest.raises(RuntimeError, match="double backward"):
        ember.autograd.grad(out[0].sum(), w, create_graph=True)


def test_no_input_requiring_grad_records_nothing():
    x, w, b = inputs()
    compiled = ember.compile(fn)
    compiled(x, w, b)
    out = compiled(x, w.detach(), b.detach())
    assert all(o.grad_fn is None and not o.requires_grad for o in out)
