"""Where one ember GPT-2 training step (bench/gpt2_cuda.py's) spends its dispatcher calls and its
host-to-device uploads, on a machine with a GPU:

    python3 scripts/gpt2_diagnose.py [--layers 12] [--batch 8] [--seq 1024]

Prints the operators the dispatcher ran in one step (a dispatch mode below autograd: forward and
backward), and every CuPy array made from a host value in that step (``cupy.asarray`` /
``cupy.array`` of something that is not already on the device), by the ember line that asked.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "bench")]

import cupy  # noqa: E402
import numpy as np  # noqa: E402

import ember  # noqa: E402
from ember.utils._python_dispatch import TorchDispatchMode  # noqa: E402

uploads = collections.Counter()
counting = [False]


def _site():
    """The innermost frame of ember's own code (not this script) that led here."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        if f"{os.sep}ember{os.sep}" in frame.filename:
            return f"{os.path.relpath(frame.filename, ROOT)}:{frame.lineno} {frame.name}"
    return "?"


def _counted(fn):
    def upload(obj, *args, **kwargs):
        if counting[0] and not isinstance(obj, cupy.ndarray):
            uploads[(_site(), type(obj).__name__)] += 1
        return fn(obj, *args, **kwargs)
    return upload


cupy.asarray, cupy.array = _counted(cupy.asarray), _counted(cupy.array)


class CountOps(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[str(func)] += 1
        return func(*args, **(kwargs or {}))


def main():
    from _gpt_modules import gpt2_classes
    from gpt2_cuda import step
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    args = p.parse_args()
    ember.manual_seed(0)
    model = gpt2_classes(ember)(block_size=args.seq, n_layer=args.layers).to("cuda")
    opt = ember.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
    tokens = np.random.default_rng(0).integers(0, 50257, (args.batch, args.seq + 1))
    x, y = ember.from_numpy(tokens[:, :-1]).cuda(), ember.from_numpy(tokens[:, 1:]).cuda()
    for _ in range(2):
        step(ember, model, opt, x, y)
    counting[0] = True
    step(ember, model, opt, x, y)
    counting[0] = False
    print(f"## host-value uploads in one step: {sum(uploads.values())}")
    for (site, kind), n in uploads.most_common(20):
        print(f"{n:>6}  {kind:<10} {site}")
    mode = CountOps()
    with mode:
        step(ember, model, opt, x, y)
    ember.cuda.synchronize()
    print(f"\n## dispatcher calls in one step (below autograd): {sum(mode.ops.values())}")
    for name, n in mode.ops.most_common(30):
        print(f"{n:>6}  {name}")


if __name__ == "__main__":
    main()
