"""Flash attention on the GPU (ember/_cuda/flash_attention.py) against PyTorch CUDA's
scaled_dot_product_attention: values and gradients for float16/bfloat16, causal or not, L != S,
lengths that are not multiples of the blocks, every supported head dim, GPT-2's strided heads (views
of one [B, L, 3, H, D] projection, no copies), the sdpa operator called directly, which calls take
the kernels, the flash operators' argument errors, and the kernels under ember.compile."""
import numpy as np
import pytest
import torch

import ember
from cuda_pairs import close, pair

F = ember.nn.functional
HALVES = [("bfloat16", 2e-2), ("float16", 4e-3)]
SHAPES = [(64, 64, 64), (1, 1, 16), (37, 37, 32), (50, 131, 64), (131, 50, 64), (200, 200, 128), (129, 7, 16)]


def _grads_match(eo, o, leaves, dtype, tol, seed=9):
    eg, g = pair(tuple(o.shape), dtype, seed)
    eo.backward(eg)
    o.backward(g)
    for e, t in leaves:
        close(e.grad, t.grad, 4 * tol)


@pytest.mark.parametrize("dtype,tol", HALVES)
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("L,S,D", SHAPES)
def test_flash_matches_torch_sdpa(dtype, tol, causal, L, S, D):
    (eq, q), (ek, k), (ev, v) = (pair((2, 3, n, D), dtype, i, True) for i, n in enumerate((L, S, S)))
    eo = F.scaled_dot_product_attention(eq, ek, ev, is_causal=causal)
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    close(eo, o, tol)
    assert "FlashAttentionBackward" in eo.grad_fn.name()     # the flash operator, not the sdpa formula
    _grads_match(eo, o, ((eq, q), (ek, k), (ev, v)), dtype, tol)


@pytest.mark.parametrize("dtype,tol", HALVES)
@pytest.mark.parametrize("scale", [None, 0.3])
def test_gpt2_heads_are_read_through_their_strides(dtype, tol, scale):
    B, L, H, D = 2, 100, 3, 64
    (ex, x) = pair((B, L, 3 * H * D), dtype, 0, True)

    def heads(t):
        q, k, v = t.split(H * D, dim=2)
        return [u.view(B, L, H, D).transpose(1, 2) for u in (q, k, v)]
    eq, ek, ev = heads(ex)
    assert not eq.is_contiguous()
    eo = F.scaled_dot_product_attention(eq, ek, ev, is_causal=True, scale=scale)
    o = torch.nn.functional.scaled_dot_product_attention(*heads(x), is_causal=True, scale=scale)
    close(eo, o, tol)
    # the output is laid out [B, L, H, D] like the heads: its transpose back to [B, L, H*D] is a view
    assert eo.transpose(1, 2).is_contiguous()
    _grads_match(eo.transpose(1, 2).reshape(B, L, H * D), o.transpose(1, 2).reshape(B, L, H * D), ((ex, x),),
                 dtype, tol)


@pytest.mark.parametrize("causal", [True, False])
def test_sdpa_operator_called_directly_uses_flash_and_matches(causal, monkeypatch):
    from ember._cuda import flash_attention
    calls = []
    real = flash_attention.forward
    monkeypatch.setattr(flash_attention, "forward", lambda *a, **k: calls.append(1) or real(*a, **k))
    (eq, q), (ek, k), (ev, v) = (pair((1, 2, n, 32), "bfloat16", i, True) for i, n in enumerate((70, 45, 45)))
    eo = ember.ops.aten.scaled_dot_product_attention(eq, ek, ev, None, 0.0, causal)
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    close(eo, o, 2e-2)
    _grads_match(eo, o, ((eq, q), (ek, k), (ev, v)), "bfloat16", 2e-2)
    assert len(calls) == 2          # the forward, and the backward's recomputation of the logsumexp


def test_flash_only_where_it_applies(monkeypatch):
    from ember._cuda import flash_attention
    calls = []
    monkeypatch.setattr(flash_attention, "forward", lambda *a, **k: calls.append(a))
    q = ember.randn(1, 2, 8, 16, device="cuda")
    F.scaled_dot_product_attention(q, q, q)                                  # float32
    h = q.bfloat16()
    F.scaled_dot_product_attention(h, h, h, attn_mask=ember.ones(8, 8, dtype=ember.bool, device="cuda"))
    F.scaled_dot_product_attention(h[..., :8], h[..., :8], h[..., :8])     # head dim 8
    F.scaled_dot_product_attention(h[0], h[0], h[0])                        # 3-d
    F.scaled_dot_product_attention(h, h[:, :1], h[:, :1], enable_gqa=True)  # grouped heads
    F.scaled_dot_product_attention(h, h, h, dropout_p=0.5)
    assert calls == []
    F.scaled_dot_product_attention(h, h, h)
    assert len(calls) == 1


