"""Fusion groups in the graph executor: after profiling, fusible regions of a scripted graph become
prim::FusionGroup nodes compiled by ember._inductor (ember/jit/passes/fuse_groups.py). Oracles:
ember eager on the same inputs (and torch where it helps), the unfused plan (ember.jit.fuser("none")),
and the fuser's own lowering table for what may be fused."""
from __future__ import annotations

import io
import operator
import subprocess
import sys
import types

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember.jit.executor import config
from ember.jit.ir import prim, walk
from ember.jit.passes.fuse_groups import fusion_groups, lowered_op_names

pytestmark = pytest.mark.skipif(not config.fusion_enabled, reason="fusion is off")


def _script(fn):
    """A ScriptFunction of its own (script() caches one per function object)."""
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__annotations__ = dict(fn.__annotations__)
    return ember.jit.script(copy)


def _fx(graph):
    return getattr(graph, "fx_graph", graph)


def _groups(sf, *args):
    return fusion_groups(_fx(sf.graph_for(*args)))


def _calls(graph) -> list:
    return [n for n in walk(_fx(graph)) if n.op in ("call_function", "call_method")
            and n.target not in (prim.Constant, prim.ListConstruct)]


def _close(got, want, rtol=1e-5, atol=1e-6):
    assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape)
    assert got.requires_grad == want.requires_grad
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=rtol, atol=atol)


