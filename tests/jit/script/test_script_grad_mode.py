"""Grad-mode ``with`` blocks in scripted code (no_grad / enable_grad / set_grad_enabled),
module-container lengths and indices, and dict / filtered / nested comprehensions: IR shape,
printing, passes, save/load and the executor's grad-mode restore, compared with eager ember and
with torch.jit.script where torch accepts the program. (The acceptance programs for the same
features are in test_programs_script_gaps.py.)
"""
from __future__ import annotations

import io
from typing import Dict, List

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.fx.passes import eliminate_common_subexpressions, eliminate_dead_code, fold_constants, purity
from ember.jit import ir, passes
from ember.jit.executor import run_graph
from ember.jit.ir import prim
from ember.jit.ir.printer import format_graph


def _targets(graph) -> list:
    return [n.target for n in ir.walk(graph) if n.op == "call_function"]


def _count(graph, target) -> int:
    return sum(1 for t in _targets(graph) if t is target)


# ---------------------------------------------------------------- with no_grad()
def scale_no_grad(x, w):
    with ember.no_grad():
        scale = (w * 2).sum()
    return x * w + scale


def scale_no_grad_torch(x, w):
    with torch.no_grad():
        scale = (w * 2).sum()
    return x * w + scale


def returns_inside(x):
    with ember.no_grad():
        return x * 2


def raises_inside(x):
    with ember.no_grad():
        if bool(x.sum() > 0):
            raise ValueError("positive")
        y = x * 3
    return y


def test_no_grad_matches_eager_and_torch():
    s = ember.jit.script(scale_no_grad)
    ts = torch.jit.script(scale_no_grad_torch)
    rng = np.random.default_rng(0)
    for _ in range(4):
        xa, wa = rng.standard_normal(3).astype("float32"), rng.standard_normal(3).astype("float32")
        x, w = ember.tensor(xa, requires_grad=True), ember.tensor(wa, requires_grad=True)
        tx, tw = torch.tensor(xa, requires_grad=True), torch.tensor(wa, requires_grad=True)
        out, ref, tout = s(x, w), scale_no_grad(x, w), ts(tx, tw)
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-6)
        np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-6)
        out.sum().backward()
        tout.sum().backward()
        # the scale was computed without history: w's gradient is x only, as in torch
        np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-6)
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
    assert ember.is_grad_enabled()


def test_ir_printer_and_code_show_the_mode_changes():
    s = ember.jit.script(scale_no_grad)
    g = s._graph
    assert _count(g, prim.IsGradEnabled) == 1 and _count(g, prim.SetGradEnabled) == 2
    text = str(s.graph)
    assert "prim::IsGradEnabled()" in text and "prim::SetGradEnabled(" in text
    code = s.code
    assert "ember.set_grad_enabled(False)" in code and "ember.is_grad_enabled()" in code
    # the restore comes after the body and reads the saved mode (not re-read at the restore)
    lines = [ln.strip() for ln in code.splitlines()]
    saved = next(ln.split(" = ")[0] for ln in lines if ln.endswith("ember.is_grad_enabled()"))
    assert lines.index(f"ember.set_grad_enabled({saved})") > lines.index("ember.set_grad_enabled(False)")


def test_return_inside_with_keeps_the_return_type_and_restores():
    s = ember.jit.script(returns_inside)
    assert str(s.schema.return_type) == "Tensor"
    x = ember.randn(3, requires_grad=True)
    for _ in range(3):
        out = s(x)
        assert not out.requires_grad and ember.is_grad_enabled()
        np.testing.assert_allclose(out.numpy(), (x * 2).detach().numpy())


def test_grad_mode_restored_when_the_body_raises():
    s = ember.jit.script(raises_inside)
    for k in range(4):
        with pytest.raises(ValueError, match="positive"):
            s(ember.ones(3, requires_grad=True))
        assert ember.is_grad_enabled(), f"call {k} left grad mode off"
        out = s(-ember.ones(3, requires_grad=True))
        assert not out.requires_grad and ember.is_grad_enabled()
    with pytest.raises(ValueError):   # the single-run path too
        run_graph(s._graph, [ember.ones(3)])
    assert ember.is_grad_enabled()
    with ember.no_grad():   # restores to the caller's mode, whatever it was
        with pytest.raises(ValueError):
            s(ember.ones(3))
        assert not ember.is_grad_enabled()


def nested_modes(x, flag: bool):
    with ember.no_grad():
        a = x * 2
        with ember.enable_grad():
            b = x * 3
        with ember.set_grad_enabled(flag):
            c = x * 4
    return a, b, c


def test_nested_modes_and_runtime_flag_match_eager():
    s = ember.jit.script(nested_modes)
    x = ember.randn(2, requires_grad=True)
    for flag in (True, False, False, True, True, False):
        got, want = s(x, flag), nested_modes(x, flag)
        assert [t.requires_grad for t in got] == [t.requires_grad for t in want]
        for g_, w_ in zip(got, want):
            np.testing.assert_allclose(g_.detach().numpy(), w_.detach().numpy())
        assert ember.is_grad_enabled()


def continue_in_no_grad(x, n: int):
    acc = x * 0
    for i in range(n):
        with ember.no_grad():
            if i % 2 == 0:
                continue
            acc = acc + x * i
        acc = acc + x
    return acc


def return_in_while_no_grad(x, n: int):
    i = 0
    while i < n:
        with ember.no_grad():
            if i == 3:
                return x * i
        i += 1
    return x


def return_in_branch_no_grad(x, n: int):
    if n > 2:
        with ember.no_grad():
            return x * 2
    y = x + 1
    return y


