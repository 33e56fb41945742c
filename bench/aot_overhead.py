"""AOT autograd's compile-time cost per graph: tracing the joint graph and partitioning it, ember vs
torch._functorch, interleaved.

    .venv/bin/python bench/aot_overhead.py [--rounds 7] [--number 3]

Each library captures the model once with its own dynamo (a backend that keeps the GraphModule and
example inputs), then ``aot_module_simplified(gm, example_inputs, fw_compiler=nop, bw_compiler=nop,
partition_fn=...)`` is timed: trace the joint graph (forward + autograd's backward), partition it,
hand both graphs to a compiler that does nothing. Models: the MLP of tests/test_training.py (batch
32) and a GPT block (LayerNorm, causal attention, GELU MLP; d=64, 4 heads, batch 8 x 32 tokens;
dropout 0 so each library captures it as one graph). Times are per graph, in milliseconds (median of
interleaved rounds). The goal: ember <= 0.5x torch's time.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ember  # noqa: E402
from _gpt_modules import gpt_block as _gpt_block  # noqa: E402
from _harness import header, interleaved  # noqa: E402


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)), lib.randn(32, 64)


def gpt_block(lib, d=64, heads=4):
    return _gpt_block(lib, 0.0, d, heads), lib.randn(8, 32, d)


def captured(lib, build):
    """[(gm, example_inputs)] of the graphs lib's dynamo captures from one call of the model."""
    graphs = []

    def keep(gm, example_inputs):
        graphs.append((gm, list(example_inputs)))
        return gm.forward
    model, x = build(lib)
    lib._dynamo.reset()
    lib.compile(model, backend=keep)(x)
    return graphs


def cases():
    import torch
    import torch._functorch.config as torch_aot_config
    from torch._functorch.aot_autograd import aot_module_simplified as torch_aot
    from torch._functorch import partitioners as torch_partitioners
    from ember._functorch.aot_autograd import aot_module_simplified as ember_aot
    from ember._functorch import partitioners as ember_partitioners
    torch_aot_config.enable_autograd_cache = False        # time the work, not a cache hit

    def nop(gm, example_inputs):
        return gm.forward

    out, counts = {}, {}
    for model_name, build in (("MLP", mlp), ("GPT block", gpt_block)):
        for partition in ("default_partition", "min_cut_rematerialization_partition"):
            row = f"{model_name} ({'default' if partition.startswith('default') else 'min-cut'})"
            for lib, aot, parts in ((ember, ember_aot, ember_partitioners), (torch, torch_aot, torch_partitioners)):
                graphs = captured(lib, build)
                counts[(row, lib.__name__)] = len(graphs)
                partition_fn = getattr(parts, partition)

                def compile_all(graphs=graphs, aot=aot, partition_fn=partition_fn):
                    for gm, inputs in graphs:
                        aot(gm, inputs, fw_compiler=nop, bw_compiler=nop, partition_fn=partition_fn)
                out[(row, lib.__name__)] = (compile_all, len(graphs))
    return out, counts


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--number", type=int, default=3)
    args = parser.parse_args()
    header("AOT autograd compile time: trace joint graph + partition, ms per graph (median of interleaved rounds)")
    c, counts = cases()
    medians = interleaved({k: fn for k, (fn, _) in c.items()}, rounds=args.rounds, number=args.number)
    rows = list(dict.fromkeys(r for r, _ in c))
    print(f"{'graph':<22}{'ember':>12}{'torch':>12}{'ember/torch':>14}{'graphs (e/t)':>15}")
    print("-" * 75)
    worst = 0.0
    for r in rows:
        e = medians[(r, "ember")] / 1e3 / c[(r, "ember")][1]
        t = medians[(r, "torch")] / 1e3 / c[(r, "torch")][1]
        worst = max(worst, e / t)
        print(f"{r:<22}{e:>10.2f}ms{t:>10.2f}ms{e / t:>13.2f}x{counts[(r, 'ember')]:>9}/{counts[(r, 'torch')]}")
    print(f"\nworst ember/torch ratio: {worst:.2f}x (goal: <= 0.5x)")


if __name__ == "__main__":
    main()
