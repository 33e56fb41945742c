"""ember._functorch.partitioners against torch._functorch.partitioners: the same programs, the same
saved values (compared by the memory they hold: a saved view counts as its base), and properties
that must hold of any partition: the forward and backward graphs compute eager's values and
gradients, min-cut never saves more bytes than the default partition, never recomputes random or
compute-heavy ops, and never saves a view."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch._functorch.aot_autograd import aot_function as torch_aot_function
from torch._functorch import partitioners as torch_partitioners

import ember
from ember._functorch.aot_autograd import aot_function
from ember._functorch import partitioners
from ember._functorch.partitioners import COMPUTE_HEAVY, default_partition, min_cut_rematerialization_partition


def _capture(partition_fn, record):
    def partition(joint, inputs, **kw):
        fw, bw = partition_fn(joint, inputs, **kw)
        record.update(joint=joint, fw=fw, bw=bw)
        return fw, bw
    return partition


def _base(node):
    """The node whose memory a saved value holds (views stand for their base)."""
    while node.op == "call_function" and _is_view(node):
        node = next(a for a in node.args if hasattr(a, "op"))
    return node


def _is_view(node):
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        return any(r.alias_info is not None and not r.alias_info.is_write for r in target._schema.returns)
    return partitioners.is_view(node)


def _saved(record):
    """The saved values' bases, by name, from the joint graph (the backward's non-tangent inputs)."""
    joint = {n.name: n for n in record["joint"].graph.nodes}
    names = [n.name for n in record["bw"].graph.nodes if n.op == "placeholder" and not n.name.startswith("tangents")]
    return {_base(joint[name]).name for name in names}


def _saved_bytes(record):
    total = 0
    for n in record["bw"].graph.nodes:
        if n.op == "placeholder" and not n.name.startswith("tangents"):
            val = n.meta["val"]
            total += val.numel() * val.element_size()
    return total


def _run(lib, fn, partition_fn, arrays):
    record = {}
    compile_ = torch_aot_function if lib is torch else aot_function
    compiled = compile_(fn, fw_compiler=lambda gm, inputs: gm, partition_fn=_capture(partition_fn, record))
    args = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = compiled(*args)
    out.backward()
    return record, out.detach().numpy(), [a.grad.numpy() for a in args]


def _eager(fn, arrays):
    args = [ember.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*args)
    out.backward()
    return out.detach().numpy(), [a.grad.numpy() for a in args]


def gelu_mm(lib, x, w):
    return lib.nn.functional.gelu(x @ w).sum()


def gelu_tanh_square(lib, x, w):
    h = lib.nn.functional.gelu(x @ w).tanh()
    return (h * h).sum()


def outer_sin(lib, a, b):
    return (a @ b).sin().sum()


def pointwise_chain(lib, x, w):
    return ((x * w).sin().exp() * x.cos()).sum()


def softmax_mlp(lib, x, w):
    return (lib.softmax(lib.relu(x @ w) * 2, dim=-1) * w.sum()).sum()


def reductions(lib, x, w):
    return ((x - x.mean(dim=1, keepdim=True)) * w).pow(2).sum() + x.amax()


PROGRAMS = {  # name -> (program, shapes)
    "gelu_mm": (gelu_mm, [(4, 4), (4, 4)]),
    "gelu_tanh_square": (gelu_tanh_square, [(4, 4), (4, 4)]),
    "outer_sin": (outer_sin, [(64, 1), (1, 64)]),
    "pointwise_chain": (pointwise_chain, [(8, 8), (8, 8)]),
    "softmax_mlp": (softmax_mlp, [(6, 5), (5, 5)]),
    "reductions": (reductions, [(6, 5), (6, 5)]),
}


def _arrays(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def test_gelu_mm_min_cut_saves_the_mm_like_torch():
    """Seed example: gelu(x @ w).sum() saves the mm result (and the primals, which torch saves as
    their transposes), not gelu's intermediates; the backward computes gelu's derivative from mm."""
    arrays = _arrays([(4, 4), (4, 4)])
    record, _, _ = _run(ember, lambda x, w: gelu_mm(ember, x, w), min_cut_rematerialization_partition, arrays)
    torch_record, _, _ = _run(torch, lambda x, w: gelu_mm(torch, x, w),
                              torch_partitioners.min_cut_rematerialization_partition, arrays)
    mm = next(n.name for n in record["joint"].graph.nodes if n.op == "call_function")
    assert _saved(record) == {"primals_1", "primals_2", mm}
    assert _saved(torch_record) == {"primals_1", "primals_2", "mm"}
    fw_ops = {n.target.name for n in record["fw"].graph.nodes if n.op == "call_function"}
    bw_ops = {n.target.name for n in record["bw"].graph.nodes if n.op == "call_function"}
    assert "aten::erf" not in fw_ops and "aten::erf" in bw_ops        # gelu's derivative runs in the backward


def test_recomputes_a_pointwise_chain_instead_of_saving_it():
    """(tanh(gelu(x @ w)))**2: the backward needs tanh's output; min-cut saves only mm and recomputes
    gelu and tanh (torch 2.13 saves tanh too: ember saves no more bytes than torch)."""
    arrays = _arrays([(4, 4), (4, 4)])
    record, out, grads = _run(ember, lambda x, w: gelu_tanh_square(ember, x, w),
                              min_cut_rematerialization_partition, arrays)
    torch_record, t_out, t_grads = _run(torch, lambda x, w: gelu_tanh_square(torch, x, w),
                                        torch_partitioners.min_cut_rematerialization_partition, arrays)
    mm = next(n.name for n in record["joint"].graph.nodes if n.op == "call_function")
    assert _saved(record) == {"primals_1", "primals_2", mm}
    bw_ops = [n.target.name for n in record["bw"].graph.nodes if n.op == "call_function"]
    assert "aten::gelu" in bw_ops and "aten::tanh" in bw_ops
    assert _saved_bytes(record) <= _saved_bytes(torch_record)
    np.testing.assert_allclose(out, t_out.detach().numpy() if hasattr(t_out, "detach") else t_out, rtol=1e-5)
    for g, tg in zip(grads, t_grads):
        np.testing.assert_allclose(g, tg, rtol=1e-4, atol=1e-5)


def test_compute_heavy_op_is_saved_not_recomputed_like_torch():
    """sin(a @ b) with a (64, 1), b (1, 64): recomputing the mm from the primals would save 32x
    fewer bytes, but mm is never recomputed -- torch makes the same choice."""
    arrays = _arrays([(64, 1), (1, 64)])
    record, _, _ = _run(ember, lambda a, b: outer_sin(ember, a, b), min_cut_rematerialization_partition, arrays)
    torch_record, _, _ = _run(torch, lambda a, b: outer_sin(torch, a, b),
                              torch_partitioners.min_cut_rematerialization_partition, arrays)
    mm = next(n.name for n in record["joint"].graph.nodes if n.op == "call_function")
    assert _saved(record) == {"primals_1", "primals_2", mm} == _saved(torch_record) - {"mm"} | {mm}
    fw_mm = [n for n in record["fw"].graph.nodes if n.op == "call_function" and _op(n) in COMPUTE_HEAVY]
    bw_mm = [n for n in record["bw"].graph.nodes if n.op == "call_function" and _op(n) in COMPUTE_HEAVY]
    assert len(fw_mm) == 1 and len(bw_mm) == 2           # the forward's mm once; the backward's two grads


def _op(node):
    return node.target.name.split(".")[0]


@pytest.mark.parametrize("name", list(PROGRAMS))
@pytest.mark.parametrize("partition", ["default", "min_cut"])
def test_partitioned_graphs_compute_eager_values(name, partition):
    fn, shapes = PROGRAMS[name]
    arrays = _arrays(shapes)
    partition_fn = default_partition if partition == "default" else min_cut_rematerialization_partition
    record, out, grads = _run(ember, lambda *a: fn(ember, *a), partition_fn, arrays)
    e_out, e_grads = _eager(lambda *a: fn(ember, *a), arrays)
    np.testing.assert_allclose(out, e_out, rtol=1e-6)
    for g, eg in zip(grads, e_grads):
        np.testing.assert_allclose(g, eg, rtol=1e-5, atol=1e-6)
    for n in record["bw"].graph.nodes:      # views are regenerated, never saved
        if n.op == "placeholder" and partition == "min_cut":
            joint_node = next(j for j in record["joint"].graph.nodes if j.name == n.name)
            assert not partitioners.is_view(joint_node), n.name


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_min_cut_saves_no_more_than_default(name):
    fn, shapes = PROGRAMS[name]
    arrays = _arrays(shapes)
    default, _, _ = _run(ember, lambda *a: fn(ember, *a), default_partition, arrays)
    min_cut, _, _ = _run(ember, lambda *a: fn(ember, *a), min_cut_rematerialization_partition, arrays)
    assert _saved_bytes(min_cut) <= _saved_bytes(default)


def test_default_partition_of_the_mm_example_matches_torch():
    """fw: mm -> (mm, primals_1, primals_2); bw: the two gradient mms, as torch's default partition."""
    arrays = _arrays([(4, 4), (4, 4)])
    record, _, _ = _run(ember, lambda a, b: (a @ b).sum(), default_partition, arrays)
    torch_record, _, _ = _run(torch, lambda a, b: (a @ b).sum(), torch_partitioners.default_partition, arrays)
    assert _saved(record) == _saved(torch_record) == {"primals_1", "primals_2"}


