"""Fused CPU kernels: ember.compile vs NumPy, torch eager and torch.compile, with a plain C copy of
the same bytes as the memory roofline. float32, interleaved rounds, medians.

    .venv/bin/python bench/fused_cpu.py [--sizes 1e4,1e6,1e7] [--threads 1,2] [--rounds 7] [--png out.png]
                                        [--only softmax,layer_norm] [--show] [--clock cpu] [--scalar-peer]

--only runs the workloads whose name contains one of the words; --show prints each compiled
kernel's C source (EMBER_LOGS=output_code for that compile) before its row. --clock cpu times
with the process's CPU time (user + system, page faults included) instead of the wall clock: on a
machine shared with other jobs the wall clock counts the time the process waited for a core (1
thread only: with 2 threads CPU time adds both threads up).

--scalar-peer adds "ember scalar": the same program compiled without the vector-typed C
(codegen_c_vec.lanes() forced to 0, in a cache directory of its own), interleaved with the rest.

Workloads: gelu_tanh(x*2+1); layer_norm over rows of 1024; softmax over rows of 1024; sum(x*x);
a 6-op pointwise chain of two inputs. "copy" is a C loop (OpenMP with the same thread count)
copying as many bytes as the workload reads plus writes: `copy/ember` near 1 means the kernel runs
at memory speed. torch.compile is compiled once per size and thread count (its first compile is slow).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import ember  # noqa: E402
from _harness import header, machine  # noqa: E402

ROW = 1024
COPY_C = """
#include <stdint.h>
#include <string.h>
void ember_bench_copy(const float* src, float* dst, int64_t n, int threads) {
    #pragma omp parallel for num_threads(threads) schedule(static) if(threads > 1)
    for (int64_t b = 0; b < n; b += 65536) {
        int64_t e = b + 65536 < n ? b + 65536 : n;
        #pragma omp simd
        for (int64_t i = b; i < e; i++) dst[i] = src[i];
    }
}
"""


def workloads(lib):
    """name -> (fn(lib, x, y), numpy fn(x, y), floats moved per element of x)."""
    def gelu(L, x, y):
        return L.nn.functional.gelu(x * 2 + 1, approximate="tanh")

    def layer_norm(L, x, y):
        return L.nn.functional.layer_norm(x, (ROW,))

    def softmax(L, x, y):
        return L.softmax(x, -1)

    def sum_sq(L, x, y):
        return (x * x).sum()

    def chain(L, x, y):
        return ((x * 1.5 + y).relu() - x * y).sigmoid()

    def np_gelu(x, y):
        t = x * 2 + 1
        return 0.5 * t * (1 + np.tanh(np.float32(0.7978845608) * (t + np.float32(0.044715) * t * t * t)))

    def np_layer_norm(x, y):
        m = x.mean(-1, keepdims=True)
        return (x - m) / np.sqrt(x.var(-1, keepdims=True) + np.float32(1e-5))

    def np_softmax(x, y):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def np_chain(x, y):
        return 1 / (1 + np.exp(-(np.maximum(x * np.float32(1.5) + y, 0) - x * y)))
    return {"gelu_tanh(x*2+1)": (gelu, np_gelu, 2), "layer_norm(1024)": (layer_norm, np_layer_norm, 2),
            "softmax(1024)": (softmax, np_softmax, 2), "sum(x*x)": (sum_sq, lambda x, y: (x * x).sum(), 1),
            "6-op chain": (chain, np_chain, 3)}


CLOCK = time.perf_counter


def timed(fn, min_seconds=0.02):
    """Seconds per call: as many calls as fill ~min_seconds."""
    n, t0 = 1, CLOCK()
    fn()
    first = CLOCK() - t0
    n = max(1, int(min_seconds / max(first, 1e-7)))
    t0 = CLOCK()
    for _ in range(n):
        fn()
    return (CLOCK() - t0) / n


def scalar_compile(fn):
    """ember.compile of fn with the vector emitter off: a fresh cache directory, so that neither the
    kernel nor the graph cache returns the vector build; compiled by its first call."""
    import tempfile
    from ember._inductor import codegen_c_vec, config
    compiled = ember.compile(fn)

    def first_call(*args):
        saved, lanes = config.cache_dir, codegen_c_vec.lanes
        config.cache_dir, codegen_c_vec.lanes = tempfile.mkdtemp(prefix="ember-scalar-"), lambda: 0
        try:
            return compiled(*args)
        finally:
            config.cache_dir, codegen_c_vec.lanes = saved, lanes
    return compiled, first_call


def run(sizes, threads, rounds, only=(), show=False, scalar_peer=False):
    import torch
    from ember._inductor import config
    from ember._inductor.codecache import load_c
    import ctypes
    copy = load_c(COPY_C).ember_bench_copy
    copy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int]
    results = {}
    for nthreads in threads:
        torch.set_num_threads(nthreads)
        config.threads = nthreads
        for size in sizes:
            rng = np.random.default_rng(0)
            xn = rng.standard_normal(size, dtype=np.float32).reshape(-1, ROW) if size >= ROW else \
                rng.standard_normal(size, dtype=np.float32).reshape(1, -1)
            yn = rng.standard_normal(xn.shape, dtype=np.float32)
            xe, ye = ember.from_numpy(xn), ember.from_numpy(yn)
            xt, yt = torch.from_numpy(xn), torch.from_numpy(yn)
            for name, (fn, np_fn, floats) in workloads(None).items():
                if only and not any(w in name for w in only):
                    continue
                if name in ("layer_norm(1024)", "softmax(1024)") and xn.shape[1] != ROW:
                    continue
                ember.compiler.reset()      # one lambda code object serves every workload: start clean
                torch._dynamo.reset()
                ember_fn = ember.compile(lambda x, y, fn=fn: fn(ember, x, y))
                torch_fn = torch.compile(lambda x, y, fn=fn: fn(torch, x, y), dynamic=False)
                n_copy = size * floats // 2
                src, dst = np.empty(n_copy, np.float32), np.empty(n_copy, np.float32)
                src[:] = 1
                peers = {"ember.compile": lambda: ember_fn(xe, ye), "numpy": lambda: np_fn(xn, yn),
                         "torch": lambda: fn(torch, xt, yt), "torch.compile": lambda: torch_fn(xt, yt),
                         "C copy": lambda: copy(src.ctypes.data, dst.ctypes.data, n_copy, nthreads)}
                if scalar_peer:
                    scalar_fn, first = scalar_compile(lambda x, y, fn=fn: fn(ember, x, y))
                    first(xe, ye)
                    peers["ember scalar"] = lambda: scalar_fn(xe, ye)
                t0 = time.perf_counter()
                if show:
                    from ember._logging import set_logs
                    set_logs(output_code=True)
                got = peers["ember.compile"]()
                if show:
                    set_logs()
                np.testing.assert_allclose(got.numpy(), peers["torch"]().numpy(),
                                           rtol=1e-3, atol=1e-3 * max(1.0, size ** 0.5 if "sum" in name else 1.0))
                peers["torch.compile"]()
                compile_s = time.perf_counter() - t0
                samples = {k: [] for k in peers}
                for _ in range(rounds):
                    for k, f in peers.items():
                        samples[k].append(timed(f))
                med = {k: statistics.median(v) * 1e6 for k, v in samples.items()}
                results[(nthreads, size, name)] = med
                print(f"{nthreads}t {size:>10,} {name:<17}" + "".join(f"{k} {v:>10.1f}us  " for k, v in med.items())
                      + f"tc/ember {med['torch.compile'] / med['ember.compile']:.2f}x  "
                      f"copy/ember {med['C copy'] / med['ember.compile']:.2f}  (compiles {compile_s:.1f}s)", flush=True)
    return results


def write_png(results, path, note=""):
    """One panel per thread count: for each workload and size, how many times faster ember.compile
    is than each peer (peer time / ember time, log scale; above 1: ember is faster). The C copy
    bar is the memory roofline: near 1, the kernel runs at memory speed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        print(f"# matplotlib is not installed (pip install ember[bench]); no chart written to {path}")
        return
    peers = ["torch.compile", "torch", "numpy", "C copy"]
    threads = sorted({t for t, _, _ in results})
    fig, axes = plt.subplots(len(threads), 1, figsize=(12, 4.2 * len(threads)), squeeze=False)
    width = 0.8 / len(peers)
    for ax, nthreads in zip(axes[:, 0], threads):
        keys = sorted((k for k in results if k[0] == nthreads), key=lambda k: (k[1], k[2]))
        for i, peer in enumerate(peers):
            ax.bar([k + i * width for k in range(len(keys))],
                   [results[key][peer] / results[key]["ember.compile"] for key in keys], width, label=peer)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%gx"))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.tick_params(axis="y", which="both", labelsize=7)
        ax.set_xticks([k + 0.4 - width / 2 for k in range(len(keys))])
        ax.set_xticklabels([f"{name}, {size:,}" for _, size, name in keys], fontsize=7,
                           rotation=30, ha="right")
        ax.set_ylabel("peer time / ember.compile time")
        ax.set_title(f"{nthreads} thread(s): how many times faster ember.compile is (above 1x: faster)",
                     fontsize=9, loc="right")
        ax.legend(fontsize=7, ncol=len(peers), loc="lower left", bbox_to_anchor=(0, 1.06), frameon=False)
    fig.text(0.01, 0.005, f"machine: {machine()}; {note}", fontsize=6)
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    fig.savefig(path, dpi=90)
    print(f"# chart: {path}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1e4,1e6,1e7")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--png", default=None)
    ap.add_argument("--only", default="", help="comma-separated words: workloads whose name has one")
    ap.add_argument("--show", action="store_true", help="print the generated C of each workload")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    ap.add_argument("--scalar-peer", action="store_true", help="also time ember without the vector-typed C")
    args = ap.parse_args()
    global CLOCK
    if args.clock == "cpu":
        if args.threads != "1":
            ap.error("--clock cpu times one thread only (use --threads 1)")
        CLOCK = time.process_time
    header("fused CPU kernels: ember.compile vs NumPy, torch eager, torch.compile; C copy = memory roofline")
    sizes = [int(float(s)) // ROW * ROW if float(s) >= ROW else int(float(s)) for s in args.sizes.split(",")]
    results = run(sizes, [int(t) for t in args.threads.split(",")], args.rounds,
                  [w for w in args.only.split(",") if w], args.show, args.scalar_peer)
    if args.png:
        write_png(results, args.png, f"{'CPU' if args.clock == 'cpu' else 'wall'} time, medians of {args.rounds} "
                                     f"interleaved rounds")


if __name__ == "__main__":
    main()
