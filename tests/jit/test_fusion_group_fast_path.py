"""The fusion group's fast path (ember/jit/executor/fused_kernel.py `fast_path`): plans call a
generated function that checks the inputs' exact look in line and launches the compiled kernel,
and hands every other input to the checked FusedKernel call. Oracle: ember eager on the same inputs
(and torch for the values)."""
from __future__ import annotations

import operator
import types

import numpy as np
import pytest
import torch

import ember
from ember.jit.executor import config
from ember.jit.executor.fused_kernel import fast_path
from ember.jit.passes.fuse_groups import fusion_groups

pytestmark = pytest.mark.skipif(not config.fusion_enabled, reason="fusion is off")


def rnn_step(a, c, b):
    return ember.tanh(a + c + b)


def _kernel_of(fn, *args):
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__)
    sf = ember.jit.script(copy)
    sf(*args), sf(*args)                       # profile, then the optimised plan compiles the group
    (node,) = fusion_groups(getattr(sf.graph_for(*args), "fx_graph", sf.graph_for(*args)))
    return sf, node.meta["kernel"]


def _arr(seed, *shape, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _inputs(dtype=np.float32):
    return [ember.from_numpy(_arr(i, *s, dtype=dtype)) for i, s in enumerate([(1, 4), (1, 4), (4,)])]


def _close(got, want):
    assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape)
    assert got.requires_grad == want.requires_grad
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-6)


def test_plans_call_the_fast_path_and_it_equals_eager_and_torch():
    args = _inputs()
    sf, kernel = _kernel_of(rnn_step, *args)
    assert kernel.fast is not kernel
    plan = next(iter(sf.get_debug_state()["plans"].values()))
    assert ".fast(" in plan.source
    before = kernel.calls
    for seed in range(3):
        xs = [ember.from_numpy(_arr(seed + 10 * i, *t.shape)) for i, t in enumerate(args)]
        got = sf(*xs)
        _close(got, rnn_step(*xs))
        want = torch.tanh(sum((torch.from_numpy(x.numpy()) for x in xs[1:]), torch.from_numpy(xs[0].numpy())))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    assert kernel.calls == before + 3                 # the debug state still counts kernel runs


