"""GPT-2 small training steps, ember eager vs PyTorch eager on the same GPU, in one process.

    python3 bench/gpt2_cuda.py [--batch 8] [--seq 1024] [--steps 10] [--warmup 3] [--layers 12]
                               [--profile] [--peak-tflops 989]

The model is `_gpt_modules.gpt2_classes(lib)` (the same code for both libraries: 124M parameters,
12 layers, d=768, 12 heads, vocab 50257, tied LM head), with PyTorch's initial weights copied
into ember. One step: forward and cross-entropy under ``autocast("cuda", dtype=bfloat16)``,
backward, AdamW (torch's default on CUDA: foreach), ``zero_grad``. Steps alternate between the
libraries; each is timed from a synchronized device to a synchronized device; medians.
tokens/s = batch*seq / step time; MFU = 6 * N * tokens/s / the card's dense bf16 peak (N: the
parameter count, the tied embedding once; attention's own FLOPs are not counted, as in
PaLM's / nanoGPT's 6N estimate without the 12*L*T*d term).

`--compiled` adds two columns: ``ember.compile(model)`` (dynamo -> AOT autograd -> the fuser's Triton
kernels, matmuls on cuBLAS) and its peer ``torch.compile(model)`` (Inductor, default mode), each on
its own copy of the same weights; the optimizer step runs eagerly in both. The first compiled step
(tracing, Triton compiles) is reported apart. `--check-loss` fails (exit 1) when a compiled
column's losses leave ember eager's by more than bf16 tolerance.

`--reduce-overhead` (with --compiled) adds ``ember.compile(model, mode="reduce-overhead")`` (the AOT forward
and backward replayed from CUDA graphs) and its peer ``torch.compile(model, mode="reduce-overhead")``
(cudagraph trees; ``torch.compiler.cudagraph_mark_step_begin()`` before each of its steps, as
PyTorch's docs ask of a training loop), as columns "ember.compile(ro)" and "torch.compile(ro)".

`--kernel-profile COLUMN...` prints the GPU kernels of one step of each named column (torch.profiler's
CUPTI view, which sees Triton's, cuBLAS's and CuPy's kernels alike). `--profile` prints, after the timing, cProfile's top host functions of two ember steps (the
ember.compile column's with --compiled) and ember.profiler's per-op table (with CUDA times from events when ProfilerActivity.CUDA works).
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
from _gpt_modules import gpt2_classes  # noqa: E402

PEAKS = {"H100": 989.0, "H200": 989.0, "A100": 312.0}   # dense bf16 TFLOP/s (SXM parts)


def build(lib, args, weights=None):
    lib.manual_seed(0)
    model = gpt2_classes(lib)(block_size=args.seq, n_layer=args.layers)
    if weights is not None:
        model.load_state_dict({k: lib.from_numpy(v) for k, v in weights.items()})
    model = model.to("cuda")
    opt = lib.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
    return model, opt


def step(lib, model, opt, x, y):
    if getattr(model, "_bench_mark_step", False):    # torch's reduce-overhead: a new step of its cudagraph trees
        lib.compiler.cudagraph_mark_step_begin()
    with lib.autocast("cuda", dtype=lib.bfloat16):
        loss = model(x, y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


def timed(torch, lib, model, opt, x, y):
    """(seconds for the whole step, seconds until the host had queued it, loss)."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    loss = step(lib, model, opt, x, y)
    queued = time.perf_counter() - t0
    torch.cuda.synchronize()
    return time.perf_counter() - t0, queued, loss


# the compiled step's kernels round bf16 intermediates where eager's do, but sum in another order:
# a loss differs from eager's by a few bf16 ulps at most (2^-8 relative), growing slowly over steps
LOSS_TOL = 2e-2


CURVE_PAIRS = (("ember", "ember.compile"), ("ember", "ember.compile(ro)"), ("torch", "torch.compile"),
               ("torch", "torch.compile(ro)"), ("torch", "ember"))


def loss_gap(want, got) -> float:
    """The largest relative difference of two loss curves."""
    return max(abs(a - b) / max(abs(a), 1e-6) for a, b in zip(want, got))


