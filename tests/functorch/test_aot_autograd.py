"""ember._functorch.aot_autograd against torch._functorch.aot_autograd and eager ember: the joint
graph of seed 001's mm example has torch's shape; compiled functions give eager's values, gradients,
random numbers and aliasing; the backward is compiled once, lazily; programs a graph cannot express
exactly (data-dependent Python) run eagerly and say why; the graphs print (input mutation:
test_aot_input_mutation.py)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch._functorch.aot_autograd import aot_function as torch_aot_function
from torch._functorch.partitioners import default_partition as torch_default_partition

import ember
from ember._functorch.aot_autograd import aot_function, aot_module, aot_module_simplified
from ember._functorch.partitioners import default_partition, min_cut_rematerialization_partition

aten = ember.ops.aten


def _nop(gm, example_inputs):
    return gm


class Compilers:
    """fw/bw compilers that count their calls and keep the graphs."""

    def __init__(self):
        self.fw, self.bw = [], []

    def fw_compiler(self, gm, inputs):
        self.fw.append(gm)
        return gm

    def bw_compiler(self, gm, inputs):
        self.bw.append(gm)
        return gm


def _expressions(joint):
    """Each output of a joint graph as an expression over its placeholders: its shape, independent
    of node order and of how a library spells the placeholders' tuple."""
    outputs = list(joint.graph.nodes)[-1].args[0]

    def expr(node):
        if node.op == "placeholder":
            return node.name
        target = node.target
        name = target._schema.name if isinstance(target, torch._ops.OpOverload) else target.name.split(".")[0]
        args = [expr(a) for a in node.args if hasattr(a, "op")]
        return f"{name.split('::')[1]}({', '.join(args)})"
    return [expr(o) for o in outputs]


# ember records matmul and transpose(-2, -1) (its op table keeps matmul whole and its mm backward
# transposes); for 2-d operands these are torch's mm and t (core op decompositions, issue 13 item 2,
# will provide them; until then the test passes them as decompositions=).
MM_DECOMPOSITIONS = {
    aten.matmul.default: lambda a, b: aten.mm.default(a, b),
    aten.transpose.int: lambda x, d0, d1: aten.t.default(x),
}


def test_seed001_mm_joint_graph_has_torchs_shape():
    joint = {}

    def capture(partition_fn):
        def partition(j, inputs, **kw):
            joint.setdefault("graphs", []).append(j)
            return partition_fn(j, inputs, **kw)
        return partition

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 4)).astype(np.float32), rng.standard_normal((4, 4)).astype(np.float32)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    torch_aot_function(lambda x, y: x @ y, fw_compiler=_nop, bw_compiler=_nop,
                       partition_fn=capture(torch_default_partition))(ta, tb).sum().backward()
    ea, eb = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
    aot_function(lambda x, y: x @ y, fw_compiler=_nop, bw_compiler=_nop, partition_fn=capture(default_partition),
                 decompositions=MM_DECOMPOSITIONS)(ea, eb).sum().backward()
    torch_joint, ember_joint = joint["graphs"]
    # torch's joint returns (mm, grad of primals_1, grad of primals_2); so does ember's
    assert _expressions(ember_joint) == _expressions(torch_joint) == [
        "mm(primals_1, primals_2)", "mm(tangents_1, t(primals_2))", "mm(t(primals_1), tangents_1)"]
    names = lambda g: sorted(n.name for n in g.graph.nodes if n.op == "call_function")  # noqa: E731
    assert names(ember_joint) == names(torch_joint) == ["mm", "mm_1", "mm_2", "t", "t_1"]
    text = ember_joint.print_readable(print_output=False)
    assert 'primals_1: "f32[4, 4]", primals_2: "f32[4, 4]", tangents_1: "f32[4, 4]"' in text
    assert 'mm: "f32[4, 4]" = ember.ops.aten.mm.default(primals_1, primals_2)' in text
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-5)
    np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy(), rtol=1e-5)


