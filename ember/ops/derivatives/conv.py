"""Derivatives of convolutions, pooling, im2col/col2im and pixel shuffle.

Linear maps whose adjoint is another ember op are written with ember ops (so they are twice
differentiable): conv_transpose's input gradient is a convolution, im2col's is col2im and
back, pixel_shuffle's is pixel_unshuffle, max pooling scatters into the argmax positions
and adaptive average pooling multiplies by its averaging matrices. The convolution and
average-pooling gradients are computed in NumPy (im2col GEMMs and a col2im scatter-add,
reusing the forward kernels' helpers) and wrapped by `numpy_backward`: taking the gradient
of those gradients (double backward) raises NotImplementedError.
"""
from __future__ import annotations

from math import prod

import numpy as np

from .. import native
from ..._core.tensor import wrap
from ..cpu import conv as _cpu
from ..cpu import pool as _pool
from ..meta import conv as _plan
from ..registry import aten


# ---------------------------------------------------------------------------------------
# NumPy-computed gradients
# ---------------------------------------------------------------------------------------
def numpy_backward(name, fn, *tensors, like):
    """fn(*ndarrays) -> tuple of ndarrays (or None), as ember tensors; result i has the shape and
    dtype of ``like[i]`` (contiguous), which is all it is when the tensors hold no data (meta and
    fake tensors). When the graph of the gradient itself is being built (create_graph=True), the
    results get a node whose backward raises NotImplementedError, never a silently missing second
    derivative."""
    from ... import from_numpy
    from ..._core.dispatch import META_BIT, DispatchKey, tls
    from ...autograd.function import Function
    from ...autograd.grad_mode import is_grad_enabled

    if tls.include & (1 << DispatchKey.Tracer):
        # a trace (make_fx, AOT autograd's joint graph) would record the result as a constant, or
        # (tensors without data) placeholders instead of the gradient
        raise NotImplementedError(f"{name}: its backward is computed in NumPy, outside the dispatcher, so a "
                                  f"trace cannot record it")
    if any(t is not None and t._keys & META_BIT for t in tensors):
        outs = tuple(t.new_empty(t.shape) for t in like)
    elif any(t is not None and t.is_cuda for t in tensors):   # the same NumPy code, run on CuPy
        from ..._cuda.kernels import on_device, wrap_cuda
        outs = tuple(None if o is None else wrap_cuda(o) for o in on_device(fn)(*[
            None if t is None else t.detach()._data for t in tensors]))
    else:
        arrays = [None if t is None else t.detach().numpy() for t in tensors]
        outs = tuple(None if o is None else from_numpy(np.ascontiguousarray(o)) for o in fn(*arrays))
    live = [t for t in tensors if t is not None and t.requires_grad]
    if not (is_grad_enabled() and live):
        return outs

    class _DoubleBackward(Function):
        @staticmethod
        def forward(ctx, *inputs):
            return tuple(o.clone() if o is not None else None for o in outs)

        @staticmethod
        def backward(ctx, *grads):
            raise NotImplementedError(f"double backward of {name} is not implemented in ember")
    _DoubleBackward.__name__ = _DoubleBackward.__qualname__ = name.capitalize() + "Backward"
    res = _DoubleBackward.apply(*[t for t in tensors if t is not None])
    return res if isinstance(res, tuple) else (res,)


def _batched(a, nd):
    return a if a.ndim == nd + 2 else a[None]


