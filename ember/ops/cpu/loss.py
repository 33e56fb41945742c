"""CPU kernels of the loss functions (ATen's signatures: ``reduction`` is 0 none, 1 mean, 2 sum).

Shape/dtype rules are shared with the Meta kernels (``ember/ops/meta/loss.py``). Half
types are computed in float32 and rounded once; ``log_softmax`` is rounded to the input dtype
before ``nll_loss`` like ATen's composite ``cross_entropy``.
"""
from __future__ import annotations

import numpy as np

from ..._core import dtype as _dt
from .. import native
from ..meta import loss as meta
from .nn import acc, result
from .pointwise import ON_CUDA


def reduce(loss, reduction, np_dtype):
    """apply_loss_reduction: mean of an empty loss is NaN, like ATen."""
    if reduction == 0:
        return result(loss, np_dtype)
    total = np.sum(loss)
    if reduction == 1:
        total = total / loss.size if loss.size else np.float64(np.nan)
    return result(total, np_dtype)


def _compute(dt):
    return acc(np.empty(0, dt.np)).dtype


def _pair(x, y, dt):
    c = _compute(dt)
    return x._data.astype(c, copy=False), y._data.astype(c, copy=False)


# ---------------------------------------------------------------------------------------
# regression losses
# ---------------------------------------------------------------------------------------
def mse_loss(x, y, reduction=1):
    shape, dt = meta.pointwise_loss_rule("mse", x, y)
    a, b = _pair(x, y, dt)
    d = a - b
    return reduce(d * d, reduction, dt.np)


def l1_loss(x, y, reduction=1):
    dt, out_dt = meta.l1_loss_rule(x, y, reduction)
    a, b = _pair(x, y, dt)
    loss = np.abs(a - b)
    return reduce(loss.astype(np.int64) if out_dt is _dt.int64 else loss, reduction, out_dt.np)


def smooth_l1_loss(x, y, reduction=1, beta=1.0):
    if beta < 0:
        raise RuntimeError("smooth_l1_loss(): smooth_l1_loss does not support negative values for beta.")
    shape, dt = meta.pointwise_loss_rule("smooth_l1", x, y)
    a, b = _pair(x, y, dt)
    z = np.abs(a - b)
    if beta == 0:
        return reduce(z, reduction, dt.np)
    loss = np.where(z < beta, 0.5 * z * z / a.dtype.type(beta), z - a.dtype.type(0.5 * beta))
    return reduce(loss, reduction, dt.np)


def huber_loss(x, y, reduction=1, delta=1.0):
    if delta <= 0:
        raise RuntimeError("huber_loss(): huber_loss does not support non-positive values for delta.")
    shape, dt = meta.pointwise_loss_rule("huber", x, y)
    a, b = _pair(x, y, dt)
    z = np.abs(a - b)
    dl = a.dtype.type(delta)
    loss = np.where(z < dl, a.dtype.type(0.5) * z * z, dl * (z - a.dtype.type(0.5) * dl))
    return reduce(loss, reduction, dt.np)


# ---------------------------------------------------------------------------------------
# binary classification
# ---------------------------------------------------------------------------------------
def binary_cross_entropy(x, y, weight=None, reduction=1):
    """-(y log x + (1 - y) log(1 - x)), each log clamped at -100; x and y must lie in [0, 1]."""
    shape, dt = meta.bce_rule(x, y, weight)
    a, b = acc(x._data), acc(y._data)
    if not np.all((a >= 0) & (a <= 1)):
        raise RuntimeError("binary_cross_entropy(): all elements of input should be between 0 and 1")
    if not np.all((b >= 0) & (b <= 1)):
        raise RuntimeError("binary_cross_entropy(): all elements of target should be between 0 and 1")
    loss = (b - 1) * np.maximum(np.log1p(-a), -100) - b * np.maximum(np.log(a), -100)
    loss = loss.astype(dt.np)  # ATen writes the elementwise loss in the input dtype
    if weight is not None:
        loss = (acc(loss) * acc(weight._data)).astype(dt.np)
    return reduce(acc(loss), reduction, dt.np)


def binary_cross_entropy_with_logits(x, y, weight=None, pos_weight=None, reduction=1):
    """(1 - y) x - log_sigmoid(x) * (1 + (pos_weight - 1) y), times weight; numerically stable."""
    shape, dt = meta.bce_logits_rule(x, y, weight, pos_weight)
    c = _compute(dt)
    a, b = x._data.astype(c), y._data.astype(c)
    log_sig = np.minimum(a, 0) - np.log1p(np.exp(-np.abs(a)))
    if pos_weight is not None:
        log_sig = log_sig * ((pos_weight._data.astype(c) - 1) * b + 1)
    loss = (1 - b) * a - log_sig
    if weight is not None:
        loss = loss * weight._data.astype(c)
    return reduce(loss, reduction, dt.np)


def kl_div(x, y, reduction=1, log_target=False):
    """target * (log target - input) (or exp(t) * (t - input) with log_target)."""
    shape, dt = meta.kl_div_rule(x, y)
    a, b = _pair(x, y, dt)
    if log_target:
        loss = np.exp(b) * (b - a)
    else:
        xlogy = np.where(b == 0, 0, b * np.log(np.where(b == 0, 1, b)))
        loss = np.where(np.isnan(b), np.nan, xlogy) - b * a
    return reduce(np.broadcast_to(loss, shape), reduction, dt.np)


