"""The core op set (ember/_functorch/core_ops.py): every operator of the table is exactly one of core,
decomposed or kept whole; the counts the docstring states are the data's; the decomposition table
makes forward + backward traces of real models (an MLP with cross-entropy, a CNN with
conv/batchnorm/maxpool/relu, a GPT block with attention, LayerNorm, GELU and dropout) hold only
core and kept-whole ops, and those graphs compute what eager computes (same seed, same dropout
masks); a few decompositions record the ops PyTorch's decompositions record."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import ember
from ember._functorch import core_ops, make_fx
from ember._functorch.core_ops import CORE, KEPT_WHOLE, classification, classify, counts, overload_name
from ember._functorch.decompositions import core_decompositions, get_decompositions
from ember.ops.registry import OPERATORS

# the table's operators (other tests define ember.library operators in their own namespaces)
ATEN = {name: op for name, op in OPERATORS.items() if name.startswith("aten::")}


def test_every_operator_is_exactly_one_of_core_decomposed_kept_whole():
    table = core_decompositions()
    found = classification()
    assert set(found) == set(ATEN)
    for name, op in ATEN.items():
        in_sets = [overload_name(op) in CORE, op in table, overload_name(op) in KEPT_WHOLE]
        assert sum(in_sets) == 1, (name, in_sets)
    total = counts()
    print(f"\n{len(found)} operators: {total['core']} core, {total['decomposed']} decomposed, "
          f"{total['kept whole']} kept whole")
    assert sum(total.values()) == len(found)


def test_core_and_kept_whole_name_only_operators_of_the_table():
    names = {overload_name(op) for op in ATEN.values()}
    assert sorted(CORE - names) == [] and sorted(set(KEPT_WHOLE) - names) == []
    assert all(reason and len(reason) > 20 for reason in KEPT_WHOLE.values())


def test_docstring_states_the_counts_of_the_data():
    doc = " ".join(core_ops.__doc__.split())
    total = counts()
    assert f"{len(ATEN)} overloads, in-place and out= ones included" in doc
    assert f"({total['core']} core + {total['decomposed']} decomposed + {total['kept whole']} kept whole)" in doc
    assert f"(`CORE`, {len(CORE)} overloads" in doc and f"(`KEPT_WHOLE`, {len(KEPT_WHOLE)} overloads" in doc


SAME_OP = {"_adaptive_avg_pool2d": "adaptive_avg_pool2d"}    # ATen's name -> ember's row of the same op


def _torch_core_names() -> set:
    """The op names the installed PyTorch tags core (every aten operator the dispatcher knows:
    dir(torch.ops.aten) lists only the packets loaded so far)."""
    import torch
    names, overloads = set(), 0
    for qualified in torch._C._dispatch_get_all_op_names():
        if not qualified.startswith("aten::"):
            continue
        name, _, overload = qualified[len("aten::"):].partition(".")
        packet = getattr(torch.ops.aten, name)
        if torch.Tag.core in getattr(packet, overload or "default").tags:
            names.add(SAME_OP.get(name, name))
            overloads += 1
    return names, overloads


def test_differences_from_pytorchs_core_tag_are_the_documented_ones():
    """ember's CORE is torch's Tag.core restricted to ember's ops, except exactly BELOW_ATEN (added),
    ATEN_CORE_DECOMPOSED and ATEN_CORE_KEPT_WHOLE (taken out), each checked against its category."""
    torch_core, overloads = _torch_core_names()
    assert f"{overloads} overloads / {len(torch_core)} names" in " ".join(core_ops.__doc__.split())
    ember_names = {overload_name(op).split(".")[0] for name, op in ATEN.items()}
    ours = {name.split(".")[0] for name in CORE}
    assert ours - torch_core == core_ops.BELOW_ATEN
    assert (torch_core & ember_names) - ours == core_ops.ATEN_CORE_DECOMPOSED | core_ops.ATEN_CORE_KEPT_WHOLE
    table = core_decompositions()
    for name in core_ops.ATEN_CORE_DECOMPOSED:
        assert all(op in table for n, op in OPERATORS.items() if n == f"aten::{name}")
    kept = {name.split(".")[0] for name in KEPT_WHOLE}
    assert core_ops.ATEN_CORE_KEPT_WHOLE <= kept


def test_a_new_operator_must_be_classified():
    class Fake:
        name = "aten::not_a_real_op"
    with pytest.raises(ValueError, match="neither core, decomposed nor kept whole"):
        classify(Fake(), {})


def test_core_ops_have_no_decomposition_and_kept_whole_none():
    table = core_decompositions()
    assert not [op.name for op in table if overload_name(op) in CORE | set(KEPT_WHOLE)]


def test_get_decompositions_picks_packets_and_overloads():
    aten = ember.ops.aten
    picked = get_decompositions([aten.softmax, aten.gelu.default, aten.mm.default])
    assert set(picked) == {aten.softmax.int, aten.gelu.default}


def test_importing_ember_does_not_import_the_table():
    import subprocess
    import sys
    code = ("import sys, ember; print(any(m.startswith('ember._functorch.decompositions') or "
            "m == 'ember._functorch.core_ops' for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# ---------------------------------------------------------------------------------------------
# real models, forward + backward
# ---------------------------------------------------------------------------------------------
def _mlp(nn):
    return nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)), (4, 64)


def _cnn(nn):
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(16, 10)), (4, 1, 8, 8)


class _GPTBlock:
    """A pre-norm transformer block with causal self-attention, GELU MLP and dropout, and a head."""

    def __new__(cls, nn):
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.ln1, self.ln2 = nn.LayerNorm(16), nn.LayerNorm(16)
                self.attn = nn.MultiheadAttention(16, 4, dropout=0.1, batch_first=True)
                self.mlp = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16), nn.Dropout(0.1))
                self.head = nn.Linear(16, 10)

            def forward(self, x):
                h = self.ln1(x)
                mask = ember.triu(ember.ones(x.shape[1], x.shape[1], dtype=ember.bool), 1)
                x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
                x = x + self.mlp(self.ln2(x))
                return self.head(x).mean(1)
        return Block(), (2, 5, 16)


MODELS = {"mlp": _mlp, "cnn_batchnorm": _cnn, "gpt_block": _GPTBlock}


def _step_program(model):
    params = list(model.parameters())

    def step(x, y, *ps):
        loss = ember.nn.functional.cross_entropy(model(x), y)
        return (loss, *ember.autograd.grad(loss, ps))
    return step, params


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_forward_backward_traces_to_core_and_kept_whole_ops(name):
    ember.manual_seed(0)
    model, shape = MODELS[name](ember.nn)
    model.train()
    x = ember.randn(*shape, dtype=ember.float32)
    y = ember.randint(0, 10, (shape[0],))
    step, params = _step_program(model)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    ember.manual_seed(1)
    gm = make_fx(step, decomposition_table=core_decompositions())(x, y, *params)
    ops = collections.Counter(overload_name(n.target) for n in gm.graph.nodes
                              if n.op == "call_function" and hasattr(n.target, "schema"))
    outside = set(ops) - CORE - set(KEPT_WHOLE)
    assert not outside, sorted(outside)
    print(f"\n{name}: {sum(ops.values())} op nodes, kept whole: "
          f"{ {k: v for k, v in ops.items() if k in KEPT_WHOLE} }")
    # the graph computes eager's loss and gradients (dropout: the same seed draws the same masks)
    model.load_state_dict(state)
    ember.manual_seed(2)
    expected = step(x, y, *params)
    model.load_state_dict(state)
    ember.manual_seed(2)
    got = gm(x, y, *params)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=2e-4, atol=2e-5)


# ---------------------------------------------------------------------------------------------
# the ops PyTorch's decompositions record (ATen's .Scalar overloads are ember's .Tensor ones)
# ---------------------------------------------------------------------------------------------
SAME_OPS = {
    "softmax": lambda L, x, y: L.softmax(x, -1),
    "log_softmax": lambda L, x, y: L.log_softmax(x, -1),
    "gelu": lambda L, x, y: L.nn.functional.gelu(x),
    "gelu_tanh": lambda L, x, y: L.nn.functional.gelu(x, approximate="tanh"),
    "silu": lambda L, x, y: L.nn.functional.silu(x),
    "leaky_relu": lambda L, x, y: L.nn.functional.leaky_relu(x),
    "addcmul": lambda L, x, y: L.addcmul(x, x, y, value=2),
    "std": lambda L, x, y: L.std(x, 1),
    "transpose": lambda L, x, y: x.transpose(0, 1),
    "t": lambda L, x, y: x.t(),
    "clamp_min": lambda L, x, y: x.clamp_min(0.5),
    "frac": lambda L, x, y: L.frac(x),
    "glu": lambda L, x, y: L.nn.functional.glu(x),
}


def _torch_names(gm):
    return collections.Counter(n.target.__name__.split(".")[0] for n in gm.graph.nodes
                               if n.op == "call_function" and hasattr(n.target, "_schema"))


@pytest.mark.parametrize("name", sorted(SAME_OPS))
def test_decomposed_ops_match_pytorchs_decomposition(name):
    import torch
    from torch._decomp import core_aten_decompositions, get_decompositions as torch_get
    from torch.fx.experimental.proxy_tensor import make_fx as torch_make_fx
    aten = torch.ops.aten
    table = dict(core_aten_decompositions())
    table.update(torch_get([aten._softmax, aten._log_softmax, aten.gelu, aten.leaky_relu, aten.glu]))
    program = SAME_OPS[name]
    a, b = np.random.default_rng(0).random((2, 3, 4))
    torch_gm = torch_make_fx(lambda x, y: program(torch, x, y), decomposition_table=table)(
        torch.tensor(a), torch.tensor(b))
    ember_gm = make_fx(lambda x, y: program(ember, x, y), decomposition_table=core_decompositions())(
        ember.tensor(a), ember.tensor(b))
    ours = collections.Counter(overload_name(n.target).split(".")[0] for n in ember_gm.graph.nodes
                               if n.op == "call_function" and hasattr(n.target, "schema"))
    assert ours == _torch_names(torch_gm)
    np.testing.assert_allclose(ember_gm(ember.tensor(a), ember.tensor(b)).numpy(),
                               torch_gm(torch.tensor(a), torch.tensor(b)).numpy(), rtol=1e-12, atol=1e-14)


def test_inplace_and_out_ops_trace_to_their_functional_op_and_copy_():
    """x.clone().mul_(2).relu_() decomposes to clone, mul, copy_, relu, copy_: copy_ is the one
    mutating core op (functionalisation removes it); the graph computes eager's result."""
    def program(x, y):
        t = x.clone().mul_(2).relu_()
        return ember.add(t, y, out=ember.empty_like(t))
    x, y = ember.randn(3, 4), ember.randn(3, 4)
    gm = make_fx(program, decomposition_table=core_decompositions())(x, y)
    ops = [overload_name(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    assert set(ops) <= CORE and ops.count("copy_") == 3, ops
    np.testing.assert_allclose(gm(x, y).numpy(), program(x, y).numpy(), rtol=1e-6)