@pytest.mark.parametrize("look", ["transposed", "float64", "shape", "offset_view", "requires_grad"])
def test_inputs_of_another_look_take_the_checked_call(look):
    args = _inputs()
    _, kernel = _kernel_of(rnn_step, *args)
    a, c, b = args
    if look == "transposed":       # same shape (4, 4), other strides than the compiled (4, 4)
        sq = [ember.from_numpy(_arr(i, 4, 4)) for i in range(3)]
        _, kernel = _kernel_of(rnn_step, *sq)
        a, c, b = sq[0].t(), sq[1], sq[2]
    elif look == "float64":
        a, c, b = (t.double() for t in args)
    elif look == "shape":
        a, c = ember.from_numpy(_arr(5, 3, 4)), ember.from_numpy(_arr(6, 3, 4))
    elif look == "offset_view":    # same shape and strides, another element offset: still exact
        big = ember.from_numpy(_arr(7, 3, 4))
        a = big[1:2]
    elif look == "requires_grad":
        a = ember.from_numpy(_arr(8, 1, 4)).requires_grad_()
    got = kernel.fast(a, c, b)
    want = rnn_step(a, c, b)
    _close(got, want)
    if look == "requires_grad":
        got.sum().backward()
        g = a.grad.clone()
        a.grad = None
        want.sum().backward()
        np.testing.assert_allclose(g.numpy(), a.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_a_dispatch_mode_sees_the_ops_through_the_fast_path():
    args = _inputs()
    _, kernel = _kernel_of(rnn_step, *args)
    with ember.profiler.profile() as prof:
        out = kernel.fast(*args)
    _close(out, rnn_step(*args))
    names = " ".join(str(getattr(e, "name", "")) for e in prof.events())
    assert "tanh" in names and "add" in names


def test_a_wrapper_with_other_steps_gets_no_fast_path():
    from ember.fx import Graph, GraphModule
    args = _inputs()
    _, kernel = _kernel_of(rnn_step, *args)
    g = Graph()
    x = g.placeholder("arg0")
    g.output((g.call_function(operator.neg, (x,)),))
    assert fast_path(kernel, GraphModule({}, g)) is None
    assert fast_path(kernel, None) is None


# ---- 2-D matmuls inside a group (fused_kernel.ARRAY_EXTERNS): run on the arrays by the fast path ----
def rnn_cell(x, h, w, u, b):
    return ember.tanh(x @ w + h @ u + b)


def mm_and_epilogue(a, w, b):
    y = a @ w
    return y, ember.relu(y + b) * 2.0


_CELL = [(1, 4), (1, 4), (4, 4), (4, 4), (4,)]     # x, h, w, u, b


def _cell_inputs(seed=0, dtype=np.float32, transpose_w=False):
    xs = [ember.from_numpy(_arr(seed + i, *s, dtype=dtype)) for i, s in enumerate(_CELL)]
    if transpose_w:                     # a non-contiguous weight: the same dot eager calls handles it
        xs[2] = xs[2].t()
    return xs


def _in_group_order(xs):
    """The cell's (x, h, w, u, b) as the group takes them: in first-use order, x @ w before h @ u."""
    x, h, w, u, b = xs
    return x, w, h, u, b


def _torch_cell(xs):
    x, h, w, u, b = (torch.from_numpy(t.numpy()) for t in xs)
    return torch.tanh(x @ w + h @ u + b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("transpose_w", [False, True])
def test_an_rnn_cell_is_one_group_whose_fast_path_runs_the_matmuls(dtype, transpose_w):
    sf, kernel = _kernel_of(rnn_cell, *_cell_inputs(dtype=dtype, transpose_w=transpose_w))
    assert kernel.fast is not kernel
    members = [getattr(n.target, "__name__", "") for n in kernel.subgraph.nodes if n.op == "call_function"]
    assert members.count("matmul") == 2 and "tanh" in members
    before = kernel.calls
    for seed in range(3):
        xs = _cell_inputs(10 * seed + 1, dtype, transpose_w)
        got = sf(*xs)
        _close(got, rnn_cell(*xs))
        np.testing.assert_allclose(got.numpy(), _torch_cell(xs).numpy(), rtol=1e-5, atol=1e-6)
    assert kernel.calls == before + 3


@pytest.mark.parametrize("look", ["transposed", "shape", "float64", "requires_grad", "batched"])
def test_matmul_inputs_of_another_look_take_the_checked_call(look):
    _, kernel = _kernel_of(rnn_cell, *_cell_inputs())
    xs = _cell_inputs(5)
    if look == "transposed":
        xs[3] = xs[3].t()
    elif look == "shape":
        xs[0], xs[1] = ember.from_numpy(_arr(7, 3, 4)), ember.from_numpy(_arr(8, 3, 4))
    elif look == "float64":
        xs = [t.double() for t in xs]
    elif look == "requires_grad":
        xs[2].requires_grad_()
    elif look == "batched":             # a 3-D input: eager's batched matmul, not the 2-D dot
        xs[0] = ember.from_numpy(_arr(9, 2, 1, 4))
    got, want = kernel.fast(*_in_group_order(xs)), rnn_cell(*xs)
    _close(got, want)
    if look == "requires_grad":
        got.sum().backward()
        g = xs[2].grad.clone()
        xs[2].grad = None
        want.sum().backward()
        np.testing.assert_allclose(g.numpy(), xs[2].grad.numpy(), rtol=1e-5, atol=1e-6)


def test_a_matmul_result_is_a_group_output_of_its_own():
    args = [ember.from_numpy(_arr(i, *s)) for i, s in enumerate([(3, 5), (5, 4), (4,)])]
    sf, kernel = _kernel_of(mm_and_epilogue, *args)
    assert kernel.fast is not kernel
    y, z = sf(*args)
    want_y, want_z = mm_and_epilogue(*args)
    np.testing.assert_array_equal(y.numpy(), want_y.numpy())      # the same dot eager calls
    _close(z, want_z)
    y.add_(1.0)                                                   # a fresh tensor, no alias of the inputs
    np.testing.assert_array_equal(args[0].numpy(), _arr(0, 3, 5))
    np.testing.assert_array_equal(args[1].numpy(), _arr(1, 5, 4))


def test_an_integer_matmul_stays_outside_the_group():
    a, w = (ember.from_numpy((_arr(i, *s) * 4).astype(np.int64)) for i, s in enumerate([(3, 5), (5, 4)]))
    b = ember.from_numpy(_arr(2, 4))
    sf, kernel = _kernel_of(mm_and_epilogue, a, w, b)
    members = [getattr(n.target, "__name__", "") for n in kernel.subgraph.nodes if n.op == "call_function"]
    assert "matmul" not in members                                # int64 is no BLAS dtype: eager's other path
    for got, want in zip(sf(a, w, b), mm_and_epilogue(a, w, b)):
        _close(got, want)


def test_a_dispatch_mode_sees_the_matmuls():
    args = _cell_inputs()
    _, kernel = _kernel_of(rnn_cell, *args)
    with ember.profiler.profile() as prof:
        out = kernel.fast(*_in_group_order(args))
    _close(out, rnn_cell(*args))
    names = [str(getattr(e, "name", "")) for e in prof.events()]
    assert sum(n in ("aten::matmul", "aten::mm") for n in names) >= 2 and "aten::tanh" in names


def test_a_large_output_kept_by_the_caller_is_never_overwritten():
    """A group output of >= config.output_reuse_min_bytes reuses the last call's array only when
    it is dead (ember/_inductor/wrapper.Alloc): the fast path takes it through Alloc.array too."""
    shape = [(512, 512), (512, 512), (512,)]
    big = [ember.from_numpy(_arr(i, *s)) for i, s in enumerate(shape)]
    sf, kernel = _kernel_of(rnn_step, *big)
    assert kernel.fast is not kernel
    kept, wants = [], []
    for seed in range(3):
        xs = [ember.from_numpy(_arr(seed + 10 * i, *s)) for i, s in enumerate(shape)]
        got = sf(*xs)
        _close(got, rnn_step(*xs))
        kept.append(got)
        wants.append(got.numpy().copy())
    for got, want in zip(kept, wants):
        np.testing.assert_array_equal(got.numpy(), want)
    del got
    ptr = kept.pop().data_ptr()
    assert sf(*big).data_ptr() == ptr                 # dead now: its memory came back
