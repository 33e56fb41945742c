"""Per-call overhead of a compiled function, and capture latency, ember vs PyTorch, interleaved.

    .venv/bin/python bench/dynamo_overhead.py [--rounds 15] [--number 2000] [--clock cpu]

1. `(a + b) * 2` on 10-element tensors, backend "eager": the compiled call (wrapper + guard check +
   transformed code + graph) against calling the captured GraphModule directly and against eager,
   for ember and for torch.compile(backend="eager"). The "over graph" / "over eager" columns are the
   compile entry's own cost.
2. Capture latency of seed 003's toy_example (both frames: the function and the resume function it
   reaches), from an empty cache, for each library.
3. Module-heavy: a 12-layer GPT built from nn modules (bench/_gpt_modules.py, 151 modules), compiled
   with a recording backend: the guard check alone (ember: the entry's generated check; torch: the
   cache entry's guard manager, `check(f_locals)`), and the whole compiled call against calling the
   captured graph directly and against eager, under no_grad; and the whole compile entry alone (guard
   check + reading the graph's inputs + the call), with a backend whose function returns at once.
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


def module_heavy_cases():
    """({(lib, 'guard'): fn}, {(lib, 'compiled' | 'graph' | 'eager'): fn}, modules) for the 12-layer GPT."""
    import torch
    from _gpt_modules import count_modules, gpt_classes
    guards, calls, modules = {}, {}, 0
    tokens = np.random.default_rng(0).integers(0, 64, (2, 16))
    for lib in (ember, torch):
        name = lib.__name__
        lib.manual_seed(0)
        model = gpt_classes(lib)().eval()
        modules = count_modules(model)
        idx = lib.from_numpy(tokens.copy())
        recorded = []

        def backend(gm, example_inputs, recorded=recorded):
            recorded.append((gm, list(example_inputs)))
            return gm.forward
        lib._dynamo.reset()
        compiled = lib.compile(model, backend=backend)
        with lib.no_grad():
            compiled(idx)
        assert len(recorded) == 1, f"{name}: the GPT compiled to {len(recorded)} graphs"
        gm, example_inputs = recorded[0]
        code = type(model).forward.__code__
        if lib is ember:
            from ember._dynamo import eval_frame
            entry = next(e for (c, _), cache in eval_frame._caches.items() if c is code for e in cache.entries)
            guard = (lambda check, m, i: lambda: check(m, i))(entry.check.fn, model, idx)
        else:
            from torch._dynamo.eval_frame import _debug_get_cache_entry_list
            manager = _debug_get_cache_entry_list(code)[0].guard_manager
            f_locals = {"self": model, "idx": idx, "lib": torch}   # `lib` is a free variable of forward
            guard = (lambda check, f: lambda: check(f))(manager.check, f_locals)
        with lib.no_grad():
            assert guard(), f"{name}: the guard check fails on the call it was captured from"
        guards[(name, "guard")] = guard

        def under_no_grad(fn, lib=lib):
            def run():
                with lib.no_grad():
                    return fn()
            return run
        calls[(name, "compiled")] = under_no_grad(lambda c=compiled, i=idx: c(i))
        calls[(name, "graph")] = under_no_grad(lambda g=gm, xs=example_inputs: g(*xs))
        calls[(name, "eager")] = under_no_grad(lambda m=model, i=idx: m(i))
    return guards, calls, modules


def entry_overhead_cases():
    """{lib: fn}: the 12-layer GPT compiled with a backend whose compiled function returns the graph's
    outputs (computed once) at once, so that a call costs only the compile entry: guard check,
    reading the graph's 162 inputs (parameters and buffers through the module tree) and the call."""
    import torch
    from _gpt_modules import gpt_classes
    cases = {}
    tokens = np.random.default_rng(0).integers(0, 64, (2, 16))
    for lib in (ember, torch):
        lib.manual_seed(0)
        model = gpt_classes(lib)().eval()
        idx = lib.from_numpy(tokens.copy())

        def backend(gm, example_inputs, lib=lib):
            with lib.no_grad():
                outputs = gm(*example_inputs)
            return lambda *args: outputs
        lib._dynamo.reset()
        compiled = lib.compile(model, backend=backend)

        def run(c=compiled, i=idx, lib=lib):
            with lib.no_grad():
                return c(i)
        run()
        cases[lib.__name__] = run
    return cases


def report_module_heavy(rounds: int, number: int, clock: str = "wall") -> None:
    guards, calls, modules = module_heavy_cases()
    header(f"module-heavy: 12-layer GPT from nn modules ({modules} modules), backend records the graph, no_grad")
    import torch
    with ember.no_grad(), torch.no_grad():   # the grad mode the entries were captured in
        g = interleaved(guards, rounds=rounds, number=number, clock=clock)
    c = interleaved(calls, rounds=rounds, number=max(3, number // 200), clock=clock)
    print(f"{'library':<8}{'guard':>12}{'compiled':>14}{'graph':>14}{'eager':>14}{'over graph':>14}")
    for lib in ("ember", "torch"):
        print(f"{lib:<8}{g[(lib, 'guard')]:>10.2f}us{c[(lib, 'compiled')] / 1000:>12.3f}ms"
              f"{c[(lib, 'graph')] / 1000:>12.3f}ms{c[(lib, 'eager')] / 1000:>12.3f}ms"
              f"{c[(lib, 'compiled')] - c[(lib, 'graph')]:>12.1f}us")
    print(f"guard check per call: ember {g[('ember', 'guard')]:.1f}us, torch {g[('torch', 'guard')]:.1f}us "
          f"({g[('ember', 'guard')] / g[('torch', 'guard')]:.2f}x)")
    e = interleaved(entry_overhead_cases(), rounds=rounds, number=max(10, number // 10), clock=clock)
    print(f"whole compile entry per call (a graph that returns at once): ember {e['ember']:.1f}us, "
          f"torch {e['torch']:.1f}us ({e['ember'] / e['torch']:.2f}x)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--number", type=int, default=2000)
    parser.add_argument("--capture-repeats", type=int, default=7)
    parser.add_argument("--only-module-heavy", action="store_true")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="cpu: process CPU time, steadier on a shared machine (one thread)")
    args = parser.parse_args()
    if args.only_module_heavy:
        report_module_heavy(args.rounds, args.number, args.clock)
        return
    header("dynamo per-call overhead: compiled `(a + b) * 2` on 10-element tensors, backend 'eager'")
    med = interleaved(per_call_cases(), rounds=args.rounds, number=args.number, clock=args.clock)
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
    print()
    report_module_heavy(args.rounds, args.number, args.clock)


if __name__ == "__main__":
    main()
