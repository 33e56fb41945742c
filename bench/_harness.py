"""Shared benchmark harness: interleaved rounds, medians, ratios, and the machine it ran on."""
from __future__ import annotations

import os
import platform
import statistics
import sys
import time


def machine() -> str:
    """One line naming the CPU, cores, Python and library versions."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import numpy
    parts = [cpu, f"{os.cpu_count()} cpus", f"Python {platform.python_version()}", f"NumPy {numpy.__version__}"]
    try:
        import torch
        # the machines have 2 shared vCPUs: compare single-threaded unless the bench asked for more
        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS") or 1))
        n = torch.get_num_threads()
        parts.append(f"PyTorch {torch.__version__} ({n} thread{'s' if n > 1 else ''})")
    except ImportError:
        pass
    return ", ".join(parts)


# clock names for `interleaved`: "cpu" counts the process's CPU time (user + system), not the time
# it waited for a core, so on a shared machine it moves less; it measures one thread only
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def per_call_us(fn, number: int, clock=time.perf_counter) -> float:
    t0 = clock()
    for _ in range(number):
        fn()
    return (clock() - t0) / number * 1e6


def interleaved(cases: dict, *, rounds: int = 15, number: int = 2000, clock: str = "wall") -> dict:
    """cases: {(row, column): fn}. Each round times every case once, in turn, so that noise
    from other work on the machine lands on all of them alike. Returns medians in us."""
    samples = {key: [] for key in cases}
    for fn in cases.values():  # warm up
        per_call_us(fn, max(1, number // 10))
    for _ in range(rounds):
        for key, fn in cases.items():
            samples[key].append(per_call_us(fn, number, CLOCKS[clock]))
    return {key: statistics.median(v) for key, v in samples.items()}


def table(rows, columns, medians, ratio=None) -> str:
    """A text table of medians; `ratio=(a, b)` adds a column a/b."""
    head = f"{'op':<16}" + "".join(f"{c:>14}" for c in columns) + (f"{ratio[0] + '/' + ratio[1]:>16}" if ratio else "")
    lines = [head, "-" * len(head)]
    for r in rows:
        cells = "".join(f"{medians.get((r, c), float('nan')):>12.2f}us" for c in columns)
        if ratio:
            cells += f"{medians[(r, ratio[0])] / medians[(r, ratio[1])]:>15.2f}x"
        lines.append(f"{r:<16}" + cells)
    return "\n".join(lines)


def header(title: str) -> None:
    print(f"# {title}")
    print(f"# machine: {machine()}")
    print(f"# command: {' '.join([os.path.basename(sys.executable)] + sys.argv)}")
