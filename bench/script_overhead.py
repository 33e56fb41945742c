"""Scripted programs: ember.jit (graph executor, fusion groups compiled by ember._inductor) vs ember
eager vs torch.jit.script vs torch eager, interleaved rounds, medians.

    .venv/bin/python bench/script_overhead.py [--rounds 15] [--number 200] [--size 4]
                                              [--batch 64] [--dim 256] [--case rnn|mlp|layernorm|all]

Case "mlp": a transformer feed-forward block, ``layer_norm(gelu(x @ W1 + b1) @ W2 + b2 + x)`` on
(--batch, --dim) activations with a 4x hidden layer (matmuls + pointwise + a row reduction): the
scripted version runs the matmuls as before and two fusion groups (bias + gelu; bias + residual +
layer_norm) as generated C kernels; torch.jit.script runs every op on its own (PyTorch does not fuse
on CPU by default). Case "layernorm": ``y = layer_norm(x + res); gelu(y) * 0.5 + y``, no matmul: one
fusion group. "scripted, no fusion" is ember's plan under ``ember.jit.fuser("none")``.

Case "rnn":

The program (small tensors, so the time is interpreter and dispatch overhead, not arithmetic):

    def rnn_ember(xs, h, W, U, b):
        for t in range(50):
            h = ember.tanh(xs[t] @ W + h @ U + b)
        return h

5 ops per step (getitem, 2 matmuls, 2 adds, tanh: 6 calls), 300 ops per call. ember's plan runs
`xs[t]` as getitem's CPU path in line and each step's matmuls, adds and tanh as one fusion group
(the matmuls as array externs of its fast path, the rest one generated C kernel). The ember scripted
version runs through `ember.jit.script` when it exists, else a graph built with the ir builder
(the same graph the frontend emits); the output says which. Rows: "scripted" is the user's
call (ScriptFunction.__call__: argument checks, then the executor), "executor.run" the graph
executor alone (signature lookup + the optimised plan's generated code with direct operator
calls), "plan, interpreter" the same optimised plan in the reference instruction interpreter,
"scripted, checked" the scripted call with each fusion group entered through FusedKernel's checked
call instead of its generated fast path (fused_kernel.fast_path): the figure before that change.
"""
from __future__ import annotations

import argparse
import operator
import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import torch  # noqa: E402

import ember  # noqa: E402
from _harness import header, interleaved  # noqa: E402

STEPS = 50
OPS_PER_CALL = STEPS * 6



def rnn_ember(xs, h, W, U, b):
    for t in range(50):
        h = ember.tanh(xs[t] @ W + h @ U + b)
    return h


def rnn_torch(xs, h, W, U, b):
    for t in range(50):
        h = torch.tanh(xs[t] @ W + h @ U + b)
    return h


def rnn_graph():
    """The RNN as a script graph, built with the ir builder (what the frontend emits for it)."""
    from ember.jit import ir
    T = ir.TensorType()
    g = ir.new_graph()
    xs, h, W, U, b = (g.placeholder(n, type_expr=T) for n in ("xs", "h", "W", "U", "b"))
    steps, true = ir.constant(g, STEPS), ir.constant(g, True)
    loop, (hf,) = ir.add_loop(g, steps, true, [h], [T])
    body = loop.blocks[0]
    t, hc = ir.block_params(body)
    xt = ir.call(body, operator.getitem, (xs, t), type_=T)
    a = ir.call(body, operator.matmul, (xt, W), type_=T)
    c = ir.call(body, operator.matmul, (hc, U), type_=T)
    s = ir.call(body, operator.add, (ir.call(body, operator.add, (a, c), type_=T), b), type_=T)
    ir.set_block_returns(body, [true, ir.call(body, ember.tanh, (s,), type_=T)])
    g.output(hf)
    return g


def ember_scripted(fn):
    """(callable, how it was made, executor) for the scripted ember RNN."""
    from ember.jit.executor import GraphExecutor
    script = None
    try:
        script = ember.jit.script
    except AttributeError:
        pass
    if script is not None:
        try:
            sf = script(fn)
            return sf, "ember.jit.script", None
        except Exception as e:  # noqa: BLE001 - fall back to the builder graph, say why
            print(f"# ember.jit.script failed ({type(e).__name__}: {e}); using the ir-builder graph")
    ex = GraphExecutor(rnn_graph())
    return ex.run, "ir-builder graph + GraphExecutor", ex