def markov_batches(steps, batch, seq, vocab=50257, states=512, fanout=8, seed=0):
    """`steps` (x, y) batches of a fixed random Markov chain over `states` tokens of the vocabulary,
    `fanout` likely successors each: a stream with structure to learn (its entropy is ~ln(fanout)
    nats), fresh tokens every step, the same stream for every column."""
    rng = np.random.default_rng(seed)
    tokens = rng.choice(vocab, states, replace=False)
    succ = rng.integers(0, states, (states, fanout))
    for _ in range(steps):
        s = np.empty((batch, seq + 1), np.int64)
        s[:, 0] = rng.integers(0, states, batch)
        picks = rng.integers(0, fanout, (batch, seq))
        for t in range(seq):
            s[:, t + 1] = succ[s[:, t], picks[:, t]]
        s = tokens[s]
        yield s[:, :-1], s[:, 1:]


def clipped_step(lib, model, opt, x, y, lr):
    """A step as GPT-2 recipes train (nanoGPT's): the learning rate of the schedule, gradients
    clipped to norm 1 (without it a spike at lr 6e-4 sends two columns' curves apart for good)."""
    for group in opt.param_groups:
        group["lr"] = lr
    if getattr(model, "_bench_mark_step", False):
        lib.compiler.cudagraph_mark_step_begin()
    with lib.autocast("cuda", dtype=lib.bfloat16):
        loss = model(x, y)
    loss.backward()
    lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


def loss_curve(torch, libs, args, peak_lr=6e-4, warmup=50):
    """Train every column `args.loss_curve` steps on the same Markov stream (linear warm-up to
    `peak_lr`, clipped gradients); write the losses as CSV (`args.loss_csv`) and return
    {column: [loss per step]}."""
    curves = {name: [] for name in libs}
    for i, (xs, ys) in enumerate(markov_batches(args.loss_curve, args.batch, args.seq)):
        lr = peak_lr * min(1.0, (i + 1) / warmup)
        for name, (lib, model, opt, _, _) in libs.items():
            x, y = lib.from_numpy(xs).cuda(), lib.from_numpy(ys).cuda()
            curves[name].append(float(clipped_step(lib, model, opt, x, y, lr).item()))
        if i % 50 == 0 or i == args.loss_curve - 1:
            print(f"# step {i}: " + ", ".join(f"{n} {c[-1]:.4f}" for n, c in curves.items()))
    if args.loss_csv:
        with open(args.loss_csv, "w") as f:
            f.write("step," + ",".join(curves) + "\n")
            for i in range(args.loss_curve):
                f.write(f"{i}," + ",".join(f"{c[i]:.6f}" for c in curves.values()) + "\n")
    return curves


def compiled_columns(torch, args, weights, tx, ty, ex, ey, with_torch):
    """{"ember.compile": ..., "torch.compile": ...}: models of their own on the same weights, compiled
    (the optimizer stays eager; ember.compile's backward graph is compiled at the first backward)."""
    out = {}
    emodel, eopt = build(ember, args, weights)
    out["ember.compile"] = (ember, ember.compile(emodel), eopt, ex, ey)
    if with_torch:
        tmodel, topt = build(torch, args)
        out["torch.compile"] = (torch, torch.compile(tmodel), topt, tx, ty)
    if args.reduce_overhead:
        emodel, eopt = build(ember, args, weights)
        out["ember.compile(ro)"] = (ember, ember.compile(emodel, mode="reduce-overhead"), eopt, ex, ey)
        if with_torch:
            tmodel, topt = build(torch, args)
            tcompiled = torch.compile(tmodel, mode="reduce-overhead")
            tcompiled._bench_mark_step = True
            out["torch.compile(ro)"] = (torch, tcompiled, topt, tx, ty)
    return out


def profile_ember(torch, model, opt, x, y, name="ember"):
    import cProfile
    import pstats
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(2):
        step(ember, model, opt, x, y)
    torch.cuda.synchronize()
    prof.disable()
    if os.environ.get("OUT"):       # the device's $OUT comes back: read it with pstats for callers/callees
        prof.dump_stats(os.path.join(os.environ["OUT"], f"{name.replace('.', '_')}.pstats"))
    for order in ("tottime", "cumulative"):
        print(f"\n## {name}: cProfile of two steps (host time), top 35 by {order}")
        pstats.Stats(prof).sort_stats(order).print_stats(35)
    from ember.profiler import profile, ProfilerActivity
    activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    with profile(activities=activities) as p:
        step(ember, model, opt, x, y)
        torch.cuda.synchronize()
    sort = "cuda_time_total" if "CUDA total" in p.key_averages().table(row_limit=1) else "self_cpu_time_total"
    print(f"\n## ember.profiler, one step, sorted by {sort}")
    print(p.key_averages().table(sort_by=sort, row_limit=40))


