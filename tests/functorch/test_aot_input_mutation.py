"""Programs that write tensors in place, compiled by AOT autograd (aot_function with either
partitioner, ember.compile(backend=aot_autograd(...))): the graphs are functionalised (no mutating
op, by the op-properties table), the written inputs get their new values after the call, outputs
that alias inputs alias them, gradients are eager's. Oracles: eager ember on the same program, and
PyTorch (eager and torch._functorch's aot_function) where inputs that require grad are written.
What cannot be exact (metadata mutation, a write to an input another input aliases, a backward
eager itself refuses) runs eagerly, with eager's values, side effects and exceptions."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from functorch.compile import aot_function as torch_aot_function
from functorch.compile import nop as torch_nop

import ember
from ember._dynamo.backends.common import aot_autograd
from ember._functorch.aot_autograd import aot_function
from ember._functorch.partitioners import default_partition, min_cut_rematerialization_partition
from ember.ops import properties


class Capture:
    """fw/bw compilers that keep every graph they get."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm


def _mutating_ops(gm):
    return [str(n.target) for n in gm.graph.nodes
            if n.op == "call_function" and hasattr(n.target, "schema") and properties.of(n.target).mutates]


def _compile(how, fn, capture):
    if how == "compile":
        return ember.compile(fn, backend=aot_autograd(fw_compiler=capture, bw_compiler=capture))
    partition = {"default": default_partition, "min_cut": min_cut_rematerialization_partition}[how]
    return aot_function(fn, capture, capture, partition_fn=partition)


def _view_before_write(x, w):
    v = x[0]
    x.mul_(2)
    return v, (x * w).sum()


def _write_intermediate_view(x, w):
    m = x * 2
    m[0].add_(1)
    m.view(-1)[-2:].mul_(3)
    return (m * w).sum()


def _write_grad_intermediate(x, w):
    m = x * w
    m.add_(1)
    return (m * m).sum()


def _two_writes(x, w):
    x.mul_(0.9).add_(w.detach() * 0.1)      # a running average, as BatchNorm's stats
    x.add_(1)
    return (x * w).sum()


PROGRAMS = {
    "add_": lambda x, w: x.add_(1) * w,
    "x[0].mul_": lambda x, w: (x[0].mul_(2), (x * w).sum())[1],
    "view(-1).add_": lambda x, w: (x.view(-1).add_(1), x.sin() * w)[1],
    "setitem": lambda x, w: (x.__setitem__(1, 0.5), x * w)[1],
    "out=": lambda x, w: (ember.sin(x * 2, out=x), x * w)[1],
    "returns the input": lambda x, w: (x.add_(1), (x * w).sum()),
    "view taken before the write": _view_before_write,
    "written, then used by the backward": lambda x, w: (x.mul_(2), (x.cos() * w).sum())[1],
    "intermediate's view": _write_intermediate_view,
    "intermediate that requires grad": _write_grad_intermediate,
    "two writes": _two_writes,
}


def _flat(out):
    return list(out) if isinstance(out, tuple) else [out]


def _loss(outs):
    return sum(o.sum() for o in outs if o.requires_grad)


@pytest.mark.parametrize("how", ["default", "min_cut", "compile"])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_compiles_with_eagers_values_and_side_effects(name, how, capsys):
    fn = PROGRAMS[name]
    rng = np.random.default_rng(0)
    x0, w0 = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    capture = Capture()
    compiled = _compile(how, fn, capture)
    results = []
    for run in (fn, compiled):
        x, w = ember.from_numpy(x0.copy()), ember.from_numpy(w0.copy()).requires_grad_()
        outs = _flat(run(x, w))
        _loss(outs).backward()
        results.append((x, w, outs))
    (ex, ew, e_outs), (cx, cw, c_outs) = results
    np.testing.assert_allclose(cx.numpy(), ex.numpy(), rtol=1e-12)          # the side effect, once
    np.testing.assert_allclose(cw.grad.numpy(), ew.grad.numpy(), rtol=1e-12)
    for e, c in zip(e_outs, c_outs):
        np.testing.assert_allclose(c.detach().numpy(), e.detach().numpy(), rtol=1e-12)
    if name == "returns the input":
        assert c_outs[0] is cx
    if name == "view taken before the write":      # still a view of x, as in eager
        c_outs[0].fill_(7.0)
        assert (cx.numpy()[0] == 7.0).all()
    assert len(capture.graphs) == 2, "the program ran eagerly"
    for gm in capture.graphs:
        assert _mutating_ops(gm) == [], gm.code