def cases(size: int):
    from ember.jit.executor import run_plan
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((STEPS, 1, size)), rng.standard_normal((1, size)),
              rng.standard_normal((size, size)) * 0.5, rng.standard_normal((size, size)) * 0.5,
              rng.standard_normal(size)]
    arrays = [a.astype(np.float32) for a in arrays]
    e_args = [ember.from_numpy(a.copy()) for a in arrays]
    t_args = [torch.from_numpy(a.copy()) for a in arrays]
    e_fn, t_fn = rnn_ember, rnn_torch
    scripted, how, ex = ember_scripted(e_fn)
    for _ in range(3):
        scripted(*e_args)
    np.testing.assert_allclose(scripted(*e_args).numpy(), e_fn(*e_args).numpy(), rtol=1e-5, atol=1e-5)
    t_scripted = torch.jit.script(t_fn)
    for _ in range(3):
        t_scripted(*t_args)
    np.testing.assert_allclose(t_scripted(*t_args).numpy(), e_fn(*e_args).numpy(), rtol=1e-4, atol=1e-5)
    result = {
        ("ember", "scripted"): lambda: scripted(*e_args),
        ("ember", "eager"): lambda: e_fn(*e_args),
        ("torch", "scripted"): lambda: t_scripted(*t_args),
        ("torch", "eager"): lambda: t_fn(*t_args),
    }
    if how == "ember.jit.script":
        checked = _without_group_fast_path(e_fn, e_args)
        np.testing.assert_allclose(checked(*e_args).numpy(), e_fn(*e_args).numpy(), rtol=1e-5, atol=1e-5)
        result[("ember", "scripted, checked")] = lambda: checked(*e_args)
    if ex is None:
        ex = _executor_of(scripted)
    if ex is not None and ex.debug_state()["plans"]:
        if how == "ember.jit.script":   # the executor alone, without ScriptFunction's argument checks
            result[("ember", "executor.run")] = lambda: ex.run(*e_args)
        plan = next(iter(ex.debug_state()["plans"].values()))
        result[("ember", "plan, interpreter")] = lambda: run_plan(plan, e_args)
    return result, how


def _without_group_fast_path(fn, args):
    """A second ScriptFunction of `fn` whose fusion groups run through FusedKernel's checked call
    (the plan before fused_kernel.fast_path): the same-process "before" row."""
    from ember.jit.passes.fuse_groups import fusion_groups
    sf = ember.jit.script(types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + "_checked"))
    for _ in range(3):
        sf(*args)
    graph = sf.graph_for(*args)
    for node in fusion_groups(getattr(graph, "fx_graph", graph)):
        node.meta["kernel"].fast = node.meta["kernel"]
    return sf


def _executor_of(sf):
    for attr in ("_executor", "executor", "_ember_executor"):
        ex = getattr(sf, attr, None)
        if ex is not None and hasattr(ex, "debug_state"):
            return ex
    return None


def mlp_ember(x, w1, b1, w2, b2, g, beta):
    h = ember.nn.functional.gelu(x @ w1 + b1)
    return ember.nn.functional.layer_norm(h @ w2 + b2 + x, [x.shape[-1]], g, beta)


def mlp_torch(x, w1, b1, w2, b2, g, beta):
    h = torch.nn.functional.gelu(x @ w1 + b1)
    return torch.nn.functional.layer_norm(h @ w2 + b2 + x, [x.shape[-1]], g, beta)


def layernorm_ember(x, res, g, beta):
    y = ember.nn.functional.layer_norm(x + res, [x.shape[-1]], g, beta)
    return ember.nn.functional.gelu(y) * 0.5 + y


def layernorm_torch(x, res, g, beta):
    y = torch.nn.functional.layer_norm(x + res, [x.shape[-1]], g, beta)
    return torch.nn.functional.gelu(y) * 0.5 + y


def block_shapes(case: str, batch: int, dim: int) -> list:
    if case == "mlp":
        return [(batch, dim), (dim, 4 * dim), (4 * dim,), (4 * dim, dim), (dim,), (dim,), (dim,)]
    return [(batch, dim), (batch, dim), (dim,), (dim,)]


