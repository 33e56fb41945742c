"""Fused GPU kernels: ember.compile (Triton kernels from ember's fuser) vs torch eager and
torch.compile on the same card, with a device-to-device copy of the same bytes as the roofline.

    python bench/fused_cuda.py [--sizes 20,24,27] [--dtypes float32,bfloat16] [--rounds 5] [--png out.png]
                               [--only softmax,sum]

The five programs of bench/fused_cpu.py: gelu_tanh(x*2+1); layer_norm over rows of 1024; softmax
over rows of 1024; sum(x*x); a 6-op chain of two inputs, at 2^sizes elements. Each peer is timed
with CUDA events around back-to-back calls (so a launch-bound size includes each peer's per-call
host overhead), rounds interleaved, medians. "copy" is torch's device-to-device copy of as many
bytes as the program reads plus writes; copy/ember near 1 is memory speed. ember's inputs hold the
same values as torch's (float32 through DLPack, cast on the device).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ember  # noqa: E402
from fused_cpu import ROW, workloads  # noqa: E402

PEERS = ("ember.compile", "torch", "torch.compile", "copy")


def timed(torch, fn, min_ms=3.0):
    """Milliseconds per call of fn, from CUDA events around enough back-to-back calls."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(3):
        fn()
    end.record()
    end.synchronize()
    n = max(3, min(500, int(min_ms / max(start.elapsed_time(end) / 3, 1e-4))))
    start.record()
    for _ in range(n):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / n


def run(sizes, dtypes, rounds, only=()):
    import torch
    card = torch.cuda.get_device_name()
    print(f"# card: {card}; torch {torch.__version__}; ember.compile -> Triton kernels", flush=True)
    results = {}
    for dtype_name in dtypes:
        tdt = getattr(torch, dtype_name)
        for log2 in sizes:
            size = 1 << log2
            xt = torch.randn(size // ROW, ROW, device="cuda", dtype=tdt)
            yt = torch.randn(size // ROW, ROW, device="cuda", dtype=tdt)
            # float32 through DLPack (NumPy's DLPack has no bfloat16), then cast on the device: same values
            edt = getattr(ember, dtype_name)
            xe, ye = ember.from_dlpack(xt.float()).to(edt), ember.from_dlpack(yt.float()).to(edt)
            for name, (fn, _, floats) in workloads(None).items():
                if only and not any(w in name for w in only):
                    continue
                ember.compiler.reset()
                torch._dynamo.reset()
                ember_fn = ember.compile(lambda x, y, fn=fn: fn(ember, x, y))
                torch_fn = torch.compile(lambda x, y, fn=fn: fn(torch, x, y), dynamic=False)
                n_copy = size * floats // 2
                src, dst = torch.ones(n_copy, device="cuda", dtype=tdt), torch.empty(n_copy, device="cuda", dtype=tdt)
                peers = {"ember.compile": lambda: ember_fn(xe, ye), "torch": lambda: fn(torch, xt, yt),
                         "torch.compile": lambda: torch_fn(xt, yt), "copy": lambda: dst.copy_(src)}
                got = torch.from_dlpack(peers["ember.compile"]().float())
                want = peers["torch"]().float()
                tol = 3e-2 if dtype_name != "float32" else 1e-3
                scale = max(1.0, float(want.abs().max())) if "sum" in name else 1.0
                if not torch.allclose(got, want, rtol=tol, atol=tol * scale):
                    print(f"# MISMATCH {name} {dtype_name} 2^{log2}: max diff {float((got - want).abs().max())}")
                peers["torch.compile"]()
                samples = {k: [] for k in peers}
                for _ in range(rounds):
                    for k, f in peers.items():
                        samples[k].append(timed(torch, f))
                med = {k: statistics.median(v) * 1e3 for k, v in samples.items()}
                results[(dtype_name, log2, name)] = med
                print(f"{dtype_name:<9} 2^{log2:<3} {name:<17}" + "".join(f"{k} {v:>9.1f}us  " for k, v in med.items())
                      + f"tc/ember {med['torch.compile'] / med['ember.compile']:.2f}x  "
                      f"copy/ember {med['copy'] / med['ember.compile']:.2f}", flush=True)
    return card, results


def write_png(card, results, path):
    """Bars: peer time / ember.compile time per program and size (above 1: ember is faster; the
    copy bar is the roofline: near 1, ember runs at the copy's bandwidth)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    dtypes = sorted({d for d, _, _ in results})
    fig, axes = plt.subplots(len(dtypes), 1, figsize=(12, 4.2 * len(dtypes)), squeeze=False)
    peers = [p for p in PEERS if p != "ember.compile"]
    width = 0.8 / len(peers)
    for ax, dtype in zip(axes[:, 0], dtypes):
        keys = sorted((k for k in results if k[0] == dtype), key=lambda k: (k[1], k[2]))
        for i, peer in enumerate(peers):
            ax.bar([k + i * width for k in range(len(keys))],
                   [results[key][peer] / results[key]["ember.compile"] for key in keys], width, label=peer)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_xticks([k + 0.4 - width / 2 for k in range(len(keys))])
        ax.set_xticklabels([f"{name}, 2^{log2}" for _, log2, name in keys], fontsize=7, rotation=30, ha="right")
        ax.set_ylabel("peer time / ember.compile time")
        ax.set_title(f"{dtype} on {card}", fontsize=9, loc="right")
        ax.legend(fontsize=7, ncol=len(peers), loc="lower left", bbox_to_anchor=(0, 1.02), frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    print(f"# chart: {path}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="20,24,27")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="")
    ap.add_argument("--png", default=None)
    args = ap.parse_args()
    card, results = run([int(s) for s in args.sizes.split(",")], args.dtypes.split(","), args.rounds,
                        [w for w in args.only.split(",") if w])
    if args.png:
        write_png(card, results, args.png)


if __name__ == "__main__":
    main()
