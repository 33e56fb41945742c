"""Decompositions of the losses (ember/ops/table/nn.py; ``reduction``: 0 none, 1 mean, 2 sum) into
pointwise ops, reductions and gather, after the op's own checks (ember/ops/meta/loss.py).
cross_entropy is ATen's composite: log_softmax, then nll (class indices) or -sum(p * logp)
(probabilities), with label smoothing. nll's targets equal to ignore_index are replaced by 0 before
the gather and masked after, as ATen's decomposition does."""
from __future__ import annotations

from ...ops.meta import loss as rules
from ._ops import aten, to


def _reduce(loss, reduction):
    if reduction == 0:
        return loss
    if reduction == 1:
        return aten.mean.default(loss)
    return aten.sum.dim_IntList(loss, None)


def mse_loss(self, target, reduction=1):
    _, dtype = rules.pointwise_loss_rule("mse", self, target)
    diff = aten.sub.Tensor(self, target)
    return _reduce(aten.mul.Tensor(diff, diff), reduction)


def l1_loss(self, target, reduction=1):
    _, out_dtype = rules.l1_loss_rule(self, target, reduction)
    loss = aten.abs.default(aten.sub.Tensor(self, target))
    if out_dtype != loss.dtype and reduction != 0:      # integer inputs: summed as int64
        loss = to(loss, out_dtype)
    return _reduce(loss, reduction)


def smooth_l1_loss(self, target, reduction=1, beta=1.0):
    if beta < 0:
        raise RuntimeError("smooth_l1_loss(): smooth_l1_loss does not support negative values for beta.")
    rules.pointwise_loss_rule("smooth_l1", self, target)
    z = aten.abs.default(aten.sub.Tensor(self, target))
    if beta == 0:
        return _reduce(z, reduction)
    quadratic = aten.div.Tensor(aten.mul.Tensor(aten.mul.Tensor(z, z), 0.5), beta)
    return _reduce(aten.where.self(aten.lt.Tensor(z, beta), quadratic, aten.sub.Tensor(z, 0.5 * beta)), reduction)


def huber_loss(self, target, reduction=1, delta=1.0):
    if delta <= 0:
        raise RuntimeError("huber_loss(): huber_loss does not support non-positive values for delta.")
    rules.pointwise_loss_rule("huber", self, target)
    z = aten.abs.default(aten.sub.Tensor(self, target))
    quadratic = aten.mul.Tensor(aten.mul.Tensor(z, z), 0.5)
    linear = aten.mul.Tensor(aten.sub.Tensor(z, 0.5 * delta), delta)
    return _reduce(aten.where.self(aten.lt.Tensor(z, delta), quadratic, linear), reduction)


def binary_cross_entropy_with_logits(self, target, weight=None, pos_weight=None, reduction=1):
    rules.bce_logits_rule(self, target, weight, pos_weight)
    log_sigmoid = aten.sub.Tensor(aten.clamp.default(self, None, 0),
                                  aten.log1p.default(aten.exp.default(aten.neg.default(aten.abs.default(self)))))
    if pos_weight is not None:
        log_sigmoid = aten.mul.Tensor(log_sigmoid, aten.add.Tensor(
            aten.mul.Tensor(aten.sub.Tensor(pos_weight, 1), target), 1))
    one_minus = aten.add.Tensor(aten.neg.default(target), 1)
    loss = aten.sub.Tensor(aten.mul.Tensor(one_minus, self), log_sigmoid)
    if weight is not None:
        loss = aten.mul.Tensor(loss, weight)
    return _reduce(loss, reduction)


def kl_div(self, target, reduction=1, log_target=False):
    shape, _ = rules.kl_div_rule(self, target)
    if log_target:
        loss = aten.mul.Tensor(aten.exp.default(target), aten.sub.Tensor(target, self))
    else:
        from .pointwise import xlogy
        loss = aten.sub.Tensor(xlogy(target, target), aten.mul.Tensor(target, self))
    if tuple(loss.shape) != tuple(shape):
        loss = aten.expand.default(loss, list(shape))
    return _reduce(loss, reduction)