def block_cases(case: str, batch: int, dim: int):
    e_fn, t_fn = (mlp_ember, mlp_torch) if case == "mlp" else (layernorm_ember, layernorm_torch)
    rng = np.random.default_rng(0)
    arrays = [(rng.standard_normal(s) * (s[0] ** -0.5 if len(s) == 2 else 1)).astype(np.float32)
              for s in block_shapes(case, batch, dim)]
    e_args = [ember.from_numpy(a.copy()) for a in arrays]
    t_args = [torch.from_numpy(a.copy()) for a in arrays]
    fused = ember.jit.script(e_fn)
    # a second function object of the same code: script() caches one ScriptFunction per function
    unfused = ember.jit.script(types.FunctionType(e_fn.__code__, e_fn.__globals__, e_fn.__name__ + "_no_fusion"))
    with ember.jit.fuser("none"):
        unfused(*e_args)
    t_scripted = torch.jit.script(t_fn)
    for _ in range(3):
        fused(*e_args), unfused(*e_args), t_scripted(*t_args)
    want = e_fn(*e_args).numpy()
    for got in (fused(*e_args), unfused(*e_args)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(t_scripted(*t_args).numpy(), want, rtol=1e-4, atol=1e-4)
    groups = sum(len(v) for v in fused.get_debug_state()["fusion_groups"].values())
    return {
        ("ember", "scripted"): lambda: fused(*e_args),
        ("ember", "scripted, no fusion"): lambda: unfused(*e_args),
        ("ember", "eager"): lambda: e_fn(*e_args),
        ("torch", "scripted"): lambda: t_scripted(*t_args),
        ("torch", "eager"): lambda: t_fn(*t_args),
    }, groups


BLOCK_TITLES = {"mlp": "MLP block layer_norm(gelu(x @ W1 + b1) @ W2 + b2 + x), hidden 4 x dim",
                "layernorm": "add & norm + GELU: y = layer_norm(x + res); gelu(y) * 0.5 + y"}


def main_block(case: str, args):
    header(f"scripted {BLOCK_TITLES[case]}, x: ({args.batch}, {args.dim})")
    found, groups = block_cases(case, args.batch, args.dim)
    med = interleaved(found, rounds=args.rounds, number=max(1, args.number // 10))
    print(f"# ember scripted plan: {groups} fusion groups")
    print(f"{'library':<8}{'mode':<22}{'per call':>12}{'vs eager':>12}")
    for (lib, mode), us in med.items():
        print(f"{lib:<8}{mode:<22}{us:>10.1f}us{us / med[(lib, 'eager')]:>11.2f}x")
    es, ts = med[("ember", "scripted")], med[("torch", "scripted")]
    print(f"ember scripted / torch scripted: {es / ts:.2f}x; ember scripted / ember scripted without fusion: "
          f"{es / med[('ember', 'scripted, no fusion')]:.2f}x")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--number", type=int, default=200)
    parser.add_argument("--size", type=int, default=4)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--case", choices=("rnn", "mlp", "layernorm", "all"), default="all")
    args = parser.parse_args()
    for case in ("mlp", "layernorm"):
        if args.case in (case, "all"):
            main_block(case, args)
    if args.case not in ("rnn", "all"):
        return
    header(f"scripted 50-step RNN cell h = tanh(x_t @ W + h @ U + b), hidden size {args.size}, "
           f"{OPS_PER_CALL} op calls per run")
    found, how = cases(args.size)
    med = interleaved(found, rounds=args.rounds, number=args.number)
    print(f"# ember scripted via: {how}")
    print(f"{'library':<8}{'mode':<20}{'per call':>12}{'per op':>12}{'vs eager':>12}")
    for (lib, mode), us in med.items():
        eager = med[(lib, "eager")]
        print(f"{lib:<8}{mode:<20}{us:>10.1f}us{us / OPS_PER_CALL:>10.2f}us{us / eager:>11.2f}x")
    es, ee = med[("ember", "scripted")], med[("ember", "eager")]
    ts, te = med[("torch", "scripted")], med[("torch", "eager")]
    print(f"ember scripted / ember eager: {es / ee:.2f}x; torch scripted / torch eager: {ts / te:.2f}x; "
          f"ember scripted / torch scripted: {es / ts:.2f}x")


if __name__ == "__main__":
    main()
