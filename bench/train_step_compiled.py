"""The compiled rows of bench/train_step.py (--compiled): one training step (zero_grad, forward,
backward, optimizer step) of

  mlp  784-512-512-10, ReLU, batch 64, cross-entropy, SGD(lr=0.01, momentum=0.9)
  gpt  a GPT block (d=256, 4 heads, causal attention, LayerNorm, GELU, MLP 4d), seq 128, batch 8,
       mean-squared error against a random target, AdamW(lr=1e-3)

in four columns: ember eager, ember.compile(model) (the default backend: AOT autograd + the fuser's
generated C), torch eager and torch.compile(model) (Inductor), the same weights (copied from
PyTorch) and batch, float32, one thread everywhere (torch.set_num_threads(1),
ember.set_num_threads(1), one BLAS thread). The optimizer step runs eagerly in both compiled
columns (neither compiles it here); with --fused-optim every column constructs its optimizer with
fused=True (PyTorch's fused CPU kernels; ember's generated ones, _inductor/fused_optim.py).
Compile time is reported separately (the first step minus a steady one); the table's figures are
medians of interleaved rounds.
"""
from __future__ import annotations

import time

import numpy as np

import ember
from _gpt_modules import gpt_block
from _harness import header, interleaved

COLUMNS = ("ember", "ember.compile", "torch", "torch.compile")


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


def _classify(lib, out, y):
    return lib.nn.functional.cross_entropy(out, y)


def _regress(lib, out, y):
    return lib.nn.functional.mse_loss(out, y)


MODELS = {
    "mlp": (mlp, lambda rng: (rng.standard_normal((64, 784), dtype=np.float32), rng.integers(0, 10, 64)),
            _classify, lambda lib, p, **kw: lib.optim.SGD(p, lr=0.01, momentum=0.9, **kw)),
    "gpt": (gpt_block, lambda rng: (rng.standard_normal((8, 128, 256), dtype=np.float32),
                                    rng.standard_normal((8, 128, 256), dtype=np.float32)),
            _regress, lambda lib, p, **kw: lib.optim.AdamW(p, lr=1e-3, **kw)),
}


def step_fn(lib, model, forward, x, y, loss_fn, make_opt, fused=None):
    opt = make_opt(lib, model.parameters(), fused=fused)

    def step():
        opt.zero_grad()
        loss = loss_fn(lib, forward(x), y)
        loss.backward()
        opt.step()
    return step


def first_step_seconds(step):
    """The first call (capture and compilation included) and a steady one, in seconds."""
    t0 = time.perf_counter()
    step()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    step()
    return first, time.perf_counter() - t0


def cases(names, fused=None):
    import torch
    torch.set_num_threads(1)
    ember.set_num_threads(1)
    rng = np.random.default_rng(0)
    out, compile_s = {}, {}
    for name in names:
        build, data, loss_fn, make_opt = MODELS[name]
        x, y = data(rng)
        for column in COLUMNS:
            torch.manual_seed(0)
            tmodel = build(torch)
            lib = torch if column.startswith("torch") else ember
            if lib is torch:
                model = tmodel
            else:
                model = build(ember)
                model.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                                       for k, v in tmodel.state_dict().items()})
            forward = lib.compile(model) if column.endswith("compile") else model
            step = step_fn(lib, model, forward, lib.from_numpy(x.copy()), lib.from_numpy(y.copy()),
                           loss_fn, make_opt, fused)
            if column.endswith("compile"):
                first, steady = first_step_seconds(step)
                compile_s[(name, column)] = first - steady
            out[(f"{name} step", column)] = step
    return out, compile_s


def compiled_main(args):
    names = args.models or list(MODELS)
    header("ms per training step, eager and compiled: mlp batch 64 SGD-momentum; gpt block "
           "d=256 4 heads seq 128 batch 8 AdamW; float32, 1 thread"
           + ("; every column's optimizer with fused=True" if args.fused_optim else ""))
    fns, compile_s = cases(names, True if args.fused_optim else None)
    medians = interleaved(fns, rounds=args.rounds, number=args.number, clock=args.clock)
    ms = {k: v / 1e3 for k, v in medians.items()}
    print("ms per step, and ember.compile's time over each peer's (< 1: ember.compile is faster):")
    for n in names:
        row = {c: ms[(f"{n} step", c)] for c in COLUMNS}
        cells = "  ".join(f"{c} {row[c]:7.2f}" for c in COLUMNS)
        ratios = "  ".join(f"/{c} {row['ember.compile'] / row[c]:4.2f}x" for c in ("ember", "torch", "torch.compile"))
        print(f"  {n:<4} {cells}   ember.compile {ratios}")
    print("\ncompile time (first step minus a steady step):")
    for (n, c), s in compile_s.items():
        print(f"  {n:<4} {c:<14} {s:7.2f} s")
