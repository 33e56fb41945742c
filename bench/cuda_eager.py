"""ember vs PyTorch eager on the same GPU, in one process, interleaved rounds, medians.

    python3 bench/cuda_eager.py [--rounds 7] [--number 500] [--profile 2000] [--no-matmul]

1. per-op launch overhead: the time of one call on tiny CUDA tensors (shape (4,)), which is
   host work (argument parsing, dispatch, the CuPy / ATen launch); the GPU keeps up. Each batch
   of calls ends with a device synchronize, inside the timing.
2. matmul throughput: C = A @ B at 4096² and 8192² in bfloat16, and at 4096² in float32 with and
   without TF32, timed with CUDA events around `iters` products; TFLOP/s = 2 n³ / time.
3. --profile N: where each ember tiny op's host time goes (cProfile over N calls, the functions
   with the most own time).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ember  # noqa: E402
from _harness import header, table  # noqa: E402


def tiny_cases(torch):
    e_a, e_b = ember.arange(4.0, device="cuda"), ember.ones(4, device="cuda")
    e_m = ember.ones(4, 4, device="cuda")
    t_a, t_b = torch.arange(4.0, device="cuda"), torch.ones(4, device="cuda")
    t_m = torch.ones(4, 4, device="cuda")
    return {
        ("add", "ember"): lambda: ember.add(e_a, e_b), ("add", "torch"): lambda: torch.add(t_a, t_b),
        ("mul", "ember"): lambda: e_a * e_b, ("mul", "torch"): lambda: t_a * t_b,
        ("relu", "ember"): lambda: ember.relu(e_a), ("relu", "torch"): lambda: torch.relu(t_a),
        ("exp", "ember"): lambda: e_a.exp(), ("exp", "torch"): lambda: t_a.exp(),
        ("sum", "ember"): lambda: e_a.sum(), ("sum", "torch"): lambda: t_a.sum(),
        ("matmul 4x4", "ember"): lambda: e_m @ e_m, ("matmul 4x4", "torch"): lambda: t_m @ t_m,
        ("view", "ember"): lambda: e_m.view(16), ("view", "torch"): lambda: t_m.view(16),
        ("add_ (inplace)", "ember"): lambda: e_b.add_(e_a), ("add_ (inplace)", "torch"): lambda: t_b.add_(t_a),
    }


def launch_overhead(torch, rounds, number):
    cases = tiny_cases(torch)
    samples = {k: [] for k in cases}

    def batch(fn):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / number * 1e6
    for fn in cases.values():
        batch(fn)
    for _ in range(rounds):
        for k, fn in cases.items():
            samples[k].append(batch(fn))
    return {k: statistics.median(v) for k, v in samples.items()}


def profile_ops(torch, number, top=6):
    import cProfile
    import pstats
    for (name, lib), fn in tiny_cases(torch).items():
        if lib != "ember":
            continue
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(number):
            fn()
        prof.disable()
        torch.cuda.synchronize()
        print(f"\n### {name}: cProfile, {number} calls, top {top} by own time")
        stats = pstats.Stats(prof)
        rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:top]
        for (file, line, func), (_, ncalls, tottime, cumtime, _) in rows:
            print(f"  {tottime / number * 1e6:7.2f} us own {cumtime / number * 1e6:7.2f} us cum "
                  f"{ncalls / number:5.1f}/call  {os.path.basename(file)}:{line}({func})")


def matmul_tflops(torch, n, dtype, tf32, rounds, iters=20):
    results = {}
    for lib_name, lib in (("ember", ember), ("torch", torch)):
        d = getattr(lib, dtype)
        a = lib.randn(n, n, device="cuda").to(d)
        b = lib.randn(n, n, device="cuda").to(d)
        results[lib_name] = (lib, a, b)
    samples = {k: [] for k in results}
    for r in range(rounds + 1):
        for lib_name, (lib, a, b) in results.items():
            lib.backends.cuda.matmul.allow_tf32 = tf32
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iters):
                c = a @ b
            end.record()
            end.synchronize()
            if r:     # round 0 warms up (cuBLAS heuristics, CuPy's first call)
                samples[lib_name].append(2 * n ** 3 * iters / (start.elapsed_time(end) * 1e-3) / 1e12)
            del c
    ember.backends.cuda.matmul.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    return {k: statistics.median(v) for k, v in samples.items()}


def main():
    import torch
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--number", type=int, default=500)
    p.add_argument("--profile", type=int, default=0, help="cProfile each ember op over this many calls")
    p.add_argument("--no-matmul", action="store_true", help="skip the TFLOP/s table")
    args = p.parse_args()
    header("ember vs PyTorch eager on CUDA")
    print(f"# card: {torch.cuda.get_device_name()} | ember.cuda: {ember.cuda.get_device_name()} | "
          f"torch {torch.__version__} | cupy {__import__('cupy').__version__}")
    med = launch_overhead(torch, args.rounds, args.number)
    rows = list(dict.fromkeys(k[0] for k in med))
    print("\n## per-op time on tiny CUDA tensors (median us per call)")
    print(table(rows, ["ember", "torch"], med, ratio=("ember", "torch")))
    ratios = [med[(r, "ember")] / med[(r, "torch")] for r in rows]
    print(f"geometric-mean ratio ember/torch: {statistics.geometric_mean(ratios):.2f}x")
    if args.profile:
        profile_ops(torch, args.profile)
    if args.no_matmul:
        return
    print("\n## matmul TFLOP/s (median of rounds; CUDA events)")
    print(f"{'case':<28}{'ember':>10}{'torch':>10}{'ember/torch':>14}")
    for n, dtype, tf32 in ((4096, "bfloat16", False), (8192, "bfloat16", False), (4096, "float32", False),
                           (4096, "float32", True)):
        r = matmul_tflops(torch, n, dtype, tf32, args.rounds)
        label = f"{n}x{n} {dtype}{' tf32' if tf32 else ''}"
        print(f"{label:<28}{r['ember']:>10.1f}{r['torch']:>10.1f}{r['ember'] / r['torch']:>13.2f}x")


if __name__ == "__main__":
    main()