def test_the_write_back_is_the_only_write():
    """Without write-back x would keep its value: the epilogue, not the graph, writes it."""
    capture = Capture()
    f = aot_function(lambda x: x.add_(1) * 2, capture)
    x = ember.zeros(3)
    out = f(x)
    (gm,) = capture.graphs
    assert _mutating_ops(gm) == []
    fresh = ember.zeros(3)
    graph_outs = gm(fresh)
    np.testing.assert_array_equal(fresh.numpy(), np.zeros(3))     # the graph itself writes nothing
    np.testing.assert_array_equal(graph_outs[0].numpy(), np.ones(3))   # the new value leads the outputs
    np.testing.assert_array_equal(x.numpy(), np.ones(3))
    np.testing.assert_array_equal(out.numpy(), np.full(3, 2.0))


def test_mutation_outputs_are_forward_outputs_not_saved_activations():
    """x's new value is a forward output; the backward of (w * 2).sum() needs nothing of it, and
    min-cut saves nothing it does not need."""
    for partition in (default_partition, min_cut_rematerialization_partition):
        fw = Capture()
        f = aot_function(lambda x, w: (x.add_(1), (w.sin() * 2).sum())[1], fw, Capture(), partition_fn=partition)
        x, w = ember.zeros(3), ember.randn(3, requires_grad=True)
        f(x, w).backward()
        np.testing.assert_array_equal(x.numpy(), np.ones(3))
        np.testing.assert_allclose(w.grad.numpy(), 2 * np.cos(w.detach().numpy()), rtol=1e-6)
        (gm,) = fw.graphs
        outputs = [getattr(o, "name", o) for o in list(gm.graph.nodes)[-1].args[0]]
        assert outputs[0] == "add" and "add" not in outputs[2:], outputs


def test_saved_input_is_not_changed_by_the_write_back():
    """Min-cut may save the input itself and recompute x * 2 in the backward: the saved input must
    be the value the forward read, not the written-back one."""
    def fn(x, w):
        x.mul_(2)
        return (x * w).sum()
    for partition in (default_partition, min_cut_rematerialization_partition):
        f = aot_function(fn, Capture(), Capture(), partition_fn=partition)
        x, w = ember.ones(3), ember.ones(3, requires_grad=True)
        f(x, w).backward()
        np.testing.assert_array_equal(w.grad.numpy(), np.full(3, 2.0))
        np.testing.assert_array_equal(x.numpy(), np.full(3, 2.0))


def _grad_programs(lib):
    def scale(x):
        x.mul_(2)
        return x * 3

    def update_under_no_grad(x):
        with lib.no_grad():
            x.add_(1)
        return x * 2
    return scale, update_under_no_grad


def test_written_non_leaf_that_requires_grad_matches_torch():
    """x = a * 1 (not a leaf) written in the program: eager rebases x's history, so a's gradient
    flows through the write and through the output, as torch's aot_function gives."""
    results = []
    for lib, compile_fn in ((torch, lambda f: torch_aot_function(f, torch_nop)),
                            (ember, lambda f: aot_function(f, Capture()))):
        scale, _ = _grad_programs(lib)
        for run in (scale, compile_fn(scale)):
            a = lib.tensor([1.0, -2.0, 0.5], dtype=lib.float64, requires_grad=True)
            x = a * 1
            out = run(x)
            assert x.grad_fn is not None
            (out.sum() + (x * x).sum()).backward()
            results.append((out.detach().numpy(), x.detach().numpy(), a.grad.numpy()))
    for got in results[1:]:
        for g, e in zip(got, results[0]):
            np.testing.assert_allclose(g, e, rtol=1e-12)


