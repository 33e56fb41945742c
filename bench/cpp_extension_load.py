"""How long a process takes to get seed 001's C++ extension when it is already in the cache.

    .venv/bin/python bench/cpp_extension_load.py [--runs 5]

Builds it once (into a fresh cache folder), then starts `--runs` new processes that each import
ember, call load_inline with the same source and report the time of that call and how many times
the compiler ran (0 expected: the library comes from the cache shared with the fuser's kernels).
The goal is <= 50 ms per warm load; the README figure comes from this script.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, time
t0 = time.perf_counter()
import ember
t1 = time.perf_counter()
from ember.utils.cpp_extension import load_inline
source = '''
at::Tensor sin_add(at::Tensor x, at::Tensor y) {
  return x.sin() + y.sin();
}
'''
t2 = time.perf_counter()
module = load_inline(name='inline_extension', cpp_sources=[source], functions=['sin_add'])
t3 = time.perf_counter()
from ember._inductor import codecache     # (imported by load_inline: the counters of its cache)
x, y = ember.randn(3), ember.randn(3)
assert (module.sin_add(x, y) - (x.sin() + y.sin())).abs().max().item() == 0
print(json.dumps({"import_ember": t1 - t0, "import_cpp_extension": t2 - t1, "load_inline": t3 - t2,
                  "compiles": codecache.counters["compile"], "disk_hits": codecache.counters["disk_hit"]}))
"""


def run_child(cache_dir: str) -> dict:
    env = dict(os.environ, EMBER_CACHE_DIR=cache_dir, PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return json.loads(proc.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ember-cppext-bench-") as cache_dir:
        start = time.perf_counter()
        cold = run_child(cache_dir)
        print(f"cold process (compiles): {time.perf_counter() - start:.1f} s total, "
              f"load_inline {cold['load_inline'] * 1e3:.0f} ms, compiler runs: {cold['compiles']}")
        warm = [run_child(cache_dir) for _ in range(args.runs)]
    for w in warm:
        w["import + load_inline"] = w["import_cpp_extension"] + w["load_inline"]
    for field in ("import_cpp_extension", "load_inline", "import + load_inline"):
        values = [w[field] * 1e3 for w in warm]
        print(f"warm {field:22s} median {statistics.median(values):6.1f} ms  (min {min(values):.1f}, "
              f"max {max(values):.1f}) over {len(values)} processes")
    print(f"warm compiler runs: {sum(w['compiles'] for w in warm)}, disk hits: {sum(w['disk_hits'] for w in warm)}")


if __name__ == "__main__":
    main()
