"""Flash attention in AOT autograd's graphs of GPT-2 on fake CUDA tensors (no GPU needed): under bf16
autocast the forward graph holds one `_scaled_dot_product_flash_attention` per layer and the backward
graph one `_scaled_dot_product_flash_attention_backward`, reading the forward's saved output and
logsumexp, with no seq x seq tensor anywhere (the math decomposition would materialise the scores
and their softmax gradient); both partitioners save the logsumexp, not the op's tuple; the fuser
runs both operators as extern calls. Plus the operators' rules that need no GPU."""
import re

import pytest
import torch

import ember
from ember._functorch.fake_tensor import FakeTensorMode
from ember._functorch.partitioners import default_partition, min_cut_rematerialization_partition
from ember.ops.meta import flash
from gpt2_fake_cuda import gpt2_graphs, lower_for_cuda

FLASH, FLASH_BW = "aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_flash_attention_backward"


def count(gm, name):
    return sum(1 for n in gm.graph.nodes if n.op == "call_function" and getattr(n.target, "name", None) == name)


def seq_by_seq(gm, seq):
    return [n.name for n in gm.graph.nodes
            if isinstance(n.meta.get("val"), ember.Tensor) and n.meta["val"].dim() >= 2
            and tuple(n.meta["val"].shape[-2:]) == (seq, seq)]


@pytest.mark.parametrize("partition", [default_partition, min_cut_rematerialization_partition])
def test_gpt2_graphs_hold_one_flash_op_per_layer_each_way(partition):
    layers, seq = 3, 48
    fw, fw_inputs, bw, bw_inputs = gpt2_graphs(layers=layers, seq=seq, partition=partition)
    assert count(fw, FLASH) == layers and count(bw, FLASH_BW) == layers
    assert count(bw, FLASH) == 0 and count(fw, "aten::scaled_dot_product_attention") == 0
    assert seq_by_seq(fw, seq) == [] and seq_by_seq(bw, seq) == []
    # what the backward reads of each attention: its output and float32 logsumexp, saved as tensors
    saved = [n.meta["val"] for n in bw.graph.nodes if n.op == "placeholder"]
    assert all(isinstance(v, ember.Tensor) for v in saved)
    assert sum(1 for v in saved if v.dtype == ember.float32 and tuple(v.shape) == (2, 2, seq)) == layers
    for gm, inputs in ((fw, fw_inputs), (bw, bw_inputs)):
        wrapper, _ = lower_for_cuda(gm, inputs)
        # an extern runs its op's kernel bound for the graph's device (wrapper.bound_extern): one call each
        name = "_scaled_dot_product_flash_attention" + ("_backward" if gm is bw else "")
        assert len(re.findall(rf"= aten_{name}__default\w*\(", wrapper)) == layers


def test_float32_attention_keeps_the_sdpa_operator():
    fw, _, bw, _ = gpt2_graphs(amp=False)
    assert count(fw, FLASH) == 0 and count(fw, "aten::scaled_dot_product_attention") == 2


def test_flash_operator_has_no_cpu_kernel_as_in_torch():
    q = torch.randn(1, 1, 4, 16)
    with pytest.raises(NotImplementedError):
        torch.ops.aten._scaled_dot_product_flash_attention(q, q, q)
    e = ember.randn(1, 1, 4, 16)
    with pytest.raises(NotImplementedError, match="_scaled_dot_product_flash_attention"):
        ember.ops.aten._scaled_dot_product_flash_attention(e, e, e)


@pytest.mark.parametrize("perm", [(0, 1, 2, 3), (0, 2, 1, 3), (2, 0, 3, 1), (3, 2, 1, 0)])
def test_outputs_keep_the_inputs_memory_order_as_empty_like(perm):
    shape = (2, 3, 5, 16)
    base = torch.empty([shape[p] for p in perm]).permute(*[perm.index(d) for d in range(4)])
    assert tuple(base.shape) == shape
    assert flash.dense_strides(shape, base.stride()) == torch.empty_like(base).stride()


def test_gpt2_split_heads_give_a_dense_output_in_their_order():
    # q is a column slice of [B, L, 3C] viewed [B, L, H, D] and transposed: not dense, but its
    # order (b, l, h, d) gives an output whose transpose back to [B, L, C] needs no copy
    qkv = torch.empty(2, 7, 3 * 4 * 16)
    q = qkv.split(64, dim=2)[0].view(2, 7, 4, 16).transpose(1, 2)
    strides = flash.dense_strides(tuple(q.shape), q.stride())
    assert torch.empty_strided(tuple(q.shape), strides).transpose(1, 2).is_contiguous()


def test_flash_applies_only_to_its_cases():
    with FakeTensorMode():
        h = ember.empty(2, 3, 8, 16, dtype=ember.bfloat16, device="cuda")
        f = ember.empty(2, 3, 8, 16, device="cuda")
        mask = ember.ones(8, 8, dtype=ember.bool, device="cuda")
    assert flash.applies(h, h, h, None, 0.0, False)
    assert not flash.applies(f, f, f, None, 0.0, False)
    assert not flash.applies(h, h, h, mask, 0.0, False)
    assert not flash.applies(h, h, h, None, 0.1, False)
    assert not flash.applies(h[..., :8], h[..., :8], h[..., :8], None, 0.0, False)
    assert not flash.applies(h, h[:, :1], h[:, :1], None, 0.0, True)
    assert not flash.applies(h[:, :, :0], h, h, None, 0.0, False)
    assert not flash.applies(h[0], h[0], h[0], None, 0.0, False)


def test_create_graph_gradient_through_flash_is_differentiable_again():
    # the kernels' backward has no derivative: with create_graph the formula is sdpa's ops instead
    # (values checked on the GPU: tests/cuda/test_flash_attention.py)
    F = ember.nn.functional
    with FakeTensorMode(allow_non_fake_inputs=True):       # (the formula's 0-d CPU constants)
        q = ember.empty(1, 2, 8, 16, dtype=ember.bfloat16, device="cuda").requires_grad_()
        out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
        assert "FlashAttentionBackward" in out.grad_fn.name()
        g, = ember.autograd.grad(out.float().sum(), q, create_graph=True)
        assert g.requires_grad
        gg, = ember.autograd.grad(g.float().square().sum(), q)
        assert tuple(gg.shape) == (1, 2, 8, 16) and gg.dtype == ember.bfloat16