def test_written_leaf_that_requires_grad_raises_as_eager():
    """Eager (torch's and ember's) refuses the write; so does the compiled program, before writing
    anything. (torch._functorch's aot_function alone lets it through, writing the leaf behind
    autograd's back and returning a gradient eager never gives: ember follows eager.)"""
    scale, _ = _grad_programs(ember)
    f = aot_function(scale, Capture())
    t_scale, _ = _grad_programs(torch)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        t_scale(torch.ones(3, requires_grad=True))
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        scale(ember.ones(3, requires_grad=True))
    leaf = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        f(leaf)
    np.testing.assert_array_equal(leaf.detach().numpy(), np.ones(3))      # nothing written


def test_leaf_written_under_no_grad_matches_torch():
    """A parameter updated inside no_grad (an optimiser step in the program): written back under
    no_grad, still a leaf, and its gradient is the output's."""
    results = []
    for lib, compile_fn in ((torch, lambda f: torch_aot_function(f, torch_nop)),
                            (ember, lambda f: aot_function(f, Capture()))):
        _, update = _grad_programs(lib)
        for run in (update, compile_fn(update)):
            p = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
            out = run(p)
            out.sum().backward()
            assert p.grad_fn is None
            results.append((out.detach().numpy(), p.detach().numpy(), p.grad.numpy()))
    for got in results[1:]:
        for g, e in zip(got, results[0]):
            np.testing.assert_allclose(g, e, rtol=1e-12)


def test_write_under_no_grad_call_of_a_leaf_that_requires_grad():
    """The whole call under no_grad: eager allows writing the leaf; so does the compiled program."""
    scale, _ = _grad_programs(ember)
    f = aot_function(scale, Capture())
    p = ember.ones(3, requires_grad=True)
    with ember.no_grad():
        out = f(p)
    np.testing.assert_array_equal(p.detach().numpy(), np.full(3, 2.0))
    np.testing.assert_array_equal(out.numpy(), np.full(3, 6.0))
    assert p.grad_fn is None and not out.requires_grad


def test_backward_eager_refuses_is_refused_at_backward():
    """y saves x, then x is written: eager's backward raises; the compiled program runs eagerly
    (logged), writes x and raises at .backward() as eager and torch do."""
    def fn(x, w):
        y = x * w
        x.add_(1)
        return y.sum()
    f = aot_function(fn, Capture())
    x, w = ember.ones(3), ember.ones(3, requires_grad=True)
    loss = f(x, w)
    np.testing.assert_array_equal(x.numpy(), np.full(3, 2.0))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    assert "backward failed" in next(iter(f.graphs.values())).fallback_reason


def _view_then_t_(x):
    v = x[0]
    x.t_()
    x.mul_(2)
    return v


MORE_WRITES = {      # no input requires grad: the inference graph
    "non-contiguous input": (lambda x: (x.add_(1), x * 2)[1], lambda: [ember.arange(12.0).view(3, 4)[:, 1]]),
    "integer input": (lambda x: (x.mul_(3), x + 1)[1], lambda: [ember.arange(6).view(2, 3)]),
    "add(out=x)": (lambda x, y: (ember.add(x, y, out=x), x * 2)[1], lambda: [ember.zeros(3), ember.ones(3)]),
    "through a transpose": (lambda x: (x.t()[0].add_(5), x.sum())[1], lambda: [ember.arange(6.0).view(2, 3)]),
    "clamp_": (lambda x: x.clamp_(min=0.5).exp(), lambda: [ember.linspace(-1, 1, 5)]),
    "two inputs, each other's values": (lambda x, y: (x.add_(y), y.mul_(x), x * y)[2],
                                        lambda: [ember.linspace(-1, 1, 3), ember.linspace(2, 0, 3)]),
    "returns the written view": (lambda x: x.view(-1)[1:].mul_(2), lambda: [ember.arange(6.0).view(2, 3)]),
    "t_": (lambda x: x.t_() * 2, lambda: [ember.arange(6.0).view(2, 3)]),
    "t_ then a write, a view returned": (lambda x: (x.t_(), x.add_(1), x[0])[2], lambda: [ember.arange(6.0).view(2, 3)]),
    "unsqueeze_, the input returned": (lambda x: (x.unsqueeze_(0), x)[1], lambda: [ember.arange(3.0)]),
    "view taken before t_": (_view_then_t_, lambda: [ember.arange(6.0).view(2, 3)]),
}


