"""How fast one core can read: sum(x*x) over float32 arrays by ember.compile and torch.compile
against hand-written C loops that only load and accumulate, and bench/fused_cpu.py's C copy.

    python bench/read_bound.py [--sizes 1e7] [--rounds 9]

Issue 14 asks ember.compile for 2x torch.compile's sum(x*x) at 1e7 elements. This shows whether any
kernel can be that fast on the machine: the C loops read the same 40 MB with one accumulator
vector (`#pragma omp simd reduction`) and with four independent ones (the loop unrolled by four);
"2x torch.compile" is the time the goal asks for. ember's own float sum reads four streams too
(codegen_reduction.STREAM_BLOCK: four 32 KB parts of each 128 KB block). All peers in one process,
interleaved, CPU time (1 thread), medians.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import ember  # noqa: E402
from _harness import header, interleaved  # noqa: E402
from fused_cpu import COPY_C  # noqa: E402

READ_C = """
#include <stdint.h>
float ember_bench_read1(const float* x, int64_t n) {
    float s = 0;
    #pragma omp simd reduction(+:s)
    for (int64_t i = 0; i < n; i++) s += x[i] * x[i];
    return s;
}
float ember_bench_read4(const float* x, int64_t n) {      /* four accumulators: no add-latency chain */
    float a = 0, b = 0, c = 0, d = 0;
    int64_t q = n / 4;
    #pragma omp simd reduction(+:a, b, c, d)
    for (int64_t i = 0; i < q; i++) {
        a += x[i] * x[i]; b += x[q + i] * x[q + i]; c += x[2 * q + i] * x[2 * q + i];
        d += x[3 * q + i] * x[3 * q + i];
    }
    for (int64_t i = 4 * q; i < n; i++) a += x[i] * x[i];
    return a + b + c + d;
}
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1e7")
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    import torch
    from ember._inductor.codecache import load_c
    torch.set_num_threads(1)
    lib, copy_lib = load_c(READ_C), load_c(COPY_C)
    for f in (lib.ember_bench_read1, lib.ember_bench_read4):
        f.argtypes, f.restype = [ctypes.c_void_p, ctypes.c_int64], ctypes.c_float
    copy = copy_lib.ember_bench_copy
    copy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int]
    header("one core's read speed: sum(x*x) vs C loops that only read (CPU time, 1 thread)")
    for size in (int(float(s)) for s in args.sizes.split(",")):
        xn = np.random.default_rng(0).standard_normal(size, dtype=np.float32)
        xe, xt = ember.from_numpy(xn), torch.from_numpy(xn)
        ember_fn = ember.compile(lambda x: (x * x).sum())
        torch_fn = torch.compile(lambda x: (x * x).sum(), dynamic=False)
        src, dst = np.ones(size // 2, np.float32), np.empty(size // 2, np.float32)
        peers = {"ember.compile": lambda: ember_fn(xe), "torch.compile": lambda: torch_fn(xt),
                 "C read, 1 acc": lambda: lib.ember_bench_read1(xn.ctypes.data, size),
                 "C read, 4 acc": lambda: lib.ember_bench_read4(xn.ctypes.data, size),
                 "C copy": lambda: copy(src.ctypes.data, dst.ctypes.data, size // 2, 1)}
        np.testing.assert_allclose(float(ember_fn(xe)), float(torch_fn(xt)), rtol=1e-4)
        np.testing.assert_allclose(lib.ember_bench_read4(xn.ctypes.data, size), float(torch_fn(xt)), rtol=1e-4)
        med = interleaved({(size, name): fn for name, fn in peers.items()}, rounds=args.rounds, number=5,
                          clock="cpu")
        cells = "  ".join(f"{name} {med[(size, name)] / 1e3:.2f} ms" for name in peers)
        fastest = min(med[(size, "C read, 1 acc")], med[(size, "C read, 4 acc")])
        goal = med[(size, "torch.compile")] / 2
        print(f"{size:>11,}  {cells}  | 2x torch.compile: {goal / 1e3:.2f} ms, the fastest C read "
              f"{fastest / 1e3:.2f} ms ({fastest / goal:.2f}x the goal's time)", flush=True)


if __name__ == "__main__":
    main()
