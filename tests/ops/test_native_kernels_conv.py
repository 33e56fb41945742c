"""The CNN ops' native kernels (ember/_inductor/native_kernels_conv.py): max pooling without bounds
checks and its backward, batch norm's training backward. Values, indices and gradients are
compared with PyTorch (float32/float64, NaN/inf/ties, every window geometry), the kernels are
checked to be taken where they apply and skipped where they do not (padding, dilation, ceil_mode,
strided inputs, double backward)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

from oracle import NATIVE_TOL as TOL


def _grads(lib, fn, arrays, needs=None, seed=1):
    """fn(lib, *tensors) -> outputs, then backward of sum(out * r): (outputs, grads of the inputs
    that want one)."""
    needs = needs or [True] * len(arrays)
    ts = [lib.from_numpy(a.copy()).requires_grad_(n) for a, n in zip(arrays, needs)]
    out = fn(lib, *ts)
    outs = out if isinstance(out, tuple) else (out,)
    rng = np.random.default_rng(seed)
    loss = sum((o * lib.from_numpy(rng.standard_normal(tuple(o.shape)).astype(arrays[0].dtype))).sum()
               for o in outs if o.dtype.is_floating_point)
    loss.backward()
    return [o.detach().numpy() for o in outs], [t.grad.numpy() for t, n in zip(ts, needs) if n]


def _compare(fn, arrays, needs=None, exact_values=True):
    (ev, eg), (tv, tg) = _grads(ember, fn, arrays, needs), _grads(torch, fn, arrays, needs)
    tol = TOL[arrays[0].dtype.name]
    for e, t in zip(ev, tv):
        if exact_values:
            np.testing.assert_array_equal(e, t)
        else:
            np.testing.assert_allclose(e, t, **tol)
    for e, t in zip(eg, tg):
        np.testing.assert_allclose(e, t, **tol)


def _pool(**kw):
    return lambda lib, x: lib.nn.functional.max_pool2d(x, return_indices=True, **kw)


# ------------------------------------------------------------------------------ max pooling

IN_BOUNDS = [dict(kernel_size=2), dict(kernel_size=3, stride=2), dict(kernel_size=(2, 3), stride=(1, 2)),
             dict(kernel_size=1), dict(kernel_size=3, stride=1)]
CHECKED = [dict(kernel_size=2, padding=1), dict(kernel_size=2, dilation=2), dict(kernel_size=2, ceil_mode=True),
           dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", IN_BOUNDS + CHECKED)
def test_max_pool_values_indices_and_grads_match_torch(dtype, kw, native_calls):
    (x,) = [np.random.default_rng(0).standard_normal((2, 3, 9, 11)).astype(dtype)]
    _compare(_pool(**kw), [x])
    assert ("max_pool2d_inbounds" in native_calls) == (kw in IN_BOUNDS)
    assert "max_pool_bwd" in native_calls


@pytest.mark.parametrize("kw", IN_BOUNDS[:3])
def test_max_pool_nan_inf_and_ties(kw):
    rng = np.random.default_rng(3)
    x = rng.integers(-2, 3, (2, 2, 8, 10)).astype(np.float32)       # many ties
    x[0, 0, rng.integers(0, 8, 12), rng.integers(0, 10, 12)] = np.nan
    x[1, 1, rng.integers(0, 8, 12), rng.integers(0, 10, 12)] = -np.inf
    x[1, 0, :4] = -np.inf                                           # whole windows of -inf
    x[0, 1, 2:6] = np.inf
    ev, ei = ember.nn.functional.max_pool2d(ember.from_numpy(x.copy()), return_indices=True, **kw)
    tv, ti = torch.nn.functional.max_pool2d(torch.from_numpy(x.copy()), return_indices=True, **kw)
    np.testing.assert_array_equal(ev.numpy(), tv.numpy())
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())


def test_max_pool_unbatched_strided_and_without_indices(native_calls):
    x = np.random.default_rng(1).standard_normal((3, 10, 8)).astype(np.float32)
    _compare(lambda lib, t: lib.nn.functional.max_pool2d(t, 2), [x])                       # (C, H, W)
    _compare(lambda lib, t: lib.nn.functional.max_pool2d(t.transpose(-1, -2), 2), [x])     # strided: copied
    assert "max_pool2d_inbounds" in native_calls


def test_max_pool_backward_accumulates_overlapping_windows_and_other_poolings(native_calls):
    x = np.random.default_rng(2).integers(0, 3, (2, 3, 7, 6)).astype(np.float64)   # ties shared by windows
    _compare(_pool(kernel_size=3, stride=1), [x])
    _compare(lambda lib, t: lib.nn.functional.max_pool1d(t, 3, 2, return_indices=True), [x[:, :, 0]])
    _compare(lambda lib, t: lib.nn.functional.adaptive_max_pool2d(t, (3, 4), return_indices=True), [x])
    assert native_calls.count("max_pool_bwd") >= 3


def test_max_pool_backward_stays_composed_for_double_backward(native_calls):
    x = ember.randn(2, 2, 6, 6, dtype=ember.float64, requires_grad=True)
    (g,) = ember.autograd.grad(ember.nn.functional.max_pool2d(x, 2).pow(2).sum(), x, create_graph=True)
    assert "max_pool_bwd" not in native_calls
    xt = torch.from_numpy(x.detach().numpy()).requires_grad_()
    (gt,) = torch.autograd.grad(torch.nn.functional.max_pool2d(xt, 2).pow(2).sum(), xt, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), gt.detach().numpy())
    np.testing.assert_allclose(ember.autograd.grad(g.sum(), x)[0].numpy(), torch.autograd.grad(gt.sum(), xt)[0].numpy())


def test_max_pool_backward_kernel_refuses_an_index_outside_the_plane():
    from ember.ops.derivatives.conv import _native_scatter_max
    x, g = ember.zeros(1, 1, 4, 4), ember.ones(1, 1, 2, 2)
    with ember.no_grad():
        good = _native_scatter_max(g, x, ember.tensor([[[[0, 3], [8, 15]]]]), 2)
        assert good.numpy().reshape(-1).nonzero()[0].tolist() == [0, 3, 8, 15]
        assert _native_scatter_max(g, x, ember.tensor([[[[0, 3], [8, 16]]]]), 2) is None
        assert _native_scatter_max(g, x, ember.tensor([[[[0, -1], [8, 15]]]]), 2) is None


# ------------------------------------------------------------------------------ batch norm

def _bn(shape_in):
    return lambda lib, x, w, b: lib.nn.functional.batch_norm(x.reshape(shape_in), None, None, w, b, training=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(6, 4, 5, 3), (12, 4), (3, 4, 2, 3, 5), (1, 4, 7)])
@pytest.mark.parametrize("needs", [(True, True, True), (False, True, True), (True, False, False)])
def test_batch_norm_backward_matches_torch(dtype, shape, needs, native_calls):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    w, b = rng.standard_normal(4).astype(dtype), rng.standard_normal(4).astype(dtype)
    _compare(_bn(shape), [x, w, b], list(needs), exact_values=False)
    assert "batch_norm_bwd" in native_calls


def test_batch_norm_backward_without_affine_and_far_from_zero():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((16, 3, 8, 8)) * 0.01 + 1000).astype(np.float32)
    e, t = [_grads(lib, lambda L, t: L.nn.functional.batch_norm(t, None, None, training=True), [x])
            for lib in (ember, torch)]
    ref = _grads(torch, lambda L, t: L.nn.functional.batch_norm(t, None, None, training=True), [x.astype(np.float64)])
    # as close to the float64 result as PyTorch's float32 kernel is (or closer)
    err_e = np.abs(e[1][0] - ref[1][0]).max()
    err_t = np.abs(t[1][0] - ref[1][0]).max()
    assert err_e <= 1.5 * err_t + 1e-6


def test_batch_norm_backward_strided_input_takes_the_composed_path(native_calls):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((5, 6, 3, 4)).astype(np.float32)
    w, b = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    _compare(lambda lib, t, w, b: lib.nn.functional.batch_norm(t.permute(0, 3, 1, 2), None, None, w, b,
                                                              training=True), [x, w, b], exact_values=False)
    assert "batch_norm_bwd" not in native_calls


def test_batch_norm_double_backward_is_composed(native_calls):
    res = []
    for lib in (ember, torch):
        x = lib.from_numpy(np.random.default_rng(4).standard_normal((4, 3, 5))).requires_grad_()
        w = lib.from_numpy(np.linspace(0.5, 2, 3)).requires_grad_()
        y = lib.nn.functional.batch_norm(x, None, None, w, None, training=True)
        (gx,) = lib.autograd.grad((y ** 3).sum(), x, create_graph=True)
        # the graph of gx is recorded: ember ops, not one native call
        assert lib is torch or "batch_norm_bwd" not in native_calls
        res.append([gx.detach().numpy(), *[a.numpy() for a in lib.autograd.grad((gx ** 2).sum(), (x, w))]])
    for e, t in zip(*res):
        np.testing.assert_allclose(e, t, rtol=1e-9, atol=1e-9)


# ------------------------------------------------------------------------------ convolution

CONV2D = [dict(padding=1), dict(stride=2, padding=(2, 0)), dict(dilation=(2, 1), padding=(1, 3)),
          dict(stride=(3, 2), dilation=2), dict(padding="same", dilation=(1, 2)), dict(groups=2, padding=1),
          dict(kernel=(2, 4), padding="same"), dict(kernel=(1, 1)), dict(kernel=(5, 5), padding=4, stride=3)]


def _conv_case(dtype, kw, cin=4, batch=(3,), size=(11, 10)):
    kw = dict(kw)
    kernel = kw.pop("kernel", (3, 3))
    rng = np.random.default_rng(0)
    x = rng.standard_normal(batch + (cin,) + size).astype(dtype)
    w = rng.standard_normal((6, cin // kw.get("groups", 1)) + kernel).astype(dtype)
    return [x, w, rng.standard_normal(6).astype(dtype)], kw


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", CONV2D)
@pytest.mark.parametrize("needs", [(True, True, True), (False, True, True), (True, False, False)])
def test_conv2d_values_and_gradients_match_torch(dtype, kw, needs, native_calls):
    arrays, kw = _conv_case(dtype, kw)
    _compare(lambda lib, x, w, b: lib.nn.functional.conv2d(x, w, b, **kw), arrays, list(needs), exact_values=False)
    per_sample = kw.get("groups", 1) == 1
    assert ("unfold2d" in native_calls) == per_sample              # forward (and the weight gradient)
    assert ("fold2d" in native_calls) == (per_sample and needs[0])  # the input gradient's col2im


@pytest.mark.parametrize("kw", [dict(padding=1), dict(stride=2)])
def test_conv2d_unbatched_strided_and_half_inputs(kw):
    arrays, kw = _conv_case("float32", kw, batch=())
    _compare(lambda lib, x, w, b: lib.nn.functional.conv2d(x, w, b, **kw), arrays, exact_values=False)
    _compare(lambda lib, x, w, b: lib.nn.functional.conv2d(x.transpose(-1, -2), w.transpose(-1, -2), b, **kw),
             arrays, exact_values=False)                         # non-contiguous input and weight
    x, w, b = _conv_case("float32", kw, batch=(2,))[0]
    for dt in ("float16", "bfloat16"):                           # computed in float32, rounded once
        e = ember.nn.functional.conv2d(*[ember.from_numpy(a).to(getattr(ember, dt)) for a in (x, w, b)], **kw)
        t = torch.nn.functional.conv2d(*[torch.from_numpy(a).to(getattr(torch, dt)) for a in (x, w, b)], **kw)
        np.testing.assert_allclose(e.float().numpy(), t.float().numpy(), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("nd", [1, 3])
def test_conv1d_conv3d_per_sample_gemms_match_torch(nd):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3) + (7,) * nd)
    w = rng.standard_normal((5, 3) + (3,) * nd)
    conv = f"conv{nd}d"
    _compare(lambda lib, x, w: getattr(lib.nn.functional, conv)(x, w, stride=2, padding=1), [x, w],
             exact_values=False)


def test_conv2d_integer_and_empty_inputs_match_torch():
    x = np.arange(2 * 3 * 5 * 5).reshape(2, 3, 5, 5)
    w = np.arange(4 * 3 * 3 * 3).reshape(4, 3, 3, 3) % 7 - 3
    np.testing.assert_array_equal(ember.nn.functional.conv2d(ember.from_numpy(x), ember.from_numpy(w), padding=1).numpy(),
                                  torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1).numpy())
    rng = np.random.default_rng(2)
    _compare(lambda lib, x, w: lib.nn.functional.conv2d(x, w, padding=1),
             [rng.standard_normal((0, 3, 5, 5)).astype(np.float32), rng.standard_normal((4, 3, 3, 3)).astype(np.float32)],
             exact_values=False)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bool"])
def test_unfold_fold_match_torch(dtype):
    x = (np.random.default_rng(3).standard_normal((2, 3, 9, 8)) > 0).astype(dtype)
    kw = dict(kernel_size=(3, 2), dilation=(1, 2), padding=(1, 0), stride=(2, 1))
    e = ember.nn.functional.unfold(ember.from_numpy(x.copy()), **kw)
    t = torch.nn.functional.unfold(torch.from_numpy(x.copy()), **kw)
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    ef = ember.nn.functional.fold(e, (9, 8), **kw)
    tf = torch.nn.functional.fold(t, (9, 8), **kw)
    np.testing.assert_array_equal(ef.numpy(), tf.numpy())
    if dtype != "bool":
        _compare(lambda lib, a: lib.nn.functional.fold(lib.nn.functional.unfold(a, **kw) * 2, (9, 8), **kw), [x])


# ------------------------------------------------------------------------------ relu

@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "uint8"])
def test_relu_values_signed_zero_nan_and_layouts_match_torch(dtype, native_calls):
    x = np.array([[np.nan, 0.0, -0.0, -1.5, 2.0, np.inf, -np.inf, 3.0]] * 3, np.float64)
    if np.dtype(dtype).kind in "iu":
        x = np.nan_to_num(x, nan=0, posinf=7, neginf=-7)
    a = x.astype(dtype)
    for view in (lambda t: t, lambda t: t.t(), lambda t: t[:, ::2]):          # contiguous and strided
        e = view(ember.relu(ember.from_numpy(a.copy()))).numpy()
        t = view(torch.relu(torch.from_numpy(a.copy()))).numpy()
        assert e.dtype == t.dtype
        np.testing.assert_array_equal(e, t)
        np.testing.assert_array_equal(np.signbit(e), np.signbit(t))                # -0.0 kept, as PyTorch
        e2 = ember.relu(view(ember.from_numpy(a.copy()))).numpy()
        np.testing.assert_array_equal(np.signbit(e2), np.signbit(torch.relu(view(torch.from_numpy(a.copy()))).numpy()))
    assert "relu_fwd" in native_calls


# ------------------------------------------------------------------------------ transposed convolution

CONV_T = [dict(), dict(stride=2, padding=1, output_padding=1), dict(stride=(2, 3), dilation=(2, 1), padding=(2, 0)),
          dict(groups=2, stride=2), dict(padding=1, dilation=2, output_padding=(1, 0), stride=(2, 1))]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", CONV_T)
def test_conv_transpose2d_per_sample_gemm_matches_torch(dtype, kw, native_calls):
    rng = np.random.default_rng(5)
    g = kw.get("groups", 1)
    arrays = [rng.standard_normal((2, 4, 5, 6)).astype(dtype), rng.standard_normal((4, 6 // g, 3, 2)).astype(dtype),
              rng.standard_normal(6).astype(dtype)]
    _compare(lambda lib, x, w, b: lib.nn.functional.conv_transpose2d(x, w, b, **kw), arrays, exact_values=False)
    assert ("fold2d" in native_calls) == (g == 1)      # the forward's col2im
    assert ("unfold2d" in native_calls) == (g == 1)    # the weight gradient's (and the input gradient's conv2d) im2col


def test_conv_transpose1d_and_unbatched_match_torch():
    rng = np.random.default_rng(6)
    _compare(lambda lib, x, w, b: lib.nn.functional.conv_transpose1d(x, w, b, stride=3, padding=1, output_padding=2),
             [rng.standard_normal((2, 3, 7)), rng.standard_normal((3, 5, 4)), rng.standard_normal(5)], exact_values=False)
    _compare(lambda lib, x, w: lib.nn.functional.conv_transpose2d(x, w, stride=2),
             [rng.standard_normal((3, 4, 5)).astype(np.float32), rng.standard_normal((3, 2, 3, 3)).astype(np.float32)],
             exact_values=False)
