"""Host time of one eager GPT-2 training step on the CPU, ember vs PyTorch, interleaved.

    .venv/bin/python bench/eager_step_host.py [--steps 30] [--warmup 3] [--layers 2] [--no-autocast]
                                              [--profile FILE.pstats] [--clock cpu]

The model is bench/gpt2_cuda.py's (`_gpt_modules.gpt2_classes`) at a tiny size (2 layers, n_embd 64,
4 heads, seq 32, batch 2, vocab 512), so that a step's time is the Python around the kernels
(dispatcher, autograd recording and the backward engine, autocast's casts, Tensor construction)
and not NumPy's arithmetic: the host path of the CUDA step (issue 17) measured where no GPU is.
One step is gpt2_cuda.py's: forward and cross-entropy under ``autocast("cpu", dtype=bfloat16)``,
backward, AdamW, ``zero_grad(set_to_none=True)``. Steps alternate between the libraries; medians
of the step and of its three phases (forward with the loss, backward, optimizer with zero_grad).
``--profile FILE`` then runs `--steps` ember steps under cProfile, dumps the pstats file and prints
its top by own time.
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
from _harness import CLOCKS, header  # noqa: E402

SIZE = dict(vocab_size=512, n_embd=64, n_head=4)


def build(lib, args, weights=None):
    lib.manual_seed(0)
    model = gpt2_classes(lib)(block_size=args.seq, n_layer=args.layers, **SIZE)
    if weights is not None:
        model.load_state_dict({k: lib.from_numpy(v.copy()) for k, v in weights.items()})
    opt = lib.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
    return model, opt


def step(lib, model, opt, x, y, autocast, clock=time.perf_counter):
    """One training step; returns the loss and the clock's readings after forward, backward, optimizer."""
    t0 = clock()
    if autocast:
        with lib.autocast("cpu", dtype=lib.bfloat16):
            loss = model(x, y)
    else:
        loss = model(x, y)
    t1 = clock()
    loss.backward()
    t2 = clock()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss, (t0, t1, t2, clock())


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--no-autocast", dest="autocast", action="store_false")
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="wall")
    parser.add_argument("--profile", metavar="FILE", help="dump a pstats file of --steps ember steps")
    args = parser.parse_args()
    import torch
    header(f"eager training step, host time: GPT-2 {args.layers} layers, n_embd {SIZE['n_embd']}, seq {args.seq}, "
           f"batch {args.batch}, vocab {SIZE['vocab_size']}, AdamW"
           + (", autocast cpu bf16" if args.autocast else ", float32"))
    t_model, t_opt = build(torch, args)
    weights = {k: v.detach().numpy() for k, v in t_model.state_dict().items()}
    e_model, e_opt = build(ember, args, weights)
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, SIZE["vocab_size"], (args.batch, args.seq + 1))
    x_np, y_np = tokens[:, :-1].copy(), tokens[:, 1:].copy()
    columns = {"ember": (ember, e_model, e_opt, ember.from_numpy(x_np), ember.from_numpy(y_np)),
               "torch": (torch, t_model, t_opt, torch.from_numpy(x_np), torch.from_numpy(y_np))}
    clock = CLOCKS[args.clock]
    samples = {name: [] for name in columns}
    phases = {name: ([], [], []) for name in columns}      # forward, backward, optimizer
    losses = {name: [] for name in columns}
    for i in range(args.warmup + args.steps):
        for name, (lib, model, opt, x, y) in columns.items():
            loss, marks = step(lib, model, opt, x, y, args.autocast, clock)
            losses[name].append(float(loss.item()))
            if i >= args.warmup:
                samples[name].append((marks[3] - marks[0]) * 1e3)
                for k in range(3):
                    phases[name][k].append((marks[k + 1] - marks[k]) * 1e3)
    med = {name: statistics.median(v) for name, v in samples.items()}
    for name in columns:
        fwd, bwd, upd = (statistics.median(v) for v in phases[name])
        print(f"{name:6s} {med[name]:8.2f} ms/step  (median of {args.steps}, {args.clock} clock; forward {fwd:.2f}, "
              f"backward {bwd:.2f}, optimizer {upd:.2f})")
    print(f"ember/torch {med['ember'] / med['torch']:.2f}x;  last loss ember {losses['ember'][-1]:.4f}, "
          f"torch {losses['torch'][-1]:.4f}")
    if args.profile:
        import cProfile
        import pstats
        lib, model, opt, x, y = columns["ember"]
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.steps):
            step(lib, model, opt, x, y, args.autocast, clock)
        prof.disable()
        prof.dump_stats(args.profile)
        pstats.Stats(args.profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
