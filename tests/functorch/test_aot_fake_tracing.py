"""AOT autograd traces on fake tensors: no real computation while the joint graph is made, the
same graphs and values as eager, and a real-input trace where a fake trace cannot be made."""
from __future__ import annotations

import contextlib
import os
import sys

import numpy as np
import pytest

import ember
from ember._core import dispatch
from ember._core.dispatch import DispatchKey
from ember._functorch.aot_autograd import aot_function, aot_module_simplified
from ember._functorch.fake_tensor import FakeTensor
from ember.ops import properties
from ember._functorch.partitioners import default_partition, min_cut_rematerialization_partition

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from test_aot_training import gpt_block  # noqa: E402
from test_training import mlp  # noqa: E402


@contextlib.contextmanager
def cpu_kernel_spy():
    """Records calls of every op's CPU kernel that computes (views, such as the detach of a graph
    constant, only take metadata) within the block."""
    calls = []
    patched = []
    for op in list(dispatch._all_ops):
        kernel = op.kernels.get(DispatchKey.CPU)
        if kernel is None or kernel is dispatch.FALLTHROUGH or properties.of_op(op).aliases_args:
            continue

        def spy(*args, _kernel=kernel, _op=op):
            calls.append(_op.name)
            return _kernel(*args)
        patched.append((op, kernel))
        op.register(DispatchKey.CPU, spy)
    try:
        yield calls
    finally:
        for op, kernel in patched:
            op.register(DispatchKey.CPU, kernel)


def _graphs():
    graphs = []

    def compiler(gm, example_inputs):
        graphs.append(gm)
        return gm.forward
    return graphs, compiler


MODELS = {"mlp": (lambda: mlp(ember.nn).double(), (32, 64)),
          "gpt_block": (lambda: gpt_block(ember, 0.0).double(), (4, 8, 16)),
          "gpt_block_dropout": (lambda: gpt_block(ember, 0.1).double(), (4, 8, 16))}


@pytest.mark.parametrize("partition", [default_partition, min_cut_rematerialization_partition])
@pytest.mark.parametrize("name", list(MODELS))
def test_tracing_computes_nothing_and_runs_as_eager(name, partition):
    build, shape = MODELS[name]
    ember.manual_seed(0)
    model = build()
    x = ember.randn(*shape, dtype=ember.float64)
    graphs, compiler = _graphs()
    rng = ember.get_rng_state()
    with cpu_kernel_spy() as calls:
        run = aot_module_simplified(model, [x], fw_compiler=compiler, bw_compiler=compiler, partition_fn=partition)
    assert calls == []
    assert run.fallback_reason is None and run.fake_trace_failure is None
    assert np.array_equal(ember.get_rng_state().numpy(), rng.numpy())        # tracing drew no numbers
    for gm in graphs:        # node.meta["val"] is the meta form, never a fake
        for node in gm.graph.nodes:
            val = node.meta.get("val")
            for v in val if isinstance(val, (list, tuple)) else [val]:
                assert not isinstance(v, FakeTensor)
                assert v is None or not isinstance(v, ember.Tensor) or v.device.type == "meta"
    # the compiled graphs give eager's values and gradients (and dropout eager's masks under a seed)
    ember.manual_seed(3)
    out = run(x)
    out = out[0] if isinstance(out, (list, tuple)) else out
    out.square().sum().backward()
    compiled_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    ember.manual_seed(3)
    expected = model(x)
    expected.square().sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-12, atol=1e-12)
    for g, p in zip(compiled_grads, model.parameters()):
        np.testing.assert_allclose(g.numpy(), p.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_a_huge_expanded_input_traces_without_its_memory():
    """2**31 rows: a trace that computed anything would need ~0.5 TB."""
    model = mlp(ember.nn)
    x = ember.randn(1, 64).expand(2 ** 31, 64)
    graphs, compiler = _graphs()
    run = aot_module_simplified(model, [x], fw_compiler=compiler, bw_compiler=compiler)
    assert run.fallback_reason is None and run.fake_trace_failure is None
    assert [tuple(n.meta["val"].shape) for n in graphs[0].graph.nodes if n.op == "placeholder"][-1] == (2 ** 31, 64)


@pytest.mark.parametrize("mutation", ["add_", "view", "batchnorm"])
def test_input_mutation_is_functionalised_on_fakes(mutation):
    """The functionalised re-trace runs on fakes too (FunctionalTensor wrapping FakeTensor): nothing
    computed while tracing, eager's values and side effects at run time."""
    if mutation == "batchnorm":
        bn = ember.nn.BatchNorm1d(4).double().train()
        fn, args = (lambda x: bn(x) * 2), [ember.randn(8, 4, dtype=ember.float64)]
    else:
        def fn(x, w):
            x.add_(1) if mutation == "add_" else x[1:].mul_(2)
            return x * w
        args = [ember.randn(3, 4, dtype=ember.float64), ember.randn(4, dtype=ember.float64, requires_grad=True)]
    eager_args = [a.detach().clone().requires_grad_(a.requires_grad) for a in args]
    compiled = aot_function(fn, fw_compiler=lambda gm, _: gm.forward)
    with cpu_kernel_spy() as calls:
        graph = compiled.compiled_for(args)
    assert calls == [] and graph.fake_trace_failure is None and graph.fallback_reason is None
    stats = [bn.running_mean.clone(), bn.running_var.clone()] if mutation == "batchnorm" else []
    if stats:      # closed-over buffers: written by the graph at run time, never by the trace
        assert np.array_equal(stats[0].numpy(), np.zeros(4)) and np.array_equal(stats[1].numpy(), np.ones(4))
    else:
        assert graph.mutations is not None and graph.mutations.inputs == [0]
    out = graph(args)
    compiled_stats = [bn.running_mean.clone(), bn.running_var.clone()] if mutation == "batchnorm" else []
    if stats:
        bn.running_mean.copy_(stats[0]), bn.running_var.copy_(stats[1])
    expected = fn(*eager_args)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-12)
    for c, e in zip(args, eager_args):                           # the inputs written as eager writes them
        np.testing.assert_allclose(c.detach().numpy(), e.detach().numpy(), rtol=1e-12)
    if stats:
        for c, e in zip(compiled_stats, [bn.running_mean, bn.running_var]):
            assert not np.allclose(c.numpy(), stats[0 if c is compiled_stats[0] else 1].numpy())
            np.testing.assert_allclose(c.numpy(), e.numpy(), rtol=1e-12)