def _arr(seed, *shape, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ---- seed 001's example -------------------------------------------------------------------------
def seed_f(a, b):
    c = a + b
    d = c * c
    return d.tanh()


def test_seed_example_prints_one_fusion_group_and_runs_one_kernel():
    f = _script(seed_f)
    a, b = ember.from_numpy(_arr(0, 3, 4)), ember.from_numpy(_arr(1, 3, 4))
    f(a, b)                                              # the profiling run
    text = str(f.graph_for(a, b))
    assert "prim::FusionGroup_0(%a.1, %b.1)" in text and "with prim::FusionGroup_0 = graph(" in text
    body = text.split("with prim::FusionGroup_0", 1)[1]
    assert "aten::add" in body and "aten::mul" in body and "aten::tanh" in body
    # the plan itself is the group and nothing else
    assert [n.target for n in _calls(f.graph_for(a, b))] == [prim.FusionGroup]
    for seed in range(3):
        x, y = ember.from_numpy(_arr(seed, 3, 4)), ember.from_numpy(_arr(seed + 9, 3, 4))
        _close(f(x, y), seed_f(x, y))
        t = torch.from_numpy(_arr(seed, 3, 4)) + torch.from_numpy(_arr(seed + 9, 3, 4))
        np.testing.assert_allclose(f(x, y).numpy(), (t * t).tanh().numpy(), rtol=1e-5, atol=1e-6)
    (groups,) = f.get_debug_state()["fusion_groups"].values()
    (group,) = groups
    assert group["calls"] == 6
    (variant,) = group["variants"]                       # compiled once, for inference
    assert variant["mode"] == "inference" and len(variant["kernels"]) == 1 and variant["kernels"][0].startswith("ember_k")
    assert variant["kernels"][0] in variant["wrapper_code"]
    assert "aten::tanh" in group["subgraph"]


def test_fused_plan_equals_unfused_plan_and_single_ops_stay_unfused():
    def g(a, b):
        return ember.sigmoid(a) * b          # two ops: fused
    def one(a):
        return a.exp()                       # one op: not worth a kernel
    fg, fo = _script(g), _script(one)
    a, b = ember.from_numpy(_arr(2, 5, 7)), ember.from_numpy(_arr(3, 7))
    fg(a, b), fo(a)
    assert len(_groups(fg, a, b)) == 1 and _groups(fo, a) == []
    _close(fg(a, b), g(a, b))
    _close(fo(a), one(a))


# ---- what fuses: the fuser's lowering table ----------------------------------------------------
def test_fusible_names_come_from_the_lowering_table():
    from ember._inductor.lowering import LOWERINGS
    assert lowered_op_names() == {k.split(".")[0] for k in LOWERINGS}

    def mm(a, w, b):
        return ember.relu(a @ w + b) * 2.0   # matmul has no lowering: it joins only as an array extern
    for shapes, joins in (([(4, 6), (6, 3), (3,)], True), ([(2, 4, 6), (6, 3), (3,)], False)):
        f = _script(mm)
        a, w, b = (ember.from_numpy(_arr(i, *s)) for i, s in enumerate(shapes))
        f(a, w, b)
        (group,) = _groups(f, a, w, b)
        inside = [n for n in group.meta["subgraph"].nodes if n.op in ("call_function", "call_method")]
        assert any(getattr(n.target, "__name__", "") == "matmul" for n in inside) == joins   # 2-D only
        assert sum(getattr(n.target, "__name__", "") == "matmul" for n in _calls(f.graph_for(a, w, b))) == (not joins)
        _close(f(a, w, b), mm(a, w, b))


def broadcast_chain(a, b):
    return ((a - b) * 0.5).abs() + a.sqrt().nan_to_num(0.0) * 0


def softmax_scale(a, b):
    return F.softmax(a * b, dim=-1) + 1.0


def layer_norm_residual(a, b):
    return F.layer_norm(a + b, [6]) * 2.0


def reduce_mean(a, b):
    return (a * b).mean(dim=1) - a.sum(dim=1)


def where_compare(a, b):
    return ember.where(a > b, a - b, b * 3.0)


def clamp_gelu(a, b):
    return F.gelu(ember.clamp(a + b, -1.0, 1.0))


PROGRAMS = {"broadcast_chain": (broadcast_chain, [(4, 5), (5,)]), "softmax_scale": (softmax_scale, [(3, 8), (3, 8)]),
            "layer_norm_residual": (layer_norm_residual, [(4, 6), (4, 6)]), "reduce_mean": (reduce_mean, [(5, 3), (5, 3)]),
            "where_compare": (where_compare, [(6,), (6,)]), "clamp_gelu": (clamp_gelu, [(2, 3, 4), (4,)])}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_fuse_and_equal_eager(name):
    fn, shapes = PROGRAMS[name]
    f = _script(fn)
    args = [ember.from_numpy(_arr(i, *s)) for i, s in enumerate(shapes)]
    f(*args)
    assert _groups(f, *args), str(f.graph_for(*args))
    for seed in range(2):
        args = [ember.from_numpy(_arr(seed * 7 + i, *s)) for i, s in enumerate(shapes)]
        _close(f(*args), fn(*args))


def test_integer_and_mixed_dtypes():
    def g(a, b):
        return (a * 3 + b) % 5 - a
    f = _script(g)
    a = ember.from_numpy(np.arange(12, dtype=np.int64).reshape(3, 4))
    b = ember.from_numpy(np.arange(4, dtype=np.int32))
    f(a, b)
    got = f(a, b)
    assert got.dtype == ember.int64 and ember.equal(got, g(a, b))
    x = ember.from_numpy(_arr(0, 3, 4))
    _close(f(x, b), g(x, b))                                     # int64 -> float32: a plan of its own


# ---- guards: new shapes, dtypes, data-dependent intermediates -----------------------------------
def test_new_shape_takes_the_fallback_then_gets_its_own_plan():
    f = _script(seed_f)
    a, b = ember.from_numpy(_arr(0, 2, 3)), ember.from_numpy(_arr(1, 2, 3))
    f(a, b), f(a, b)
    ex = f._get_executor()
    runs = dict(ex.stats)
    a5, b5 = ember.from_numpy(_arr(2, 5)), ember.from_numpy(_arr(3, 5))
    _close(f(a5, b5), seed_f(a5, b5))                  # no plan for (5,): the unfused profiling graph
    assert ex.stats["bailouts"] == runs["bailouts"] + 1
    assert ex.stats["profiling_runs"] == runs["profiling_runs"] + 1
    (g5,) = _groups(f, a5, b5)
    (g23,) = _groups(f, a, b)
    assert g5 is not g23 and "Float(5" in str(f.graph_for(a5, b5)).split("with")[1]
    _close(f(a5, b5), seed_f(a5, b5))
    _close(f(a, b), seed_f(a, b))
    assert len(f.get_debug_state()["fusion_groups"]) == 2


def test_dtype_change_gets_its_own_plan():
    f = _script(seed_f)
    a, b = ember.from_numpy(_arr(0, 4)), ember.from_numpy(_arr(1, 4))
    f(a, b)
    a64, b64 = a.double(), b.double()
    got = f(a64, b64)
    assert got.dtype == ember.float64
    _close(got, seed_f(a64, b64), rtol=1e-12)
    f(a64, b64)
    assert "Double(4" in str(f.graph_for(a64, b64))
    _close(f(a64, b64), seed_f(a64, b64), rtol=1e-12)


def masked(x, y):
    z = x[x > 0]                  # data dependent: the signature does not fix z's shape
    return (z * 2.0 + 1.0).tanh() + z.sum() * 0 + y.sum()


def test_typecheck_guards_values_the_signature_does_not_fix():
    f = _script(masked)
    x = ember.from_numpy(np.array([1.0, -2.0, 3.0, -4.0], dtype=np.float32))
    y = ember.from_numpy(_arr(0, 3))
    f(x, y)
    graph = _fx(f.graph_for(x, y))
    checks = [n for n in walk(graph) if n.target is prim.TypeCheck]
    assert checks and "prim::TypeCheck[types=[Float(2" in str(f.graph_for(x, y))
    (group,) = [g for g in fusion_groups(graph) if g.graph is not graph]   # in the checked branch
    kernel = group.meta["kernel"]
    _close(f(x, y), masked(x, y))
    calls = kernel.calls
    x3 = ember.from_numpy(np.array([1.0, 2.0, 3.0, -4.0], dtype=np.float32))   # same signature, 3 kept
    _close(f(x3, y), masked(x3, y))
    assert kernel.calls == calls                          # the check failed: the unfused fallback ran
    _close(f(x, y), masked(x, y))
    assert kernel.calls == calls + 1


# ---- autograd ----------------------------------------------------------------------------------
def mlp_tail(x, b, g):
    h = F.gelu(x + b)
    return F.layer_norm(h * 2.0 + x, [4], g).tanh()


def test_requires_grad_inputs_backward_equals_eager_and_torch():
    f = _script(mlp_tail)
    arrays = [_arr(0, 3, 4), _arr(1, 4), _arr(2, 4)]

    def leaves(lib):
        return [lib.tensor(a, requires_grad=True) for a in arrays]
    x, b, g = leaves(ember)
    f(x, b, g)
    x, b, g = leaves(ember)
    out = f(x, b, g)
    assert out.requires_grad and fusion_groups(_fx(f.graph_for(x, b, g)))
    (out * out).sum().backward()
    ex, eb, eg = leaves(ember)
    ref = mlp_tail(ex, eb, eg)
    (ref * ref).sum().backward()
    _close(out, ref)
    for mine, want in zip((x, b, g), (ex, eb, eg)):
        np.testing.assert_allclose(mine.grad.numpy(), want.grad.numpy(), rtol=1e-4, atol=1e-5)
    tx, tb, tg = leaves(torch)
    tref = torch.nn.functional.layer_norm(torch.nn.functional.gelu(tx + tb) * 2.0 + tx, [4], tg).tanh()
    (tref * tref).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    modes = {v["mode"] for gr in f.get_debug_state()["fusion_groups"].values() for d in gr for v in d["variants"]}
    assert "autograd" in modes
    with ember.no_grad():                                   # grad mode is part of the signature
        got = f(x, b, g)
        f(x, b, g)
    assert not got.requires_grad
    _close(got, mlp_tail(x, b, g).detach())


# ---- semantics the fusion must keep ------------------------------------------------------------
def test_in_place_update_between_ops_is_not_reordered():
    def g(a, b):
        c = a + b
        a.add_(1.0)                  # must run after c and before d
        d = c * a
        return d.exp() + c
    f = _script(g)
    for _ in range(3):
        a1, b1 = ember.from_numpy(_arr(0, 4)), ember.from_numpy(_arr(1, 4))
        a2, b2 = ember.from_numpy(_arr(0, 4)), ember.from_numpy(_arr(1, 4))
        _close(f(a1, b1), g(a2, b2))
        _close(a1, a2)


def test_views_of_fused_values_still_alias():
    def g(a, b):
        c = a * b + 1.0
        d = c.t()                    # a view of c: c must stay the tensor d points into
        d.add_(10.0)
        return c
    f = _script(g)
    a, b = ember.from_numpy(_arr(0, 2, 3)), ember.from_numpy(_arr(1, 2, 3))
    for _ in range(3):
        _close(f(a, b), g(a, b))
    def h(a, b):
        return (a + b).contiguous()  # may return its argument: never a fused output
    fh = _script(h)
    for _ in range(2):
        _close(fh(a, b), h(a, b))


def test_random_ops_are_not_fused():
    def g(a):
        return F.dropout(a * 2.0, 0.5, True) + 1.0
    f = _script(g)
    a = ember.from_numpy(_arr(0, 64))
    for seed in range(3):
        ember.manual_seed(seed)
        got = f(a)
        ember.manual_seed(seed)
        _close(got, g(a))


def test_groups_inside_if_and_loop_blocks():
    def g(a, b, n: int):
        if bool(a.sum() > 0):
            a = (a * b).sigmoid()
        else:
            a = (a - b).relu()
        for _ in range(n):
            a = (a + b).tanh() * 0.5
        return a
    f = _script(g)
    a, b = ember.from_numpy(_arr(0, 3, 4)), ember.from_numpy(_arr(1, 4))
    for sign in (1.0, -1.0, 1.0):
        x = a * sign
        _close(f(x, b, 12), g(x, b, 12))
    graph = _fx(f.graph_for(a, b, 12))
    assert sum(1 for grp in fusion_groups(graph) if grp.graph is not graph) >= 2


# ---- switch, debug, save/load ------------------------------------------------------------------
def test_fuser_none_turns_fusion_off_and_unknown_names_raise_like_torch():
    def g(a, b):
        return (a * b).tanh()
    f = _script(g)
    a = ember.from_numpy(_arr(0, 3))
    with ember.jit.fuser("none"):
        f(a, a)
        assert _groups(f, a, a) == []
    with ember.jit.fuser("fuser1"):
        b = ember.from_numpy(_arr(1, 4))
        f(b, b)
        assert _groups(f, b, b)
    assert config.fusion_enabled
    for lib in (torch, ember):
        with pytest.raises(Exception, match=r"unrecognized fuser option \(name: nope\)") as info:
            with lib.jit.fuser("nope"):
                pass
        assert type(info.value) is Exception


def test_jit_log_prints_the_fused_graph(monkeypatch, capsys):
    monkeypatch.setenv("EMBER_JIT_LOG_LEVEL", "graph_executor")
    f = _script(seed_f)
    a = ember.from_numpy(_arr(0, 2, 2))
    f(a, a)
    err = capsys.readouterr().err
    assert "prim::FusionGroup_0(" in err and "with prim::FusionGroup_0 = graph(" in err


def test_save_holds_the_graph_and_load_fuses_again():
    f = _script(seed_f)
    a, b = ember.from_numpy(_arr(0, 3)), ember.from_numpy(_arr(1, 3))
    f(a, b), f(a, b)
    assert _groups(f, a, b)
    buf = io.BytesIO()
    ember.jit.save(f, buf)
    data = buf.getvalue()
    assert b"FusionGroup" not in data and b"ember_k" not in data
    buf.seek(0)
    loaded = ember.jit.load(buf)
    assert "FusionGroup" not in str(loaded.graph)
    _close(loaded(a, b), seed_f(a, b))
    assert fusion_groups(_fx(loaded.graph_for(a, b)))
    _close(loaded(a, b), seed_f(a, b))


def test_dispatch_modes_see_the_ops_one_by_one():
    f = _script(seed_f)
    a = ember.from_numpy(_arr(0, 4))
    f(a, a)
    with ember.profiler.profile() as prof:
        out = f(a, a)
    _close(out, seed_f(a, a))
    names = " ".join(str(getattr(e, "name", "")) for e in prof.events())
    assert "tanh" in names and "mul" in names


def test_import_ember_does_not_load_the_fuser():
    code = ("import sys, ember, ember.jit\n"
            "print('ember._inductor' in sys.modules, 'ember.jit.passes.fuse_groups' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def two_outputs(a, b):
    m = a > b
    return ember.where(m, a * 2.0, b.sin()), m.logical_not()


def test_multi_output_group_with_grad_and_bool_output():
    f = _script(two_outputs)
    arrays = [_arr(0, 6), _arr(1, 6)]
    leaves = lambda: [ember.tensor(a, requires_grad=True) for a in arrays]  # noqa: E731
    f(*leaves())
    a, b = leaves()
    got, mask = f(a, b)
    (group,) = _groups(f, a, b)
    assert group.meta["kernel"].num_outputs == 2
    assert [n.target for n in _calls(f.graph_for(a, b)) if n.target not in (prim.TupleConstruct, operator.getitem)] \
        == [prim.FusionGroup]
    ea, eb = leaves()
    want, want_mask = two_outputs(ea, eb)
    _close(got, want)
    assert ember.equal(mask, want_mask) and not mask.requires_grad and mask.dtype == ember.bool
    (got * got).sum().backward()
    (want * want).sum().backward()
    for mine, ref in ((a, ea), (b, eb)):
        np.testing.assert_allclose(mine.grad.numpy(), ref.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_a_loaded_trace_fuses_its_aten_graph():
    a, b = ember.from_numpy(_arr(0, 2, 3)), ember.from_numpy(_arr(1, 2, 3))
    traced = ember.jit.trace(seed_f, (a, b))
    buf = io.BytesIO()
    ember.jit.save(traced, buf)
    buf.seek(0)
    loaded = ember.jit.load(buf)
    _close(loaded(a, b), seed_f(a, b))
    assert [n.target for n in _calls(loaded.graph_for(a, b))] == [prim.FusionGroup]
    _close(loaded(a, b), seed_f(a, b))


def view_then_maybe_alias(x, y):
    a = (x + y) * 3.0
    v = a.t()                    # a view of a, read by the op the group is split at
    w = v.contiguous()           # returns v itself when v is contiguous: never a fused output
    w.mul_(2.0)                  # writes through w = v into a
    return a * 1.0 + 0.0, w


@pytest.mark.parametrize("shape", [(1, 4), (3, 1), (3, 4)])
def test_a_split_group_never_returns_a_copy_of_a_view(shape):
    f = _script(view_then_maybe_alias)
    for seed in range(3):
        x, y = ember.from_numpy(_arr(seed, *shape)), ember.from_numpy(_arr(seed + 5, *shape))
        got, want = f(x, y), view_then_maybe_alias(x, y)
        for g, w in zip(got, want):
            _close(g, w)
