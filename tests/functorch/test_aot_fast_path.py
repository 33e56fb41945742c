"""The steady-state call of AOT-compiled programs (_aot_fast_path): the generated spec matcher must
agree with the cache key it replaces on every kind of difference, and the grad-mode switch must
behave like no_grad / enable_grad (restored after an exception too)."""
import numpy as np
import pytest

import ember
from ember._functorch._aot_fast_path import call_with_grad_mode, spec_matcher
from ember._functorch.aot_autograd import _Cached, aot_function
from ember.nn import Parameter


def key_of(args):
    return _Cached(None, None, None, None, None).key(args)


def variants(base):
    """Argument lists that differ from `base` (two tensors) in one respect each."""
    x, y = base
    yield "dtype", [x, y.double()]
    yield "shape", [x, y.reshape(3, 2)]
    yield "strides", [x, y.t().contiguous().t()]
    yield "transposed", [x, y.t()]
    yield "requires_grad", [x, y.detach().requires_grad_()]
    yield "subclass", [x, Parameter(y.detach())]
    yield "one fewer", [x]
    yield "one more", [x, y, y]
    yield "inference tensor", [x, _inference_copy(y)]
    yield "broadcast view", [x, ember.ones(1, 3).expand(2, 3)]
    yield "0-d", [x, ember.tensor(1.0)]


def _inference_copy(t):
    with ember.inference_mode():
        return t.clone()


@pytest.fixture
def base():
    return [ember.randn(2, 3), ember.randn(2, 3)]


def test_matcher_accepts_equal_specs(base):
    match = spec_matcher(key_of(base))
    assert match(base) and match(tuple(base))
    assert match([ember.randn(2, 3), ember.zeros(2, 3)])      # other tensors, same specs


@pytest.mark.parametrize("what", [name for name, _ in variants([ember.zeros(2, 3), ember.zeros(2, 3)])])
def test_matcher_agrees_with_the_key(base, what):
    args = dict(variants(base))[what]
    match = spec_matcher(key_of(base))
    assert match(args) == (key_of(args) == key_of(base))
    assert not match(args)
    assert spec_matcher(key_of(args))(args)


def test_matcher_checks_grad_mode(base):
    match = spec_matcher(key_of(base))
    with ember.no_grad():
        assert not match(base)
        assert spec_matcher(key_of(base))(base)


def test_matcher_rejects_non_tensors(base):
    match = spec_matcher(key_of(base))
    assert not match([base[0], np.zeros((2, 3), np.float32)])
    assert not match([base[0], 1.0])


def test_compiled_function_recompiles_on_each_difference(base):
    """End to end: a program called with each variant computes what eager does (the fast path never
    reuses a graph compiled for other specs)."""
    calls = []

    def compiler(gm, example_inputs):
        calls.append([tuple(t.shape) for t in example_inputs])
        return gm

    def fn(a, b):
        return (a * 2 + b).sum(-1)
    f = aot_function(fn, compiler)
    np.testing.assert_allclose(f(*base).detach().numpy(), fn(*base).detach().numpy(), rtol=1e-6)
    for what, args in variants(base):
        if len(args) != 2 or what in ("shape", "transposed"):      # eager refuses these shapes
            continue
        got, want = f(*args), fn(*args)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6, err_msg=what)
        assert got.requires_grad == want.requires_grad, what
        np.testing.assert_allclose(f(*base).detach().numpy(), fn(*base).detach().numpy(), rtol=1e-6)
    with ember.no_grad():
        assert not f(base[0], base[1].detach().requires_grad_()).requires_grad


@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize("outer", [True, False])
def test_call_with_grad_mode(enabled, outer):
    seen = []
    with ember.set_grad_enabled(outer):
        call_with_grad_mode(enabled, lambda: seen.append(ember.is_grad_enabled()), ())
        assert ember.is_grad_enabled() is outer

        def boom():
            raise ValueError("inside")
        with pytest.raises(ValueError):
            call_with_grad_mode(enabled, boom, ())
        assert ember.is_grad_enabled() is outer
    assert seen == [enabled]



def test_inference_graphs_switch_grad_mode_only_where_a_value_requires_grad():
    """An inference graph whose traced values never require grad runs without the no_grad switch
    (nothing could record); one reading a tensor that requires grad keeps it, so the eager forward
    the aot_eager-style compiler returns records nothing, as before."""
    w = ember.randn(3).requires_grad_()
    graphs = []

    def compiler(gm, example_inputs):
        return gm

    plain = aot_function(lambda x: (x * 2).exp(), compiler)
    with_w = aot_function(lambda x: x * w, compiler)
    x = ember.randn(3)
    for f, fn, switch in ((plain, lambda x: (x * 2).exp(), False), (with_w, lambda x: x * w, True)):
        got = f(x)
        graphs.append(f.compiled_for((x,)))
        assert graphs[-1].function is None and graphs[-1].inference_grad_switch is switch
        np.testing.assert_allclose(got.detach().numpy(), fn(x).detach().numpy(), rtol=1e-6)
        assert not got.requires_grad and got.grad_fn is None