def _no_meta_kernel_op():
    lib_name = "aotfake_test::numpy_cube"
    if not hasattr(ember.ops, "aotfake_test") or not hasattr(ember.ops.aotfake_test, "numpy_cube"):
        @ember.library.custom_op(lib_name, mutates_args=())
        def numpy_cube(x: ember.Tensor) -> ember.Tensor:
            return x * x * x       # ember ops below the Tracer key: not recorded, the op is
    return ember.ops.aotfake_test.numpy_cube


def test_an_op_without_a_fake_kernel_is_traced_on_real_inputs(capsys):
    cube = _no_meta_kernel_op()
    fn = lambda x: cube(x) + x     # noqa: E731
    x = ember.randn(5, dtype=ember.float64)
    compiled = aot_function(fn, fw_compiler=lambda gm, _: gm.forward)
    ember._logging.set_logs(aot_graphs=True)
    try:
        out = compiled(x)
    finally:
        ember._logging.set_logs()
    graph = compiled.compiled_for([x])
    assert graph.fake_trace_failure is not None and graph.fallback_reason is None
    assert "numpy_cube" in graph.fake_trace_failure
    assert "traced on real inputs: the fake trace failed" in capsys.readouterr().err
    assert any(n.target is cube.default for n in graph.forward.__self__.graph.nodes)
    np.testing.assert_allclose(out.numpy(), fn(x).numpy())
    y = ember.randn(5, dtype=ember.float64)
    np.testing.assert_allclose(compiled(y).numpy(), fn(y).numpy())      # the op is in the graph, not baked in


def test_a_value_read_from_an_untraced_fake_is_traced_on_real_inputs():
    """A boolean mask made inside the program: its fake has no data (nonzero's shape is unknown), the
    real trace makes it a constant."""
    def fn(x):
        mask = ember.arange(6) % 2 == 0
        return x[mask] * 2
    x = ember.randn(6, dtype=ember.float64, requires_grad=True)
    compiled = aot_function(fn, fw_compiler=lambda gm, _: gm.forward)
    out = compiled(x)
    graph = compiled.compiled_for([x])
    assert graph.fallback_reason is None
    assert graph.fake_trace_failure is not None and "DataDependentOutputException" in graph.fake_trace_failure \
        or "DynamicOutputShapeException" in graph.fake_trace_failure
    out.sum().backward()
    x2 = x.detach().clone().requires_grad_(True)
    fn(x2).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), fn(x).detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy())


def test_data_dependent_python_on_a_traced_tensor_runs_eagerly_without_a_real_trace():
    def fn(x):
        return x * 2 if x.sum() > 0 else x * 3
    x = ember.randn(4, dtype=ember.float64)
    compiled = aot_function(fn, fw_compiler=lambda gm, _: gm.forward)
    with cpu_kernel_spy() as calls:
        graph = compiled.compiled_for([x])
    assert graph.fallback_reason is not None and "DataDependentTrace" in graph.fallback_reason
    assert calls == []
    for v in (x, -x):
        np.testing.assert_allclose(compiled(v).numpy(), fn(v).numpy())


PYTHON_READS = {
    "numpy": lambda x: x * float(x.detach().numpy().sum()),
    "asarray": lambda x: x * float(np.asarray(x.detach()).sum()),
    "int": lambda x: x * int(x.sum()),
    "tolist": lambda x: x * x.tolist()[0],
    "bool": lambda x: x * 2 if bool(x.any()) else x,
    "item": lambda x: x * x.sum().item(),
    "constant_numpy": lambda x: x * float(ember.arange(3).numpy().sum()),
    "constant_asarray": lambda x: x * float(np.asarray(ember.tensor([1.0, 2.0]))[1]),
    "constant_tensor_item": lambda x: x * ember.tensor(2.5).item(),
    "constant_format": lambda x: x * float(f"{ember.tensor(2.0):.1f}"),
    "mask": lambda x: x[x > 0] * 2,
    "len_iter": lambda x: sum(r for r in x) * len(x),
}


@pytest.mark.parametrize("name", list(PYTHON_READS))
def test_python_reading_values_compiles_or_falls_back_with_eagers_values(name):
    """Every way a program turns a tensor into Python values: traced on fakes, on real inputs, or
    run eagerly -- never an error eager would not raise, never another value."""
    fn = PYTHON_READS[name]
    compiled = aot_function(fn, fw_compiler=lambda gm, _: gm.forward)
    for _ in range(2):      # a second input: nothing of the first call's values baked in
        x = ember.randn(5, dtype=ember.float64, requires_grad=True)
        out = compiled(x)
        out.sum().backward()
        x2 = x.detach().clone().requires_grad_(True)
        expected = fn(x2)
        expected.sum().backward()
        np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-12)