def kernel_profile(torch, column, lib, model, opt, x, y, rows=30):
    """The GPU kernels of one step of `column` as CUPTI sees them through torch.profiler (kernels of
    every library in the process: Triton's, cuBLAS's, CuPy's), the top `rows` by total time, and
    the step's kernel time by family."""
    from torch.profiler import ProfilerActivity, profile
    step(lib, model, opt, x, y)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step(lib, model, opt, x, y)
        torch.cuda.synchronize()
    kernels = [e for e in prof.key_averages() if e.device_time_total > 0]
    families = {}
    for e in kernels:
        family = ("triton (ember_k*)" if e.key.startswith("ember_k") else "triton (torch)" if e.key.startswith("triton")
                  else "gemm" if "gemm" in e.key.lower() or "sm90" in e.key or "cutlass" in e.key else "other")
        n, t = families.get(family, (0, 0.0))
        families[family] = (n + e.count, t + e.device_time_total / 1e3)
    print(f"\n## {column}: GPU kernels of one step, {sum(n for n, _ in families.values())} launches, "
          f"{sum(t for _, t in families.values()):.1f} ms")
    for family, (n, t) in sorted(families.items(), key=lambda kv: -kv[1][1]):
        print(f"  {family:<20}{n:>6} launches {t:>9.2f} ms")
    for e in sorted(kernels, key=lambda e: -e.device_time_total)[:rows]:
        print(f"  {e.device_time_total / 1e3:>8.2f} ms {e.count:>5}x  {e.key[:110]}")