@pytest.mark.parametrize("dtype,tol", HALVES)
@pytest.mark.parametrize("causal,L,S", [(True, 50, 50), (False, 33, 77), (False, 130, 20)])
def test_flash_operator_returns_torch_logsumexp(dtype, tol, causal, L, S):
    # (torch's flash operator aligns a causal mask bottom-right when L != S, sdpa top-left: square only)
    (eq, q), (ek, k) = (pair((2, 2, n, 64), dtype, i) for i, n in enumerate((L, S)))
    out, lse = ember.ops.aten._scaled_dot_product_flash_attention(eq, ek, ek, is_causal=causal)
    t_out, t_lse = torch.ops.aten._scaled_dot_product_flash_attention(q, k, k, is_causal=causal)[:2]
    close(out, t_out, tol)
    assert lse.dtype == ember.float32 and tuple(lse.shape) == tuple(t_lse.shape)
    np.testing.assert_allclose(lse.cpu().numpy(), t_lse.float().cpu().numpy(), rtol=1e-3, atol=1e-3)


def test_flash_operator_errors():
    q = ember.randn(1, 1, 8, 16, device="cuda")
    tq = torch.randn(1, 1, 8, 16, device="cuda")
    with pytest.raises(RuntimeError):                       # float32: PyTorch's flash refuses it too
        torch.ops.aten._scaled_dot_product_flash_attention(tq, tq, tq)
    with pytest.raises(RuntimeError, match="_scaled_dot_product_flash_attention.*float16 and bfloat16"):
        ember.ops.aten._scaled_dot_product_flash_attention(q, q, q)
    h = q.half()
    with pytest.raises(RuntimeError, match="head_dim must be one of"):     # ember's kernels: 16/32/64/128
        ember.ops.aten._scaled_dot_product_flash_attention(h[..., :8], h[..., :8], h[..., :8])
    with pytest.raises(RuntimeError, match="must share batch and heads"):
        ember.ops.aten._scaled_dot_product_flash_attention(h, h[:, :, :, :], h[:, :, :5])
    with pytest.raises(NotImplementedError, match="dropout_p"):
        ember.ops.aten._scaled_dot_product_flash_attention(h, h, h, 0.1)


@pytest.mark.parametrize("causal", [True, False])
def test_flash_under_ember_compile_matches_eager(causal):
    ember.manual_seed(0)
    proj = ember.nn.Linear(96, 3 * 96).cuda().bfloat16()

    def attend(x):
        q, k, v = proj(x).split(96, dim=2)
        q, k, v = (t.view(2, 40, 3, 32).transpose(1, 2) for t in (q, k, v))
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal).transpose(1, 2).reshape(2, 40, 96)
    x = ember.randn(2, 40, 96, device="cuda", dtype=ember.bfloat16, requires_grad=True)
    want = attend(x)
    want.float().square().sum().backward()
    grads = [x.grad.clone(), proj.weight.grad.clone()]
    x.grad = proj.weight.grad = proj.bias.grad = None
    got = ember.compile(attend)(x)
    got.float().square().sum().backward()
    for a, b in ((got, want), (x.grad, grads[0]), (proj.weight.grad, grads[1])):
        np.testing.assert_allclose(a.float().detach().cpu().numpy(), b.float().detach().cpu().numpy(),
                                   rtol=2e-2, atol=2e-2)


def test_double_backward_through_flash_matches_torch_math():
    # torch's flash backward has no derivative; its math kernel gives the reference
    from torch.nn.attention import SDPBackend, sdpa_kernel
    (eq, q), (ek, k), (ev, v) = (pair((1, 2, n, 32), "float16", i, True) for i, n in enumerate((24, 24, 24)))
    eo = F.scaled_dot_product_attention(eq, ek, ev, is_causal=True)
    e_g, = ember.autograd.grad(eo.float().square().sum(), eq, create_graph=True)
    e_gg, = ember.autograd.grad(e_g.float().square().sum(), ek)
    with sdpa_kernel(SDPBackend.MATH):
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        g, = torch.autograd.grad(o.float().square().sum(), q, create_graph=True)
        gg, = torch.autograd.grad(g.float().square().sum(), k)
    close(e_g, g, 2e-2)
    close(e_gg, gg, 5e-2)


def test_flash_kernels_replay_inside_a_cuda_graph():
    # Triton's own launcher runs the flash kernels; it must launch on the capturing stream
    # (_cuda/triton_stream.py). Launched on PyTorch's default stream, a kernel runs once at capture
    # (or the capture fails) and every replay leaves the captured output as it was.
    e = [pair((2, 4, 128, 64), "bfloat16", seed)[0] for seed in range(3)]
    F.scaled_dot_product_attention(*e, is_causal=True)      # compiled before the capture
    ember.cuda.synchronize()
    graph = ember.cuda.CUDAGraph()
    with ember.cuda.graph(graph):
        out = F.scaled_dot_product_attention(*e, is_causal=True)
    for seed in (10, 20):
        for i, t in enumerate(e):
            t.copy_(pair(tuple(t.shape), "bfloat16", seed + i)[0])
        graph.replay()
        want = F.scaled_dot_product_attention(*e, is_causal=True)
        np.testing.assert_array_equal(out.float().cpu().numpy(), want.float().cpu().numpy())
