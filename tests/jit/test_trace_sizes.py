"""jit.trace records the sizes a program computes with: ``x.numel()``, size arithmetic, and traced
sizes flowing into slice bounds, select indices, view/reshape/narrow/expand sizes and factory
sizes, so a trace made on one shape runs right on another -- compared with eager ember and with
torch.jit.trace (PyTorch 2.13) on new input shapes. A size that has to become a plain Python
value warns (TracerWarning) as in PyTorch; no trace may silently freeze one.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch as real_torch

import ember
from test_trace import arrays, load, strip_locations, trace_both

# name -> (source of f(x), shape traced on, shapes run on); torch.jit.trace generalises on all of them
GENERALISING = {
    "numel_scale": ("def f(x):\n    return x * x.numel()\n", (4, 3), [(6, 3), (2, 5)]),
    "reshape_numel": ("def f(x):\n    return x.reshape(x.numel()) * 2\n", (4, 3), [(6, 3), (1, 7)]),
    "mean_by_numel": ("def f(x):\n    return x.sum() / x.numel()\n", (4, 3), [(5, 5)]),
    "nelement": ("def f(x):\n    return x.flatten()[: x.nelement() // 2]\n", (4, 3), [(6, 4)]),
    "ones_numel": ("def f(x):\n    return torch.ones(x.numel()) + x.flatten()\n", (2, 3), [(3, 3)]),
    "slice_stop_half": ("def f(x):\n    return x[: x.shape[0] // 2]\n", (4, 3), [(6, 3), (9, 2)]),
    "slice_start_half": ("def f(x):\n    return x[x.shape[0] // 2:]\n", (4, 3), [(6, 3), (9, 2)]),
    "slice_negative": ("def f(x):\n    return x[-x.size(0) // 2:]\n", (4, 3), [(8, 3), (5, 1)]),
    "slice_2d": ("def f(x):\n    return x[: x.size(0) // 2, 1: x.size(1) - 1]\n", (4, 6), [(8, 10)]),
    "slice_step_mod": ("def f(x):\n    return x[: x.size(0) % 4]\n", (7, 2), [(6, 2), (5, 3)]),
    "select_last": ("def f(x):\n    return x[x.size(0) - 1]\n", (4, 3), [(6, 3)]),
    "select_method": ("def f(x):\n    return x.select(0, x.size(0) - 1)\n", (4, 3), [(6, 3)]),
    "narrow_half": ("def f(x):\n    return x.narrow(1, 0, x.size(1) // 2)\n", (4, 6), [(2, 10)]),
    "view_half": ("def f(x):\n    return x.view(x.size(0) // 2, -1)\n", (4, 6), [(8, 10)]),
    "reshape_product": ("def f(x):\n    return x.reshape(x.shape[0] * x.shape[1])\n", (4, 6), [(3, 5)]),
    "transpose_reshape": ("def f(x):\n    return x.t().reshape(x.size(1), x.size(0))\n", (4, 6), [(3, 2)]),
    "expand_rows": ("def f(x):\n    return x[:1].expand(x.size(0), -1)\n", (4, 6), [(7, 6)]),
    "repeat_rows": ("def f(x):\n    return x[:1].repeat(x.size(0), 1)\n", (4, 6), [(7, 6)]),
    "arange_rows": ("def f(x):\n    return x + torch.arange(x.shape[0]).unsqueeze(1)\n", (4, 3), [(6, 3)]),
    "zeros_rows": ("def f(x):\n    return torch.zeros(x.shape[0], 2) + x[:, :2]\n", (4, 3), [(6, 3)]),
    "full_rows": ("def f(x):\n    return torch.full((x.shape[0], 2), 1.5) * x[:, :2]\n", (4, 3), [(6, 3)]),
    "new_zeros": ("def f(x):\n    return x.new_zeros(x.size(0), 2) + 1\n", (4, 3), [(6, 3)]),
    "linspace_cols": ("def f(x):\n    return x + torch.linspace(0, 1, x.shape[1])\n", (4, 3), [(2, 7)]),
    "unflatten": ("def f(x):\n    return x.reshape(-1).unflatten(0, (x.shape[0], x.shape[1]))\n", (4, 3), [(2, 5)]),
    "topk_half": ("def f(x):\n    return x.topk(x.size(1) // 2, dim=1)[0]\n", (4, 6), [(3, 10)]),
    "pad_cols": ("def f(x):\n    return F.pad(x, (0, x.size(1)))\n", (4, 3), [(2, 5)]),
    "index_fill": ("def f(x):\n    return x.clone().index_fill(0, torch.arange(x.size(0) // 2), 0.)\n",
                   (4, 3), [(8, 3)]),
    "setitem_slice": ("def f(x):\n    y = x.clone()\n    y[: y.size(0) // 2] = 0.\n    return y\n", (4, 3), [(8, 3)]),
    "pow_size": ("def f(x):\n    return x * x.size(0) ** 2\n", (4, 3), [(6, 3)]),
    "abs_neg_size": ("def f(x):\n    return x[: abs(-x.size(0)) // 2]\n", (4, 3), [(8, 3)]),
    "eye_square": ("def f(x):\n    return x[:, : x.size(0)] @ torch.eye(x.size(0))\n", (4, 6), [(8, 10)]),
}

# ember generalises these; torch 2.13 does not (split freezes with a warning and then fails,
# roll freezes its shift silently), so they are compared with eager only
GENERALISING_EMBER_ONLY = {
    "split_half": ("def f(x):\n    return x.split(x.shape[0] // 2)[0]\n", (4, 3), [(8, 3)]),
    "roll_half": ("def f(x):\n    return x.roll(x.size(0) // 2, 0)\n", (4, 3), [(6, 3)]),
    "divmod_size": ("def f(x):\n    q, r = divmod(x.size(0), 3)\n    return x[: q + r]\n", (7, 2), [(11, 2)]),
    "bitwise_sizes": ("def f(x):\n    n = x.size(0)\n    return x[: (n >> 1) | (n & 1)] * (n ^ 1) + (~n)\n",
                      (5, 2), [(9, 2), (8, 2)]),
    "round_floor_size": ("import math\ndef f(x):\n    n = x.size(0)\n"
                         "    return x[: round(n) - math.floor(n) + math.ceil(n) // 2 + math.trunc(n) % 3]\n",
                         (8, 2), [(12, 2), (7, 1)]),
}


def _traced(lib, src, shape):
    """(traced f, eager f, TracerWarnings raised while tracing) for one library."""
    f = load(src, lib)["f"]
    x = lib.from_numpy(arrays([shape], 0)[0])
    tracer_warning = ember.jit.TracerWarning if lib is ember else real_torch.jit.TracerWarning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traced = lib.jit.trace(f, (x,), check_trace=False)
    return traced, f, [str(w.message) for w in caught if issubclass(w.category, tracer_warning)]


def _assert_runs_like_eager(traced, f, lib, shape):
    y = arrays([shape], 7)[0]
    got, want = traced(lib.from_numpy(y.copy())), f(lib.from_numpy(y.copy()))
    assert tuple(got.shape) == tuple(want.shape), f"shape {tuple(got.shape)} != eager {tuple(want.shape)}"
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-6)
    return got


@pytest.mark.parametrize("name", sorted(GENERALISING))
def test_traced_sizes_generalise_like_torch(name):
    src, shape, others = GENERALISING[name]
    ours, f, our_warnings = _traced(ember, src, shape)
    theirs, torch_f, their_warnings = _traced(real_torch, src, shape)
    assert our_warnings == their_warnings == []
    for other in others:
        got = _assert_runs_like_eager(ours, f, ember, other)
        want = _assert_runs_like_eager(theirs, torch_f, real_torch, other)   # the oracle generalises too
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(GENERALISING_EMBER_ONLY))
def test_traced_sizes_generalise_where_torch_freezes(name):
    src, shape, others = GENERALISING_EMBER_ONLY[name]
    traced, f, caught = _traced(ember, src, shape)
    assert caught == []
    for other in others:
        _assert_runs_like_eager(traced, f, ember, other)


@pytest.mark.parametrize("name", ["numel_scale", "reshape_numel", "mean_by_numel", "select_last", "select_method"])
def test_graph_text_matches_torch(name):
    src, shape, _ = GENERALISING[name]
    ours, theirs = trace_both(src, [shape], check_trace=False)
    assert str(ours.graph) == str(theirs.graph)


@pytest.mark.parametrize("name", ["slice_stop_half", "slice_start_half", "slice_2d", "pow_size", "abs_neg_size",
                                  "narrow_half"])
def test_graph_text_matches_torch_but_for_torchs_own_locations(name):
    # torch records `//`, `**` on sizes in its own torch/_tensor.py: compared without locations
    src, shape, _ = GENERALISING[name]
    ours, theirs = trace_both(src, [shape], check_trace=False)
    assert strip_locations(str(ours.graph)) == strip_locations(str(theirs.graph))


# name -> source: the size becomes a Python value the trace cannot follow
FROZEN = {
    "int_of_size": "def f(x):\n    return x.view(int(x.size(0)), -1)\n",
    "float_of_numel": "def f(x):\n    return x * float(x.numel())\n",
    "compare_size": "def f(x):\n    if x.size(0) > 3:\n        return x + 1\n    return x - 1\n",
    "len_of_tensor": "def f(x):\n    return x[: len(x) - 1]\n",
    "tensor_of_size": "def f(x):\n    return x + torch.tensor([x.size(0)])\n",
    "numel_compare": "def f(x):\n    return x * 2 if x.numel() % 2 == 0 else x\n",
}


@pytest.mark.parametrize("name", sorted(FROZEN))
def test_frozen_sizes_warn_like_torch(name):
    src = FROZEN[name]
    _, _, ours = _traced(ember, src, (4, 3))
    _, _, theirs = _traced(real_torch, src, (4, 3))
    assert ours and ours == theirs


TRUEDIV = "def f(x):\n    return x * (x.shape[0] / 2)\n"
NEG_POW = "def f(x):\n    return x * 2 ** -x.size(0)\n"


@pytest.mark.parametrize("src", [TRUEDIV, NEG_POW], ids=["truediv", "negative_pow"])
def test_float_results_of_sizes_are_frozen_with_a_warning(src):
    # torch records these as tensor ops; ember's traced sizes are ints, so a float result is
    # frozen -- never silently: the trace warns that the value is now a constant
    traced, f, caught = _traced(ember, src, (4, 3))
    assert any("Converting a tensor to a Python float" in m for m in caught)
    y = ember.from_numpy(arrays([(4, 3)], 3)[0])
    np.testing.assert_allclose(traced(y).numpy(), f(y).numpy(), rtol=1e-6)


SOURCES = {**{k: v[0] for k, v in GENERALISING.items()}, **{k: v[0] for k, v in GENERALISING_EMBER_ONLY.items()},
           **FROZEN, "truediv": TRUEDIV, "negative_pow": NEG_POW}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_a_trace_never_freezes_a_size_silently(name):
    """On a new shape, a trace either matches eager or warned while tracing."""
    traced, f, caught = _traced(ember, SOURCES[name], (4, 6))
    y = ember.from_numpy(arrays([(8, 10)], 5)[0])
    try:
        got = traced(y.clone())
    except RuntimeError:
        assert caught, "the trace fails on a new shape but did not warn while tracing"
        return
    want = f(y.clone())
    same = tuple(got.shape) == tuple(want.shape) and np.allclose(got.numpy(), want.numpy(), atol=1e-5)
    assert same or caught, "the trace gives another result on a new shape and did not warn"


def test_saved_trace_with_numel_and_slices_still_generalises(tmp_path):
    src = "def f(x):\n    return x[: x.shape[0] // 2].reshape(x.numel() // 2) * x.size(1)\n"
    f = load(src, ember)["f"]
    traced = ember.jit.trace(f, ember.randn(4, 3))
    ember.jit.save(traced, str(tmp_path / "f.pt"))
    loaded = ember.jit.load(str(tmp_path / "f.pt"))
    for shape in ((6, 3), (10, 5)):
        y = ember.randn(*shape)
        assert loaded(y).tolist() == f(y).tolist()


def test_sizes_and_numel_are_plain_outside_traces():
    numel, nelement = ember.Tensor.numel, ember.Tensor.nelement
    seen = []
    ember.jit.trace(lambda t: seen.append(type(t.numel())) or t * 2, ember.randn(2, 3))
    assert seen and seen[0] is not int                   # a traced numel inside the trace
    assert ember.Tensor.numel is numel and ember.Tensor.nelement is nelement
    assert type(ember.randn(2, 3).numel()) is int
    x = ember.randn(4, 3)
    assert x[: x.shape[0] // 2].shape == (2, 3)         # eager slicing is untouched
