"""Derivatives of the nn losses (reduction: 0 none, 1 mean, 2 sum): the pointwise pair losses,
binary cross entropy (with logits), KL divergence, nll and cross entropy, whose usual
[N, C] case takes the rows' native backward (`_cross_entropy_rows`)."""
from __future__ import annotations

from math import prod

import numpy as np

from .. import native
from ..._core.tensor import wrap
from .nn import _e


def _expand(grad, shape, reduction, n=None):
    """The per-element upstream gradient of a reduced pointwise loss."""
    if reduction == 0:
        return grad
    g = grad.expand(shape)
    if reduction == 1:
        count = n if n is not None else int(np.prod(shape)) if len(shape) else 1
        g = g / count
    return g


def _pair_loss(dfn):
    def formula(grad, self, target, reduction, **kw):
        e = _e()
        a, b = e.broadcast_tensors(self, target)
        d = dfn(a - b, **kw) * _expand(grad, a.shape, reduction)
        return d, -d
    return formula


def _mse(grad, self, target, reduction):
    return _pair_loss(lambda d: 2 * d)(grad, self, target, reduction)


def _l1(grad, self, target, reduction):
    return _pair_loss(lambda d: d.sign())(grad, self, target, reduction)


def _smooth_l1(grad, self, target, reduction, beta):
    def d(x):
        return (x / beta).clamp(-1, 1)
    return _pair_loss(d)(grad, self, target, reduction)


def _huber(grad, self, target, reduction, delta):
    return _pair_loss(lambda x: x.clamp(-delta, delta))(grad, self, target, reduction)


def _bce(grad, self, target, weight, reduction):
    _no_weight_grad("binary_cross_entropy", weight)
    g = _expand(grad, self.shape, reduction)
    if weight is not None:
        g = g * weight
    gx = g * (self - target) / ((1 - self) * self).clamp_min(1e-12)
    gt = g * ((1 - self).log() - self.log())  # -logit(self), unclamped as in PyTorch (+-inf at 0 and 1)
    return gx, gt, None


def _bce_logits(grad, self, target, weight, pos_weight, reduction):
    e = _e()
    _no_weight_grad("binary_cross_entropy_with_logits", weight)
    _no_weight_grad("binary_cross_entropy_with_logits", pos_weight)
    g = _expand(grad, e.broadcast_shapes(self.shape, target.shape), reduction)
    w = g if weight is None else g * weight
    if pos_weight is None:
        return w * (self.sigmoid() - target), w * -self, None, None
    lw = 1 + (pos_weight - 1) * target
    sp = e.nn.functional.softplus(-self)
    return w * (lw * self.sigmoid() - pos_weight * target), w * (-self + (pos_weight - 1) * sp), None, None


def _kl_div(grad, self, target, reduction, log_target):
    e = _e()
    g = _expand(grad, e.broadcast_shapes(self.shape, target.shape), reduction)
    if log_target:
        et = target.exp()
        return -et * g, et * (target - self + 1) * g
    # PyTorch's kl_div is xlogy(target, target) - target * self, differentiated as such: the
    # target's gradient is nan where target == 0 (xlogy's d/dother: target / target).
    log_t = e.where(target == 0, e.zeros_like(target), target.log())
    return -target * g, (log_t + target / target - self) * g


def _no_weight_grad(op, weight):
    """PyTorch has no derivative for these class/element weights either: raise, never drop it."""
    if weight is not None and weight.requires_grad:
        raise NotImplementedError(f"the derivative of {op} for 'weight' is not implemented")


def _nll_grad_logp(grad, self, target, weight, reduction, ignore_index):
    """d loss / d logp for nll over class dim (0 for [C], 1 for [N, C, ...])."""
    e = _e()
    _no_weight_grad("nll_loss", weight)
    axis = 0 if self.ndim == 1 else 1
    c = self.shape[axis]
    t = target.to(e.int64)
    ignored = t == ignore_index
    safe = e.where(ignored, e.zeros_like(t), t)
    wt = e.ones(t.shape, dtype=self.dtype, device=self.device) if weight is None else weight[safe]
    wt = e.where(ignored, e.zeros_like(wt), wt)
    g = grad if reduction == 0 else grad.expand(t.shape)
    if reduction == 1:
        g = g / wt.sum()
    coef = -(wt * g)
    # an ignored target contributes nothing, even when every target is ignored (mean: 0 / 0)
    coef = e.where(ignored, e.zeros_like(coef), coef)
    # [..., C]: a comparison with the classes rather than one_hot (whose int64 N x C result and range
    # check a compiled backward would run eagerly; `safe` holds classes the forward accepted)
    hot = (safe.unsqueeze(-1) == e.arange(c, device=safe.device)).to(self.dtype)
    out = hot * coef.unsqueeze(-1)
    return out if self.ndim == 1 else out.movedim(-1, 1), wt, ignored, safe


