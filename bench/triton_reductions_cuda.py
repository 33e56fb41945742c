"""The reductions of GPT-2's training step, alone: ember's generated Triton kernels vs torch.compile
on the same card (CUDA events, medians), with the bytes each reads as a bandwidth figure.

    python bench/triton_reductions_cuda.py [--configs default,row,x128,...] [--rounds 5]

Shapes from the compiled step's profile (issue 18): bias gradients (the rows of a [8192, C] bf16
gradient summed, C = 768, 2304, 3072), a float32 gradient rounded to bf16 then summed, LayerNorm's
weight and bias gradients (two column sums over [8, 1024, 768]), and the cross-entropy's row
statistics over [8192, 50257] logits (max, then sum of exp). A config other than "default" patches
the column generator's constants (or turns column kernels off: "row", the generator before them)
for that run only, each compiled into a cache directory of its own."""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ember  # noqa: E402
from fused_cuda import timed  # noqa: E402  (CUDA-event milliseconds per call, the same clock)

# name -> (columns' XBLOCK, tile elements, warps, programs a split aims at); None: column kernels off
CONFIGS = {"default": {}, "row": None, "x32": dict(COLUMN_XBLOCK=32), "x128": dict(COLUMN_XBLOCK=128),
           "tile8k": dict(COLUMN_TILE=8192, COLUMN_WARPS=8), "tile2k": dict(COLUMN_TILE=2048),
           "p768": dict(COLUMN_PROGRAMS=768), "p192": dict(COLUMN_PROGRAMS=192), "w8": dict(COLUMN_WARPS=8)}


def workloads():
    """name -> (fn(lib, *xs), [(shape, dtype name)], bytes read)."""
    def bias(lib, g):
        return g.sum(0)

    def bias_f32(lib, g):
        return g.to(lib.bfloat16).sum(0)

    def ln_grads(lib, g, x):
        g = g.float()
        return (g * x).sum((0, 1)), g.sum((0, 1))

    def ce_rows(lib, x):
        m = x.amax(1, keepdim=True)
        return m, (x - m).exp().sum(1)
    return {
        "bias 8192x768 bf16": (bias, [((8192, 768), "bfloat16")], 8192 * 768 * 2),
        "bias 8192x2304 bf16": (bias, [((8192, 2304), "bfloat16")], 8192 * 2304 * 2),
        "bias 8192x3072 bf16": (bias, [((8192, 3072), "bfloat16")], 8192 * 3072 * 2),
        "bias f32->bf16 8192x768": (bias_f32, [((8192, 768), "float32")], 8192 * 768 * 4),
        "ln grads 8x1024x768": (ln_grads, [((8, 1024, 768), "bfloat16"), ((8, 1024, 768), "float32")],
                                8192 * 768 * 6),
        "ce rows 8192x50257 f32": (ce_rows, [((8192, 50257), "float32")], 8192 * 50257 * 4),
        "ce rows 8192x50257 bf16": (ce_rows, [((8192, 50257), "bfloat16")], 8192 * 50257 * 2),
    }


def patched(config):
    """Apply `config` to the generator's modules; returns a function restoring them."""
    from ember._inductor import codegen_triton_columns as cols, lowering_split as split
    saved = {(m, k): getattr(m, k) for m in (cols, split) for k in dir(m) if k.startswith("COLUMN_")}
    saved[(cols, "column_kernel")] = cols.column_kernel
    if config is None:
        cols.column_kernel = lambda *a, **k: None
        split.COLUMN_PROGRAMS = 0
    else:
        for key, value in config.items():
            setattr(cols if hasattr(cols, key) else split, key, value)
    return lambda: [setattr(m, k, v) for (m, k), v in saved.items()]


def leaves(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def main():
    import torch
    from ember._functorch import make_fx
    from ember._inductor import config as ind_config
    from ember._inductor.compile_fx import compile_fx
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", default="default,row")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    print(f"# card: {torch.cuda.get_device_name()}; torch {torch.__version__}", flush=True)
    ind_config.aot_cache = False
    for name, (fn, specs, nbytes) in workloads().items():
        if args.only and args.only not in name:
            continue
        gen = torch.Generator(device="cuda").manual_seed(0)
        xt = [torch.randn(s, device="cuda", generator=gen).to(getattr(torch, d)) for s, d in specs]
        xe = [ember.from_dlpack(t.float()).to(getattr(ember, d)) for t, (_, d) in zip(xt, specs)]
        want = [torch.from_dlpack(w.float()) for w in leaves(fn(ember, *xe))]     # eager ember
        torch._dynamo.reset()
        tc = torch.compile(lambda *a: fn(torch, *a), dynamic=False)
        peers = {"torch.compile": lambda: tc(*xt)}
        for cname in args.configs.split(","):
            restore = patched(CONFIGS[cname])
            try:
                ind_config.cache_dir = tempfile.mkdtemp(prefix=f"ember_{cname}_")
                # a source equal to another config's is imported once per process (triton_launch's
                # module memo) and not written again: its cubin still goes under this directory
                os.makedirs(os.path.join(ind_config.cache_dir, "triton"), mode=0o700)
                compiled = compile_fx(make_fx(lambda *a: fn(ember, *a))(*xe), list(xe))
                got = [torch.from_dlpack(g.float()) for g in leaves(compiled(*xe))]
            finally:
                restore()
            for g, w in zip(got, want):
                tol = 2e-2 * max(1.0, float(w.abs().max()))
                if not torch.allclose(g, w, rtol=2e-2, atol=tol):
                    print(f"# MISMATCH {name} [{cname}]: max diff {float((g - w).abs().max())}", flush=True)
            peers[f"ember[{cname}]"] = lambda compiled=compiled: compiled(*xe)
        samples = {k: [] for k in peers}
        for _ in range(args.rounds):
            for k, f in peers.items():
                samples[k].append(timed(torch, f))
        med = {k: statistics.median(v) * 1e3 for k, v in samples.items()}
        print(f"{name:<26}" + "  ".join(f"{k} {v:8.1f}us ({nbytes / v / 1e6:5.2f} TB/s)" for k, v in med.items()),
              flush=True)


if __name__ == "__main__":
    main()