@pytest.mark.parametrize("name", list(MORE_WRITES))
def test_more_writes_compile_with_eagers_values_layout_and_aliasing(name):
    fn, make = MORE_WRITES[name]
    capture = Capture()
    f = aot_function(fn, capture)
    eager_args, compiled_args = make(), make()
    expected, got = fn(*eager_args), f(*compiled_args)
    assert next(iter(f.graphs.values())).fallback_reason is None
    assert all(_mutating_ops(gm) == [] for gm in capture.graphs)
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    assert got.dtype == expected.dtype
    for e, c in zip(eager_args, compiled_args):
        assert (list(c.shape), c.stride()) == (list(e.shape), e.stride())
        np.testing.assert_array_equal(c.numpy(), e.numpy())
    # an output that is an input (or a view of one) is that (a view of that) tensor, as in eager
    assert [got is a for a in compiled_args] == [expected is a for a in eager_args]
    alias_in_eager = [np.shares_memory(expected.numpy(), a.numpy()) for a in eager_args]
    assert [np.shares_memory(got.numpy(), a.numpy()) for a in compiled_args] == alias_in_eager


def test_noncontiguous_input_writes_its_base():
    base = ember.arange(12.0).view(3, 4)
    aot_function(lambda v: (v.add_(1), v * 2)[1], Capture())(base[:, 1])
    np.testing.assert_array_equal(base.numpy()[:, 1], [2.0, 6.0, 10.0])
    np.testing.assert_array_equal(base.numpy()[:, 0], [0.0, 4.0, 8.0])


@pytest.mark.parametrize("case", ["aliased inputs", "t_ of a tensor that requires grad"])
def test_what_remains_eager(case):
    """A write to an input another input aliases (decided per call) and a metadata change of an
    input that requires grad still run eagerly, with eager's values and side effects."""
    if case == "aliased inputs":
        fn, make = (lambda x, y: (x.add_(1), y * 2)[1]), (lambda: [ember.zeros(3)] * 2)
    else:
        fn, make = (lambda x: x.t_() * 2), (lambda: [ember.arange(6.0).view(2, 3).requires_grad_() * 1])
    f = aot_function(fn, Capture())
    eager_args, compiled_args = make(), make()
    expected, got = fn(*eager_args), f(*compiled_args)
    np.testing.assert_array_equal(got.detach().numpy(), expected.detach().numpy())
    for e, c in zip(eager_args, compiled_args):
        assert list(c.shape) == list(e.shape)
        np.testing.assert_array_equal(c.detach().numpy(), e.detach().numpy())
    if case != "aliased inputs":
        assert "metadata" in next(iter(f.graphs.values())).fallback_reason


def test_batchnorm_train_step_under_aot_function_matches_torch():
    """One train-mode BatchNorm2d call via aot_module: output, running stats, step count."""
    from ember._functorch.aot_autograd import aot_module
    rng = np.random.default_rng(1)
    x0 = rng.standard_normal((4, 3, 5, 5))
    t_bn, e_bn = torch.nn.BatchNorm2d(3).double(), ember.nn.BatchNorm2d(3).double()
    capture = Capture()
    compiled = aot_module(e_bn, capture)
    for _ in range(3):
        t_out = t_bn(torch.from_numpy(x0))
        e_out = compiled(ember.from_numpy(x0))
        np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    for k, v in t_bn.state_dict().items():
        np.testing.assert_allclose(e_bn.state_dict()[k].numpy(), v.numpy(), rtol=1e-10, err_msg=k)
    assert capture.graphs and all(_mutating_ops(gm) == [] for gm in capture.graphs)


def test_data_dependent_python_after_a_write_runs_eagerly():
    """The functionalised trace refuses data-dependent Python on its wrappers too."""
    def fn(x):
        x.add_(1)
        return x * 2 if x.sum() > 0 else x * 3
    f = aot_function(fn, Capture())
    for sign in (1.0, -3.0):
        x, ex = ember.full((3,), sign), ember.full((3,), sign)
        np.testing.assert_array_equal(f(x).numpy(), fn(ex).numpy())
        np.testing.assert_array_equal(x.numpy(), ex.numpy())
    assert "DataDependentTrace" in next(iter(f.graphs.values())).fallback_reason