def test_backward_is_compiled_lazily_and_once():
    comp = Compilers()
    f = aot_function(lambda x, w: (x @ w).relu().sum(), comp.fw_compiler, comp.bw_compiler)
    x, w = ember.randn(3, 4), ember.randn(4, 2, requires_grad=True)
    loss = f(x, w)
    assert len(comp.fw) == 1 and comp.bw == []
    loss.backward()
    assert len(comp.bw) == 1
    g1 = w.grad.clone()
    f(x, w).backward()
    assert len(comp.fw) == 1 and len(comp.bw) == 1
    np.testing.assert_allclose(w.grad.numpy(), 2 * g1.numpy(), rtol=1e-6)
    w.grad = None
    (x @ w).relu().sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), g1.numpy(), rtol=1e-6)
    # the backward graph takes the saved values and the tangents; x needs no gradient
    bw_inputs = [n.name for n in comp.bw[0].graph.nodes if n.op == "placeholder"]
    assert bw_inputs[-1] == "tangents_1"
    assert list(comp.bw[0].graph.nodes)[-1].args[0][0] is None


def test_inference_graph_when_nothing_requires_grad():
    comp = Compilers()
    f = aot_function(lambda x, w: (x @ w).sin(), comp.fw_compiler, comp.bw_compiler)
    x, w = ember.randn(3, 4), ember.randn(4, 2, requires_grad=True)
    with ember.no_grad():
        out = f(x, w)
    assert not out.requires_grad
    out2 = f(x, w.detach())
    np.testing.assert_allclose(out.numpy(), (x @ w).sin().detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(out2.numpy(), out.numpy())
    assert comp.bw == [] and len(comp.fw) == 2          # one per spec (grad mode, requires_grad)
    assert all(not any(n.name.startswith("tangents") for n in g.graph.nodes) for g in comp.fw)


def test_recompiles_for_a_new_shape():
    comp = Compilers()
    f = aot_function(lambda x: x.exp().sum(), comp.fw_compiler, comp.bw_compiler)
    for shape in ((2, 3), (2, 3), (4,)):
        x = ember.randn(*shape, requires_grad=True)
        f(x).backward()
        np.testing.assert_allclose(x.grad.numpy(), x.exp().detach().numpy(), rtol=1e-6)
    assert len(comp.fw) == 2 and len(comp.bw) == 2


def test_multiple_outputs_some_not_differentiable():
    def fn(x, w):
        y = x * w
        return y.sum(), y.argmax(), y.detach() * 2, [y.mean()]
    f = aot_function(lambda x, w: tuple(fn(x, w)[:3]) + (fn(x, w)[3][0],), _nop)
    x, w = ember.randn(5), ember.randn(5, requires_grad=True)
    s, idx, d, m = f(x, w)
    assert idx.dtype == ember.int64 and not idx.requires_grad and not d.requires_grad
    (s + m).backward()
    np.testing.assert_allclose(w.grad.numpy(), x.numpy() * (1 + 1 / 5), rtol=1e-6)


def test_output_aliasing_an_input_is_a_real_alias():
    """An input returned as is, or a view of it, aliases the caller's tensor as in eager."""
    f = aot_function(lambda x, y: (x, x.t(), x[0], y * 2), _nop)
    x, y = ember.randn(3, 3), ember.randn(3, requires_grad=True)
    same, t, row, dbl = f(x, y)
    assert same is x
    x[0, 1] = 100.0                       # writing the input shows through the returned views
    assert t[1, 0].item() == 100.0 and row[1].item() == 100.0
    dbl.sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), np.full(3, 2.0))


def test_view_of_a_grad_input_returned_keeps_its_gradient():
    f = aot_function(lambda x: (x.view(6), (x * 3).sum()), _nop)
    x = ember.randn(2, 3, requires_grad=True)
    v, s = f(x)
    (v.sum() + s).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 3), 4.0))


def test_data_dependent_python_runs_eagerly():
    fn = lambda x: x * 2 if x.sum() > 0 else x * 3          # noqa: E731
    f = aot_function(fn, _nop)
    for sign in (1.0, -1.0):
        x = ember.full((3,), sign, requires_grad=True)
        f(x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.full(3, 2.0 if sign > 0 else 3.0))
    f2 = aot_function(lambda x: x * x.sum().item(), _nop)
    x = ember.ones(3)
    assert f2(x).tolist() == [3.0, 3.0, 3.0]
    assert f2(x * 2).tolist() == [12.0, 12.0, 12.0]
    assert "item" in next(iter(f2.graphs.values())).fallback_reason


