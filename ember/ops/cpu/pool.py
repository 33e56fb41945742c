"""CPU kernels of pooling: max/avg pooling over sliding windows, adaptive pooling.

Windows come from `sliding_window_view` on an input padded with -inf (max) or 0 (avg), plus
the extra right padding that ceil_mode's last partial window needs; reductions run over the
kernel axes in one NumPy call. max pooling's indices are PyTorch's flat indices into each
input plane (h * W + w). Adaptive pooling uses PyTorch's window bounds
``[floor(i * L / out), ceil((i + 1) * L / out))``: averages as a matmul with an averaging
matrix per dim, maxima with a gather of the (clamped) windows. Checks: ember/ops/meta/conv.py.
"""
from __future__ import annotations

from math import prod

import numpy as np

from ..._core import dtype as _dt
from ..._core.tensor import wrap
from .. import native
from ..meta import conv as plan
from .conv import windows, pad_spatial, not_implemented, _cdt, _FLOATS, _COMPLEX

_REALS = _FLOATS + (_dt.uint8, _dt.int8, _dt.int16, _dt.int32, _dt.int64)


def _lowest(d):
    return -np.inf if d.kind == "f" else np.iinfo(d).min


def _as_batched(x, nd):
    """(N, C, *spatial) view of an input with or without the batch dim."""
    a = x._data
    return a if a.ndim == nd + 2 else a[None]


def _padded_windows(a, ks, stride, padding, dilation, out, value):
    """Windows (N, C, *out, *ks) of `a` padded by `padding` (and on the right for ceil_mode)."""
    pads = []
    for L, k, s, p, d, o in zip(a.shape[2:], ks, stride, padding, dilation, out):
        need = (o - 1) * s + d * (k - 1) + 1           # extent the windows cover
        pads.append((p, max(p, need - L - p)))
    return windows(pad_spatial(a, pads, value), ks, stride, dilation, out)


def _inbounds(spatial, ks, stride, padding, dilation, out):
    """Every window lies inside the input: no padding, no dilation, no ceil_mode overhang."""
    return not any(padding) and all(d == 1 for d in dilation) and \
        all((o - 1) * s + k <= L for L, k, s, o in zip(spatial, ks, stride, out))