def test_random_ops_run_once_in_the_forward():
    """dropout's mask is drawn in the forward and saved; the backward draws nothing, whatever the
    partitioner; values and gradients equal eager's under the same seed."""
    def fn(x, w):
        return (ember.nn.functional.dropout(x @ w, 0.5) * x.sin()).sum()
    arrays = _arrays([(6, 6), (6, 6)])
    for partition_fn in (default_partition, min_cut_rematerialization_partition):
        ember.manual_seed(3)
        record, out, grads = _run(ember, fn, partition_fn, arrays)
        after = ember.rand(4).numpy()
        ember.manual_seed(3)
        e_out, e_grads = _eager(fn, arrays)
        assert np.array_equal(ember.rand(4).numpy(), after)      # the generator advanced as in eager
        np.testing.assert_allclose(out, e_out, rtol=1e-6)
        for g, eg in zip(grads, e_grads):
            np.testing.assert_allclose(g, eg, rtol=1e-5, atol=1e-6)
        from ember.ops import properties
        random_bw = [n for n in record["bw"].graph.nodes
                     if n.op == "call_function" and properties.of(n.target).is_random]
        assert random_bw == []


def test_unused_random_op_still_draws():
    """A random op whose result is unused still advances the generator, as in eager."""
    def fn(x):
        ember.rand(5)
        return (x * 2).sum()
    arrays = _arrays([(3,)])
    for partition_fn in (default_partition, min_cut_rematerialization_partition):
        ember.manual_seed(0)
        _run(ember, fn, partition_fn, arrays)
        got = ember.rand(3).numpy()
        ember.manual_seed(0)
        _eager(fn, arrays)
        assert np.array_equal(got, ember.rand(3).numpy())


