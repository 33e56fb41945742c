"""Per-call overhead of a compiled function, and capture latency, ember vs PyTorch, interleaved.

    .venv/bin/python bench/dynamo_overhead.py [--rounds 15] [--number 2000]

1. `(a + b) * 2` on 10-element tensors, backend "eager": the compiled call (wrapper + guard check +
   transformed code + graph) against calling the captured GraphModule directly and against eager,
   for ember and for torch.compile(backend="eager"). The "over graph" / "over eager" columns are the
   compile entry's own cost.
2. Capture latency of seed 003's toy_example (both frames: the function and the resume function it
   reaches), from an empty cache, for each library.
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
from _harness import header, interleaved  # noqa: E402


PROGRAMS = """
def add_mul(a, b):
    return (a + b) * 2


def toy_example(lib, a, b):
    x = a / (lib.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b
"""


def programs(lib) -> dict:
    """The programs, defined in a module namespace of their own per library: both compilers add
    `__compiled_fn_N` / `__resume_at_...` globals to the function's module and must not meet."""
    namespace = {"__name__": f"bench_programs_{lib.__name__}"}
    exec(compile(PROGRAMS, __file__, "exec"), namespace)
    return namespace


def per_call_cases():
    import torch
    torch.set_num_threads(1)
    arr = np.arange(10, dtype=np.float32)
    cases, graphs = {}, {}
    for lib in (ember, torch):
        name = lib.__name__
        a, b = lib.from_numpy(arr.copy()), lib.from_numpy(arr.copy())
        recorded = []

        def backend(gm, example_inputs, recorded=recorded):
            recorded.append(gm)
            return gm.forward
        lib._dynamo.reset()
        add_mul = programs(lib)["add_mul"]
        compiled = lib.compile(add_mul, backend=backend)
        compiled(a, b)
        gm = recorded[0]
        graphs[name] = gm
        cases[(name, "compiled")] = lambda compiled=compiled, a=a, b=b: compiled(a, b)
        cases[(name, "graph")] = lambda gm=gm, a=a, b=b: gm(a, b)
        cases[(name, "eager")] = lambda a=a, b=b, add_mul=add_mul: add_mul(a, b)
    return cases


def capture_ms(lib, repeats: int) -> list:
    """ms to compile toy_example's two frames (both signs of b.sum() reached: first call goes one way)."""
    times = []
    rng = np.random.default_rng(0)
    for _ in range(repeats):
        lib._dynamo.reset()
        f = lib.compile(programs(lib)["toy_example"], backend="eager")
        a = lib.from_numpy(rng.standard_normal(10).astype(np.float32))
        b = lib.from_numpy(np.abs(rng.standard_normal(10)).astype(np.float32))
        t0 = time.perf_counter()
        f(lib, a, b)            # frame 1 (toy_example) + frame 2 (__resume_at_..._2)
        times.append((time.perf_counter() - t0) * 1000)
    return times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--number", type=int, default=2000)
    parser.add_argument("--capture-repeats", type=int, default=7)
    args = parser.parse_args()
    header("dynamo per-call overhead: compiled `(a + b) * 2` on 10-element tensors, backend 'eager'")
    med = interleaved(per_call_cases(), rounds=args.rounds, number=args.number)
    print(f"{'library':<8}{'compiled':>12}{'graph':>12}{'eager':>12}{'over graph':>14}{'over eager':>14}")
    for lib in ("ember", "torch"):
        c, g, e = med[(lib, "compiled")], med[(lib, "graph")], med[(lib, "eager")]
        print(f"{lib:<8}{c:>10.2f}us{g:>10.2f}us{e:>10.2f}us{c - g:>12.2f}us{c - e:>12.2f}us")
    print(f"ember compiled call / torch compiled call: {med[('ember', 'compiled')] / med[('torch', 'compiled')]:.2f}x;"
          f" compile-entry cost ember {med[('ember', 'compiled')] - med[('ember', 'eager')]:.2f}us vs torch "
          f"{med[('torch', 'compiled')] - med[('torch', 'eager')]:.2f}us over eager")
    print()
    print("# capture latency, seed 003 toy_example (two frames), from an empty cache, median of "
          f"{args.capture_repeats}")
    import torch
    for lib in (ember, torch):
        times = capture_ms(lib, args.capture_repeats)
        print(f"{lib.__name__:<8}{statistics.median(times):>10.1f} ms total ({statistics.median(times) / 2:.1f} ms/frame)")


if __name__ == "__main__":
    main()
