"""The tied LM head's three GEMMs of a GPT-2 step (bf16, N = 50257: not a multiple of 8) on the GPU:
ember's blas.gemm as eager runs them, torch.mm on the same card, and two ways of padding (run by
scripts/device_externs.sh). Milliseconds per GEMM, CUDA events, median of 5 runs of 10.

  ld-pad     each operand whose leading dim is not a multiple of 8 copied into storage with padded
             rows (the logical matrix unchanged), the output written into padded rows
  pad GEMM   every dim padded to a multiple of 8 with zeros (gemm_padding.py; Inductor's pad_mm idea)
  eager now  blas.gemm as eager runs it with the padding rule on: copies included
"""
import statistics
import sys

import cupy
import torch

sys.path.insert(0, ".")
import ember  # noqa: E402
from ember._cuda import blas, gemm_padding  # noqa: E402

M, C, V = 8192, 768, 50257
PV = -(-V // 8) * 8


def timed(fn, sync_torch=False):
    fn(), fn()
    samples = []
    for _ in range(5):
        cupy.cuda.Device().synchronize()
        torch.cuda.synchronize()
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        if sync_torch:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(10):
            fn()
        end.record()
        end.synchronize()
        ms = start.elapsed_time(end) if sync_torch else cupy.cuda.get_elapsed_time(start, end)
        samples.append(ms / 10)
    return statistics.median(samples)


def bf16(*shape):
    return ember.randn(*shape, device="cuda", dtype=ember.bfloat16)._data


def padded_rows(a, cols):
    """a copied into storage of `cols` columns, as a view of a's shape."""
    p = cupy.zeros(a.shape[:-1] + (cols,), a.dtype)
    p[..., :a.shape[-1]] = a
    return p[..., :a.shape[-1]]


x, w, g = bf16(M, C), bf16(V, C), bf16(M, V)
tx, tw, tg = (torch.randn(*s, device="cuda", dtype=torch.bfloat16) for s in ((M, C), (V, C), (M, V)))
gp = padded_rows(g, PV)
wz = cupy.zeros((PV, C), w.dtype); wz[:V] = w
gz = cupy.zeros((M, PV), g.dtype); gz[:, :V] = g
out_f = cupy.empty((M, PV), w.dtype)
print(f"card: {torch.cuda.get_device_name()} | shapes: x {M}x{C}, w (tied) {V}x{C}, dlogits {M}x{V}, bf16")
def unpadded(fn):
    def run():
        saved, gemm_padding.PAD_MIN_MACS = gemm_padding.PAD_MIN_MACS, 1 << 62
        try:
            return fn()
        finally:
            gemm_padding.PAD_MIN_MACS = saved
    return run


rows = {   # unpadded blas.gemm (eager before), torch.mm, eager now (padded, its copies included),
           # the padded GEMM alone, ld-only padding, eager's copy of the result back to contiguous,
           # the operand padding copy
    "forward  x @ w.T": [
        unpadded(lambda: blas.gemm(x, w.T)),
        lambda: torch.mm(tx, tw.T),
        lambda: blas.gemm(x, w.T),
        lambda: blas.gemm(x, wz.T, out=out_f),
        unpadded(lambda: blas.gemm(x, w.T, out=out_f[:, :V])),
        lambda: cupy.ascontiguousarray(out_f[:, :V]),
        lambda: wz.__setitem__(slice(0, V), w)],
    "dinput   g @ w": [
        unpadded(lambda: blas.gemm(g, w)),
        lambda: torch.mm(tg, tw),
        lambda: blas.gemm(g, w),
        lambda: blas.gemm(gz, wz),
        unpadded(lambda: blas.gemm(gp, w)),
        lambda: None,
        lambda: gz.__setitem__((slice(None), slice(0, V)), g)],
    "dweight  g.T @ x": [
        unpadded(lambda: blas.gemm(g.T, x)),
        lambda: torch.mm(tg.T, tx),
        lambda: blas.gemm(g.T, x),
        lambda: blas.gemm(gz.T, x),
        unpadded(lambda: blas.gemm(gp.T, x)),
        lambda: None,
        lambda: None],
}
print(f"{'ms per GEMM':18s} {'unpadded':>9s} {'torch.mm':>9s} {'eager now':>9s} {'pad GEMM':>9s} {'ld-pad':>9s} "
      f"{'out copy':>9s} {'pad copy':>9s}")
for name, fns in rows.items():
    ms = [timed(f, sync_torch=(i == 1)) for i, f in enumerate(fns)]
    print(f"{name:18s} " + " ".join(f"{m:9.3f}" for m in ms))
# exactness: padding adds exact zeros / changes no value read
ref = unpadded(lambda: blas.gemm(g, w))()
print("dinput, max |padded - unpadded| (summation order; |values| ~ 200):",
      float(abs(blas.gemm(g, w).astype("f") - ref.astype("f")).max()))
