"""A compiled function called as `y = f(x)` in a loop: the last result is still alive during the
next call, so its output array cannot be the previous one.

    python bench/held_output.py [--size 1e7] [--rounds 7]

softmax over rows of 1024 float32: ember.compile (also with one spare output array, as before
session 13) and torch.compile each called two ways, the
result dropped at once (`f(x)`) and the result held until the next call returns (`y = f(x)`).
ember's wrapper reuses one of the last two output arrays it handed out once nothing references it
(wrapper.Alloc), so the held loop takes no fresh pages; a fresh 40 MB array costs page faults.
All in one process, interleaved, CPU time (1 thread), medians.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import ember  # noqa: E402
from _harness import header, interleaved  # noqa: E402


def _one_spare(fn, x):
    """ember.compile(fn) whose outputs keep one spare array, as before session 13 (Alloc.SPARES)."""
    import gc
    from ember._inductor.wrapper import Alloc
    before = {id(o) for o in gc.get_objects() if isinstance(o, Alloc)}
    compiled = ember.compile(fn)
    compiled(x)
    for o in gc.get_objects():
        if isinstance(o, Alloc) and id(o) not in before:
            o.SPARES = 1
    return compiled


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="1e7")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    import torch
    torch.set_num_threads(1)
    n = int(float(args.size)) // 1024 * 1024
    xn = np.random.default_rng(0).standard_normal((n // 1024, 1024), dtype=np.float32)
    xe, xt = ember.from_numpy(xn), torch.from_numpy(xn)
    fns = {"ember.compile": (ember.compile(lambda x: ember.softmax(x, -1)), xe),
           "ember, 1 spare": (_one_spare(lambda x: ember.softmax(x, -1) + 0, xe), xe),
           "torch.compile": (torch.compile(lambda x: torch.softmax(x, -1), dynamic=False), xt)}
    held = {}

    def holding(name):
        fn, x = fns[name]

        def call():
            held[name] = fn(x)          # the previous result is released only after this call
        return call
    cases = {}
    for name, (fn, x) in fns.items():
        cases[(name, "dropped")] = lambda fn=fn, x=x: fn(x)
        cases[(name, "held")] = holding(name)
    np.testing.assert_allclose(fns["ember.compile"][0](xe).numpy(), fns["torch.compile"][0](xt).numpy(),
                               rtol=1e-5, atol=1e-7)
    header("y = f(x) in a loop: softmax(1024), the result dropped or held (CPU time, 1 thread)")
    med = interleaved(cases, rounds=args.rounds, number=5, clock="cpu")
    for name in fns:
        d, h = med[(name, "dropped")], med[(name, "held")]
        print(f"{n:>11,}  {name:14s} dropped {d / 1e3:6.2f} ms  held {h / 1e3:6.2f} ms  held/dropped {h / d:.2f}")
    ratio = med[("torch.compile", "held")] / med[("ember.compile", "held")]
    print(f"  held: torch.compile / ember.compile {ratio:.2f}x")


if __name__ == "__main__":
    main()
