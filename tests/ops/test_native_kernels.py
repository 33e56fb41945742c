"""The native eager kernels (ember/_inductor/native_kernels.py via ember/ops/native.py): every op
routed through one is compared with PyTorch (values and gradients; float32/float64; contiguous,
strided and empty inputs; inf/NaN), with the NumPy path (EMBER_NATIVE off), and checked to really
take the native path where it should and to stay off it under tracing and double backward."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.ops import native

from oracle import NATIVE_TOL as TOL


def _arrays(shapes, dtype, seed=0, scale=3.0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s) * scale).astype(dtype) for s in shapes]


def _run(lib, fn, arrays, layout, grad_seed=1):
    """fn(lib, *tensors) with every input requiring grad; (output values, input grads)."""
    ts = []
    for a in arrays:
        t = lib.from_numpy(a.copy())
        if layout == "transposed" and t.dim() >= 2:   # same values, strided storage
            t = lib.from_numpy(np.ascontiguousarray(a.swapaxes(-1, -2))).transpose(-1, -2)
        ts.append(t.requires_grad_())
    out = fn(lib, *ts)
    outs = out if isinstance(out, tuple) else (out,)
    loss = sum((o * lib.from_numpy(np.random.default_rng(grad_seed).standard_normal(tuple(o.shape))
                                   .astype(arrays[0].dtype))).sum() for o in outs)
    loss.backward()
    return [o.detach().numpy() for o in outs], [t.grad.numpy() for t in ts]


def _compare(fn, arrays, layout="contiguous"):
    dtype = arrays[0].dtype.name
    (ev, eg), (tv, tg) = _run(ember, fn, arrays, layout), _run(torch, fn, arrays, layout)
    for e, t in zip(ev + eg, tv + tg):
        np.testing.assert_allclose(e, t, **TOL[dtype])
    return ev + eg


def _against_numpy_path(fn, arrays, monkeypatch):
    got = _compare(fn, arrays)
    monkeypatch.setattr(native, "enabled", False)
    ref = _compare(fn, arrays)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, **TOL[a.dtype.name])


def F(lib):
    return lib.nn.functional


# ------------------------------------------------------------------------------ gelu

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_gelu_matches_torch(dtype, approximate, layout, native_calls):
    fn = lambda lib, x: F(lib).gelu(x, approximate=approximate)   # noqa: E731
    _compare(fn, _arrays([(37, 65)], dtype), layout)
    if layout == "contiguous":
        stem = "gelu_tanh" if approximate == "tanh" else "gelu"
        assert {stem + "_fwd", stem + "_bwd"} <= set(native_calls)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gelu_special_values_and_empty(dtype):
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 40.0, -40.0, 1e-30, 5.5, -5.5], dtype)
    for approximate in ("none", "tanh"):
        fn = lambda lib, t: F(lib).gelu(t, approximate=approximate)   # noqa: E731
        (ev, eg), (tv, tg) = _run(ember, fn, [x], "contiguous"), _run(torch, fn, [x], "contiguous")
        np.testing.assert_allclose(ev[0], tv[0], equal_nan=True, **TOL[dtype])
        np.testing.assert_allclose(eg[0], tg[0], equal_nan=True, **TOL[dtype])
    _compare(lambda lib, t: F(lib).gelu(t), [np.zeros((0, 3), dtype)])


def test_gelu_native_equals_numpy_path(monkeypatch):
    _against_numpy_path(lambda lib, x: F(lib).gelu(x), _arrays([(5, 300)], "float32"), monkeypatch)


def test_gelu_double_backward_is_composed(native_calls):
    """create_graph=True: the formula records ember ops (no native call), so gradgrad is exact."""
    x = np.linspace(-4, 4, 13)
    grads = []
    for lib in (ember, torch):
        t = lib.from_numpy(x.copy()).requires_grad_()
        (g,) = lib.autograd.grad(F(lib).gelu(t).sum(), t, create_graph=True)
        native_calls.clear()
        (gg,) = lib.autograd.grad((g * g).sum(), t)
        grads.append((g.detach().numpy(), gg.numpy()))
    assert "gelu_bwd" not in native_calls
    for e, t in zip(*grads):
        np.testing.assert_allclose(e, t, rtol=1e-10, atol=1e-12)


def test_traced_backward_keeps_the_composed_formula():
    """Under make_fx (a dispatch mode) the backward graph holds ordinary ops, never a native call."""
    from ember.fx.experimental.proxy_tensor import make_fx

    def f(x):
        y = F(ember).gelu(x)
        return ember.autograd.grad(y.sum(), x)[0]
    x = ember.randn(4, 5, requires_grad=True)
    gm = make_fx(f)(x)
    assert "erf" in str(gm.graph)
    np.testing.assert_allclose(gm(x).detach().numpy(), f(x).detach().numpy(), rtol=1e-6, atol=1e-6)


def test_float16_and_integer_inputs_take_the_numpy_path(native_calls):
    x = np.linspace(-3, 3, 11)
    e = F(ember).gelu(ember.from_numpy(x.astype(np.float16)))
    t = F(torch).gelu(torch.from_numpy(x.astype(np.float16)))
    np.testing.assert_allclose(e.float().numpy(), t.float().numpy(), rtol=2e-3, atol=2e-3)
    with pytest.raises(RuntimeError):   # PyTorch: "GeluKernelImpl" not implemented for 'Long'
        F(ember).gelu(ember.arange(3))


# ------------------------------------------------------------------------------ LSTM

def _lstm_pair(dtype, **kw):
    torch.manual_seed(0)
    tm = torch.nn.LSTM(6, 5, **kw).to(getattr(torch, dtype))
    em = ember.nn.LSTM(6, 5, **kw).to(getattr(ember, dtype))
    em.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    return em, tm


def _lstm_run(lib, model, x, hx, create_graph=False):
    X = lib.from_numpy(x.copy()).requires_grad_()
    state = None if hx is None else tuple(lib.from_numpy(s.copy()).requires_grad_() for s in hx)
    out, (h, c) = model(X) if state is None else model(X, state)
    loss = (out ** 2).sum() + (h * 3).sum() + (c ** 3).sum()
    wrt = list(model.parameters()) + [X] + list(state or ())
    grads = lib.autograd.grad(loss, wrt, create_graph=create_graph)
    res = [out, h, c, *grads]
    if create_graph:
        res += list(lib.autograd.grad(sum((g ** 2).sum() for g in grads), [X]))
    return [r.detach().numpy() for r in res]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", [{}, dict(bidirectional=True), dict(num_layers=2), dict(batch_first=True),
                                dict(num_layers=2, bidirectional=True, bias=False)])
@pytest.mark.parametrize("with_state", [False, True])
def test_lstm_matches_torch(dtype, kw, with_state, native_calls):
    em, tm = _lstm_pair(dtype, **kw)
    x, = _arrays([(7, 3, 6)], dtype, scale=1.0)
    dirs = (2 if kw.get("bidirectional") else 1) * kw.get("num_layers", 1)
    batch = 7 if kw.get("batch_first") else 3
    hx = _arrays([(dirs, batch, 5), (dirs, batch, 5)], dtype, seed=3, scale=1.0) if with_state else None
    for e, t in zip(_lstm_run(ember, em, x, hx), _lstm_run(torch, tm, x, hx)):
        np.testing.assert_allclose(e, t, **TOL[dtype])
    assert {"lstm_cell_fwd", "lstm_cell_bwd"} <= set(native_calls)


def test_lstm_double_backward_and_no_grad():
    em, tm = _lstm_pair("float64", bidirectional=True)
    x, = _arrays([(4, 2, 6)], "float64", scale=1.0)
    for e, t in zip(_lstm_run(ember, em, x, None, create_graph=True), _lstm_run(torch, tm, x, None, True)):
        np.testing.assert_allclose(e, t, rtol=1e-9, atol=1e-10)
    with ember.no_grad(), torch.no_grad():
        e, t = em(ember.from_numpy(x.copy())), tm(torch.from_numpy(x.copy()))
    np.testing.assert_allclose(e[0].numpy(), t[0].numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(e[1][1].numpy(), t[1][1].numpy(), rtol=1e-10, atol=1e-12)


def test_lstm_native_equals_composed(monkeypatch):
    em, _ = _lstm_pair("float32", num_layers=2)
    x, = _arrays([(9, 4, 6)], "float32", scale=1.0)
    got = _lstm_run(ember, em, x, None)
    monkeypatch.setattr(native, "enabled", False)
    for a, b in zip(got, _lstm_run(ember, em, x, None)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_lstm_input_modified_in_place_after_forward_is_refused():
    em, _ = _lstm_pair("float32")
    X = ember.randn(3, 2, 6, requires_grad=True)
    h0 = ember.zeros(1, 2, 5, requires_grad=True)
    out, _ = em(X, (h0, ember.zeros(1, 2, 5)))
    with ember.no_grad():
        h0.add_(1)          # a saved input changed: backward must refuse, as PyTorch's does
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


# ------------------------------------------------------------------------------ conv2d, max_pool2d, relu

CONV_POOL = [
    (dict(padding=1), dict(kernel_size=2)),
    (dict(padding=2, stride=2, dilation=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (dict(padding=(0, 1), stride=(1, 2)), dict(kernel_size=(2, 3), dilation=(2, 1))),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("conv_kw,pool_kw", CONV_POOL)
def test_conv_relu_maxpool_match_torch(dtype, conv_kw, pool_kw, native_calls):
    def fn(lib, x, w, b):
        return F(lib).max_pool2d(lib.relu(F(lib).conv2d(x, w, b, **conv_kw)), **pool_kw)
    _compare(fn, _arrays([(3, 4, 11, 10), (5, 4, 3, 3), (5,)], dtype))
    assert {"unfold2d", "fold2d", "max_pool2d", "relu_bwd"} <= set(native_calls)


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_conv_maxpool_strided_and_unbatched(layout):
    _compare(lambda lib, x, w: F(lib).max_pool2d(F(lib).conv2d(x, w, padding=1), 3, 2, 1),
             _arrays([(2, 3, 9, 8), (4, 3, 3, 3)], "float32"), layout)
    _compare(lambda lib, x, w: F(lib).max_pool2d(F(lib).conv2d(x, w), 2),      # (C, H, W) input
             _arrays([(3, 9, 8), (4, 3, 3, 3)], "float64"))


def test_maxpool_nan_ties_infinities_and_indices():
    x = np.array([[[[1, 1, np.nan, 2], [np.nan, 0, 2, 2], [-np.inf, -np.inf, 5, np.inf], [-np.inf, -np.inf, 0, 1]]]],
                 np.float32)
    for kw in (dict(kernel_size=2), dict(kernel_size=3, stride=1, padding=1), dict(kernel_size=2, ceil_mode=True,
                                                                                  stride=3)):
        e = F(ember).max_pool2d(ember.from_numpy(x.copy()), return_indices=True, **kw)
        t = F(torch).max_pool2d(torch.from_numpy(x.copy()), return_indices=True, **kw)
        np.testing.assert_array_equal(e[0].numpy(), t[0].numpy())
        np.testing.assert_array_equal(e[1].numpy(), t[1].numpy())


def test_maxpool_under_autograd_runs_once_and_names_torchs_node():
    x = ember.randn(2, 3, 8, 8, requires_grad=True)
    y = F(ember).max_pool2d(x, 2)
    # (ember spells the node MaxPool2d..., PyTorch MaxPool2D...: compared case-blind)
    assert type(y.grad_fn).__name__.lower() == type(F(torch).max_pool2d(
        torch.randn(1, 1, 2, 2, requires_grad=True), 2).grad_fn).__name__.lower()
    gm = __import__("ember.fx.experimental.proxy_tensor", fromlist=["make_fx"]).make_fx(
        lambda t: F(ember).max_pool2d(t, 2))(x.detach())
    assert "max_pool2d" in str(gm.graph)


def test_conv_empty_batch_and_int_dtype_take_the_numpy_path():
    _compare(lambda lib, x, w: F(lib).conv2d(x, w, padding=1), _arrays([(0, 3, 5, 5), (2, 3, 3, 3)], "float32"))
    x = np.arange(2 * 9 * 9).reshape(1, 2, 9, 9)
    e = F(ember).max_pool2d(ember.from_numpy(x.copy()), 2)
    np.testing.assert_array_equal(e.numpy(), F(torch).max_pool2d(torch.from_numpy(x.copy()), 2).numpy())


def test_relu_backward_nan_and_zero():
    x = np.array([np.nan, 0.0, -0.0, -1.0, 2.0, np.inf, -np.inf], np.float64)
    (ev, eg), (tv, tg) = _run(ember, lambda lib, t: lib.relu(t), [x], "contiguous"), \
        _run(torch, lambda lib, t: lib.relu(t), [x], "contiguous")
    np.testing.assert_array_equal(ev[0], tv[0])
    np.testing.assert_array_equal(eg[0], tg[0])


# ------------------------------------------------------------------------------ Adam / AdamW

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kw", [("Adam", {}), ("AdamW", {}), ("Adam", dict(weight_decay=0.1)), ("AdamW", dict(weight_decay=0.3)),
                                     ("AdamW", dict(amsgrad=True)), ("Adam", dict(maximize=True, betas=(0.3, 0.9)))])
def test_adam_steps_match_torch(dtype, name, kw, native_calls):
    res = []
    for lib in (ember, torch):
        rng = np.random.default_rng(0)
        p = lib.from_numpy(rng.standard_normal((5, 7)).astype(dtype)).requires_grad_()
        q = lib.from_numpy(rng.standard_normal((3,)).astype(dtype)).requires_grad_()
        opt = getattr(lib.optim, name)([p, q], lr=0.01, **kw)
        for _ in range(6):
            opt.zero_grad()
            ((p ** 3).sum() + (q * p[0, :3]).sum()).backward()
            opt.step()
        res.append((p.detach().numpy().copy(), q.detach().numpy().copy(), opt.state[opt.param_groups[0]["params"][0]]
                    ["exp_avg_sq"].numpy().copy()))
    for e, t in zip(*res):
        np.testing.assert_allclose(e, t, rtol=1e-6 if dtype == "float32" else 1e-14, atol=1e-7)
    assert ("adam_step" in native_calls) == (not kw.get("amsgrad"))


def test_adam_native_step_bumps_versions():
    p = ember.nn.Parameter(ember.randn(4))
    opt = ember.optim.Adam([p])
    p.grad = ember.ones(4)
    before = p._version
    opt.step()
    assert p._version > before


# ------------------------------------------------------------------------------ layer_norm, batch_norm

NORMS = [
    ("layer_norm affine", lambda lib, x, w, b: F(lib).layer_norm(x, (10,), w, b)),
    ("layer_norm 2-d shape, no affine", lambda lib, x, w, b: F(lib).layer_norm(x, (7, 10)) + 0 * (w.sum() + b.sum())),
    ("batch_norm 3-d", lambda lib, x, w, b: F(lib).batch_norm(x, None, None, w[:7], b[:7], training=True)),
    ("batch_norm 4-d", lambda lib, x, w, b: F(lib).batch_norm(x.reshape(6, 7, 2, 5), None, None, w[:7], b[:7],
                                                            training=True)),
    ("batch_norm 2-d, no affine", lambda lib, x, w, b: F(lib).batch_norm(x.reshape(42, 10), None, None, training=True)
     + 0 * (w.sum() + b.sum())),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn", NORMS, ids=[n for n, _ in NORMS])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_norms_match_torch(dtype, name, fn, layout, native_calls):
    x, w, b = _arrays([(6, 7, 10), (10,), (10,)], dtype)
    _compare(fn, [x * 3 + 1, w, b], layout)
    if layout == "contiguous":   # batch_norm's own backward kernel: ember/_inductor/native_kernels_conv.py
        assert ("batch_norm_bwd" if name.startswith("batch_norm") else "norm_bwd") in native_calls


def test_norms_native_equal_composed(monkeypatch):
    x, w, b = _arrays([(6, 7, 10), (10,), (10,)], "float64")
    for _, fn in NORMS:
        _against_numpy_path(fn, [x, w, b], monkeypatch)
        monkeypatch.setattr(native, "enabled", True)


def test_norm_double_backward_and_constant_rows():
    for lib_fn in (lambda lib, x: F(lib).layer_norm(x, (5,)), lambda lib, x: F(lib).batch_norm(
            x, None, None, training=True)):
        res = []
        for lib in (ember, torch):
            x = lib.from_numpy(np.linspace(-2, 3, 20).reshape(4, 5) ** 2).requires_grad_()
            (g,) = lib.autograd.grad((lib_fn(lib, x) ** 3).sum(), x, create_graph=True)
            (gg,) = lib.autograd.grad((g ** 2).sum(), x)
            res.append((g.detach().numpy(), gg.numpy()))
        for e, t in zip(*res):
            np.testing.assert_allclose(e, t, rtol=1e-8, atol=1e-10)
    # a constant row (variance 0): rstd = 1/sqrt(eps) in both
    _compare(lambda lib, x: F(lib).layer_norm(x, (4,)), [np.ones((3, 4), np.float32)])


# ------------------------------------------------------------------------------ softmax, log_softmax, cross_entropy

def _logits(dtype, shape=(6, 7, 10)):
    x, = _arrays([shape], dtype)
    x[0, 0, :] = -np.inf          # a row of -inf: NaN everywhere, as PyTorch
    x[0, 1, 3] = np.inf
    x[1, 1, 2] = np.nan
    return x


def _compare_nan(fn, arrays, extra=()):
    outs = []
    for lib in (ember, torch):
        ts = [lib.from_numpy(a.copy()).requires_grad_() for a in arrays]
        y = fn(lib, *ts, *[lib.from_numpy(e.copy()) for e in extra])
        g = lib.from_numpy(np.random.default_rng(3).standard_normal(tuple(y.shape)).astype(arrays[0].dtype))
        (y * g).sum().backward()
        outs.append([y.detach().numpy()] + [t.grad.numpy() for t in ts])
    for e, t in zip(*outs):
        np.testing.assert_allclose(e, t, equal_nan=True, **TOL[e.dtype.name])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [-1, 2, 1])
def test_softmax_matches_torch(dtype, name, dim, native_calls):
    _compare_nan(lambda lib, x: getattr(lib, name)(x, dim), [_logits(dtype)])
    assert ({"softmax_fwd", "softmax_bwd"} <= set(native_calls)) == (dim != 1)


def test_softmax_strided_empty_and_scalar():
    x = _arrays([(5, 8)], "float32")[0]
    _compare(lambda lib, t: lib.softmax(t, -1), [x], "transposed")
    _compare(lambda lib, t: lib.log_softmax(t, -1), [np.zeros((3, 0), np.float64)])
    _compare(lambda lib, t: lib.log_softmax(t, 0), [np.array(1.5)])


TARGETS = np.random.default_rng(4).integers(0, 10, 28)
TARGETS[[3, 5]] = -100


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", [{}, dict(reduction="sum"), dict(reduction="none"), dict(ignore_index=3)])
def test_cross_entropy_matches_torch(dtype, kw, native_calls):
    target = np.where(TARGETS < 0, 3, TARGETS) if "ignore_index" in kw else TARGETS
    _compare_nan(lambda lib, x, t: F(lib).cross_entropy(x.reshape(28, 10), t, **kw), [_logits(dtype)[2:]],
                 (target,))
    assert "cross_entropy_bwd" in native_calls


def test_cross_entropy_all_ignored_and_composed_cases(native_calls):
    x = _arrays([(4, 5)], "float64")[0]
    _compare_nan(lambda lib, t, y: F(lib).cross_entropy(t, y), [x], (np.full(4, -100),))
    native_calls.clear()
    for kw in (dict(label_smoothing=0.1), dict(weight=np.linspace(0.5, 2, 5))):
        kwargs = lambda lib: {k: lib.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}  # noqa
        _compare_nan(lambda lib, t, y: F(lib).cross_entropy(t, y, **kwargs(lib)), [x], (np.arange(4),))
    assert "cross_entropy_bwd" not in native_calls


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_norm_running_statistics_match_torch(dtype, native_calls):
    stats = []
    for lib in (ember, torch):
        m = lib.nn.BatchNorm2d(3, momentum=0.3).to(getattr(lib, dtype))
        x = lib.from_numpy((np.random.default_rng(0).standard_normal((4, 3, 5, 5)) * 2 + 1).astype(dtype))
        for _ in range(3):
            m(x)
        m.eval()
        stats.append([m.running_mean.numpy().copy(), m.running_var.numpy().copy(), m(x).detach().numpy()])
    for e, t in zip(*stats):
        np.testing.assert_allclose(e, t, **TOL[dtype])
    assert "norm_fwd" in native_calls


@pytest.mark.parametrize("needs", [(False, True), (True, False)])
def test_conv_backward_computes_only_the_wanted_gradients(needs):
    x, w = _arrays([(2, 3, 7, 7), (4, 3, 3, 3)], "float64")
    grads = []
    for lib in (ember, torch):
        X = lib.from_numpy(x.copy()).requires_grad_(needs[0])
        W = lib.from_numpy(w.copy()).requires_grad_(needs[1])
        (F(lib).conv2d(X, W, padding=1) ** 2).sum().backward()
        grads.append([None if t.grad is None else t.grad.numpy() for t in (X, W)])
    for e, t in zip(*grads):
        assert (e is None) == (t is None)
        if e is not None:
            np.testing.assert_allclose(e, t, rtol=1e-10, atol=1e-10)


def test_no_c_compiler_falls_back_to_numpy(tmp_path, monkeypatch):
    """Without a C compiler every op above still runs (NumPy kernels) and agrees with PyTorch."""
    from ember._inductor import config, native_kernels
    monkeypatch.setattr(config, "cc", str(tmp_path / "no-such-cc"))
    monkeypatch.setattr(config, "cache_dir", str(tmp_path / "cache"))
    monkeypatch.setattr(native_kernels, "_kernels", {})
    monkeypatch.setattr(native_kernels, "_libs", {})
    assert native.kernel("gelu_fwd", np.dtype(np.float32)) is None
    _compare(lambda lib, x: F(lib).gelu(F(lib).layer_norm(x, (9,))).softmax(-1), _arrays([(4, 9)], "float32"))
    em, tm = _lstm_pair("float32")
    x, = _arrays([(5, 2, 6)], "float32", scale=1.0)
    for e, t in zip(_lstm_run(ember, em, x, None), _lstm_run(torch, tm, x, None)):
        np.testing.assert_allclose(e, t, **TOL["float32"])


def test_import_ember_does_not_import_the_fuser():
    import subprocess
    import sys
    code = "import sys, ember; print(any(m.startswith('ember._inductor') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
