"""The half-precision CUDA kernels of ember/_cuda (blas.py, attention.py) against PyTorch CUDA:
batched/broadcast/transposed bf16 and fp16 products through cuBLAS, linear with its bias added
by the GEMM, and scaled_dot_product_attention's forward and backward (causal or not, L != S)."""
import numpy as np
import pytest
import torch

import ember

from cuda_pairs import close, pair

HALVES = [("bfloat16", 2e-2), ("float16", 5e-3)]




@pytest.mark.parametrize("dtype,tol", HALVES)
@pytest.mark.parametrize("sa,sb,ta,tb", [((4, 32, 16), (16, 24), False, False),     # linear backward's grad @ W
                                         ((2, 3, 32, 16), (2, 3, 16, 24), False, True),   # q @ k^T
                                         ((1, 3, 16, 32), (2, 1, 32, 24), True, False),   # broadcast batches
                                         ((5, 8), (8, 7), True, True), ((3, 1, 8), (8, 1), False, False)])
def test_half_matmul_matches_torch(dtype, tol, sa, sb, ta, tb):
    """ta / tb: the operand is the transpose view of a contiguous array (column-major to cuBLAS)."""
    swap = lambda s: s[:-2] + (s[-1], s[-2])   # noqa: E731
    (ea, a), (eb, b) = pair(swap(sa) if ta else sa, dtype, 0), pair(swap(sb) if tb else sb, dtype, 1)
    if ta:
        ea, a = ea.mT, a.mT
    if tb:
        eb, b = eb.mT, b.mT
    close(ea @ eb, a @ b, tol)


def test_half_matmul_with_empty_contraction_is_zero():
    e = ember.ones(2, 3, 0, device="cuda", dtype=ember.bfloat16) @ ember.ones(2, 0, 4, device="cuda", dtype=ember.bfloat16)
    assert e.shape == (2, 3, 4) and e.dtype == ember.bfloat16 and not e.float().abs().sum().item()


@pytest.mark.parametrize("dtype,tol", HALVES)
@pytest.mark.parametrize("bias", [True, False])
def test_half_linear_forward_and_backward_match_torch(dtype, tol, bias):
    (ex, x), (ew, w) = pair((4, 10, 32), dtype, 0, True), pair((24, 32), dtype, 1, True)
    eb, b = pair((24,), dtype, 2, True) if bias else (None, None)
    ey, y = ember.nn.functional.linear(ex, ew, eb), torch.nn.functional.linear(x, w, b)
    close(ey, y, tol)
    (eg, g) = pair(y.shape, dtype, 3)
    ey.backward(eg)
    y.backward(g)
    for e, t in ((ex, x), (ew, w)) + (((eb, b),) if bias else ()):
        close(e.grad, t.grad, 4 * tol)


@pytest.mark.parametrize("dtype,tol", HALVES)
@pytest.mark.parametrize("frozen", ["input", "weight", "bias", "none"])
@pytest.mark.parametrize("grad_view", ["contiguous", "transposed"])
def test_half_linear_backward_kernels_match_torch(dtype, tol, frozen, grad_view, monkeypatch):
    """linear's backward from cuBLAS and the column-sum kernels (attention.linear_backward): only the
    gradients asked for, a non-contiguous incoming gradient; create_graph takes the formula."""
    from ember._cuda import attention
    taken = []
    real = attention.linear_backward
    monkeypatch.setattr(attention, "linear_backward", lambda *a: taken.append(1) or real(*a))
    pairs = [pair(s, dtype, i, name != frozen) for i, (name, s) in
             enumerate((("input", (3, 16, 32)), ("weight", (24, 32)), ("bias", (24,))))]
    (ex, x), (ew, w), (eb, b) = pairs
    eg, g = pair((3, 24, 16), dtype, 7)
    if grad_view == "transposed":
        eg, g = eg.mT, g.mT
    else:
        eg, g = eg.reshape(3, 16, 24), g.reshape(3, 16, 24)
    ember.nn.functional.linear(ex, ew, eb).backward(eg)
    torch.nn.functional.linear(x, w, b).backward(g)
    assert len(taken) == 1
    for (e, t), name in zip(pairs, ("input", "weight", "bias")):
        assert (e.grad is None) == (name == frozen) == (t.grad is None)
        if t.grad is not None:
            close(e.grad, t.grad, 4 * tol * (4 if name == "bias" else 1))
    ex2, x2 = pair((3, 16, 32), dtype, 0, True)
    e_gx, = ember.autograd.grad(ember.nn.functional.linear(ex2, ew.detach()).square().sum(), ex2, create_graph=True)
    t_gx, = torch.autograd.grad(torch.nn.functional.linear(x2, w.detach()).square().sum(), x2, create_graph=True)
    close(e_gx, t_gx, 8 * tol)
    assert e_gx.requires_grad and len(taken) == 1      # create_graph: the formula, not the kernels