# ---------------------------------------------------------------------------------------
# classification: nll_loss, cross_entropy
# ---------------------------------------------------------------------------------------
def log_softmax(a, axis):
    m = np.max(a, axis=axis, keepdims=True) if a.size else 0
    m = np.where(np.isfinite(m), m, 0)
    s = a - m
    return s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True))


def _log_softmax_rounded(a, axis):
    """log_softmax in compute precision, rounded to a's dtype like ATen's composite cross_entropy;
    over the last dim of a C-contiguous float32/float64 array in one native pass (ember/ops/native.py)."""
    fn = native.kernel("softmax_fwd", a.dtype) if axis == a.ndim - 1 and a.flags.c_contiguous and a.size else None
    if fn is None:
        return acc(acc(log_softmax(acc(a), axis)).astype(a.dtype))
    out = np.empty_like(a)
    fn(a, out, a.size // a.shape[-1], a.shape[-1], True)
    return out


def _nll(op, logp, target, w, reduction, ignore_index):
    """nll on compute arrays: logp [C] or [N, C, ...], target [] or [N, ...]. Returns ndarray."""
    axis = 0 if logp.ndim == 1 else 1
    n_classes = logp.shape[axis]
    if w is None and logp.ndim == 2 and target.ndim == 1 and target.size and target.dtype.kind in "iu" \
            and not 0 <= ignore_index < n_classes:
        # a classifier's usual call: every target a valid class, none ignored, no class weights;
        # the general code below in 3 NumPy calls instead of ~15 (the same values to the bit: the
        # weights it would multiply by are ones, its divisor their float sum, the row count)
        lo, hi = target.min(), target.max()
        if 0 <= lo and hi < n_classes:
            losses = -logp[np.arange(target.size), target]
            if reduction == 0:
                return losses
            total = np.sum(losses)
            return total / logp.dtype.type(target.size) if reduction == 1 else total
    t = target.astype(np.int64)
    ignored = t == ignore_index
    bad = ~ignored & ((t < 0) | (t >= n_classes))
    if bad.any():
        raise IndexError(f"{op}(): Target {int(t[bad].reshape(-1)[0])} is out of bounds.")
    safe = np.where(ignored, 0, t)
    if logp.ndim == 1:
        picked = logp[safe]
    else:
        picked = np.take_along_axis(logp, np.expand_dims(safe, 1), axis=1).squeeze(1)
    wt = np.ones(t.shape, logp.dtype) if w is None else w[safe]
    wt = np.where(ignored, 0, wt).astype(logp.dtype)
    losses = np.where(ignored, 0, -picked * wt).astype(logp.dtype)
    if reduction == 0:
        return losses
    total = np.sum(losses)
    if reduction == 1 and ON_CUDA and logp.ndim == 1:
        # PyTorch's CUDA kernel for one sample: an ignored target gives 0, not 0 / 0 (its CPU one: NaN)
        return np.where(ignored, total, total / np.sum(wt))
    return total / np.sum(wt) if reduction == 1 else total


def nll_loss_nd(x, target, weight=None, reduction=1, ignore_index=-100):
    """Negative log likelihood of class indices; 'mean' divides by the summed weights of
    the targets that are not ignore_index."""
    meta.nll_rule("nll_loss", x, target, weight)
    out = _nll("nll_loss", acc(x._data), target._data, None if weight is None else acc(weight._data),
               reduction, ignore_index)
    return result(out, x._data.dtype)


def cross_entropy_loss(x, target, weight=None, reduction=1, ignore_index=-100, label_smoothing=0.0):
    """log_softmax over the class dim, then nll (class indices) or -sum(p * logp) (probabilities)."""
    prob, dt = meta.cross_entropy_rule(x, target, weight, ignore_index, label_smoothing)
    axis = 0 if x.ndim == 1 else 1
    n_classes = x.shape[axis]
    logp = _log_softmax_rounded(x._data, axis)
    w = None if weight is None else acc(weight._data)
    wshape = [1] * x.ndim
    if w is not None:
        wshape[axis] = n_classes
    if prob:
        c = _compute(dt)
        t, lp = target._data.astype(c), logp.astype(c)
        w = None if w is None else w.astype(c)
        if label_smoothing > 0:
            t = t * (1 - label_smoothing) + label_smoothing / n_classes
        prod = lp * t if w is None else lp * t * w.reshape(wshape)
        if reduction == 0:
            return result(-np.sum(prod, axis=axis), dt.np)
        total = -np.sum(prod)
        if reduction == 1:
            total = total / (x.numel() // n_classes) if x.numel() else np.nan
        return result(total, dt.np)
    nll = _nll("cross_entropy", logp, target._data, w, reduction, ignore_index)
    if label_smoothing <= 0:
        return result(nll, dt.np)
    ignored = target._data == ignore_index
    smooth = -np.sum(logp if w is None else logp * w.reshape(wshape), axis=axis)
    smooth = np.where(ignored, 0, smooth)
    if reduction == 1:
        if w is not None:
            denom = np.sum(w[target._data[~ignored].astype(np.int64)])
        else:
            denom = np.sum(~ignored)
        smooth = np.sum(smooth) / denom
    elif reduction == 2:
        smooth = np.sum(smooth)
    return result((1 - label_smoothing) * acc(result(nll, dt.np)._data) + smooth * (label_smoothing / n_classes),
                  dt.np)
