"""Distributed benchmarks, run on every rank by a launcher (scripts/device_distributed.sh drives them).

  allreduce --lib ember|torch [--mib 1024]   bus bandwidth of all_reduce (float32, sum):
        busbw = bytes * 2 (n - 1) / n / seconds, NCCL on CUDA (or MPI / gloo with --device cpu).
        ember runs under ``python -m ember.distributed.run``, torch under ``torchrun``.
  gpt --steps 50 --batch-per-rank B [--compile]   GPT-2 small (124M; --tiny for a small one) trained
        with DDP (plain model at world size 1), AdamW, float32, random tokens from a fixed seed; the
        global batch is B * world size, rank r takes rows [r B, (r+1) B). Prints the loss of every
        step (averaged over ranks) and tokens/s per rank over the steps after the first 5.

Rank 0 prints one JSON line per run (prefix ``RESULT``) and, with --out, appends it to that file.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import time

import numpy as np


def result(args, record: dict) -> None:
    line = json.dumps(record)
    print("RESULT", line, flush=True)
    if args.out:
        with open(args.out, "a") as f:
            f.write(line + "\n")


def sync(lib, device: str) -> None:
    if device != "cuda":
        return
    if lib.__name__ == "torch":
        lib.cuda.synchronize()
    else:
        import cupy
        cupy.cuda.runtime.deviceSynchronize()


def init(lib, device: str):
    if lib.__name__ == "torch":
        import torch.distributed as dist
        dist.init_process_group("nccl" if device == "cuda" else "gloo")
        if device == "cuda":
            lib.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    else:
        import ember.distributed as dist
        dist.init_process_group("nccl" if device == "cuda" else "mpi")
    return dist


def allreduce(args) -> None:
    import importlib
    lib = importlib.import_module(args.lib)
    dist = init(lib, args.device)
    n = dist.get_world_size()
    device = f"cuda:{os.environ.get('LOCAL_RANK', 0)}" if args.device == "cuda" else "cpu"
    numel = args.mib * 1024 * 1024 // 4
    t = lib.ones(numel, dtype=lib.float32, device=device)
    for _ in range(args.warmup):
        dist.all_reduce(t)
    sync(lib, args.device)
    dist.barrier()
    start = time.perf_counter()
    for _ in range(args.iters):
        dist.all_reduce(t)
    sync(lib, args.device)
    seconds = (time.perf_counter() - start) / args.iters
    busbw = numel * 4 * 2 * (n - 1) / n / seconds / 1e9
    if dist.get_rank() == 0:
        result(args, {"bench": "allreduce", "lib": args.lib, "world": n, "bytes": numel * 4,
                      "seconds": seconds, "busbw_GBps": busbw})
    dist.destroy_process_group()


def gpt2(lib, tiny: bool, device: str):
    """GPT-2 small (or a tiny one): pre-LayerNorm blocks, causal attention, tied-free head."""
    nn, F = lib.nn, lib.nn.functional
    vocab, block, layers, heads, width = (256, 64, 2, 2, 64) if tiny else (50257, 1024, 12, 12, 768)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.fc1, self.fc2 = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

        def forward(self, x, mask):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q = q.view(B, T, heads, C // heads).transpose(1, 2)
            k = k.view(B, T, heads, C // heads).transpose(1, 2)
            v = v.view(B, T, heads, C // heads).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // heads))
            att = F.softmax(att.masked_fill(mask[:T, :T], float("-inf")), dim=-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(B, T, C))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(block, width)
            self.h = nn.ModuleList([Block() for _ in range(layers)])
            self.ln_f = nn.LayerNorm(width)
            self.lm_head = nn.Linear(width, vocab, bias=False)
            self.register_buffer("mask", ~lib.tril(lib.ones(block, block, dtype=lib.bool)))
            self.register_buffer("pos", lib.arange(block))

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(self.pos[:idx.shape[1]])
            for b in self.h:
                x = b(x, self.mask)
            return self.lm_head(self.ln_f(x))
    return GPT().to(device), vocab


def gpt(args) -> None:
    import ember
    import ember.distributed as dist
    dist.init_process_group("nccl" if args.device == "cuda" else "mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    ember.manual_seed(0)
    device = f"cuda:{os.environ.get('LOCAL_RANK', 0)}" if args.device == "cuda" else "cpu"
    ember._dynamo.config.optimize_ddp = not args.no_optimize_ddp
    model, vocab = gpt2(ember, args.tiny, device)
    trained = model if world == 1 else ember.nn.parallel.DistributedDataParallel(model)
    if args.compile:
        trained = ember.compile(trained)
    opt = ember.optim.AdamW(model.parameters(), lr=3e-4)
    rng = np.random.default_rng(1)
    losses, times, host = [], [], []
    B, T = args.batch_per_rank, args.seq
    for step in range(args.steps):
        tokens = rng.integers(0, vocab, size=(B * world, T + 1))
        mine = ember.from_numpy(tokens[rank * B:(rank + 1) * B]).to(device)
        sync(ember, args.device)
        start = time.perf_counter()
        logits = trained(mine[:, :-1])
        loss = ember.nn.functional.cross_entropy(logits.reshape(-1, vocab), mine[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        host.append(time.perf_counter() - start)       # the host's share: how far it ran ahead of the GPU
        sync(ember, args.device)
        times.append(time.perf_counter() - start)
        mean = loss.detach().clone()
        dist.all_reduce(mean, op=dist.ReduceOp.AVG)
        losses.append(mean.item())
    steady = times[5:] if len(times) > 5 else times
    if rank == 0:
        result(args, {"bench": "gpt", "world": world, "compile": args.compile, "batch_per_rank": B, "seq": T,
                      "tiny": args.tiny, "losses": losses, "step_seconds": [round(t, 4) for t in times],
                      "host_seconds": [round(t, 4) for t in host], "optimize_ddp": not args.no_optimize_ddp,
                      "ddp_pieces": ddp_pieces(), "tokens_per_s_per_rank": B * T * len(steady) / sum(steady)})
    dist.destroy_process_group()


def ddp_pieces() -> list:
    """How many pieces each graph captured inside DDP was cut into (ember/_dynamo/backends/distributed.py)."""
    import gc
    import sys
    split = sys.modules.get("ember._dynamo.backends.distributed")
    if split is None:
        return []
    return [len(g.pieces) for g in gc.get_objects() if isinstance(g, split.SplitGraph)]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("bench", choices=("allreduce", "gpt"))
    p.add_argument("--lib", default="ember", choices=("ember", "torch"))
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--mib", type=int, default=1024)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--batch-per-rank", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--tiny", action="store_true")
    p.add_argument("--compile", action="store_true")
    p.add_argument("--no-optimize-ddp", action="store_true", help="one graph inside DDP, not cut at the buckets")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    allreduce(args) if args.bench == "allreduce" else gpt(args)


if __name__ == "__main__":
    main()
