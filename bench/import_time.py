"""What generating the bindings at import costs, and what a generated binding saves per call.

    .venv/bin/python bench/import_time.py

1. `import ember` in fresh processes (median of 5), and the part of it spent compiling the
   generated binding source (codegen.STATS). A build step that wrote the same source to a file
   could save at most that part.
2. Per-call time of `ember.add(a, b)` through its generated binding, against a generic,
   table-driven binding that parses arguments with `inspect.Signature.bind` and then calls the
   same dispatcher: what specialised code buys on every call.
"""
from __future__ import annotations

import inspect
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from _harness import header, interleaved  # noqa: E402

PROBE = ("import time; t = time.perf_counter(); import ember; total = time.perf_counter() - t; "
         "from ember.ops import codegen; print(total, codegen.STATS['seconds'], codegen.STATS['bindings'])")


def import_cost():
    runs = []
    for _ in range(5):
        out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True).stdout
        runs.append([float(x) for x in out.split()])
    total = statistics.median(r[0] for r in runs) * 1e3
    codegen = statistics.median(r[1] for r in runs) * 1e3
    return total, codegen, int(runs[0][2])


def generic_binding(op):
    """What a binding looks like without code generation: one function for every op."""
    params = []
    for i, a in enumerate(op.schema.arguments):
        kind = inspect.Parameter.KEYWORD_ONLY if a.kwarg_only else inspect.Parameter.POSITIONAL_OR_KEYWORD
        default = a.default if a.has_default else inspect.Parameter.empty
        params.append(inspect.Parameter("input" if i == 0 else a.name, kind, default=default))
    signature = inspect.Signature(params)

    def call(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = tuple(bound.arguments.values())
        keys = 0
        for v in values:
            keys |= getattr(v, "_keys", 0)
        return op.call(keys, *values)
    return call


def main():
    import numpy as np
    import ember
    header("binding generation at import, and what generated bindings save per call")
    total, codegen, n = import_cost()
    print(f"import ember: {total:.0f} ms, of which generating and compiling {n} bindings: {codegen:.0f} ms")
    a, b = ember.from_numpy(np.ones(4, np.float32)), ember.from_numpy(np.ones(4, np.float32))
    generic_add = generic_binding(ember.ops.aten.add.Tensor)
    medians = interleaved({("add", "generated"): lambda: ember.add(a, b),
                           ("add", "generic"): lambda: generic_add(a, b)})
    g, s = medians[("add", "generated")], medians[("add", "generic")]
    print(f"ember.add per call: generated binding {g:.2f} us, generic signature-bind binding {s:.2f} us "
          f"({s / g:.1f}x slower)")


if __name__ == "__main__":
    main()