def _max_pool(nd, op, kernel_name, with_indices, allowed):
    def kernel(x, kernel_size, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
        ks, st, pad, dil, shape = plan.pool_plan(x, kernel_size, stride, padding, dilation, ceil_mode, nd, op)
        not_implemented(x, kernel_name, allowed)
        a = _as_batched(x, nd)
        d = a.dtype
        out = shape[-nd:]
        fn = native.kernel("max_pool2d", d) if nd == 2 and a.flags.c_contiguous else None
        if fn is not None:   # one C loop over the windows (ember/ops/native.py)
            vals, idx = np.empty(shape, d), np.empty(shape, np.int64)
            if _inbounds(a.shape[2:], ks, st, pad, dil, out):   # no bounds checks (native_kernels_conv.py)
                native.kernel("max_pool2d_inbounds", d)(a, vals, idx, a.shape[0] * a.shape[1], *a.shape[2:],
                                                        *out, *ks, *st)
            else:
                fn(a, vals, idx, a.shape[0] * a.shape[1], *a.shape[2:], *out, *ks, *st, *pad, *dil)
            return (wrap(vals), wrap(idx)) if with_indices else wrap(vals)
        win = _padded_windows(a, ks, st, pad, dil, out, _lowest(d) if d.kind != "V" else -np.inf)
        # One pass per kernel tap over output-sized strided views (no window copy). PyTorch's rule:
        # a tap replaces the running max when it is larger or NaN, so ties keep the first tap.
        taps = list(np.ndindex(*ks))
        vals = np.array(win[(...,) + taps[0]])
        # Without padding every tap is in bounds, so the index is the window's first position plus
        # the winning tap's offset in the plane: record offsets and add once (no unravel per element).
        unpadded = all(p == 0 for p in pad) and all(
            (o - 1) * s + dl * (kk - 1) + 1 <= L for L, kk, s, dl, o in zip(a.shape[2:], ks, st, dil, out))
        plane = [prod(a.shape[3 + i:]) for i in range(nd)]
        marks = [sum(t * dl * ps for t, dl, ps in zip(tap, dil, plane)) if unpadded else n
                 for n, tap in enumerate(taps)]
        k = np.full(vals.shape, marks[0], np.int64) if with_indices else None
        floating = d.kind in "fV"
        for t, tap in enumerate(taps[1:], 1):
            v = win[(...,) + tap]
            better = np.greater(v, vals)
            if floating:
                better |= np.isnan(v)
            np.copyto(vals, v, where=better)
            if with_indices:
                np.copyto(k, marks[t], where=better)
        if not with_indices:
            return wrap(vals.reshape(shape))
        if unpadded:
            first = np.zeros((), np.int64)   # flat index of each window's first position, (*out)
            for i in range(nd):
                first = np.add.outer(first, np.arange(out[i]) * st[i] * plane[i])
            return wrap(vals.reshape(shape)), wrap((k + first).reshape(shape))
        # kernel offset -> input coordinate per dim -> flat index into the plane
        offs = np.unravel_index(k, ks)
        coords, firsts, outside = [], [], np.zeros(k.shape, bool)
        for i in range(nd):
            start = (np.arange(out[i]) * st[i] - pad[i]).reshape((out[i],) + (1,) * (nd - 1 - i))
            c = start + offs[i] * dil[i]
            outside |= (c < 0) | (c >= a.shape[2 + i])
            coords.append(c)
            firsts.append(start + -(-np.maximum(-start, 0) // dil[i]) * dil[i])   # first in-bounds tap
        # a window whose in-bounds values all equal the padding value picked a padded tap; PyTorch
        # reports its first in-bounds position there
        idx = np.zeros(k.shape, np.int64)
        for i in range(nd):
            idx = idx * a.shape[2 + i] + np.where(outside, firsts[i], coords[i])
        return wrap(np.ascontiguousarray(vals).reshape(shape)), wrap(idx.reshape(shape))
    kernel.__name__ = op
    return kernel


max_pool1d = _max_pool(1, "max_pool1d", "max_pool1d_impl", False, _FLOATS)
max_pool2d = _max_pool(2, "max_pool2d", "max_pool2d", False, _REALS)
max_pool1d_with_indices = _max_pool(1, "max_pool1d_with_indices", "max_pool2d", True, _REALS)
max_pool2d_with_indices = _max_pool(2, "max_pool2d_with_indices", "max_pool2d", True, _REALS)


def _avg_divisor(spatial, ks, stride, padding, out, count_include_pad):
    """Per-output divisor, the product over dims of each window's (clipped) length."""
    div = np.ones((), np.int64)
    for L, k, s, p, o in zip(spatial, ks, stride, padding, out):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, L + p)
        n = end - start if count_include_pad else np.minimum(end, L) - np.maximum(start, 0)
        div = np.multiply.outer(div, n)
    return div


def _avg_pool(nd, op):
    def kernel(x, kernel_size, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True,
               divisor_override=None):
        ks, st, pad, _, shape = plan.pool_plan(x, kernel_size, stride, padding, (1,), ceil_mode, nd, op)
        if divisor_override is not None and divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
        not_implemented(x, "avg_pool2d", _FLOATS + (_dt.int64,))
        a = _as_batched(x, nd)
        d = a.dtype
        c = np.dtype(np.float64) if d.kind == "i" else _cdt(d)
        out = shape[-nd:]
        win = _padded_windows(a.astype(c, copy=False), ks, st, pad, (1,) * nd, out, 0)
        sums = win.sum(axis=tuple(range(-nd, 0)))
        div = divisor_override if divisor_override is not None else \
            _avg_divisor(a.shape[2:], ks, st, pad, out, count_include_pad)
        if d.kind == "i":  # PyTorch divides integer sums with truncation toward zero
            res = np.trunc(sums / div).astype(d)
        else:
            res = (sums / np.asarray(div, c)).astype(d, copy=False)
        return wrap(np.ascontiguousarray(res).reshape(shape))
    kernel.__name__ = op
    return kernel


avg_pool1d, avg_pool2d = _avg_pool(1, "avg_pool1d"), _avg_pool(2, "avg_pool2d")


def _bounds(L, o):
    i = np.arange(o)
    return (i * L) // o, -((-(i + 1) * L) // o)   # floor, ceil


def _avg_matrix(L, o, dtype):
    """(o, L) matrix averaging each adaptive window."""
    start, end = _bounds(L, o)
    j = np.arange(L)
    m = (j >= start[:, None]) & (j < end[:, None])
    return (m / (end - start)[:, None]).astype(dtype)


def _adaptive_avg(nd, op):
    def kernel(x, output_size):
        shape = plan.adaptive_plan(x, output_size, nd, op, spatial_only=True)
        # complex inputs only work on PyTorch's 1x1 path (a mean)
        not_implemented(x, "adaptive_avg_pool2d", _FLOATS + (_COMPLEX if all(o == 1 for o in shape[-nd:]) else ()))
        a = x._data
        d = a.dtype
        c = _cdt(d)
        r = a.astype(c, copy=False)
        for i in range(nd):  # contract each spatial dim with its averaging matrix
            axis = a.ndim - nd + i
            m = _avg_matrix(a.shape[axis], shape[axis], c if c.kind != "c" else c.char.lower())
            r = np.moveaxis(np.tensordot(r, m, axes=([axis], [1])), -1, axis)
        return wrap(np.ascontiguousarray(r).astype(d, copy=False).reshape(shape))
    kernel.__name__ = op
    return kernel


adaptive_avg_pool1d, adaptive_avg_pool2d = _adaptive_avg(1, "adaptive_avg_pool1d"), _adaptive_avg(2,
                                                                                                  "adaptive_avg_pool2d")


def _adaptive_max(nd, op):
    def kernel(x, output_size):
        shape = plan.adaptive_plan(x, output_size, nd, op)
        not_implemented(x, "adaptive_max_pool2d", _FLOATS)
        a = _as_batched(x, nd)
        out = shape[-nd:]
        spatial = a.shape[2:]
        gathers, kmax = [], []
        for i, (L, o) in enumerate(zip(spatial, out)):
            start, end = _bounds(L, o)
            k = int((end - start).max()) if o else 1
            # window positions, clamped to the window's last element (repeats do not change max/argmax)
            pos = np.minimum(start[:, None] + np.arange(k), end[:, None] - 1)
            gathers.append(pos)
            kmax.append(k)
        if nd == 1:
            g = a[:, :, gathers[0]]                                      # (N, C, o, k)
            flat_pos = gathers[0]
        else:
            ph, pw = gathers
            g = a[:, :, ph[:, :, None, None], pw[None, None, :, :]]      # (N, C, oh, kh, ow, kw)
            g = g.transpose(0, 1, 2, 4, 3, 5)
            flat_pos = (ph[:, None, :, None] * spatial[1] + pw[None, :, None, :])   # (oh, ow, kh, kw)
        g = g.reshape(g.shape[:2 + nd] + (prod(kmax),))
        k = g.argmax(axis=-1) if g.size else np.zeros(g.shape[:-1], np.int64)
        vals = np.take_along_axis(g, k[..., None], axis=-1)[..., 0] if g.size else np.zeros(g.shape[:-1], a.dtype)
        fp = flat_pos.reshape(tuple(out) + (prod(kmax),))
        idx = np.take_along_axis(np.broadcast_to(fp, k.shape + (fp.shape[-1],)), k[..., None], axis=-1)[..., 0]
        return wrap(np.ascontiguousarray(vals).reshape(shape)), wrap(idx.astype(np.int64).reshape(shape))
    kernel.__name__ = op
    return kernel


adaptive_max_pool1d, adaptive_max_pool2d = _adaptive_max(1, "adaptive_max_pool1d"), _adaptive_max(
    2, "adaptive_max_pool2d")
