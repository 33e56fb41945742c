"""Every lowering, compiled to C, against eager ember: on contiguous, transposed, broadcast, sliced,
0-d and empty inputs, for each dtype the C code computes."""
import math

import numpy as np
import pytest

import ember
from ember._functorch import make_fx
from ember._inductor import lowering
from ember._inductor.compile_fx import compile_fx
from ember._core.dispatch import OperatorHandle

F = ember.nn.functional
DTYPES = ("float32", "float64", "int64", "int32", "bool")


def layouts(shape, dtype, seed=0):
    """(name, tensor) with the same values in several memory layouts."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        base = rng.random(shape) > 0.5
    elif dtype.startswith("int"):
        base = rng.integers(-5, 6, size=shape).astype(dtype)
    else:
        base = rng.uniform(-3, 3, size=shape).astype(dtype)
    t = ember.from_numpy(base.copy())
    out = [("contiguous", t), ("transposed", ember.from_numpy(np.ascontiguousarray(base.T)).t()),
           ("sliced", ember.from_numpy(np.repeat(base, 2, axis=-1))[..., ::2]),
           ("broadcast", ember.from_numpy(base[:1].copy()).expand(*shape))]
    return out


def extern_ops(compiled):
    """The eager ops the compiled wrapper still calls (those without a lowering)."""
    gm = compiled.current
    assert gm is not None, "the graph fell back to eager"
    ops = [n.target if isinstance(n.target, OperatorHandle) else getattr(n.target, "__ember_op__", None)
           for n in gm.graph.nodes if n.op == "call_function"]     # (the wrapper's bound bindings name their op)
    return [op.name for op in ops if op is not None and op.name != "aten::as_strided"]


def assert_same(got, want, dtype):
    if isinstance(want, (tuple, list)):
        for g, w in zip(got, want):
            assert_same(g, w, dtype)
        return
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
    a, b = got.numpy(), want.numpy()
    if want.dtype.is_floating_point:
        # 16-bit floats: compiled code rounds once at the store, eager after every op (1-2 ulp apart)
        tol = {ember.float32: 1e-5, ember.float16: 2e-3, ember.bfloat16: 1.6e-2}.get(want.dtype, 1e-12)
        a, b = a.astype(np.float64), b.astype(np.float64)
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(a, b)


def check(fn, *inputs, lowered=True):
    """Compile fn for `inputs`, compare with eager; eager errors must be compile errors too."""
    try:
        want = fn(*inputs)
    except Exception as e:                 # eager refuses: tracing (and so compiling) refuses alike
        with pytest.raises(type(e)):
            compile_fx(make_fx(fn)(*inputs), list(inputs))(*inputs)
        return None
    compiled = compile_fx(make_fx(fn)(*inputs), list(inputs))
    got = compiled(*inputs)
    assert_same(got, want, None)
    if lowered:
        assert extern_ops(compiled) == [], extern_ops(compiled)
    return compiled


def check_many(named_fns, *inputs, lowered=True):
    """check() for many functions of the same inputs, compiled as one graph (one compiler run)."""
    ok = []
    for name, fn in named_fns:
        try:
            fn(*inputs)
        except Exception as e:             # eager refuses: tracing (and so compiling) refuses alike
            with pytest.raises(type(e)):
                make_fx(fn)(*inputs)
            continue
        ok.append((name, fn))

    def all_of(*xs):
        return tuple(fn(*xs) for _, fn in ok)
    compiled = compile_fx(make_fx(all_of)(*inputs), list(inputs))
    got, want = compiled(*inputs), all_of(*inputs)
    for (name, _), g, w in zip(ok, got, want):
        try:
            assert_same(g, w, None)
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from None
    if lowered:
        assert extern_ops(compiled) == [], extern_ops(compiled)
    return compiled


UNARY = lowering.FLOAT_UNARY + lowering.SAME_DTYPE_UNARY + lowering.BOOL_UNARY


@pytest.mark.parametrize("dtype", DTYPES)
def test_unary(dtype):
    xs = [x for _, x in layouts((4, 6), dtype)]
    fns = [(f"{name}[{layout}]", lambda *t, op=getattr(ember.ops.aten, name).default, i=i: op(t[i]))
           for name in UNARY for i, (layout, _) in enumerate(layouts((4, 6), dtype))]
    check_many(fns, *xs)


def test_unary_0d_and_empty():
    xs = [ember.tensor(0.5), ember.randn(0, 3), ember.randn(3, 0).t(), ember.tensor(3)]
    fns = [(f"{name}[{i}]", lambda *t, op=getattr(ember.ops.aten, name).default, i=i: op(t[i]))
           for name in ("exp", "neg", "isnan", "sigmoid", "abs") for i in range(len(xs))]
    check_many(fns, *xs)


BINARY = [("add", lambda a, b: a + b), ("sub", lambda a, b: a - b), ("mul", lambda a, b: a * b),
          ("div", lambda a, b: a / b), ("alpha", lambda a, b: ember.add(a, b, alpha=2)),
          ("maximum", ember.maximum), ("minimum", ember.minimum),
          ("eq", lambda a, b: a == b), ("lt", lambda a, b: a < b), ("ge", lambda a, b: a >= b),
          ("ne", lambda a, b: a != b), ("logical_and", ember.logical_and), ("logical_xor", ember.logical_xor),
          ("where", lambda a, b: ember.where(a > b, a, b)), ("atan2", ember.atan2)]
INT_ONLY = [("bitwise_and", ember.bitwise_and), ("bitwise_xor", ember.bitwise_xor)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_binary(dtype):
    xs = [x for _, x in layouts((5, 4), dtype, 1)] + [x for _, x in layouts((5, 4), dtype, 2)][::-1]
    xs.append(layouts((4,), dtype, 4)[0][1])                            # a row, broadcast
    fns = []
    for name, fn in BINARY + INT_ONLY:
        fns += [(f"{name}[{i}]", lambda *t, fn=fn, i=i: fn(t[i], t[7 - i])) for i in range(4)]
        fns += [(f"{name}[row]", lambda *t, fn=fn: fn(t[0], t[8])), (f"{name}[self row]", lambda *t, fn=fn: fn(t[1], t[1][0]))]
    check_many(fns, *xs)


@pytest.mark.parametrize("dtypes", [("int64", "float32"), ("int32", "int64"), ("bool", "float64"),
                                    ("float32", "float64"), ("bool", "int32")])
def test_binary_mixed_dtypes_and_scalars(dtypes):
    a, b = layouts((3, 4), dtypes[0])[0][1], layouts((3, 4), dtypes[1])[1][1]
    fns = (lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x < y, lambda x, y: x * 2.5 + y,
           lambda x, y: (x + 3) > y, lambda x, y: ember.where(x > 0, y, 1.5), lambda x, y: y - True)
    check_many(list(enumerate(fns)), a, b)


def test_integer_division_semantics_match_eager():
    a = ember.tensor([7, -7, 7, -7, 0, 5, -9223372036854775807 - 1])
    b = ember.tensor([2, 2, -2, -2, 3, -1, -1])
    fns = (lambda x, y: x // y, lambda x, y: x % y, lambda x, y: ember.fmod(x, y),
           lambda x, y: ember.div(x, y, rounding_mode="trunc"), lambda x, y: ember.div(x, y, rounding_mode="floor"),
           lambda x, y: ember.remainder(x, y), lambda x, y: x // 3, lambda x, y: x % -3)
    check_many(list(enumerate(fns)), a, b)
    check_many(list(enumerate(fns)), a.to(ember.int32)[:-1], b.to(ember.int32)[:-1])
    fa, fb = ember.tensor([7.5, -7.5, 7.5, -7.5, 0.0, -0.0, 1.0]), ember.tensor([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 0.0])
    check_many(list(enumerate(fns[:4])), fa, fb)


def test_integer_division_by_zero_raises_like_eager():
    a, b = ember.tensor([4, 5]), ember.tensor([2, 0])
    for fn in (lambda x, y: x // y, lambda x, y: x % y):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            fn(a, b)
        compiled = compile_fx(make_fx(fn)(a, ember.tensor([2, 1])), [a, b])
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            compiled(a, b)
        assert_same(compiled(a, ember.tensor([2, 1])), fn(a, ember.tensor([2, 1])), None)


def test_nan_and_inf_propagate_through_max_min_like_eager():
    nan, inf = math.nan, math.inf
    x = ember.tensor([[1.0, nan, 3.0, -inf], [inf, 2.0, -1.0, 0.5], [nan, nan, 1.0, 2.0], [-inf, -inf, -inf, -inf]])
    y = ember.tensor([[nan, 1.0, 5.0, 2.0], [0.0, nan, -2.0, 1.0], [1.0, 2.0, 3.0, 4.0], [1.0, 1.0, 1.0, 1.0]])
    fns = (lambda a, b: ember.maximum(a, b), lambda a, b: ember.minimum(a, b), lambda a, b: a.amax(1) + b.amin(0),
           lambda a, b: a.argmax(1) + b.argmin(1), lambda a, b: a.max(1)[0], lambda a, b: a.clamp(-1, 1) + b,
           lambda a, b: ember.softmax(a, 1), lambda a, b: ember.logsumexp(a, 1), lambda a, b: F.relu(a),
           lambda a, b: a.amax(), lambda a, b: ember.argmax(a), lambda a, b: a.t().amin(0), lambda a, b: a.min(0))
    check_many(list(enumerate(fns)), x, y)
    check_many(list(enumerate(fns)), x.double(), y.double())


REDUCTIONS = [("sum", lambda x, d, k: x.sum(d, keepdim=k)), ("mean", lambda x, d, k: x.mean(d, keepdim=k)),
              ("amax", lambda x, d, k: x.amax(d, keepdim=k)), ("amin", lambda x, d, k: x.amin(d, keepdim=k)),
              ("prod", lambda x, d, k: x.prod(d, keepdim=k)), ("var", lambda x, d, k: x.var(d, keepdim=k)),
              ("std", lambda x, d, k: x.std(d, keepdim=k, unbiased=False)),
              ("var_mean", lambda x, d, k: ember.var_mean(x, d, keepdim=k)),
              ("argmax", lambda x, d, k: x.argmax(d, keepdim=k)), ("argmin", lambda x, d, k: x.argmin(d, keepdim=k)),
              ("max.dim", lambda x, d, k: x.max(d, keepdim=k)), ("any", lambda x, d, k: x.any(d, keepdim=k)),
              ("all", lambda x, d, k: x.all(d, keepdim=k)), ("logsumexp", lambda x, d, k: ember.logsumexp(x, d, k)),
              ("softmax", lambda x, d, k: ember.softmax(x, d)), ("log_softmax", lambda x, d, k: ember.log_softmax(x, d))]


@pytest.mark.parametrize("dtype", DTYPES)
def test_reduction(dtype):
    xs = [x for _, x in layouts((5, 6), dtype)]
    fns = [(f"{name}[{i}, dim={dim}, keepdim={keepdim}]", lambda *t, fn=fn, i=i, dim=dim, keepdim=keepdim: fn(t[i], dim, keepdim))
           for name, fn in REDUCTIONS for i in range(len(xs)) for dim in (0, -1) for keepdim in (False, True)
           if keepdim is False or i == 0]
    check_many(fns, *xs)


def test_reduction_over_all_dims_0d_and_empty():
    xs = (ember.randn(3, 4, 5), ember.tensor(2.5), ember.randn(0, 3), ember.randn(3, 0))
    fns = []
    for name in ("sum", "mean", "amax", "prod", "any"):      # eager refuses amax of nothing; so does make_fx
        fns += [(f"{name}()[{i}]", lambda *t, name=name, i=i: getattr(t[i], name)()) for i in range(4)]
        fns += [(f"{name}((0, 2))", lambda *t, name=name: getattr(t[0], name)((0, 2))),
                (f"{name}(1)[empty]", lambda *t, name=name: getattr(t[3], name)(1))]
    check_many(fns, *xs)


def test_long_float_sums_are_accurate():
    check_many([("rows", lambda t, u: (t * t).sum(1)), ("all", lambda t, u: u.sum()), ("mean", lambda t, u: u.mean())],
               ember.rand(3, 100_000), ember.rand(1_000_003))


def test_views_rewrite_indices_and_copy_nothing():
    x = ember.randn(4, 6, 8)
    chains = [lambda t: t.permute(2, 0, 1) * 2, lambda t: t.transpose(0, 2).sum(0), lambda t: t[1:3, ::2, 5] + 1,
              lambda t: t.unsqueeze(1).expand(4, 3, 6, 8).sum(1), lambda t: t.view(24, 8).t().exp(),
              lambda t: (t * 2).reshape(4, 48).amax(1), lambda t: t.select(1, -1).squeeze().sigmoid(),
              lambda t: t[..., 0:1].squeeze(-1) - t[:, :, 7], lambda t: t.flatten() * 3,
              lambda t: ember.as_strided(t, (3, 3), (8, 1), 2) + 0, lambda t: t[:, 2:2] + 1]
    compiled = check_many(list(enumerate(chains)), x, lowered=False)
    assert extern_ops(compiled) == []          # (the as_strided of an input is a view: no kernel either)
    check_many(list(enumerate(chains)), x.permute(2, 1, 0).contiguous().permute(2, 1, 0), lowered=False)


def test_casts_and_clamp_and_activations():
    x, w, b = ember.randn(5, 7) * 3, ember.randn(7), ember.randn(7)
    fns = (lambda t: t.to(ember.int64) * 2, lambda t: (t > 0).to(ember.float32) + t, lambda t: t.double().exp(),
               lambda t: t.clamp(min=-1), lambda t: t.clamp(max=0.5), lambda t: t.clamp(-0.5, 0.5),
               lambda t: F.gelu(t), lambda t: F.gelu(t, approximate="tanh"), lambda t: F.silu(t),
               lambda t: F.hardtanh(t), lambda t: t.masked_fill(t > 1, 0.0), lambda t: t.to(ember.bool).to(ember.int32),
               lambda t: t ** 2 + t ** 3 + t.abs() ** 0.5 + t ** 1.7, lambda t: F.layer_norm(t, (7,)),
               lambda t: F.layer_norm(t, (7,), w, b), lambda t: t.round())
    check_many([(i, lambda t, u, v, fn=fn: fn(t)) for i, fn in enumerate(fns)], x, w, b)
    check_many([(i, lambda t, u, v, fn=fn: fn(t)) for i, fn in enumerate(fns[:-3])], x.t(), w, b)


def test_ops_without_a_lowering_run_their_eager_kernel_inside_the_graph():
    x, w = ember.randn(4, 8), ember.randn(8, 3)
    compiled = check(lambda a, b: ((a * 2) @ b).relu() + ember.cumsum(a, 1)[:, :3], x, w, lowered=False)
    # cumsum runs its eager kernel; matmul the fuser's own BLAS extern (extern_blas.matmul)
    assert set(extern_ops(compiled)) == {"aten::cumsum"}
    assert "matmul" in [getattr(n.target, "__name__", "") for n in compiled.current.graph.nodes]
    cplx = ember.randn(4, 4).to(ember.complex64)        # a dtype the C code does not compute: extern
    check(lambda a: a * 2 + 1, cplx, lowered=False)


CONSTANT_DTYPES = ("float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool", "float16", "bfloat16")


@pytest.mark.parametrize("dtype", CONSTANT_DTYPES)
def test_constant_factories_every_dtype(dtype):
    # ones/zeros/full and their _like/new_ forms are lowered (no extern call), values and dtypes as eager
    dt = getattr(ember, dtype)
    x = ember.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    fill = {"bool": True, "uint8": 250, "int8": -7}.get(dtype, -2.75 if dt.is_floating_point else 123456)
    fns = [("ones", lambda t: ember.ones(2, 3, dtype=dt)), ("zeros", lambda t: ember.zeros((4,), dtype=dt)),
           ("full", lambda t: ember.full((2, 3), fill, dtype=dt)), ("full 0-d", lambda t: ember.full((), fill, dtype=dt)),
           ("full empty", lambda t: ember.full((0, 3), fill, dtype=dt)),
           ("ones_like", lambda t: ember.ones_like(t, dtype=dt)), ("zeros_like", lambda t: ember.zeros_like(t, dtype=dt)),
           ("full_like", lambda t: ember.full_like(t, fill, dtype=dt)), ("new_ones", lambda t: t.new_ones((3,), dtype=dt)),
           ("new_zeros", lambda t: t.new_zeros((1, 2), dtype=dt)),
           ("new_full", lambda t: t.new_full((2, 2), fill, dtype=dt)),
           ("fused into a reader", lambda t: t.to(dt) + ember.ones_like(t, dtype=dt))]
    check_many(fns, x)


def test_constant_factories_default_dtypes_and_fill():
    x = ember.from_numpy(np.arange(6, dtype=np.float64).reshape(2, 3))
    check_many([("full int", lambda t: ember.full((2,), 3)), ("full bool", lambda t: ember.full((2,), False)),
                ("full float", lambda t: ember.full((2,), 0.1)), ("ones", lambda t: ember.ones(3)),
                ("zeros_like float64", lambda t: ember.zeros_like(t)), ("full_like int fill", lambda t: ember.full_like(t, 7)),
                ("fill", lambda t: ember.ops.aten.fill.Scalar(t, 2.5)),
                ("fill tensor", lambda t: ember.ops.aten.fill.Tensor(t, ember.tensor(-1.5))),
                ("full inf", lambda t: ember.full((2,), float("inf"))), ("full nan", lambda t: ember.full((2,), float("nan"))),
                ("scalar_tensor", lambda t: ember.ops.aten.scalar_tensor.default(4.5))], x)