def _class_dim(x):
    return 0 if x.dim() == 1 else 1


def _nll(logp, target, weight, reduction, ignore_index):
    """-logp[target] * weight[target], 0 where target == ignore_index; 'mean' divides by the
    summed weights of the targets kept."""
    dim = _class_dim(logp)
    ignored = aten.eq.Tensor(target, ignore_index)
    safe = aten.where.self(ignored, 0, target)
    picked = aten.squeeze.dims(aten.gather.default(logp, dim, aten.unsqueeze.default(safe, dim)), [dim])
    if weight is None:
        wt = aten.where.self(ignored, 0, aten.full_like.default(picked, 1))
    else:
        wt = aten.where.self(ignored, 0, aten.index.Tensor(weight, [safe]))
    losses = aten.where.self(ignored, 0, aten.mul.Tensor(aten.neg.default(picked), wt))
    if reduction == 0:
        return losses
    total = aten.sum.dim_IntList(losses, None)
    return aten.div.Tensor(total, aten.sum.dim_IntList(wt, None)) if reduction == 1 else total


def nll_loss_nd(self, target, weight=None, reduction=1, ignore_index=-100):
    rules.nll_rule("nll_loss", self, target, weight)
    return _nll(self, target, weight, reduction, ignore_index)


def cross_entropy_loss(self, target, weight=None, reduction=1, ignore_index=-100, label_smoothing=0.0):
    probabilities, dtype = rules.cross_entropy_rule(self, target, weight, ignore_index, label_smoothing)
    dim = _class_dim(self)
    classes = self.shape[dim]
    logp = aten.log_softmax.int(self, dim)
    weight_shape = [1] * self.dim()
    weight_shape[dim] = classes
    if probabilities:
        t = target
        if label_smoothing > 0:
            t = aten.add.Tensor(aten.mul.Tensor(t, 1 - label_smoothing), label_smoothing / classes)
        product = aten.mul.Tensor(logp, t)
        if weight is not None:
            product = aten.mul.Tensor(product, aten.view.default(weight, weight_shape))
        if reduction == 0:
            return aten.neg.default(aten.sum.dim_IntList(product, [dim]))
        total = aten.neg.default(aten.sum.dim_IntList(product, None))
        if reduction == 1:
            return aten.div.Tensor(total, self.numel() // classes) if self.numel() else aten.mean.default(total)
        return total
    nll = _nll(logp, target, weight, reduction, ignore_index)
    if label_smoothing <= 0:
        return nll
    ignored = aten.eq.Tensor(target, ignore_index)
    weighted = logp if weight is None else aten.mul.Tensor(logp, aten.view.default(weight, weight_shape))
    smooth = aten.where.self(ignored, 0, aten.neg.default(aten.sum.dim_IntList(weighted, [dim])))
    if reduction == 1:
        kept = aten.logical_not.default(ignored)
        if weight is None:
            denominator = aten.sum.dim_IntList(kept, None)
        else:
            safe = aten.where.self(ignored, 0, target)
            denominator = aten.sum.dim_IntList(aten.where.self(kept, aten.index.Tensor(weight, [safe]), 0), None)
        smooth = aten.div.Tensor(aten.sum.dim_IntList(smooth, None), denominator)
    elif reduction == 2:
        smooth = aten.sum.dim_IntList(smooth, None)
    return aten.add.Tensor(aten.mul.Tensor(nll, 1 - label_smoothing),
                           aten.mul.Tensor(smooth, label_smoothing / classes))


DECOMPOSITIONS = {
    "mse_loss": mse_loss, "l1_loss": l1_loss, "smooth_l1_loss": smooth_l1_loss, "huber_loss": huber_loss,
    "binary_cross_entropy_with_logits": binary_cross_entropy_with_logits, "kl_div": kl_div,
    "nll_loss_nd": nll_loss_nd, "cross_entropy_loss": cross_entropy_loss,
}