def main():
    import torch
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--peak-tflops", type=float, default=None)
    p.add_argument("--profile", action="store_true")
    p.add_argument("--only-ember", action="store_true", help="skip torch (profiling runs)")
    p.add_argument("--compiled", action="store_true", help="add ember.compile and torch.compile columns")
    p.add_argument("--only-compiled", action="store_true",
                   help="time the compiled columns alone (each library's allocator then holds one model's memory, "
                        "not two: with four columns on one card ember's CuPy pool runs short and frees/reallocates)")
    p.add_argument("--reduce-overhead", action="store_true",
                   help="with --compiled: add the mode='reduce-overhead' (CUDA graphs) columns of both")
    p.add_argument("--no-cudagraph-training", action="store_true",
                   help="with --reduce-overhead: ember's training steps run as in default mode "
                        "(ember._dynamo.config.cudagraph_training = False)")
    p.add_argument("--check-loss", action="store_true", help="exit 1 if a compiled loss leaves eager's")
    p.add_argument("--kernel-profile", nargs="*", default=(), metavar="COLUMN",
                   help="after the timing, the GPU kernels of one step of these columns (torch.profiler / CUPTI)")
    p.add_argument("--loss-curve", type=int, default=0, metavar="STEPS",
                   help="instead of timing: train STEPS steps on a Markov token stream, compare the loss curves")
    p.add_argument("--loss-csv", default=None, help="where --loss-curve writes the losses")
    args = p.parse_args()
    ember._dynamo.config.cudagraph_training = not args.no_cudagraph_training
    card = torch.cuda.get_device_name()
    peak = args.peak_tflops or next((v for k, v in PEAKS.items() if k in card), 989.0)
    print(f"# card: {card} | torch {torch.__version__} | cupy {__import__('cupy').__version__} | "
          f"GPT-2 {args.layers} layers, batch {args.batch} x seq {args.seq}, bf16 autocast, AdamW")
    print(f"# MFU peak used: {peak:.0f} TFLOP/s dense bf16 ({'given' if args.peak_tflops else 'table for ' + card})")

    tmodel, topt = build(torch, args)
    weights = {k: v.detach().cpu().numpy().copy() for k, v in tmodel.state_dict().items()}
    emodel, eopt = build(ember, args, weights)
    n_params = sum(p.numel() for p in tmodel.parameters())
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 50257, (args.batch, args.seq + 1))
    tx, ty = torch.from_numpy(tokens[:, :-1]).cuda(), torch.from_numpy(tokens[:, 1:]).cuda()
    ex, ey = ember.from_numpy(tokens[:, :-1]).cuda(), ember.from_numpy(tokens[:, 1:]).cuda()
    libs = {"ember": (ember, emodel, eopt, ex, ey)}
    if not args.only_ember:
        libs["torch"] = (torch, tmodel, topt, tx, ty)
    if args.compiled:
        libs.update(compiled_columns(torch, args, weights, tx, ty, ex, ey, not args.only_ember))
    if args.only_compiled:
        for eager in ("ember", "torch"):
            libs.pop(eager, None)
    if args.loss_curve:
        curves = loss_curve(torch, libs, args)
        for a, b in CURVE_PAIRS:     # torch vs torch.compile: the spread of two correct bf16 trainings
            if a in curves and b in curves:
                gaps = sorted(abs(x - y) / max(abs(x), 1e-6) for x, y in zip(curves[a], curves[b]))
                tail = loss_gap(curves[a][-50:], curves[b][-50:])
                print(f"{b} vs {a} over {args.loss_curve} steps: relative loss difference median "
                      f"{gaps[len(gaps) // 2]:.2e}, largest {gaps[-1]:.2e}, largest over the last 50 steps {tail:.2e}")
        # over a curve, bf16 tolerance is what two correct bf16 trainings differ by: PyTorch's own
        # eager and torch.compile on the same stream, where those columns ran (else LOSS_TOL)
        tol, why = LOSS_TOL, "bf16 tolerance"
        if "torch.compile" in curves:
            tol, why = max(tol, loss_gap(curves["torch"], curves["torch.compile"])), "torch.compile vs torch"
        failed = False
        for column in (c for c in ("ember.compile", "ember.compile(ro)") if c in curves):
            worst = loss_gap(curves["ember"], curves[column])
            print(f"{column} vs ember eager over {args.loss_curve} steps: largest relative loss difference "
                  f"{worst:.2e} (tolerance {tol:.2e}: {why})")
            failed |= worst > tol
        if args.check_loss and failed:
            sys.exit(1)
        return
    times = {k: [] for k in libs}
    queued = {k: [] for k in libs}
    losses = {k: [] for k in libs}
    first = {}
    t_start = time.perf_counter()
    for i in range(args.warmup + args.steps):
        for name, (lib, model, opt, x, y) in libs.items():
            dt, q, loss = timed(torch, lib, model, opt, x, y)
            losses[name].append(float(loss.item()))
            if i >= args.warmup:
                times[name].append(dt)
                queued[name].append(q)
            if i == 0:
                first[name] = dt
        if i == 0:
            print(f"# first step (CuPy kernel compiles, cuBLAS heuristics): {time.perf_counter() - t_start:.1f} s"
                  + "".join(f"; {n}: {first[n]:.1f} s" for n in first if "compile" in n))
    tokens_per_step = args.batch * args.seq
    print(f"\n{'':<19}{'ms/step':>10}{'host ms':>10}{'tokens/s':>12}{'MFU':>8}   losses (first, last)")
    result = {}
    for name in libs:
        t = statistics.median(times[name])
        tps = tokens_per_step / t
        result[name] = tps
        mfu = 6 * n_params * tps / (peak * 1e12)
        print(f"{name:<19}{t * 1e3:>10.1f}{statistics.median(queued[name]) * 1e3:>10.1f}{tps:>12.0f}{mfu:>7.1%}"
              f"   {losses[name][0]:.4f}, {losses[name][-1]:.4f}")
    if "torch" in result and "ember" in result:
        print(f"ember/torch tokens/s: {result['ember'] / result['torch']:.2f}x  (N = {n_params / 1e6:.1f}M)")
    if "ember.compile" in result:
        for peer in ("torch", "torch.compile"):
            if peer in result:
                print(f"ember.compile/{peer} tokens/s: {result['ember.compile'] / result[peer]:.2f}x")
    if "ember.compile(ro)" in result:
        for peer in ("ember.compile", "torch.compile", "torch.compile(ro)"):
            if peer in result:
                print(f"ember.compile(ro)/{peer} tokens/s: {result['ember.compile(ro)'] / result[peer]:.2f}x")
    for column in ("ember.compile", "ember.compile(ro)"):
        if column not in result or "ember" not in losses:
            continue
        worst = loss_gap(losses["ember"], losses[column])
        print(f"{column} vs ember eager: largest loss difference {worst:.2e} over {len(losses['ember'])} steps "
              f"(bf16 tolerance {LOSS_TOL:.0e} relative)")
        if args.check_loss and worst > LOSS_TOL:
            sys.exit(1)
    for column in args.kernel_profile:
        kernel_profile(torch, column, *libs[column])
    if args.profile:      # ember eager's step, then the compiled column's (host time: its wrapper's launches)
        for name in ("ember", "ember.compile", "ember.compile(ro)"):
            if name in libs:
                profile_ember(torch, *libs[name][1:], name=name)


if __name__ == "__main__":
    main()
