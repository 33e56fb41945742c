"""One LSTM layer (one direction, padded input, no projection) as a single autograd node whose
time loop runs on NumPy matmuls and the native cell kernels (ember/_inductor/native_kernels.py):
what ATen's CPU LSTM does in C++, where the composed form costs ~11 ember ops per step forward
and as many backward nodes.

    got = run_layer(xproj, h0, c0, w_hh, reverse, composed)    # None: run the composed ops

`xproj` is the input projection of every step (T, B, 4H: x W_ih^T + b_ih + b_hh), computed by the
caller with ember ops. Used only for plain eager CPU float32/float64 tensors with no dispatch mode
(so tracers, fake tensors and the profiler still see the composed ops); a backward that records a
graph (create_graph=True) re-runs `composed` under autograd, so double backward stays exact.
"""
from __future__ import annotations

import numpy as np

from .._core.dispatch import AUTOGRAD_BIT, CPU_BIT, tls
from .._core.tensor import wrap
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..ops import native


def _arr(t):
    return np.ascontiguousarray(t._data)


def _forward(xp, h0, c0, w_hh, reverse, cell):
    """(hs, cs, act): every step's h and c (T, B, H) and activated gates (T, B, 4H)."""
    steps, batch, gates = xp.shape
    hidden = gates // 4
    w_t = np.ascontiguousarray(w_hh.T)
    hs, cs = np.empty((steps, batch, hidden), xp.dtype), np.empty((steps, batch, hidden), xp.dtype)
    act, hg = np.empty_like(xp), np.empty((batch, gates), xp.dtype)
    h, c = h0, c0
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        np.dot(h, w_t, out=hg)
        cell(xp[t], hg, c, act[t], cs[t], hs[t], batch, hidden)
        h, c = hs[t], cs[t]
    return hs, cs, act


def _backward(dout, dh, dc, h0, c0, w_hh, hs, cs, act, reverse, cell_backward):
    """(d xproj, d h0, d c0, d w_hh): backpropagation through time."""
    steps, batch, hidden = hs.shape
    dgates = np.empty_like(act)
    dc_prev = np.empty_like(dc)
    order = range(steps) if reverse else range(steps - 1, -1, -1)
    for t in order:
        prev = t + 1 if reverse else t - 1
        c_prev = c0 if prev < 0 or prev == steps else cs[prev]
        cell_backward(dout[t], dh, dc, act[t], c_prev, cs[t], dgates[t], dc_prev, batch, hidden)
        np.dot(dgates[t], w_hh, out=dh)
        dc, dc_prev = dc_prev, dc
    # the h each step multiplied by W_hh: h0 then the outputs, in the direction's order
    h_prev = np.concatenate([hs[1:], h0[None]] if reverse else [h0[None], hs[:-1]])
    dw = dgates.reshape(-1, 4 * hidden).T @ h_prev.reshape(-1, hidden)
    return dgates, dh, dc, dw


class _FusedLSTMLayer(Function):
    @staticmethod
    def forward(ctx, xproj, h0, c0, w_hh, reverse, composed):
        cell = native.kernel("lstm_cell_fwd", xproj._data.dtype)
        h0a, c0a, w = _arr(h0), _arr(c0), _arr(w_hh)
        hs, cs, act = _forward(_arr(xproj), h0a, c0a, w, reverse, cell)
        ctx.save_for_backward(xproj, h0, c0, w_hh)
        ctx.state = (h0a, c0a, w, hs, cs, act, reverse, composed)
        last = 0 if reverse else -1
        return wrap(hs.copy()), wrap(hs[last].copy()), wrap(cs[last].copy())

    @staticmethod
    def backward(ctx, dout, dh, dc):
        xproj, h0, c0, w_hh = ctx.saved_tensors       # checks that no input was modified in place
        h0a, c0a, w, hs, cs, act, reverse, composed = ctx.state
        if is_grad_enabled() or not native.plain_backward(dout, dh, dc):   # create_graph: differentiable ops
            return _composed_backward(ctx, (xproj, h0, c0, w_hh), (dout, dh, dc), reverse, composed) + (None, None)
        cell_backward = native.kernel("lstm_cell_bwd", hs.dtype)
        grads = _backward(_arr(dout), _arr(dh).copy(), _arr(dc).copy(), h0a, c0a, w, hs, cs, act, reverse,
                          cell_backward)
        return tuple(wrap(g) for g in grads) + (None, None)


def _composed_backward(ctx, inputs, grads, reverse, composed):
    from ..autograd import grad as autograd_grad
    # the saved inputs themselves (not detached copies), so the gradients' graph reaches their history
    with enable_grad():
        outs = composed(*inputs, reverse)
        wanted = [t for t, need in zip(inputs, ctx.needs_input_grad) if need]
        got = iter(autograd_grad(outs, wanted, grads, create_graph=True, allow_unused=True))
    return tuple(next(got) if need else None for need in ctx.needs_input_grad[:4])


def run_layer(xproj, h0, c0, w_hh, reverse, composed):
    """(output (T, B, H), (h_T, c_T)) through the native kernels, or None where they do not apply."""
    if tls.include & ~native.PROFILER_BIT:
        return None
    dt = xproj._data.dtype
    for t in (xproj, h0, c0, w_hh):
        if t._keys & ~AUTOGRAD_BIT != CPU_BIT or t._data.dtype is not dt:
            return None
    if xproj.dim() != 3 or 0 in xproj.shape or 0 in h0.shape:
        return None
    cell = native.kernel("lstm_cell_fwd", dt)
    if cell is None or native.kernel("lstm_cell_bwd", dt) is None:
        return None
    if is_grad_enabled() and any(t.requires_grad for t in (xproj, h0, c0, w_hh)):
        out, h, c = _FusedLSTMLayer.apply(xproj, h0, c0, w_hh, reverse, composed)
        return out, (h, c)
    hs, cs, _ = _forward(_arr(xproj), _arr(h0), _arr(c0), _arr(w_hh), reverse, cell)
    last = 0 if reverse else -1
    return wrap(hs), (wrap(hs[last].copy()), wrap(cs[last].copy()))
