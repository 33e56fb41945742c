"""float16 and bfloat16 in generated C: loaded from their bits, computed in float, stored rounded to
nearest even. Against eager ember (which rounds after every op, so chains may differ by an ulp or
two: test_lowering.assert_same's per-dtype tolerance) and exactly where eager rounds once."""
import numpy as np
import pytest

import ember
from ember._functorch import make_fx
from ember._inductor.compile_fx import compile_fx
from test_lowering import check, check_many

F = ember.nn.functional
HALVES = (ember.float16, ember.bfloat16)


def half_layouts(shape, dtype, seed=0):
    base = np.random.default_rng(seed).uniform(-3, 3, size=shape).astype(np.float32)
    t = ember.from_numpy(base).to(dtype)
    return [t, ember.from_numpy(np.ascontiguousarray(base.T)).to(dtype).t(),
            ember.from_numpy(np.repeat(base, 2, axis=-1)).to(dtype)[..., ::2],
            ember.from_numpy(base[:1].copy()).to(dtype).expand(*shape)]


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_pointwise_each_layout(dtype):
    xs = half_layouts((6, 5), dtype) + [ember.from_numpy(np.linspace(-1, 1, 5, dtype=np.float32)).to(dtype)]
    fns = []
    for i in range(4):
        fns += [(f"affine[{i}]", lambda *t, i=i: t[i] * 2 + 1), (f"exp[{i}]", lambda *t, i=i: (t[i] + t[4]).exp()),
                (f"tanh[{i}]", lambda *t, i=i: ember.tanh(t[i]) * t[3 - i]), (f"gelu[{i}]", lambda *t, i=i: F.gelu(t[i])),
                (f"compare[{i}]", lambda *t, i=i: t[i] > t[4]), (f"where[{i}]", lambda *t, i=i: ember.where(t[i] > 0, t[i], 0.5)),
                (f"neg abs[{i}]", lambda *t, i=i: -t[i].abs()), (f"max[{i}]", lambda *t, i=i: ember.maximum(t[i], t[0]))]
    check_many(fns, *xs)


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_reductions_and_row_kernels(dtype):
    xs = half_layouts((8, 12), dtype, 1)
    fns = []
    for i in range(4):
        fns += [(f"sum[{i}]", lambda *t, i=i: t[i].sum(1)), (f"mean[{i}]", lambda *t, i=i: t[i].mean(0)),
                (f"amax[{i}]", lambda *t, i=i: t[i].amax(1)), (f"argmin[{i}]", lambda *t, i=i: t[i].argmin(0)),
                (f"softmax[{i}]", lambda *t, i=i: ember.softmax(t[i], -1)),
                (f"layer_norm[{i}]", lambda *t, i=i: F.layer_norm(t[i], (12,)))]
    check_many(fns, *xs)


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_casts_round_once_exactly_like_eager(dtype):
    # values whose float32 products land between two 16-bit floats: the rounding is what is tested
    x = ember.from_numpy(np.random.default_rng(2).standard_normal(4099).astype(np.float32) * 1000)
    fns = [("to half", lambda a: (a * 3.3).to(dtype)), ("to half and back", lambda a: (a.to(dtype).float() + 0.1)),
           ("half to int", lambda a: a.to(dtype).to(ember.int32)), ("half to double", lambda a: a.to(dtype).double()),
           ("mixed promote", lambda a: a.to(dtype) + a)]
    compiled = check_many(fns, x)
    got, want = compiled(x), tuple(fn(x) for _, fn in fns)
    for g, w in zip(got[:4], want[:4]):       # one rounding in both: bit-identical
        np.testing.assert_array_equal(g.numpy().view(np.uint8), w.numpy().view(np.uint8))


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_nan_inf_and_overflow_round_like_eager(dtype):
    big = 70000.0 if dtype == ember.float16 else 3.0e38
    x = ember.tensor([float("nan"), float("inf"), -float("inf"), big, -big, 1e-8, -0.0, 0.0])
    compiled = check(lambda a: (a * 2).to(dtype), x)
    np.testing.assert_array_equal(np.isnan(compiled(x).float().numpy()), np.isnan((x * 2).to(dtype).float().numpy()))


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_0d_empty_and_views(dtype):
    xs = [ember.tensor(1.5).to(dtype), ember.randn(0, 3).to(dtype), ember.randn(3, 4, 5).to(dtype)]
    fns = [("0-d", lambda a, b, c: a * 3 - 1), ("empty", lambda a, b, c: b.exp() + 1), ("empty sum", lambda a, b, c: b.sum(0)),
           ("permute", lambda a, b, c: c.permute(2, 0, 1) * a), ("slice sum", lambda a, b, c: c[:, 1:, ::2].sum(-1)),
           ("cat", lambda a, b, c: ember.cat([c, c * 2], 1)), ("index", lambda a, b, c: c[ember.tensor([2, 0])] + 1)]
    check_many(fns, *xs)


def test_half_graph_runs_generated_kernels_with_nothing_extern():
    x = ember.randn(16, 32).to(ember.bfloat16)
    compiled = compile_fx(make_fx(lambda a: ember.softmax(a * 2, -1))(x), [x])
    names = [n.target.name for n in compiled.current.graph.nodes if n.op == "call_function" and hasattr(n.target, "name")]
    assert not any(n.startswith("aten::") and n != "aten::as_strided" for n in names), names
