"""Attention forward+backward on the GPU at GPT-2 small's shape (batch 8, 12 heads, seq 1024, head dim
64, bf16, causal): ember's flash kernels vs the materialised path they replace vs PyTorch's sdpa (its
flash kernel), in one process on one card; then the block-size table's candidates for head dim 64.

    python bench/flash_attention.py [--iters 20] [--sweep] [--profile]
"""
import argparse
import time

import torch

import ember


def _sync():
    ember.cuda.synchronize()
    torch.cuda.synchronize()


def timed(fn, iters):
    """(mean, min) milliseconds per call of fn, each call synchronised (a warm-up call first)."""
    fn()
    _sync()
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        fn()
        _sync()
        times.append((time.perf_counter() - start) * 1e3)
    return sum(times) / iters, min(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--sweep", action="store_true", help="then time the block-size candidates (min ms)")
    p.add_argument("--profile", action="store_true", help="cProfile of the autograd row instead of the table")
    p.add_argument("--shape", type=int, nargs=4, default=(8, 12, 1024, 64), metavar=("B", "H", "L", "D"))
    a = p.parse_args()
    from ember._cuda import attention, flash_attention, flash_ops
    B, H, L, D = a.shape
    print(f"# card: {torch.cuda.get_device_name()} | shape B={B} H={H} L={L} D={D} bf16 causal | ms per call")
    tq, tk, tv, tg = (torch.randn(B, H, L, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    eq, ek, ev, eg = (ember.randn(B, H, L, D, device="cuda", dtype=ember.bfloat16) for _ in range(4))
    F = ember.nn.functional

    def ember_flash():
        out, lse = flash_ops.forward(eq, ek, ev, 0.0, True)
        flash_ops.backward(eg, eq, ek, ev, out, lse, 0.0, True)

    def torch_sdpa():
        q, k, v = (t.detach().requires_grad_() for t in (tq, tk, tv))
        torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).backward(tg)

    def ember_autograd():
        q, k, v = (t.detach().requires_grad_() for t in (eq, ek, ev))
        F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(eg)

    if a.profile:
        import cProfile
        import pstats
        ember_autograd()
        ember.cuda.synchronize()
        with cProfile.Profile() as prof:
            for _ in range(5):
                ember_autograd()
            ember.cuda.synchronize()
        pstats.Stats(prof).sort_stats("tottime").print_stats(18)
        return
    rows = [("ember flash fwd+bwd (kernels)", ember_flash), ("ember F.sdpa + backward (autograd)", ember_autograd),
            ("torch sdpa + backward (flash)", torch_sdpa)]
    if L <= 2048:      # the path flash replaces: cuBLAS scores, row-softmax kernels, weights recomputed
        def materialised():
            attention.sdpa_forward(eq, ek, ev, True, None)
            attention.materialised_backward(eg, eq, ek, ev, True, None)
        rows.append(("ember materialised fwd+bwd (before)", materialised))
    print(f"{'':44s} {'mean':>8s} {'min':>8s}")
    for name, fn in rows:
        mean, best = timed(fn, a.iters)
        print(f"{name:44s} {mean:8.3f} {best:8.3f}")
    if not a.sweep:
        return
    lse = ember.empty(B, H, L, device="cuda")
    out = ember.empty_like(eq)
    for cfg in ((128, 64, 4, 3), (128, 128, 8, 3), (64, 64, 4, 3)):
        ms = timed(lambda: flash_attention.forward(eq, ek, ev, out, lse, True, None, config=cfg), a.iters)[1]
        print(f"forward config {cfg}: {ms:8.3f}")
    delta = ember.empty(B, H, L, device="cuda")
    dq, dk, dv = (ember.empty_like(eq) for _ in range(3))
    flash_attention.forward(eq, ek, ev, out, lse, True, None)
    for cfg in ((64, 64, 4, 2), (32, 64, 4, 2), (64, 128, 8, 2)):
        ms = timed(lambda: flash_attention.backward(eg, eq, ek, ev, out, lse, delta, dq, dk, dv, True, None,
                                                    config=cfg), a.iters)[1]
        print(f"backward config {cfg}: {ms:8.3f}")


if __name__ == "__main__":
    main()