def _grad_rows(g, groups):
    """The output gradient (N, O, *out) as (groups, O/g, N * L), the GEMM operand of both gradients."""
    n, o = g.shape[:2]
    return g.swapaxes(0, 1).reshape(groups, o // groups, n * prod(g.shape[2:]))


def _conv_input_grad(g, w, in_shape, pads, stride, dilation, groups, gg=None):
    """d(conv)/d(input): weight^T @ grad as columns, scatter-added back (col2im)."""
    nd = len(stride)
    n, o = g.shape[:2]
    out = g.shape[2:]
    cin_g, ks = w.shape[1], w.shape[2:]
    wg = w.reshape(groups, o // groups, cin_g * prod(ks))
    gg = _grad_rows(g, groups) if gg is None else gg
    # (g, Cin/g * K, N * L); one 2-D GEMM when g == 1 (NumPy's stacked matmul is slower)
    cols = np.dot(wg[0].T, gg[0])[None] if groups == 1 else np.matmul(wg.transpose(0, 2, 1), gg)
    cols = cols.reshape((groups * cin_g,) + tuple(ks) + (n,) + tuple(out))
    cols = np.moveaxis(cols, 1 + nd, 0)                             # (N, Cin, *K, *out)
    full = tuple(L + lo + hi for L, (lo, hi) in zip(in_shape[2:], pads))
    full = tuple(max(f, (b - 1) * s + d * (k - 1) + 1) for f, b, s, d, k in zip(full, out, stride, dilation, ks))
    img = _cpu.col2im_add(cols, full, stride, dilation, out)
    return img[(slice(None), slice(None)) + tuple(slice(lo, lo + L) for (lo, _), L in zip(pads, in_shape[2:]))]


def _conv_weight_grad(x, g, ks, pads, stride, dilation, groups, gg=None):
    """d(conv)/d(weight): grad @ im2col(input)^T per group; shape (O, C/g, *ks). With one group, per
    sample on F.unfold's (N, C*K, L) columns: the batch sum of (cols[n] @ g[n]^T)^T (of the layouts
    tried, the fastest for bench/models.py's CNN)."""
    n, o = g.shape[:2]
    out = g.shape[2:]
    if groups == 1:
        cols = _cpu.im2col_cols(x, ks, stride, dilation, pads, out, batch_major=True)
        gw = np.matmul(cols, g.reshape(n, o, prod(out)).transpose(0, 2, 1)).sum(0).T
        return np.ascontiguousarray(gw).reshape((o, x.shape[1]) + tuple(ks))
    cols = _cpu.im2col_cols(x, ks, stride, dilation, pads, out, groups)   # (g, C/g * K, N * L)
    gg = _grad_rows(g, groups) if gg is None else gg
    gw = np.matmul(gg, cols.transpose(0, 2, 1))                           # (g, O/g, C/g * K)
    return gw.reshape((o, x.shape[1] // groups) + tuple(ks))


def _conv_grads_per_sample(g, x, w, pads, stride, dilation, needs_grad):
    """(input grad, weight grad) of a convolution with one group, each computed only when wanted,
    in the forward's layout (ember/ops/cpu/conv.py): one GEMM per sample on F.unfold's (N, C*K, L)
    columns. Input gradient: w^T @ g[n], folded back (col2im); weight gradient: _conv_weight_grad."""
    n, o = g.shape[:2]
    out, ks = g.shape[2:], w.shape[2:]
    gi = gw = None
    if needs_grad[0]:
        cols = np.matmul(w.reshape(o, -1).T, g.reshape(n, o, prod(out)))
        gi = _cpu.fold_cols(cols, x.shape[2:], ks, stride, dilation, pads, out)
    if needs_grad[1]:
        gw = _conv_weight_grad(x, g, ks, pads, stride, dilation, 1)
    return gi, gw


def _compute(a):
    return a.astype(_cpu._cdt(a.dtype), copy=False)


def _conv(nd):
    def formula(grad, input, weight, bias, stride, padding, dilation, groups, needs_grad):
        pads, st, dil, _ = _plan.conv_plan(input, weight, bias, stride, padding, dilation, groups, nd, "conv")

        def fn(g, x, w):
            batched = x.ndim == nd + 2
            g, x = _compute(_batched(g, nd)), _compute(_batched(x, nd))
            w = _compute(w)
            if groups == 1 and x.size and w.size:
                gi, gw = _conv_grads_per_sample(g, x, w, pads, st, dil, needs_grad)
                return (gi if batched or gi is None else gi[0]), gw
            gg = _grad_rows(g, groups)     # one copy for both gradients
            # the network's first layer: no input gradient wanted, so no GEMM and col2im for it
            gi = _conv_input_grad(g, w, x.shape, pads, st, dil, groups, gg) if needs_grad[0] else None
            gw = _conv_weight_grad(x, g, w.shape[2:], pads, st, dil, groups, gg) if needs_grad[1] else None
            return (gi if batched or gi is None else gi[0]), gw
        if _tracing() and nd <= 2 and groups == 1:
            gi, gw = _conv_grads_as_ops(nd, grad, input, weight, pads, st, dil)
        else:
            gi, gw = numpy_backward(f"conv{nd}d", fn, grad, input, weight, like=(input, weight))
        gb = None if bias is None else grad.sum([0] + list(range(2, grad.ndim)) if input.ndim == nd + 2
                                                  else list(range(1, grad.ndim)))
        return gi, gw, gb
    return formula


def _tracing() -> bool:
    from ..._core.dispatch import DispatchKey, tls
    return bool(tls.include & (1 << DispatchKey.Tracer))


def _conv_grads_as_ops(nd, grad, input, weight, pads, stride, dilation):
    """The same two gradients as `_conv_input_grad` / `_conv_weight_grad`, written with ember ops so a
    trace (AOT autograd's joint graph) records them (groups=1, 1-d and 2-d): the input gradient is
    the transposed convolution of grad, cropped to the input; the weight gradient is a convolution
    of the padded input (channels as batch) with grad (batch as channels), stride and dilation
    swapped, cropped to the kernel."""
    from ... import constant_pad_nd, conv1d, conv2d, conv_transpose1d, conv_transpose2d
    conv, conv_t = (conv1d, conv2d)[nd - 1], (conv_transpose1d, conv_transpose2d)[nd - 1]
    batched = input.ndim == nd + 2
    g, x = (grad, input) if batched else (grad.unsqueeze(0), input.unsqueeze(0))
    ks = tuple(weight.shape[2:])
    flat_pads = [p for lo_hi in reversed(pads) for p in lo_hi]        # constant_pad_nd: last dim first
    xp = constant_pad_nd(x, flat_pads, 0.0)
    full = conv_t(g, weight, None, list(stride), [0] * nd, [0] * nd, 1, list(dilation))
    # full covers the padded input's first full.shape[d] positions; the rest got no gradient
    grow = [p for d in reversed(range(nd)) for p in (0, xp.shape[2 + d] - full.shape[2 + d])]
    gi = constant_pad_nd(full, grow, 0.0)
    for d, (lo, _) in enumerate(pads):
        gi = gi.narrow(2 + d, lo, x.shape[2 + d])
    gw = conv(xp.transpose(0, 1), g.transpose(0, 1), None, list(dilation), [0] * nd, list(stride), 1)
    for d, k in enumerate(ks):
        gw = gw.narrow(2 + d, 0, k)
    gw = gw.transpose(0, 1)
    return (gi if batched else gi[0]), gw


def _conv_transpose(nd):
    def formula(grad, input, weight, bias, stride, padding, output_padding, groups, dilation):
        from ... import conv1d, conv2d
        conv = (conv1d, conv2d)[nd - 1]
        pads, st, dil, _ = _plan.conv_plan(input, weight, bias, stride, padding, dilation, groups, nd,
                                           f"conv_transpose{nd}d", True, output_padding)
        # the input gradient is the forward convolution of grad (an ember op: twice differentiable)
        gi = conv(grad, weight, None, stride, padding, dilation, groups)

        def fn(g, x):
            # weight gradient: the convolution weight gradient with grad as input, input as grad
            gw = _conv_weight_grad(_compute(_batched(g, nd)), _compute(_batched(x, nd)), weight.shape[2:], pads,
                                   st, dil, groups)
            return (gw,)
        (gw,) = numpy_backward(f"conv_transpose{nd}d", fn, grad, input, like=(weight,))
        gb = None if bias is None else grad.sum([0] + list(range(2, grad.ndim)) if input.ndim == nd + 2
                                                  else list(range(1, grad.ndim)))
        return gi, gw, gb
    return formula


# ---------------------------------------------------------------------------------------
# pooling
# ---------------------------------------------------------------------------------------
def _scatter_max(grad, self, indices, nd, disjoint=False):
    """Route grad to the argmax positions (flat indices into each input plane). `disjoint`: the
    windows do not overlap, so no two outputs share an argmax and plain writes replace the
    accumulating scatter (NumPy's ufunc.at is several times slower than fancy assignment)."""
    from ... import zeros
    fused = _native_scatter_max(grad, self, indices, nd)
    if fused is not None:
        return fused
    plane = prod(self.shape[-nd:])
    lead = tuple(self.shape[:-nd])
    g = grad.reshape(lead + (-1,))
    gi = zeros(lead + (plane,), dtype=grad.dtype, device=grad.device)
    route = gi.scatter if disjoint else gi.scatter_add
    return route(-1, indices.reshape(lead + (-1,)), g).reshape(self.shape)


def _max_pool(nd, with_indices):
    def formula(grads, self, kernel_size, stride, padding, dilation, ceil_mode, results):
        if with_indices:
            indices = results[1]
        else:
            op = getattr(aten, f"max_pool{nd}d_with_indices").default
            indices = op(self.detach(), kernel_size, stride, padding, dilation, ceil_mode)[1]
        ks, st, _, dil, _ = _plan.pool_plan(self, kernel_size, stride, padding, dilation, ceil_mode, nd,
                                            f"max_pool{nd}d")
        # every window has an in-bounds tap (padding <= kernel / 2), so disjoint windows never share one
        disjoint = all(s >= d * (k - 1) + 1 for k, s, d in zip(ks, st, dil))
        return _scatter_max(grads[0], self, indices, nd, disjoint)
    return formula


def _native_scatter_max(grad, self, indices, nd):
    """_scatter_max as one C loop (max_pool_bwd), when native.plain_backward holds and grad and
    indices are contiguous float32/float64 and int64 arrays of one shape matching the input's
    leading dims; None otherwise (and for an index outside its plane, which the ember ops'
    scatter then reports)."""
    if not native.plain_backward(grad, self, indices):
        return None
    g, idx, d = grad._data, indices._data, self._data.dtype
    if g.dtype is not d or idx.dtype != np.int64 or g.shape != idx.shape or not idx.flags.c_contiguous \
            or g.ndim != self.ndim or g.shape[:-nd] != self.shape[:-nd] or self.numel() == 0:
        return None
    fn = native.kernel("max_pool_bwd", d)
    if fn is None:
        return None
    plane, outputs = prod(self.shape[-nd:]), prod(g.shape[-nd:])
    gi, bad = np.empty(self.shape, d), np.zeros(1, np.int64)
    fn(np.ascontiguousarray(g), idx, gi, bad, prod(g.shape[:-nd]), plane, outputs)
    return None if bad[0] else wrap(gi)


def _adaptive_max(nd):
    return lambda grads, self, results: _scatter_max(grads[0], self, results[1], nd)


def _avg_pool(nd):
    def formula2d(grad, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
        return formula(grad, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)

    def formula1d(grad, self, kernel_size, stride, padding, ceil_mode, count_include_pad):
        return formula(grad, self, kernel_size, stride, padding, ceil_mode, count_include_pad, None)

    def formula(grad, self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
        ks, st, pad, _, shape = _plan.pool_plan(self, kernel_size, stride, padding, (1,), ceil_mode, nd,
                                                f"avg_pool{nd}d")

        def fn(g, x):
            a = _batched(x, nd)
            gb = _compute(_batched(g, nd))
            out = gb.shape[2:]
            div = divisor_override if divisor_override is not None else \
                _pool._avg_divisor(a.shape[2:], ks, st, pad, out, count_include_pad)
            gq = gb / np.asarray(div, gb.dtype)
            cols = np.broadcast_to(gq.reshape(gq.shape[:2] + (1,) * nd + tuple(out)),
                                   gq.shape[:2] + tuple(ks) + tuple(out))
            full = tuple(max(L + 2 * p, (o - 1) * s + k) for L, p, o, s, k in zip(a.shape[2:], pad, out, st, ks))
            img = _cpu.col2im_add(cols, full, st, (1,) * nd, out)
            gi = img[(slice(None), slice(None)) + tuple(slice(p, p + L) for p, L in zip(pad, a.shape[2:]))]
            return (gi.reshape(x.shape).astype(x.dtype),)
        return numpy_backward(f"avg_pool{nd}d", fn, grad, self, like=(self,))[0]
    return formula2d if nd == 2 else formula1d


def _adaptive_avg(nd):
    def formula(grad, self):
        from ... import from_numpy
        g = grad
        for i in range(nd):  # the adjoint of averaging along a dim: multiply by the matrix's transpose
            axis = self.ndim - nd + i
            m = from_numpy(_pool._avg_matrix(self.shape[axis], grad.shape[axis], np.dtype(np.float64)))
            m = m.to(grad.device, grad.dtype)
            g = (g.movedim(axis, -1) @ m).movedim(-1, axis)
        return g
    return formula


FORMULAS = {
    "conv1d": _conv(1), "conv1d.padding": _conv(1),
    "conv2d": _conv(2), "conv2d.padding": _conv(2),
    "conv3d": _conv(3), "conv3d.padding": _conv(3),
    "conv_transpose1d": _conv_transpose(1),
    "conv_transpose2d.input": _conv_transpose(2),
    "max_pool1d": _max_pool(1, False),
    "max_pool2d": _max_pool(2, False),
    "max_pool1d_with_indices": _max_pool(1, True),
    "max_pool2d_with_indices": _max_pool(2, True),
    "avg_pool1d": _avg_pool(1),
    "avg_pool2d": _avg_pool(2),
    "adaptive_avg_pool1d": _adaptive_avg(1),
    "adaptive_avg_pool2d": _adaptive_avg(2),
    "adaptive_max_pool1d": _adaptive_max(1),
    "adaptive_max_pool2d": _adaptive_max(2),
    "im2col": lambda grad, self, kernel_size, dilation, padding, stride: aten.col2im.default(
        grad, list(self.shape[-2:]), kernel_size, dilation, padding, stride),
    "col2im": lambda grad, kernel_size, dilation, padding, stride: aten.im2col.default(
        grad, kernel_size, dilation, padding, stride),
    "pixel_shuffle": lambda grad, upscale_factor: aten.pixel_unshuffle.default(grad, upscale_factor),
    "pixel_unshuffle": lambda grad, downscale_factor: aten.pixel_shuffle.default(grad, downscale_factor),
}
