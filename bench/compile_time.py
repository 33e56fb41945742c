"""What compiling costs: one new kernel, a training step's graphs from scratch in a fresh process,
and the same program in a new process with the caches warm.

    .venv/bin/python bench/compile_time.py [--runs 3] [--no-torch] [--breakdown-only]

(a) new kernel: codecache.load_c of a pointwise kernel source never seen before (prelude included):
    the C compiler's run, the digest, the dlopen. Goal <= 100 ms. Every figure is given in wall time
    and in CPU time (the process and its compiler children, user + system: on a shared machine the
    wall time mostly measures the wait for a core). Then where it goes: the compiler command alone
    and the CPU of each process the driver starts (its -time report), and ember's own CPU.
(b) cold: a new Python process, $EMBER_CACHE_DIR an empty folder (so the machine probe runs too),
    the MLP 784-512-512-10 (batch 64, cross entropy): from ember.compile's first call to the first
    loss.backward() done, i.e. capture, AOT autograd, lowering and the C compiler for the forward
    and backward graphs. Goal <= 1 s. torch.compile the same way (a fresh TORCHINDUCTOR_CACHE_DIR)
    for comparison.
(c) warm: the same program in another new process on the now-filled cache: the first step minus a
    steady step (capture included; the AOT cache hands over the traced graphs), and how many times
    the C compiler ran (counted by codecache.counters["compile"]; goal 0), the graph cache and AOT
    cache hits. Goal <= 50 ms.
Children run with bytecode caching on (a normal Python), 1 thread; medians over --runs.
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
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _harness import header  # noqa: E402

STEP = """
import json, resource, time
def cpu():      # this process and the compilers it ran (children), user + system
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
t_start = time.perf_counter()
import {lib} as torch
import {lib}.nn as nn
t_import = time.perf_counter()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
x, y = torch.randn(64, 784), torch.randint(0, 10, (64,))
step = torch.compile(lambda x, y: nn.functional.cross_entropy(model(x), y))

def one():
    t0, c0 = time.perf_counter(), cpu()
    model.zero_grad()
    step(x, y).backward()
    return time.perf_counter() - t0, cpu() - c0
first, first_cpu = one()
steady, steady_cpu = min(one() for _ in range(5))
out = {{"import_s": t_import - t_start, "first_s": first, "steady_s": steady, "first_cpu_s": first_cpu,
        "steady_cpu_s": steady_cpu}}
if "{lib}" == "ember":
    from ember._inductor import codecache
    from ember._functorch import _aot_cache
    out["counters"] = dict(codecache.counters, **_aot_cache.counters)
print(json.dumps(out))
"""


def run_child(code: str, env_extra: dict) -> dict:
    """The JSON line a fresh Python process running `code` prints last (bytecode caching on, 1 thread)."""
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1", **env_extra)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-4000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def child(lib: str, env_extra: dict) -> dict:
    return run_child(STEP.format(lib=lib), env_extra)


def _cpu_s() -> float:
    import resource
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def new_kernel_ms(runs: int):
    """(wall ms, CPU ms: this process and the compiler processes), medians."""
    from ember._inductor import codecache
    samples, cpu = [], []
    for i in range(runs):
        src = _kernel_source(i)
        t0, c0 = time.perf_counter(), _cpu_s()
        codecache.load_c(src)
        samples.append((time.perf_counter() - t0) * 1e3)
        cpu.append((_cpu_s() - c0) * 1e3)
    return statistics.median(samples), statistics.median(cpu)


def _kernel_source(tag) -> str:
    from ember._inductor.codegen_c import prelude
    return prelude() + f"""/* {time.time_ns()} {tag} */