@pytest.mark.parametrize("dtype,tol", HALVES)
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("L,S,E", [(64, 64, 32), (48, 80, 16), (80, 48, 64)])
def test_sdpa_forward_and_backward_match_torch(dtype, tol, causal, L, S, E):
    (eq, q), (ek, k), (ev, v) = (pair((2, 3, n, E), dtype, i, True) for i, n in enumerate((L, S, S)))
    eo = ember.nn.functional.scaled_dot_product_attention(eq, ek, ev, is_causal=causal)
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    close(eo, o, tol)
    eg, g = pair(o.shape, dtype, 9)
    eo.backward(eg)
    o.backward(g)
    for e, t in ((eq, q), (ek, k), (ev, v)):
        close(e.grad, t.grad, 4 * tol)


def test_sdpa_takes_the_kernels_only_where_they_apply(monkeypatch):
    from ember._cuda import attention
    calls = []
    monkeypatch.setattr(attention, "sdpa_forward", lambda *a: calls.append(a))
    q = ember.randn(1, 2, 8, 4, device="cuda")             # float32: the math path
    ember.nn.functional.scaled_dot_product_attention(q, q, q)
    mask = ember.ones(8, 8, dtype=ember.bool, device="cuda")
    ember.nn.functional.scaled_dot_product_attention(q.bfloat16(), q.bfloat16(), q.bfloat16(), attn_mask=mask)
    assert calls == []
    with pytest.raises(RuntimeError):     # the argument checks run before the kernels
        ember.nn.functional.scaled_dot_product_attention(q.bfloat16(), q[..., :3].bfloat16(), q.bfloat16())


@pytest.mark.parametrize("dtype,tol", HALVES + [("float32", 1e-6)])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_kernels_match_torch(dtype, tol, approximate):
    """One kernel each way (ember/_cuda/fused.py), float32 math as PyTorch's; inf/NaN pass through
    as on PyTorch CUDA; a transposed (non-contiguous) input too."""
    (ex, x) = pair((6, 40), dtype, 0, True)
    with torch.no_grad():
        x[0, :3] = torch.tensor([float("inf"), float("-inf"), float("nan")], device="cuda")
    with ember.no_grad():
        ex[0, :3] = ember.tensor([float("inf"), float("-inf"), float("nan")], device="cuda")
    for view in (lambda a: a, lambda a: a.mT):
        ey = ember.nn.functional.gelu(view(ex), approximate=approximate)
        y = torch.nn.functional.gelu(view(x), approximate=approximate)
        close(ey, y, tol)
        eg, g = pair(y.shape, dtype, 5)
        e_grad, = ember.autograd.grad(ey, ex, eg)
        t_grad, = torch.autograd.grad(y, x, g)
        close(e_grad, t_grad, 2 * tol)


@pytest.mark.parametrize("dtype,tol", HALVES + [("float32", 1e-5)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("C", [3, 1000, 50257])
def test_cross_entropy_matches_torch(dtype, tol, reduction, C):
    """Class-index cross entropy: the row kernels of ember/_cuda/fused.py (mean, sum) or the math
    path (none), ignore_index rows included, forward and the logits' gradient."""
    (ex, x) = pair((37, C), dtype, 0, True)
    t = np.random.default_rng(1).integers(0, C, 37)
    t[[3, 20]] = -100
    et, tt = ember.tensor(t, device="cuda"), torch.tensor(t, device="cuda")
    ey = ember.nn.functional.cross_entropy(ex, et, reduction=reduction)
    y = torch.nn.functional.cross_entropy(x, tt, reduction=reduction)
    close(ey, y, tol)
    eg, g = pair(y.shape, dtype, 2)
    e_grad, = ember.autograd.grad(ey, ex, eg)
    t_grad, = torch.autograd.grad(y, x, g)
    close(e_grad, t_grad, 2 * tol)


def test_cross_entropy_edge_cases():
    x = ember.randn(4, 5, device="cuda")
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        ember.nn.functional.cross_entropy(x, ember.tensor([0, 7, 1, 2], device="cuda")).item()
    all_ignored = ember.full((4,), -100, dtype=ember.int64, device="cuda")
    assert ember.nn.functional.cross_entropy(x, all_ignored).isnan().item()
    assert torch.nn.functional.cross_entropy(torch.randn(4, 5, device="cuda"),
                                             torch.full((4,), -100, device="cuda")).isnan().item()
