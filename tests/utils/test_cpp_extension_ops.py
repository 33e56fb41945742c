"""A C++ extension function registered as an ember.library operator (schema, fake function,
derivative): it runs through the dispatcher, the profiler sees it, autograd differentiates it, and
ember.compile calls it as an extern kernel inside the compiled graph. Oracles: PyTorch (values and
gradients of sin(x) + sin(y)) and eager ember."""
import os
import re
import shutil
import warnings

import numpy as np

import pytest
import torch

import ember

from cpp_ext_sources import API, API_FUNCTIONS, SEED_001

pytest.importorskip("pybind11", reason="C++ extensions need pybind11 (the `cpp` extra)")
pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CXX", "c++")) is None,
                                reason="no C++ compiler ($CXX or c++) on this machine")

NS = "cppext_test"


@pytest.fixture(scope="module")
def sin_add_op():
    """ember.ops.cppext_test.sin_add: forward and backward both run C++; `calls` counts forwards."""
    from ember.utils.cpp_extension import load_inline
    ext = load_inline(name="ember_test_api", cpp_sources=[SEED_001, API], functions=API_FUNCTIONS)
    calls = []

    def cpu_kernel(x, y):
        calls.append((tuple(x.shape), x.dtype))
        return ext.sin_add(x, y)

    lib = ember.library.Library(NS, "DEF")
    lib.define("sin_add(Tensor x, Tensor y) -> Tensor")
    lib.impl("sin_add", cpu_kernel, "CPU")
    lib.impl("sin_add", lambda x, y: ember.empty(ember.broadcast_shapes(x.shape, y.shape), dtype=x.dtype,
                                                 device=x.device), "Meta")

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        gx, gy = ext.sin_add_backward(grad, x, y)
        return gx, gy
    ember.library.register_autograd(f"{NS}::sin_add", backward, setup_context=setup_context, lib=lib)
    yield getattr(ember.ops, NS).sin_add, calls
    lib._destroy()


def inputs(*shape, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(shape) for _ in range(2)]
    es = [ember.from_numpy(a.copy()).requires_grad_() for a in arrays]
    ts = [torch.from_numpy(a.copy()).requires_grad_() for a in arrays]
    return es, ts


def test_the_op_runs_through_the_dispatcher_and_the_profiler_sees_it(sin_add_op):
    op, calls = sin_add_op
    (x, y), (tx, ty) = inputs(3, 2)
    from ember.profiler import profile
    with profile() as prof:
        out = op(x.detach(), y.detach())
    np.testing.assert_allclose(out.numpy(), (tx.sin() + ty.sin()).detach().numpy(), rtol=1e-12)
    names = [e.key for e in prof.key_averages()]
    assert f"{NS}::sin_add" in names
    assert "aten::sin" in names            # the C++ body's calls back into ember are ops too
    meta = op(x.to("meta"), y.to("meta"))
    assert meta.is_meta and meta.shape == (3, 2)
    assert str(op.default.schema) == "sin_add(Tensor x, Tensor y) -> Tensor"


def test_backward_through_the_op_matches_torch(sin_add_op):
    op, _ = sin_add_op
    (x, y), (tx, ty) = inputs(4, 3, seed=1)
    out = op(x, y)
    assert type(out.grad_fn).__name__ == "SinAddBackward0"
    (out * out).sum().backward()
    (tx.sin() + ty.sin()).pow(2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-12)


def test_backward_wants_only_the_inputs_that_require_grad(sin_add_op):
    op, _ = sin_add_op
    (x, y), (tx, ty) = inputs(5, seed=2)
    op(x, y.detach()).sum().backward()
    (tx.sin() + ty.detach().sin()).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    assert y.grad is None


