"""The GPT-2 training step's forward and backward graphs for CUDA, made on a machine without a GPU:
AOT autograd traces bench/_gpt_modules.py's GPT-2 (bf16 autocast) over fake CUDA tensors and the
fuser lowers both graphs for "cuda" (Triton source and wrapper, nothing launched). Shared by
tests/inductor/test_gpt2_cuda_lowering.py; the device runs the same model for real
(scripts/device_gpt2.sh)."""
from __future__ import annotations

import os
import sys

import ember

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "bench")


def gpt2_graphs(layers=2, d=64, heads=2, seq=32, batch=2, vocab=96, amp=True, partition=None):
    """(forward GraphModule, its fake inputs, backward GraphModule, its fake inputs); `partition`
    defaults to the default partitioner."""
    if BENCH not in sys.path:
        sys.path.insert(0, BENCH)
    from _gpt_modules import gpt2_classes
    from ember._functorch.aot_autograd import _state_of, functional_call, trace_joint
    from ember._functorch.fake_tensor import FakeTensorMode
    from ember._functorch.partitioners import default_partition
    ember.manual_seed(0)
    model = gpt2_classes(ember)(vocab_size=vocab, block_size=seq, n_layer=layers, n_head=heads, n_embd=d)
    names = list(_state_of(model))
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    with mode:
        args = [ember.empty_strided(tuple(t.shape), t.stride(), dtype=t.dtype, device="cuda")
                .requires_grad_(t.requires_grad) for t in _state_of(model).values()]
        args += [ember.empty((batch, seq), dtype=ember.long, device="cuda") for _ in range(2)]

    def step(*flat):
        state = dict(zip(names, flat[:len(names)]))
        state["lm_head.weight"] = state["wte.weight"]           # tied, as the model's own
        with ember.autocast("cuda", dtype=ember.bfloat16, enabled=amp):
            return functional_call(model, state, flat[len(names):])
    with mode:      # the inputs are fakes already: the trace runs on them (no real tensor anywhere)
        joint, info = trace_joint(step, args)
    fw, bw = (partition or default_partition)(joint, None, num_fwd_outputs=info["num_fwd_outputs"])
    return fw, _placeholder_values(fw), bw, _placeholder_values(bw)


def _placeholder_values(gm):
    return [n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"]


def lower_for_cuda(gm, inputs):
    """(wrapper code, Triton source) of `gm` compiled for CUDA (compile_fx's steps, nothing loaded)."""
    from ember._inductor.compile_fx import lower_and_schedule
    from ember._inductor.compile_triton import _SourceOnly, generate_module
    from ember._inductor.wrapper import build_wrapper, plan_wrapper
    g, groups, reads, kept = lower_and_schedule(gm, inputs, "cuda")
    source, kernels, launch = generate_module(groups, reads)
    plan = plan_wrapper(g, groups, kernels, kept, "cuda", launch)
    return build_wrapper(plan, {n: _SourceOnly(n) for n in launch}, gm, source_only=True).code, source