def _nll(grad, self, target, weight, reduction, ignore_index):
    glp, *_ = _nll_grad_logp(grad, self, target, weight, reduction, ignore_index)
    return glp, None, None


def _cross_entropy_rows(grad, self, target, weight, reduction, ignore_index, label_smoothing):
    """The common case's input gradient, coef[r] * (softmax(x[r]) - onehot(t[r])) per row, coef the
    output gradient over the reduction's divisor (0 for an ignored row, and for every row when all
    are ignored): one native pass (cross_entropy_bwd), or a few NumPy passes without a C compiler,
    instead of the general formula's ~20 ops (a classifier's step spent more there than in its last
    matmul). None where it does not apply: class weights, smoothing, other than (N, C) logits and
    (N,) class targets, a recorded graph or dispatch mode, a bad target (the formula reports it)."""
    if weight is not None or label_smoothing > 0 or self.ndim != 2 or target.ndim != 1 or not self.numel() \
            or target.dtype.category >= 2 or not native.plain_backward(grad, self, target):
        return None
    x, t, g = self._data, target._data, grad._data
    if x.dtype not in (np.float32, np.float64) or g.dtype is not x.dtype:
        return None
    ignored = t == ignore_index
    if ((t < 0) | (t >= x.shape[1]))[~ignored].any():
        return None
    if reduction == 0:
        coef = g.astype(np.float64)
    else:
        count = t.size - int(ignored.sum()) if reduction == 1 else 1
        coef = np.full(t.shape, float(g) / count if count else 0.0)
    coef[ignored] = 0.0
    fn = native.kernel("cross_entropy_bwd", x.dtype)
    if fn is not None:
        out = np.empty(x.shape, x.dtype)       # (empty_like would keep a transposed x's layout)
        fn(np.ascontiguousarray(x), np.ascontiguousarray(t, np.int64), coef, out, *x.shape)
        return wrap(out), None, None
    if not native.direct_backward(grad, self, target):
        return None
    soft = np.exp(x - x.max(axis=1, keepdims=True))
    soft /= soft.sum(axis=1, keepdims=True)
    c = coef.astype(x.dtype)
    soft *= c[:, None]
    soft[np.arange(t.size), np.where(ignored, 0, t)] -= c
    return wrap(soft), None, None


def _cross_entropy(grad, self, target, weight, reduction, ignore_index, label_smoothing):
    rows = _cross_entropy_rows(grad, self, target, weight, reduction, ignore_index, label_smoothing)
    if rows is not None:
        return rows
    e = _e()
    if self.device.type == "cuda" and native.plain_cuda_backward(grad, self, target):   # (create_graph, tracing: the formula)
        from ..._cuda import fused
        gx = fused.cross_entropy_backward(grad, self, target, weight, reduction, ignore_index, label_smoothing)
        if gx is not None:
            return gx, None, None
    axis = 0 if self.ndim == 1 else 1
    c = self.shape[axis]
    lp = self.log_softmax(axis)
    wshape = [1] * self.ndim
    wshape[axis] = c
    _no_weight_grad("cross_entropy", weight)
    if target.dtype.category >= 2:  # class probabilities
        t = target
        if label_smoothing > 0:
            t = t * (1 - label_smoothing) + label_smoothing / c
        tw = t if weight is None else t * weight.reshape(wshape)
        g = grad if reduction == 0 else grad.expand(lp.sum(axis).shape)
        if reduction == 1:
            g = g / (self.numel() // c if c else 1)
        g = g.unsqueeze(axis)
        glp = -tw * g
        gt = -(lp if weight is None else lp * weight.reshape(wshape)) * g
        if label_smoothing > 0:
            gt = gt * (1 - label_smoothing)
        gx = glp - lp.exp() * glp.sum(axis, keepdim=True)
        return gx, gt, None
    glp, wt, ignored, safe = _nll_grad_logp(grad, self, target, weight, reduction, ignore_index)
    if label_smoothing > 0:
        glp = glp * (1 - label_smoothing)
        # smooth term: -sum_c w_c lp_c per sample (0 where ignored), mean over target weights/count
        g = grad if reduction == 0 else grad.expand(target.shape)
        if reduction == 1:
            g = g / (wt.sum() if weight is not None else (~ignored).sum().to(self.dtype))
        g = e.where(ignored, e.zeros_like(g), g) * (label_smoothing / c)
        per = -g.unsqueeze(axis) * (e.ones(wshape, dtype=self.dtype, device=self.device) if weight is None else weight.reshape(wshape))
        glp = glp + per
    gx = glp - lp.exp() * glp.sum(axis, keepdim=True)
    return gx, None, None


FORMULAS = {
    "cross_entropy_loss": _cross_entropy,
    "nll_loss_nd": _nll,
    "mse_loss": _mse,
    "l1_loss": _l1,
    "smooth_l1_loss": _smooth_l1,
    "huber_loss": _huber,
    "binary_cross_entropy": _bce,
    "binary_cross_entropy_with_logits": _bce_logits,
    "kl_div": _kl_div,
}
