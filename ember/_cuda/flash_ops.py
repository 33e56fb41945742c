"""CUDA kernels of ``_scaled_dot_product_flash_attention`` and its backward: outputs allocated in the
layout the Meta kernels promise (ember/ops/meta/flash.py), the Triton kernels of flash_attention.py
launched on them. Empty problems launch nothing."""
from __future__ import annotations

import cupy
import numpy

from ..ops.meta import flash as rules
from . import flash_attention
from .kernels import wrap_cuda


def _like(t, dtype=None):
    """An uninitialised CUDA tensor of t's shape in t's memory order (rules.dense_strides)."""
    shape = tuple(t.shape)
    dt = numpy.dtype(dtype or t._data.dtype)
    strides = rules.dense_strides(shape, t.stride())
    size = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else 0
    base = cupy.empty(size, dt)
    return wrap_cuda(cupy.lib.stride_tricks.as_strided(base, shape, tuple(s * dt.itemsize for s in strides)))


def forward(query, key, value, dropout_p=0.0, is_causal=False, return_debug_mask=False, scale=None):
    rules.check("_scaled_dot_product_flash_attention", query, key, value, dropout_p)
    out = _like(query)
    lse = wrap_cuda(cupy.empty(rules.lse_shape(query), numpy.float32))
    B, H, L, _ = query.shape
    if not B * H * L:
        return out, lse
    if not key.shape[2]:            # no keys: softmax over nothing, an output of zeros
        out._data[...] = 0
        lse._data[...] = -numpy.inf
        return out, lse
    flash_attention.forward(query, key, value, out, lse, is_causal, scale)
    return out, lse


def backward(grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, scale=None):
    rules.check("_scaled_dot_product_flash_attention_backward", query, key, value, dropout_p)
    if grad_out.dtype is not query.dtype or tuple(grad_out.shape) != tuple(out.shape):
        raise RuntimeError(f"_scaled_dot_product_flash_attention_backward(): grad_out must match out, got "
                           f"{grad_out.dtype} {tuple(grad_out.shape)} for {out.dtype} {tuple(out.shape)}")
    dq, dk, dv = _like(query), _like(key), _like(value)
    B, H, L, _ = query.shape
    if not B * H * L or not key.shape[2]:
        for g in (dq, dk, dv):
            g._data[...] = 0
        return dq, dk, dv
    delta = wrap_cuda(cupy.empty(rules.lse_shape(query), numpy.float32))
    flash_attention.backward(grad_out, query, key, value, out, logsumexp, delta, dq, dk, dv, is_causal, scale)
    return dq, dk, dv