@pytest.mark.parametrize("fn", [continue_in_no_grad, return_in_while_no_grad, return_in_branch_no_grad])
def test_jumps_out_of_a_with_block_match_eager(fn):
    s = ember.jit.script(fn)
    assert str(s.schema.return_type) == "Tensor"
    x = ember.randn(3, requires_grad=True)
    for n in (0, 1, 2, 3, 4, 5, 4, 1):
        got, want = s(x, n), fn(x, n)
        assert got.requires_grad == want.requires_grad
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy())
        assert ember.is_grad_enabled()


def test_passes_keep_the_mode_changes_and_cse_stops_at_them():
    def f(x):
        a = x * 2
        with ember.no_grad():
            b = x * 2
            b2 = x * 2
        c = x * 2
        return a + b + b2 + c
    g = ir.clone(ember.jit.script(f)._graph)
    for p in (fold_constants, passes.peephole_optimize, passes.constant_pooling,
              eliminate_common_subexpressions, eliminate_dead_code):
        p(g)
    assert _count(g, prim.IsGradEnabled) == 1 and _count(g, prim.SetGradEnabled) == 2
    muls = [n for n in ir.walk(g) if n.op == "call_function" and "mul" in str(n.target)]
    # b2 merges with b (same mode); nothing merges across a SetGradEnabled
    assert len(muls) == 3
    order = list(g.nodes)
    sets = [order.index(n) for n in order if n.target is prim.SetGradEnabled]
    assert [sum(1 for m in muls if order.index(m) < i) for i in sets] == [1, 2]


def test_save_load_round_trip_keeps_grad_mode_ops():
    s = ember.jit.script(raises_inside)
    buf = io.BytesIO()
    ember.jit.save(s, buf)
    buf.seek(0)
    loaded = ember.jit.load(buf)
    assert "prim::SetGradEnabled" in format_graph(loaded._graph if hasattr(loaded, "_graph") else loaded.graph)
    x = -ember.ones(3, requires_grad=True)
    assert not loaded(x).requires_grad
    with pytest.raises(ValueError):
        loaded(ember.ones(3))
    assert ember.is_grad_enabled()


def other_context(x):
    with open("f"):
        pass
    return x


def named_no_grad(x):
    with ember.no_grad() as g:   # `as` targets are rejected
        y = x * 2
    return y if g is not None else x


def int_flag(x, n: int):
    with ember.set_grad_enabled(n):
        y = x * 2
    return y


@pytest.mark.parametrize("fn, phrase", [(other_context, "with statements aren't supported"),
                                        (named_no_grad, "with statements aren't supported"),
                                        (int_flag, "expected a bool")])
def test_other_with_statements_still_rejected(fn, phrase):
    with pytest.raises(RuntimeError, match=phrase):
        ember.jit.script(fn)


# ---------------------------------------------------------------- module containers
class Containers(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 3), nn.Linear(3, 3)])
        self.seq = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
        self.named = nn.ModuleDict({"a": nn.ReLU(), "b": nn.Tanh()})

    def forward(self, x):
        for m in self.seq:
            x = m(x)
        for i, layer in enumerate(self.layers):
            x = layer(x) + i
        for a, b in zip(self.layers, self.layers):
            x = a(b(x))
        return self.layers[-1](x) * len(self.layers) + len(self.seq) + len(self.named)


def test_container_length_is_a_constant_and_matches_eager():
    m = Containers()
    s = ember.jit.script(m)
    assert builtins_len_count(s.forward._graph if hasattr(s.forward, "_graph") else s._graph) == 0
    x = ember.randn(2, 3)
    np.testing.assert_allclose(s(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def builtins_len_count(graph) -> int:
    import builtins
    return _count(graph, builtins.len)


def test_container_index_out_of_range_is_a_compile_error():
    class Bad(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.ReLU()])

        def forward(self, x):
            return self.layers[-2](x)
    with pytest.raises(RuntimeError, match="out of range"):
        ember.jit.script(Bad())


# ---------------------------------------------------------------- comprehensions
def dict_comp(d: Dict[str, int]) -> Dict[str, int]:
    return {k: v * 2 for k, v in d.items()}


def dict_comp_keys(xs: List[int]) -> Dict[int, float]:
    i = 100
    out = {i: float(x) / 2 for i, x in enumerate(xs)}
    out[i] = 0.5
    return out


def filtered_nested(n: int) -> List[int]:
    return [i * j for i in range(n) if i % 2 == 1 for j in range(i) if j != 2]


def gen_sum(xs: List[int]) -> int:
    return sum(x * x for x in xs)


@pytest.mark.parametrize("fn, args, torch_ok", [
    (dict_comp, ({"a": 1, "b": -3},), True),
    (dict_comp_keys, ([3, 4, 5],), True),
    (filtered_nested, (6,), False),
    (gen_sum, ([1, -2, 3],), True),
])
def test_comprehensions_match_eager_and_torch(fn, args, torch_ok):
    s = ember.jit.script(fn)
    assert s(*args) == fn(*args)
    if torch_ok:
        assert torch.jit.script(fn)(*args) == fn(*args)
    else:   # torch.jit.script takes one `for` and no `if`
        with pytest.raises(Exception):
            torch.jit.script(fn)


def test_dict_comprehension_is_typed_by_its_elements():
    s = ember.jit.script(dict_comp_keys)
    assert str(s.schema.return_type) in ("Dict[int, float]", "Dict(int, float)")
    assert _count(s._graph, prim.DictConstruct) == 1


def mixed_values(xs: List[int]) -> Dict[int, int]:
    return {x: (x if x > 0 else "neg") for x in xs}


def test_dict_comprehension_value_type_mismatch_is_an_error():
    with pytest.raises(RuntimeError):
        ember.jit.script(mixed_values)