def test_inside_ember_compile_the_op_is_an_extern_call_with_no_graph_break(sin_add_op, capsys):
    op, calls = sin_add_op

    def f(a, b):
        return (op(a * 2, b) * a).relu().sum() + getattr(ember.ops, NS).sin_add.default(b, a).exp().mean()
    (x, y), _ = inputs(4, 5, seed=3)
    explanation = ember._dynamo.explain(f)(x, y)
    assert explanation.graph_break_count == 0, [r.reason for r in explanation.break_reasons]
    ember._dynamo.reset()
    compiled = ember.compile(f)
    capsys.readouterr()
    ember._logging.set_logs(output_code=True)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*could not capture")      # never run eagerly
            compiled(x, y)                               # compile (shapes come from the fake function)
    finally:
        ember._logging.set_logs()
    wrappers = capsys.readouterr().err.split("WRAPPER")[1:]
    forward = wrappers[0]           # the forward graph: generated kernels around the extern call
    # called through its binding bound to the CPU kernel (wrapper.bound_extern), named after the op
    assert re.search(rf"\b{NS}_sin_add__default_on_cpu(_\d+)?\(", forward) and "ember_k0" in forward, forward
    del calls[:]
    got = compiled(x, y)
    assert len(calls) == 2 and calls[0] == ((4, 5), ember.float64)    # the C++ kernel ran, once per call site
    got.backward()
    got_grads = x.grad.clone(), y.grad.clone()
    x.grad = y.grad = None
    want = f(x, y)
    want.backward()
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)
    np.testing.assert_allclose(got_grads[0].numpy(), x.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(got_grads[1].numpy(), y.grad.numpy(), rtol=1e-12)


def test_compiled_graph_without_grad_and_on_a_new_shape(sin_add_op):
    op, calls = sin_add_op
    compiled = ember.compile(lambda a, b: op(a, b).tanh() + 1)
    for shape in ((3,), (2, 6)):
        (x, y), (tx, ty) = inputs(*shape, seed=4)
        with ember.no_grad(), warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*could not capture")
            got = compiled(x, y)
        np.testing.assert_allclose(got.numpy(), ((tx.sin() + ty.sin()).tanh() + 1).detach().numpy(), rtol=1e-12)
    assert calls[-1][0] == (2, 6)


def test_an_op_without_a_fake_function_runs_eagerly_under_compile():
    """No Meta kernel: capture cannot know the output's shape, so the call is a graph break (never a
    guessed shape); the values still equal eager's."""
    from ember.utils.cpp_extension import load_inline
    ext = load_inline(name="ember_test_api", cpp_sources=[SEED_001, API], functions=API_FUNCTIONS)
    lib = ember.library.Library("cppext_nofake", "DEF")
    try:
        lib.define("sin_add(Tensor x, Tensor y) -> Tensor")
        lib.impl("sin_add", ext.sin_add, "CPU")
        op = ember.ops.cppext_nofake.sin_add

        def f(a, b):
            return op(a + 1, b).exp()
        (x, y), _ = inputs(3, seed=5)
        x, y = x.detach(), y.detach()
        explanation = ember._dynamo.explain(f)(x, y)
        assert explanation.graph_break_count == 1
        assert "cppext_nofake" in explanation.break_reasons[0].reason
        np.testing.assert_allclose(ember.compile(f)(x, y).numpy(), f(x, y).numpy(), rtol=1e-12)
    finally:
        lib._destroy()


def test_register_autograd_rejects_a_wrong_number_of_gradients():
    lib = ember.library.Library("cppext_bad", "DEF")
    try:
        lib.define("twice(Tensor x, float k) -> Tensor")
        lib.impl("twice", lambda x, k: x * k, "CPU")
        ember.library.register_autograd("cppext_bad::twice", lambda ctx, g: g * 2, lib=lib)
        x = ember.ones(2, requires_grad=True)
        out = ember.ops.cppext_bad.twice(x, 2.0)
        with pytest.raises(RuntimeError, match="backward returned 1 gradients, expected 2"):
            out.sum().backward()
    finally:
        lib._destroy()