def test_mutation_of_an_intermediate_through_a_view_is_kept():
    """m = (x * 2).detach(); m.view(-1)[:1] += 1: the in-place op is not an ancestor of the output node
    (it writes through a view) yet must run; AOT autograd functionalises the program (the write becomes
    a slice_scatter the output reads), and min-cut falls back to the default partition for graphs still
    holding a write. (ember's autograd refuses in-place ops on views of tensors that require grad.)"""
    def fn(x):
        m = (x * 2).detach()
        m.view(-1)[:1].add_(1)
        return (m * x.sin()).sum()
    arrays = _arrays([(2, 3)])
    e_out, e_grads = _eager(fn, arrays)
    for partition_fn in (default_partition, min_cut_rematerialization_partition):
        _, out, grads = _run(ember, fn, partition_fn, arrays)
        np.testing.assert_allclose(out, e_out, rtol=1e-6)
        np.testing.assert_allclose(grads[0], e_grads[0], rtol=1e-6)


def _bf16_loss(lib, x, w):
    # autocast's pattern: a bf16 product, the loss in float32 (sin's backward reads its float32 input)
    h = (x.to(lib.bfloat16) @ w.to(lib.bfloat16)).float()
    return h.sin().sum()


def _saved_dtypes(record):
    return sorted(str(n.meta["val"].dtype).split(".")[-1] for n in record["bw"].graph.nodes
                  if n.op == "placeholder" and not n.name.startswith("tangents"))


def test_a_widening_cast_is_saved_as_its_bf16_source_and_redone_in_the_backward():
    # PyTorch's default partition saves the float32 cast; ember's saves the bf16 product (half the
    # bytes) and the backward casts it again: the same values, bitwise
    arrays = _arrays([(4, 6), (6, 5)])
    record, out, grads = _run(ember, lambda *a: _bf16_loss(ember, *a), default_partition, arrays)
    torch_record, _, _ = _run(torch, lambda *a: _bf16_loss(torch, *a), torch_partitioners.default_partition, arrays)
    assert _saved_dtypes(torch_record).count("float32") == _saved_dtypes(record).count("float32") + 1
    assert _saved_bytes(record) < _saved_bytes(torch_record)
    assert any(_op(n) == "aten::_to_copy" and n.meta["val"].dtype == ember.float32 and
               n.args[0].meta["val"].dtype == ember.bfloat16 for n in record["bw"].graph.nodes if n.op == "call_function")
    e_out, e_grads = _eager(lambda *a: _bf16_loss(ember, *a), arrays)
    np.testing.assert_array_equal(out, e_out)
    for g, eg in zip(grads, e_grads):
        np.testing.assert_array_equal(g, eg)


def test_a_narrowing_cast_is_saved_as_it_is():
    def narrowing(lib, x, w):          # float32 -> bf16: saved as it is (fewer bytes than its source)
        return (x.to(lib.bfloat16).sin() * w.sum()).sum()
    record, _, _ = _run(ember, lambda *a: narrowing(ember, *a), default_partition, _arrays([(4, 6), (6, 5)]))
    assert "_to_copy" in _saved(record) and "bfloat16" in _saved_dtypes(record)


def test_a_cast_of_a_value_mutated_later_is_saved_as_it_is():
    # the backward must see the value the cast read, not the source after an in-place op
    def fn(lib, x, w):
        h = x.to(lib.bfloat16) * 2
        wide = h.float()
        h.add_(100)
        return (wide.sin() * w.sum()).sum() + h.float().sum()
    arrays = _arrays([(4, 6), (6, 5)])
    record, out, grads = _run(ember, lambda *a: fn(ember, *a), default_partition, arrays)
    e_out, e_grads = _eager(lambda *a: fn(ember, *a), arrays)
    np.testing.assert_allclose(out, e_out, rtol=1e-6)
    for g, eg in zip(grads, e_grads):
        np.testing.assert_allclose(g, eg, rtol=1e-5, atol=1e-6)
