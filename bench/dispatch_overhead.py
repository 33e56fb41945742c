"""What the dispatcher costs: ``add`` of two shape-(4,) float32 tensors, per call, six ways.

    .venv/bin/python bench/dispatch_overhead.py [--rounds 25] [--number 5000] [--cg-number 2000]
                                                [--no-callgrind]

Variants (rows):
  ember dispatcher  ``ember.add``'s binding generated without the fast path: arguments parsed,
                    key set computed, then ``op.call`` (what every op without
                    ``direct_binding=True`` in the table pays)
  ember fast path   ``ember.add``: the same binding with the fast path (key set just {CPU},
                    nothing in TLS: the CPU kernel straight from the op's table)
  op.call           ``aten.add.Tensor.call(keys, a, b, 1)``: the dispatcher alone, no parsing
  bare kernel       ``ember.ops.cpu.pointwise_binary.add(a, b, 1)``: the CPU kernel itself
  numpy             ``np.add(x, y)`` on the arrays
  torch             ``torch.add(x, y)``, PyTorch eager (one thread)

Two measures:
  * time per call: interleaved rounds (bench/_harness.py), medians, minus the time of an empty
    lambda call, so the rows add up;
  * instructions per call (Ir) under ``valgrind --tool=callgrind``: each variant runs in its own
    process, instrumentation switched on (CALLGRIND_START_INSTRUMENTATION through a tiny C
    helper built with the system compiler) only around a loop of N calls after a warm-up; the
    same loop with an empty body is subtracted and the difference divided by N. Instruction
    counts do not depend on machine load. Skipped, with a note, when valgrind, a C compiler or
    valgrind/callgrind.h is missing.

The README's "Where the time goes" section comes from this script.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

VARIANTS = ["ember dispatcher", "ember fast path", "op.call", "bare kernel", "numpy", "torch"]
NOOP = "noop"


def make_case(variant: str):
    """The zero-argument callable of one variant (imports only what it needs)."""
    import numpy as np
    x, y = np.arange(4, dtype=np.float32), np.ones(4, dtype=np.float32)
    if variant == NOOP:
        return lambda: None
    if variant == "numpy":
        return lambda: np.add(x, y)
    if variant == "torch":
        import torch
        torch.set_num_threads(1)
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)
        return lambda: torch.add(tx, ty)
    import ember
    from ember._core.dispatch import CPU_BIT, DispatchKey
    from ember.ops import registry
    from ember.ops.cpu.pointwise_binary import add as kernel
    a, b = ember.from_numpy(x), ember.from_numpy(y)
    op = ember.ops.aten.add.Tensor
    assert op.table[DispatchKey.CPU] is kernel and op.direct_binding
    if variant == "ember dispatcher":
        slow = registry.binding("aten::add.Tensor", direct=False)
        return lambda: slow(a, b)
    if variant == "ember fast path":
        return lambda: ember.add(a, b)
    if variant == "op.call":
        call = op.call
        return lambda: call(CPU_BIT, a, b, 1)
    if variant == "bare kernel":
        return lambda: kernel(a, b, 1)
    raise ValueError(variant)


# ---------------------------------------------------------------------------------------
# callgrind
# ---------------------------------------------------------------------------------------
_HELPER_C = """#include <valgrind/callgrind.h>
void cg_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void cg_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; }
"""


def build_helper(tmp: str):
    """Compile the start/stop helper; returns its path, or a reason why not."""
    if shutil.which("valgrind") is None:
        return None, "valgrind not installed"
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None, "no C compiler to build the CALLGRIND_START_INSTRUMENTATION helper"
    src, lib = os.path.join(tmp, "cg.c"), os.path.join(tmp, "cg.so")
    with open(src, "w") as f:
        f.write(_HELPER_C)
    r = subprocess.run([cc, "-O1", "-shared", "-fPIC", src, "-o", lib], capture_output=True, text=True)
    if r.returncode:
        return None, f"could not build the callgrind helper (valgrind/callgrind.h missing?): {r.stderr.strip()[:200]}"
    return lib, None


def worker(variant: str, n: int, helper: str) -> None:
    """Runs inside valgrind: warm up, then N calls with instrumentation on."""
    import ctypes
    cg = ctypes.CDLL(helper)
    fn = make_case(variant)
    for _ in range(500):  # warm-up: the adaptive interpreter specialises the loop and the callee
        fn()
    cg.cg_start()
    for _ in range(n):
        fn()
    cg.cg_stop()


def callgrind_ir(variant: str, n: int, helper: str, tmp: str) -> int:
    out = os.path.join(tmp, f"callgrind.{variant.replace(' ', '_').replace('.', '_')}.out")
    env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
           sys.executable, os.path.abspath(__file__), "--worker", variant, str(n), helper]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode:
        raise RuntimeError(f"callgrind run of {variant!r} failed:\n{r.stderr[-2000:]}")
    found = {}
    with open(out) as f:
        for line in f:
            m = re.match(r"(summary|totals):\s+(\d+)", line)
            if m:
                found[m.group(1)] = int(m.group(2))
    # totals: everything collected; summary: since the last zeroing (0 after CALLGRIND_ZERO_STATS)
    if not found:
        raise RuntimeError(f"no summary/totals line in {out}")
    return found.get("totals", found.get("summary"))


def instructions_per_call(n: int) -> tuple[dict, str | None]:
    with tempfile.TemporaryDirectory() as tmp:
        helper, why = build_helper(tmp)
        if helper is None:
            return {}, why
        with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
            futures = {v: pool.submit(callgrind_ir, v, n, helper, tmp) for v in [NOOP] + VARIANTS}
            totals = {v: f.result() for v, f in futures.items()}
    return {v: (totals[v] - totals[NOOP]) / n for v in VARIANTS}, None


# ---------------------------------------------------------------------------------------
def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=25)
    parser.add_argument("--number", type=int, default=5000)
    parser.add_argument("--cg-number", type=int, default=2000, help="calls in the callgrind loop")
    parser.add_argument("--no-callgrind", action="store_true")
    parser.add_argument("--worker", nargs=3, metavar=("VARIANT", "N", "HELPER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        variant, n, helper = args.worker
        worker(variant, int(n), helper)
        return

    from _harness import header, interleaved
    header("dispatch overhead: add of two shape-(4,) float32 tensors, per call")
    cases = {(v, "t"): make_case(v) for v in [NOOP] + VARIANTS}
    medians = interleaved(cases, rounds=args.rounds, number=args.number)
    us = {v: medians[(v, "t")] - medians[(NOOP, "t")] for v in VARIANTS}

    ir, why = ({}, "--no-callgrind") if args.no_callgrind else instructions_per_call(args.cg_number)
    head = f"{'variant':<20}{'time/call':>12}{'instructions/call':>20}{'time vs torch':>15}"
    print(head)
    print("-" * len(head))
    for v in VARIANTS:
        ir_cell = f"{ir[v]:>20,.0f}" if ir else f"{'-':>20}"
        print(f"{v:<20}{us[v]:>10.3f}us{ir_cell}{us[v] / us['torch']:>14.2f}x")
    print(f"(time: median of {args.rounds} interleaved rounds of {args.number} calls, minus an empty call "
          f"({medians[(NOOP, 't')]:.3f}us); instructions: callgrind, {args.cg_number} calls minus an empty loop)")
    if not ir:
        print(f"note: no instruction counts ({why})")

    def share(full, measure):
        return (measure[full] - measure["bare kernel"]) / measure[full]
    print()
    for label, measure, unit in (("time", us, "us"), ("instructions", ir, "")):
        if not measure:
            continue
        d, f = measure["ember dispatcher"], measure["ember fast path"]
        fmt = (lambda v: f"{v:.3f}us") if unit else (lambda v: f"{v:,.0f}")
        print(f"{label}: binding + dispatcher = {share('ember dispatcher', measure):.0%} of ember's add through the "
              f"dispatcher; binding alone (fast path) = {share('ember fast path', measure):.0%} of the fast path's add")
        print(f"{label}: the dispatcher proper (op.call minus bare kernel) = "
              f"{fmt(measure['op.call'] - measure['bare kernel'])}; the fast path saves {fmt(d - f)} per call "
              f"({(d - f) / d:.0%} of the dispatcher route)")


if __name__ == "__main__":
    main()