def test_random_ops_match_eager_under_the_same_seed():
    F = ember.nn.functional

    def fn(x, w):
        h = F.dropout(x @ w, 0.3) + ember.rand(4, 4) * 0.1
        return F.dropout(h.relu(), 0.5).sum()
    for partition_fn in (default_partition, min_cut_rematerialization_partition):
        f = aot_function(fn, _nop, partition_fn=partition_fn)
        x = ember.randn(4, 4)
        results = []
        for run in (fn, f):
            w = ember.ones(4, 4).requires_grad_()
            ember.manual_seed(11)
            outs = [run(x, w) for _ in range(2)]
            sum(outs).backward()
            results.append((outs[0].item(), outs[1].item(), w.grad.numpy().copy(), ember.rand(2).numpy()))
        (e0, e1, eg, er), (c0, c1, cg, cr) = results
        assert e0 != e1 and (e0, e1) == (c0, c1)
        np.testing.assert_array_equal(cg, eg)
        np.testing.assert_array_equal(cr, er)


def test_aot_module_lifts_parameters_and_buffers():
    class M(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = ember.nn.Linear(4, 3)
            self.register_buffer("scale", ember.tensor([1.0, 2.0, 3.0]))

        def forward(self, x):
            return (self.lin(x) * self.scale).tanh().sum()
    comp = Compilers()
    m = M()
    compiled = aot_module(m, comp.fw_compiler, comp.bw_compiler)
    x = ember.randn(5, 4)
    compiled(x).backward()
    got = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    m(x).backward()
    for g, p in zip(got, m.parameters()):
        np.testing.assert_allclose(g.numpy(), p.grad.numpy(), rtol=1e-6)
    placeholders = [n for n in comp.fw[0].graph.nodes if n.op == "placeholder"]
    assert len(placeholders) == 4 and not [n for n in comp.fw[0].graph.nodes if n.op == "get_attr"]
    # the buffer is an input: changing it changes the result without recompiling
    m.scale.mul_(0)
    assert compiled(x).item() == 0.0 and len(comp.fw) == 1


def test_aot_module_simplified_traces_now():
    comp = Compilers()
    gm = ember.fx.symbolic_trace(ember.nn.Sequential(ember.nn.Linear(3, 3), ember.nn.GELU()))
    x = ember.randn(2, 3)
    run = aot_module_simplified(gm, [x], comp.fw_compiler, comp.bw_compiler)
    assert len(comp.fw) == 1
    out = run(x)
    out.sum().backward()
    got = [p.grad.clone() for p in gm.parameters()]
    gm.zero_grad()
    gm(x).sum().backward()
    for g, p in zip(got, gm.parameters()):
        # atol: eager's gelu backward is a native kernel (erf in double, rounded once), the graph's is
        # the composed float32 formula; a bias gradient summing O(1) terms can cancel to ~1e-3
        np.testing.assert_allclose(g.numpy(), p.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_compile_aot_eager_logs_joint_forward_and_backward(capsys):
    ember._logging.set_logs(aot_graphs=True, aot_joint_graph=True)
    try:
        f = ember.compile(lambda a, b: (a @ b).sum(), backend="aot_eager")
        a, b = ember.randn(4, 4, requires_grad=True), ember.randn(4, 4, requires_grad=True)
        loss = f(a, b)
        err = capsys.readouterr().err
        assert "===== Joint graph" in err and "===== Forward graph" in err and "Backward graph" not in err
        assert 'primals_1: "f32[4, 4]"' in err and 'tangents_1: "f32[]"' in err
        loss.backward()
        assert "===== Backward graph" in capsys.readouterr().err
    finally:
        ember._logging.set_logs()
    np.testing.assert_allclose(a.grad.numpy(), np.ones((4, 4)) @ b.detach().numpy().T, rtol=1e-5)


def test_aot_autograd_backend_factory():
    from ember._dynamo.backends.common import aot_autograd
    comp = Compilers()
    backend = aot_autograd(fw_compiler=comp.fw_compiler, bw_compiler=comp.bw_compiler,
                           partition_fn=min_cut_rematerialization_partition)
    f = ember.compile(lambda x: ember.nn.functional.gelu(x * 2).sum(), backend=backend)
    x = ember.randn(5, requires_grad=True)
    f(x).backward()
    assert len(comp.fw) == 1 and len(comp.bw) == 1
    g = x.grad.clone()
    x.grad = None
    ember.nn.functional.gelu(x * 2).sum().backward()
    np.testing.assert_allclose(g.numpy(), x.grad.numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match="fw_compiler"):
        aot_autograd(bw_compiler=comp.bw_compiler)


def test_dropout_variants_match_eager_or_run_eagerly():
    """dropout and feature dropout are traced through their mask; alpha dropout's kernel leaves
    its noise as a constant for the backward, so its graph runs eagerly (never a stale mask)."""
    F = ember.nn.functional
    programs = {"dropout": lambda x: F.dropout(x * 2, 0.4).sum(), "dropout2d": lambda x: F.dropout2d(x, 0.5).exp().sum(),
                "alpha": lambda x: F.alpha_dropout(x, 0.3, True).pow(2).sum()}
    for name, fn in programs.items():
        f = aot_function(fn, _nop)
        grads = []
        for run in (fn, f, f):
            x = ember.ones(2, 3, 4, 4, requires_grad=True)
            ember.manual_seed(5)
            run(x).backward()
            grads.append(x.grad.numpy())
        np.testing.assert_array_equal(grads[1], grads[0])
        np.testing.assert_array_equal(grads[2], grads[0])
        reason = next(iter(f.graphs.values())).fallback_reason
        assert (reason is not None) == (name == "alpha"), (name, reason)


def test_double_backward_raises_instead_of_dropping_terms():
    f = aot_function(lambda x: (x ** 3).sum(), _nop)
    x = ember.randn(3, requires_grad=True)
    (g,) = ember.autograd.grad(f(x), x)               # first order: fine
    np.testing.assert_allclose(g.numpy(), 3 * x.detach().numpy() ** 2, rtol=1e-6)
    with pytest.raises(RuntimeError, match="double backward"):
        ember.autograd.grad(f(x), x, create_graph=True)


@pytest.mark.parametrize("partition_fn", [default_partition, min_cut_rematerialization_partition])
def test_awkward_inputs_give_eagers_gradients(partition_fn):
    """A transposed (non-contiguous) input, an empty one, the same tensor twice, integer indices,
    float64, a Python number among the outputs."""
    cases = [
        (lambda t: (t.exp() * t).sum(), lambda: [ember.randn(4, 3).t().detach().requires_grad_()]),
        (lambda t: (t * 2).sum(), lambda: [ember.randn(0, 3, requires_grad=True)]),
        (lambda w, i: (w[i] * w[i]).sum(), lambda: [ember.randn(3, dtype=ember.float64, requires_grad=True),
                                                    ember.tensor([1, 2, 0, 1])]),
        (lambda a, b: ((a * b).sum(), 3), None),
    ]
    for fn, make in cases:
        if make is None:                           # the same tensor passed twice
            y = ember.randn(3, requires_grad=True)
            out, three = aot_function(fn, _nop, partition_fn=partition_fn)(y, y)
            assert three == 3
            out.backward()
            np.testing.assert_allclose(y.grad.numpy(), 2 * y.detach().numpy(), rtol=1e-6)
            continue
        args = make()
        aot_function(fn, _nop, partition_fn=partition_fn)(*args).backward()
        got = [a.grad.numpy().copy() for a in args if a.requires_grad]
        for a in args:
            a.grad = None
        fn(*args).backward()
        for g, a in zip(got, [a for a in args if a.requires_grad]):
            assert g.shape == tuple(a.shape)
            np.testing.assert_allclose(g, a.grad.numpy(), rtol=1e-6)


def test_bad_arguments():
    with pytest.raises(TypeError, match="callable"):
        aot_function(3, _nop)
    f = aot_function(lambda x, n: x * n, _nop)
    with pytest.raises(TypeError, match="argument 1 is a int"):
        f(ember.ones(2), 3)