void k(void *const *bufs, const int64_t *ints, const double *floats) {{
    float *out = (float *)bufs[0]; const float *x = (const float *)bufs[1];
    #pragma omp simd
    for (int64_t i = 0; i < ints[0]; i++) out[i] = tanhf(x[i] * 2.0f + 1.0f);
}}
"""


def new_kernel_breakdown(runs: int) -> None:
    """Where a new kernel's time goes: the compiler driver's own report (`-time`: CPU of each
    process it starts: cc1, as, collect2 and ld), the same command's wall and CPU, and ember's
    own CPU in load_c (source write, digest, dlopen, Python: load_c's CPU minus its children's)."""
    import resource
    from ember._inductor import codecache, config
    cc = codecache._toolchain()["cc_path"]
    stages, wall, kids = {}, [], []
    with tempfile.TemporaryDirectory() as d:
        for i in range(runs):
            src = os.path.join(d, f"k{i}.c")
            with open(src, "w") as f:
                f.write(_kernel_source(f"breakdown {i}"))
            c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            proc = subprocess.run([cc, *config.cflags, src, "-o", os.path.join(d, f"k{i}.so"),
                                   *codecache.link_flags(), "-time"], capture_output=True, text=True, check=True)
            wall.append((time.perf_counter() - t0) * 1e3)
            c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            kids.append((c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime) * 1e3)
            for line in proc.stderr.splitlines():       # "# cc1 0.02 0.01": user and system seconds
                parts = line.split()
                if len(parts) == 4 and parts[0] == "#":
                    stages.setdefault(parts[1], []).append((float(parts[2]) + float(parts[3])) * 1e3)
    own = []
    for i in range(runs):
        src = _kernel_source(f"own {i}")
        c0, k0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        codecache.load_c(src)
        c1, k1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        own.append((c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime) * 1e3)
    print(f"    the compiler command: {statistics.median(wall):.0f} ms wall, {statistics.median(kids):.0f} ms CPU; "
          "per process (CPU, 10 ms clock): "
          + ", ".join(f"{name} {statistics.median(v):.0f}" for name, v in stages.items())
          + f"; ember's own CPU in load_c {statistics.median(own):.1f} ms")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--breakdown-only", action="store_true", help="(a) and where its time goes, nothing else")
    args = ap.parse_args()
    header("compile time")
    wall, cpu = new_kernel_ms(args.runs)
    print(f"(a) a new kernel: {wall:.0f} ms wall, {cpu:.0f} ms CPU (goal <= 100 ms)")
    new_kernel_breakdown(max(args.runs, 5))
    if args.breakdown_only:
        return
    cold, warm, torch_cold = [], [], []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as cache:
            cold.append(child("ember", {"EMBER_CACHE_DIR": cache}))
            warm.append(child("ember", {"EMBER_CACHE_DIR": cache}))
        if not args.no_torch and not torch_cold:      # once: it takes tens of seconds
            with tempfile.TemporaryDirectory() as tcache:
                torch_cold.append(child("torch", {"TORCHINDUCTOR_CACHE_DIR": tcache}))

    def med(rows, f):
        return statistics.median(f(r) for r in rows)
    print(f"(b) MLP fw+bw from scratch, fresh process: first step {med(cold, lambda r: r['first_s']):.2f} s "
          f"wall, {med(cold, lambda r: r['first_cpu_s']):.2f} s CPU "
          f"(steady step {med(cold, lambda r: r['steady_s']) * 1e3:.1f} ms, C compiles "
          f"{cold[0]['counters']['compile']}; goal <= 1 s)")
    if torch_cold:
        print(f"    torch.compile cold, same step: first step {torch_cold[0]['first_s']:.2f} s "
              f"(steady {torch_cold[0]['steady_s'] * 1e3:.1f} ms)")
    over = med(warm, lambda r: r["first_s"] - r["steady_s"]) * 1e3
    over_cpu = med(warm, lambda r: r["first_cpu_s"] - r["steady_cpu_s"]) * 1e3
    compiles = max(r["counters"]["compile"] for r in warm)
    print(f"(c) same program, new process, warm cache: first step - steady step = {over:.0f} ms wall, "
          f"{over_cpu:.0f} ms CPU "
          f"(goal <= 50 ms), C compiles {compiles} (goal 0), graph cache hits "
          f"{warm[0]['counters']['graph_hit']}, AOT cache hits {warm[0]['counters']['aot_hit']}, "
          f"import {med(warm, lambda r: r['import_s']) * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
