"""Transcendentals in generated kernels: scalar libm vs glibc's libmvec (through
codecache.vector_math_prelude()), with NumPy and torch eager as peers.

    .venv/bin/python bench/vector_math.py [--n 1000000] [--rounds 7] [--number 10]

Each kernel is `#pragma omp simd for i: out[i] = f(x[i])` over float32, compiled with the fuser's
flags (config.cflags, one OpenMP thread). "scalar libm" is the same source without the prelude:
GCC then calls expf/... one element at a time. Also reports the largest difference between the
two kernels in float32 ulps (libmvec promises <= 4 ulp). Interleaved rounds, medians, in us.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _harness import header, interleaved  # noqa: E402
from ember._inductor import codecache, launch  # noqa: E402

# name -> (C expression of v, NumPy reference, input range)
FUNCTIONS = {
    "exp": ("expf(v)", np.exp, (-10, 10)),
    "log": ("logf(v)", np.log, (0.01, 100)),
    "tanh": ("tanhf(v)", np.tanh, (-5, 5)),
    "sin": ("sinf(v)", np.sin, (-10, 10)),
    "cos": ("cosf(v)", np.cos, (-10, 10)),
    "erf": ("erff(v)", None, (-3, 3)),
}

KERNEL = """#include <math.h>
#include <stdint.h>
{prelude}
void vm_{name}(void *const *bufs, const int64_t *ints, const double *floats) {{
    float *restrict out = bufs[0];
    const float *restrict x = bufs[1];
    #pragma omp simd
    for (int64_t i = 0; i < ints[0]; i++) {{ float v = x[i]; out[i] = {expr}; }}
}}
"""


def max_ulp(a, b):
    ref = np.abs(b).astype(np.float32)
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)) / np.spacing(ref)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--number", type=int, default=10)
    args = parser.parse_args()
    header(f"float32 transcendentals over {args.n} elements, us per call (1 thread)")
    if not codecache.isa()["libmvec"]:
        print("# libmvec is not usable on this machine: nothing to compare")
        return
    import torch
    torch.set_num_threads(1)
    run = launch.launcher()
    prelude = codecache.vector_math_prelude()
    rng = np.random.default_rng(0)
    cases, outputs, notes = {}, {}, {}
    for name, (expr, ref, (lo, hi)) in FUNCTIONS.items():
        x = rng.uniform(lo, hi, args.n).astype(np.float32)
        tx = torch.from_numpy(x)
        for variant, pre in (("scalar libm", ""), ("libmvec", prelude)):
            lib = codecache.load_c(KERNEL.format(prelude=pre, name=name, expr=expr))
            fp = codecache.kernel_pointer(lib, f"vm_{name}")
            out = outputs[(name, variant)] = np.empty_like(x)
            cases[(name, variant)] = (lambda fp=fp, out=out, x=x: run(fp, out, x, args.n))
            cases[(name, variant)]()
        if ref is not None:
            cases[(name, "numpy")] = (lambda ref=ref, x=x: ref(x))
        cases[(name, "torch")] = (lambda f=getattr(torch, name), tx=tx: f(tx))
        notes[name] = max_ulp(outputs[(name, "libmvec")], outputs[(name, "scalar libm")])
    medians = interleaved(cases, rounds=args.rounds, number=args.number)
    columns = ("scalar libm", "libmvec", "numpy", "torch")
    print(f"{'fn':<8}" + "".join(f"{c:>14}" for c in columns) + f"{'libm/libmvec':>15}{'max ulp diff':>14}")
    for name in FUNCTIONS:
        cells = "".join(f"{medians[(name, c)]:>12.0f}us" if (name, c) in medians else f"{'-':>14}"
                        for c in columns)
        speedup = medians[(name, "scalar libm")] / medians[(name, "libmvec")]
        print(f"{name:<8}{cells}{speedup:>14.1f}x{notes[name]:>14.1f}")


if __name__ == "__main__":
    main()
