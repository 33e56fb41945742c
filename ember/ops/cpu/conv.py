"""CPU kernels of convolutions, im2col/col2im (F.unfold/F.fold) and pixel shuffle.

A convolution is im2col + GEMMs. With one group: F.unfold's (N, C * K, L) columns (a native C
loop in 2-d, else a copy of `sliding_window_view`'s windows) and one GEMM per sample writing NCHW
directly (its backward, ember/ops/derivatives/conv.py, uses the same layout). With groups: the
columns as (groups, C/g * K, N * L) and one GEMM per group, transposed to NCHW. A transposed
convolution is the GEMM the other way round followed by col2im, a scatter-add with one NumPy
slice-add per kernel offset (never per pixel). Checks and shapes: ember/ops/meta/conv.py.
"""
from __future__ import annotations

from math import prod

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..._core import dtype as _dt
from ..._core.tensor import wrap
from .. import native
from ..meta import conv as plan

_F32 = np.dtype(np.float32)
_HALF = {np.dtype(np.float16), _dt.bfloat16.np}


def _cdt(d):
    return _F32 if d in _HALF else d


def not_implemented(x, kernel, allowed):
    """PyTorch's NotImplementedError for a dtype its CPU kernel does not dispatch on."""
    if x.dtype not in allowed:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{x.dtype.c10_name}'")


_FLOATS = (_dt.float16, _dt.bfloat16, _dt.float32, _dt.float64)
_COMPLEX = (_dt.complex64, _dt.complex128)
_INTS = (_dt.uint8, _dt.int8, _dt.int16, _dt.int32, _dt.int64)
CONV_DTYPES = _FLOATS + _COMPLEX + _INTS
CONV_T_DTYPES = _FLOATS + _COMPLEX + (_dt.int64,)


def windows(xp, ks, stride, dilation, out):
    """(N, C, *out, *ks) view of every window of the (already padded) input `xp`."""
    nd = len(ks)
    ek = tuple(d * (k - 1) + 1 for d, k in zip(dilation, ks))
    win = sliding_window_view(xp, ek, axis=tuple(range(2, 2 + nd)))
    sl = (slice(None), slice(None)) + tuple(slice(0, (o - 1) * s + 1, s) for o, s in zip(out, stride)) + \
        tuple(slice(None, None, d) for d in dilation)
    return win[sl]


def pad_spatial(x, pads, value=0):
    """Pad the trailing len(pads) dims with (lo, hi) each."""
    if not any(lo or hi for lo, hi in pads):
        return x
    return np.pad(x, ((0, 0),) * (x.ndim - len(pads)) + tuple(pads), constant_values=value)


