"""What launching a compiled kernel costs from Python: the launcher extension vs ctypes.

    .venv/bin/python bench/launch_overhead.py [--rounds 15] [--number 20000]

The kernel is empty (`void k(void *const *bufs, const int64_t *ints, const double *floats) {}`),
called with three float32 arrays and one int, so each row is pure launch cost (interleaved rounds,
medians, minus an empty Python call):

  extension            launch.launcher(): ember_launcher.launch(fnptr, a, b, c, n), the pointers
                       read from the ndarray struct (what the fuser's wrapper uses)
  ctypes, cached ptrs  a CFUNCTYPE called with a pointer array built once and reused (the best
                       case of "pointers cached per storage": nothing per call but the ctypes call)
  ctypes, lookup       per call: each array's pointer from a dict keyed by id(array) (a per-storage
                       cache), a fresh c_void_p array, then the ctypes call
  ctypes, .ctypes.data launch.ctypes_launch: `a.ctypes.data` per array per call (the fallback)
"""
from __future__ import annotations

import argparse
import ctypes
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _harness import header, interleaved  # noqa: E402
from ember._inductor import codecache, launch  # noqa: E402

EMPTY = """#include <stdint.h>
void empty_kernel(void *const *bufs, const int64_t *ints, const double *floats) { (void)bufs; (void)ints; (void)floats; }
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--number", type=int, default=20000)
    args = parser.parse_args()
    header("kernel launch overhead (3 arrays + 1 int, empty kernel), us per call")

    lib = codecache.load_c(EMPTY)
    fnptr = codecache.kernel_pointer(lib, "empty_kernel")
    ext = launch.launcher()
    assert ext is not launch.ctypes_launch, "the launcher extension did not build"
    a, b, c = (np.zeros(1024, np.float32) for _ in range(3))
    n = 1024

    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(fnptr)
    cached_bufs = (ctypes.c_void_p * 3)(a.ctypes.data, b.ctypes.data, c.ctypes.data)
    cached_ints = (ctypes.c_int64 * 1)(n)
    no_floats = (ctypes.c_double * 0)()
    pointer_of = {id(x): x.ctypes.data for x in (a, b, c)}
    void_p3, int64_1 = ctypes.c_void_p * 3, ctypes.c_int64 * 1

    def ctypes_lookup():
        fn(void_p3(pointer_of[id(a)], pointer_of[id(b)], pointer_of[id(c)]), int64_1(n), no_floats)

    cases = {
        ("empty python call", "us"): lambda: None,
        ("extension", "us"): lambda: ext(fnptr, a, b, c, n),
        ("ctypes, cached ptrs", "us"): lambda: fn(cached_bufs, cached_ints, no_floats),
        ("ctypes, lookup", "us"): ctypes_lookup,
        ("ctypes, .ctypes.data", "us"): lambda: launch.ctypes_launch(fnptr, a, b, c, n),
    }
    medians = interleaved(cases, rounds=args.rounds, number=args.number)
    floor = medians[("empty python call", "us")]
    print(f"{'launch':<22}{'us/call':>10}{'minus empty call':>18}")
    for (row, col), us in medians.items():
        print(f"{row:<22}{us:>10.3f}{us - floor:>18.3f}")
    best_ctypes = medians[("ctypes, cached ptrs", "us")] - floor
    print(f"# extension vs best ctypes: {best_ctypes / (medians[('extension', 'us')] - floor):.1f}x less overhead")


if __name__ == "__main__":
    main()
