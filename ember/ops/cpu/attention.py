"""CPU kernel of scaled_dot_product_attention (ATen's math path), and the attention probabilities
it shares with its derivative's native path (ember/ops/derivatives/nn_direct.py):

    probs = native_probs(Q, K, is_causal, scale)   # None: compute them with NumPy

With no mask beyond is_causal, no dropout and equal batch shapes, the probabilities are one BLAS
product and one native pass per row (attn_softmax: scale, causal cut, softmax); otherwise NumPy.
"""
from __future__ import annotations

import numpy as np

from .. import native
from ..meta import nn as meta
from .nn import _uniform, acc, result

_NATIVE_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def native_probs(Q, K, is_causal, scale):
    """softmax(Q @ K^T * scale) with query i seeing keys j <= i when `is_causal` (rows of L queries
    over S keys), for float32/float64 Q and K of one dtype and batch shape; None otherwise."""
    if Q.dtype not in _NATIVE_DTYPES or K.dtype is not Q.dtype or Q.shape[:-2] != K.shape[:-2] \
            or not Q.size or not K.size:
        return None
    fn = native.kernel("attn_softmax", Q.dtype)
    if fn is None:
        return None
    s = np.matmul(Q, K.swapaxes(-1, -2))           # a fresh C-contiguous (..., L, S) array
    L, S = s.shape[-2:]
    fn(s, s.size // S, L, S, bool(is_causal), float(scale))
    return s


def _safe_softmax(s):
    """softmax over the last dim; rows that are all -inf give zeros (ATen's _safe_softmax)."""
    m = np.max(s, axis=-1, keepdims=True)
    dead = np.isneginf(m)
    e = np.exp(s - np.where(dead, 0, m))
    tot = np.sum(e, axis=-1, keepdims=True)
    return np.where(dead, 0, e / np.where(dead, 1, tot))


def scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(q @ k.T * scale + mask) @ v, with ATen's math-path conventions."""
    _, dt = meta.sdpa_rule(q, k, v, attn_mask, is_causal, enable_gqa)
    Q, K, V = acc(q._data), acc(k._data), acc(v._data)
    cdt = Q.dtype
    e = Q.shape[-1]
    sc = (1.0 / np.sqrt(e) if e else np.inf) if scale is None else scale
    if attn_mask is None and dropout_p == 0 and V.dtype is cdt and V.shape[:-2] == Q.shape[:-2]:
        probs = native_probs(Q, K, is_causal, sc)
        if probs is not None:
            return result(np.matmul(probs, V), dt.np)
    if enable_gqa and Q.ndim >= 3 and K.ndim >= 3 and Q.shape[-3] != K.shape[-3]:
        rep = Q.shape[-3] // K.shape[-3]
        K, V = np.repeat(K, rep, axis=-3), np.repeat(V, rep, axis=-3)
    s = np.matmul(Q, np.swapaxes(K, -1, -2)) * cdt.type(sc)
    L, S = Q.shape[-2], K.shape[-2]
    if is_causal:
        s = np.where(np.tril(np.ones((L, S), bool)), s, cdt.type(-np.inf))
    if attn_mask is not None:
        M = attn_mask._data
        s = np.where(M, s, cdt.type(-np.inf)) if M.dtype == np.bool_ else s + acc(M).astype(cdt)
    attn = _safe_softmax(s).astype(cdt)
    if dropout_p > 0:
        keep = _uniform(attn.shape) < (1 - dropout_p)
        attn = attn * keep / cdt.type(1 - dropout_p)
    return result(np.matmul(attn, V), dt.np)