def im2col_cols(x, ks, stride, dilation, pads, out, groups=1, batch_major=False):
    """Columns in PyTorch's (channel, kernel offset) row order: (groups, C/g * K, N * L) for one 2-D
    GEMM per group (NumPy's stacked matmul over N is much slower than one large GEMM), or
    (N, C * K, L) with `batch_major` (F.unfold's layout)."""
    n, c = x.shape[:2]
    nd = len(ks)
    fn = native.kernel("unfold2d", x.dtype) if nd == 2 and batch_major else None
    if fn is not None:   # one C loop, no padded copy (ember/_inductor/native_kernels_conv.py)
        cols = np.empty((n, c * prod(ks), prod(out)), x.dtype)
        fn(np.ascontiguousarray(x), cols, *x.shape, *ks, *out, *stride, pads[0][0], pads[1][0], *dilation)
        return cols
    win = windows(pad_spatial(x, pads), ks, stride, dilation, out)          # (N, C, *out, *ks)
    kdims = tuple(range(2 + nd, 2 + 2 * nd))
    odims = tuple(range(2, 2 + nd))
    if batch_major:
        return win.transpose((0, 1) + kdims + odims).reshape(n, c * prod(ks), prod(out))
    return win.transpose((1,) + kdims + (0,) + odims).reshape(groups, (c // groups) * prod(ks), n * prod(out))


def col2im_add(cols, full, stride, dilation, blocks):
    """Scatter-add columns (N, C, *ks, *blocks) into a zero (N, C, *full) image."""
    n, c = cols.shape[:2]
    nd = len(full)
    ks = cols.shape[2:2 + nd]
    out = np.zeros((n, c) + tuple(full), cols.dtype)
    for kidx in np.ndindex(*ks):  # one slice-add per kernel offset
        sl = (slice(None), slice(None)) + tuple(slice(k * d, k * d + s * (b - 1) + 1, s) for k, d, s, b in
                                                zip(kidx, dilation, stride, blocks))
        out[sl] += cols[(slice(None), slice(None)) + kidx]
    return out


def fold_cols(cols, spatial, ks, stride, dilation, pads, blocks):
    """F.fold's col2im, the adjoint of im2col_cols(batch_major=True): (N, C*K, L) columns summed
    into a new (N, C, *spatial) image; `pads` (lo, hi) per dim, `blocks` the columns' grid."""
    n, c = cols.shape[0], cols.shape[1] // prod(ks)
    fn = native.kernel("fold2d", cols.dtype) if len(ks) == 2 else None
    if fn is not None:   # one C loop, straight into the unpadded image
        img = np.empty((n, c) + tuple(spatial), cols.dtype)
        fn(np.ascontiguousarray(cols), img, n, c, *spatial, *ks, *blocks, *stride, pads[0][0], pads[1][0], *dilation)
        return img
    full = tuple(L + lo + hi for L, (lo, hi) in zip(spatial, pads))
    full = tuple(max(f, (b - 1) * s + d * (k - 1) + 1) for f, b, s, d, k in zip(full, blocks, stride, dilation, ks))
    img = col2im_add(cols.reshape((n, c) + tuple(ks) + tuple(blocks)), full, stride, dilation, blocks)
    return img[(slice(None), slice(None)) + tuple(slice(lo, lo + L) for (lo, _), L in zip(pads, spatial))]


def _conv(nd, op):
    def kernel(x, w, bias=None, stride=(1,), padding=(0,), dilation=(1,), groups=1):
        pads, stride, dilation, shape = plan.conv_plan(x, w, bias, stride, padding, dilation, groups, nd, op)
        not_implemented(x, "slow_conv3d_cpu" if nd == 3 else "slow_conv2d_cpu", CONV_DTYPES)
        a = x._data
        if x.ndim == nd + 1:
            a = a[None]
        d = a.dtype
        c = _cdt(d)
        a = a.astype(c, copy=False)
        wt = w._data.astype(c, copy=False)
        out_sp = shape[-nd:]
        o = wt.shape[0]
        if groups == 1 and a.size and wt.size:
            # F.unfold's (N, C*K, L) columns and one GEMM per sample, writing (N, O, L) = NCHW: no
            # transpose of the output, and each GEMM works in cache (one (O, N*L) GEMM and the
            # transpose were 1.1-2x slower for every shape measured, 1 thread)
            cols = im2col_cols(a, wt.shape[2:], stride, dilation, pads, out_sp, batch_major=True)
            res = np.matmul(wt.reshape(o, -1), cols)
            if bias is not None:
                res += bias._data.astype(c, copy=False).reshape(o, 1)
            return wrap(res.astype(d, copy=False).reshape(shape))
        cols = im2col_cols(a, wt.shape[2:], stride, dilation, pads, out_sp, groups)
        wg = wt.reshape(groups, o // groups, -1)
        # (g, O/g, N * L); one 2-D GEMM when g == 1 (NumPy's stacked matmul can be far slower)
        res = np.matmul(wg[0], cols[0]) if groups == 1 else np.matmul(wg, cols)
        res = res.reshape((o, a.shape[0]) + tuple(out_sp)).swapaxes(0, 1)
        if bias is not None and c is d:   # the (O, N) -> (N, O) transpose and the bias in one pass
            out = np.empty(res.shape, d)
            np.add(res, bias._data.astype(c, copy=False).reshape((o,) + (1,) * nd), out=out)
            return wrap(out.reshape(shape))
        if bias is not None:
            res = res + bias._data.astype(c, copy=False).reshape((o,) + (1,) * nd)
        return wrap(np.ascontiguousarray(res, dtype=d).reshape(shape))
    kernel.__name__ = op
    return kernel


conv1d, conv2d, conv3d = _conv(1, "conv1d"), _conv(2, "conv2d"), _conv(3, "conv3d")


def _conv_transpose(nd, op):
    def kernel(x, w, bias=None, stride=(1,), padding=(0,), output_padding=(0,), groups=1, dilation=(1,)):
        pads, stride, dilation, shape = plan.conv_plan(x, w, bias, stride, padding, dilation, groups, nd, op,
                                                       True, output_padding)
        not_implemented(x, f"slow_conv_transpose{max(nd, 2)}d_out_cpu", CONV_T_DTYPES)
        a = x._data
        if x.ndim == nd + 1:
            a = a[None]
        d = a.dtype
        c = _cdt(d)
        n, cin = a.shape[:2]
        in_sp = a.shape[2:]
        wt = w._data.astype(c, copy=False)
        cout_g, ks = wt.shape[1], wt.shape[2:]
        out_sp = shape[-nd:]
        if groups == 1 and a.size and wt.size:   # w^T @ x[n] per sample as F.unfold's columns, then F.fold
            cols = np.matmul(wt.reshape(cin, -1).T, a.astype(c, copy=False).reshape(n, cin, -1))
            res = fold_cols(cols, out_sp, ks, stride, dilation, pads, in_sp)
            if bias is not None:
                res += bias._data.astype(c, copy=False).reshape((cout_g,) + (1,) * nd)
            return wrap(np.ascontiguousarray(res).astype(d, copy=False).reshape(shape))
        wg = wt.reshape(groups, cin // groups, cout_g * prod(ks)).transpose(0, 2, 1)   # (g, Cout/g * K, Cin/g)
        xg = a.astype(c, copy=False).swapaxes(0, 1).reshape(groups, cin // groups, n * prod(in_sp))
        cols = np.matmul(wg[0], xg[0]) if groups == 1 else np.matmul(wg, xg)  # (g, Cout/g * K, N * L)
        cols = np.moveaxis(cols.reshape((groups * cout_g,) + tuple(ks) + (n,) + tuple(in_sp)), 1 + nd, 0)
        full = tuple(o + 2 * p for o, (p, _) in zip(out_sp, pads))
        full = tuple(max(f, (L - 1) * s + dd * (k - 1) + 1) for f, L, s, dd, k in zip(full, in_sp, stride, dilation,
                                                                                      ks))
        img = col2im_add(cols, full, stride, dilation, in_sp)
        res = img[(slice(None), slice(None)) + tuple(slice(p, p + o) for (p, _), o in zip(pads, out_sp))]
        if bias is not None:
            res = res + bias._data.astype(c, copy=False).reshape((groups * cout_g,) + (1,) * nd)
        return wrap(np.ascontiguousarray(res).astype(d, copy=False).reshape(shape))
    kernel.__name__ = op
    return kernel


conv_transpose1d, conv_transpose2d = _conv_transpose(1, "conv_transpose1d"), _conv_transpose(2, "conv_transpose2d")


def conv1d_padding(x, w, bias=None, stride=(1,), padding="valid", dilation=(1,), groups=1):
    return conv1d(x, w, bias, stride, padding, dilation, groups)


def conv2d_padding(x, w, bias=None, stride=(1, 1), padding="valid", dilation=(1, 1), groups=1):
    return conv2d(x, w, bias, stride, padding, dilation, groups)


def conv3d_padding(x, w, bias=None, stride=(1, 1, 1), padding="valid", dilation=(1, 1, 1), groups=1):
    return conv3d(x, w, bias, stride, padding, dilation, groups)


IM2COL_DTYPES = _FLOATS + _COMPLEX + (_dt.bool_,)


def im2col(x, kernel_size, dilation, padding, stride):
    """F.unfold: (N, C, H, W) -> (N, C * kh * kw, L)."""
    ks, dil, pad, st, shape = plan.im2col_plan(x, kernel_size, dilation, padding, stride)
    not_implemented(x, "im2col_out_cpu", IM2COL_DTYPES)
    a = x._data if x.ndim == 4 else x._data[None]
    blocks = plan.fold_blocks(a.shape[-2:], ks, dil, pad, st)
    cols = im2col_cols(a, ks, st, dil, tuple((p, p) for p in pad), blocks, batch_major=True)
    return wrap(np.ascontiguousarray(cols).reshape(shape))


def col2im(x, output_size, kernel_size, dilation, padding, stride):
    """F.fold: (N, C * kh * kw, L) -> (N, C, H, W), overlapping values summed."""
    out, ks, dil, pad, st, blocks, shape = plan.col2im_plan(x, output_size, kernel_size, dilation, padding, stride)
    not_implemented(x, "col2im_out_cpu", IM2COL_DTYPES)
    a = x._data if x.ndim == 3 else x._data[None]
    d = a.dtype
    c = np.dtype(np.int64) if d.kind == "b" else _cdt(d)
    img = fold_cols(a.astype(c, copy=False), out, ks, st, dil, tuple((p, p) for p in pad), blocks)
    return wrap(np.ascontiguousarray(img).astype(d, copy=False).reshape(shape))


def pixel_shuffle(x, upscale_factor):
    shape = plan.pixel_shuffle_plan(x, upscale_factor)
    r = upscale_factor
    a = x._data
    *lead, c, h, w = a.shape
    nl = len(lead)
    b = a.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    perm = tuple(range(nl)) + tuple(nl + i for i in (0, 3, 1, 4, 2))
    return wrap(np.ascontiguousarray(b.transpose(perm)).reshape(shape))


def pixel_unshuffle(x, downscale_factor):
    shape = plan.pixel_shuffle_plan(x, downscale_factor, "pixel_unshuffle")
    r = downscale_factor
    a = x._data
    *lead, c, h, w = a.shape
    nl = len(lead)
    b = a.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    perm = tuple(range(nl)) + tuple(nl + i for i in (0, 2, 4, 1, 3))
    return wrap(np.ascontiguousarray(b.transpose(perm)).reshape(shape))
