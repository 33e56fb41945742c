"""Per-call time of tiny ops (shape (4,)) in ember, NumPy and PyTorch eager, interleaved.

    .venv/bin/python bench/eager_overhead.py [--rounds 15] [--number 2000] [--clock cpu]

What it measures is the fixed cost of one op call: argument parsing, dispatch, allocation of
the result; the two autograd rows add recording a graph node (``mul, grad``) and running a
three-node graph backward into two leaves' ``.grad`` (``mul+sum+bwd``). The figure in the README comes from this script.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import ember  # noqa: E402
from _harness import header, interleaved, table  # noqa: E402


def cases():
    import torch
    torch.set_num_threads(1)
    a_np, b_np = np.arange(4, dtype=np.float32), np.ones(4, dtype=np.float32)
    m_np = np.arange(16, dtype=np.float32).reshape(4, 4)
    e_a, e_b, e_m = ember.from_numpy(a_np.copy()), ember.from_numpy(b_np.copy()), ember.from_numpy(m_np.copy())
    t_a, t_b, t_m = torch.from_numpy(a_np.copy()), torch.from_numpy(b_np.copy()), torch.from_numpy(m_np.copy())
    zero = np.float32(0)
    # autograd: a leaf that requires grad, so each call records a node (and the second case also
    # runs it backward: the engine, the formula and AccumulateGrad of two leaves)
    e_x, e_w = ember.ones(4, requires_grad=True), ember.ones(4, requires_grad=True)
    t_x, t_w = torch.ones(4, requires_grad=True), torch.ones(4, requires_grad=True)
    return {
        ("add", "ember"): lambda: ember.add(e_a, e_b),
        ("add", "numpy"): lambda: np.add(a_np, b_np),
        ("add", "torch"): lambda: torch.add(t_a, t_b),
        ("mul", "ember"): lambda: e_a * e_b,
        ("mul", "numpy"): lambda: a_np * b_np,
        ("mul", "torch"): lambda: t_a * t_b,
        ("relu", "ember"): lambda: ember.relu(e_a),
        ("relu", "numpy"): lambda: np.maximum(a_np, zero),
        ("relu", "torch"): lambda: torch.relu(t_a),
        ("sum", "ember"): lambda: e_a.sum(),
        ("sum", "numpy"): lambda: a_np.sum(),
        ("sum", "torch"): lambda: t_a.sum(),
        ("matmul 4x4", "ember"): lambda: e_m @ e_m,
        ("matmul 4x4", "numpy"): lambda: m_np @ m_np,
        ("matmul 4x4", "torch"): lambda: t_m @ t_m,
        ("index [1]", "ember"): lambda: e_a[1],
        ("index [1]", "numpy"): lambda: a_np[1],
        ("index [1]", "torch"): lambda: t_a[1],
        ("slice [1:3]", "ember"): lambda: e_a[1:3],
        ("slice [1:3]", "numpy"): lambda: a_np[1:3],
        ("slice [1:3]", "torch"): lambda: t_a[1:3],
        ("mul, grad", "ember"): lambda: e_x * e_w,
        ("mul, grad", "torch"): lambda: t_x * t_w,
        ("mul+sum+bwd", "ember"): lambda: (e_x * e_w).sum().backward(),
        ("mul+sum+bwd", "torch"): lambda: (t_x * t_w).sum().backward(),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--number", type=int, default=2000)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: the process's CPU time (waiting for a core on a shared machine is not counted)")
    args = parser.parse_args()
    header("eager overhead: microseconds per call, tiny tensors (median of interleaved rounds)")
    c = cases()
    medians = interleaved(c, rounds=args.rounds, number=args.number, clock=args.clock)
    rows = list(dict.fromkeys(r for r, _ in c))
    print(table(rows, ["ember", "numpy", "torch"], medians, ratio=("ember", "torch")))
    plain = [r for r in rows if (r, "numpy") in medians]     # (the autograd rows have no NumPy peer)
    worst = max(medians[(r, "ember")] / medians[(r, "torch")] for r in plain)
    print(f"\nworst ember/torch ratio without autograd: {worst:.2f}x (must: <= 2x; goal: <= 1x)")


if __name__ == "__main__":
    main()
