"""Launch-bound work on the GPU: a 50-op pointwise chain on 1024-element float32 tensors, per op
amortised, in one process on one card:

    ember eager | ember CUDA-graph replay | ember.compile(mode="reduce-overhead"), backend "eager" (the
    50 kernels replayed) and the default "inductor" (whatever it generates for CUDA, replayed)
    | torch eager | torch CUDA graph

Each figure is the median over interleaved rounds of (wall-clock time of `iters` calls, the stream
synchronized before and after) / (iters * 50). Run on a machine with a GPU (the device tool):
    python bench/cuda_graphs.py [--rounds 15] [--iters 200] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

N_OPS, SIZE = 50, 1024


def chain(x):
    """50 pointwise ops (mul, add, and a few transcendental ones), each a separate kernel eagerly."""
    for i in range(N_OPS):
        if i % 10 == 9:
            x = x.sin()
        elif i % 2:
            x = x * 0.999
        else:
            x = x + 0.001
    return x


def timed(run, sync, iters):
    sync()
    start = time.perf_counter()
    for _ in range(iters):
        run()
    sync()
    return (time.perf_counter() - start) / (iters * N_OPS) * 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    import torch
    import ember

    start = np.random.default_rng(0).standard_normal(SIZE).astype(np.float32)
    ex, tx = ember.from_numpy(start).cuda(), torch.from_numpy(start).cuda()

    # ember: one graph of the chain on a static input
    static_e = ex.clone()
    graph_e = ember.cuda.CUDAGraph()
    chain(static_e)   # warm-up: CuPy compiles its kernels before the capture
    with ember.cuda.graph(graph_e):
        out_e = chain(static_e)
    compiled = ember.compile(chain, backend="eager", mode="reduce-overhead")
    fused = ember.compile(chain, mode="reduce-overhead")
    with ember.no_grad():
        for _ in range(3):
            compiled(ex)            # warm-up, record, replay
            fused(ex)

    static_t = tx.clone()
    graph_t = torch.cuda.CUDAGraph()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        chain(static_t)
    torch.cuda.current_stream().wait_stream(side)
    with torch.cuda.graph(graph_t):
        out_t = chain(static_t)

    graph_e.replay()
    graph_t.replay()
    with ember.no_grad():
        check = np.abs(out_e.cpu().numpy() - chain(ex).cpu().numpy()).max(), \
            np.abs(out_t.cpu().numpy() - out_e.cpu().numpy()).max(), \
            np.abs(fused(ex).cpu().numpy() - chain(ex).cpu().numpy()).max()

    def compiled_call(fn):
        def call():
            with ember.no_grad():
                fn(ex)
        return call

    variants = {
        "ember eager": (lambda: chain(ex), ember.cuda.synchronize),
        "ember CUDA graph replay": (graph_e.replay, ember.cuda.synchronize),
        "ember.compile eager r-o": (compiled_call(compiled), ember.cuda.synchronize),
        "ember.compile inductor r-o": (compiled_call(fused), ember.cuda.synchronize),
        "torch eager": (lambda: chain(tx), torch.cuda.synchronize),
        "torch CUDA graph replay": (graph_t.replay, torch.cuda.synchronize),
    }
    samples = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, (run, sync) in variants.items():
            samples[name].append(timed(run, sync, args.iters))
    medians = {name: statistics.median(v) for name, v in samples.items()}
    card = torch.cuda.get_device_name()
    print(f"{N_OPS}-op pointwise chain on {SIZE}-element float32 tensors, {card} "
          f"(median of {args.rounds} interleaved rounds x {args.iters} calls)")
    print(f"max |graph - eager| ember {check[0]:.2e}, |torch graph - ember graph| {check[1]:.2e}, "
          f"|inductor r-o - eager| {check[2]:.2e}")
    print(f"{'':32s} {'us/op':>8s}")
    for name, value in medians.items():
        print(f"{name:32s} {value:8.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"card": card, "us_per_op": medians, "samples": samples}, f, indent=1)


if __name__ == "__main__":
    main()
