"""Loss modules (one per functional loss) and the distance modules.

Every loss stores ``reduction`` (the deprecated ``size_average``/``reduce`` pair is converted as
PyTorch does, with its warning); weighted losses register ``weight`` as a buffer.
"""
from __future__ import annotations

import warnings

from .. import functional as F
from .module import Module

__all__ = ["L1Loss", "MSELoss", "NLLLoss", "CrossEntropyLoss", "BCELoss", "BCEWithLogitsLoss", "KLDivLoss",
           "SmoothL1Loss", "HuberLoss", "CosineSimilarity", "PairwiseDistance"]


def _legacy_reduction(size_average, reduce) -> str:
    if size_average is None:
        size_average = True
    if reduce is None:
        reduce = True
    ret = "mean" if (size_average and reduce) else ("sum" if reduce else "none")
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                  stacklevel=3)
    return ret


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            self.reduction = _legacy_reduction(size_average, reduce)
        else:
            self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """Mean absolute error."""

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """Mean squared error."""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class NLLLoss(_WeightedLoss):
    """Negative log likelihood of log-probabilities."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """log_softmax + nll_loss, with class-probability targets and label smoothing."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities."""

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Sigmoid + binary cross entropy, numerically stable; optional pos_weight."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence (input in log space)."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class SmoothL1Loss(_Loss):
    """Quadratic below `beta`, linear above."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Quadratic below `delta`, linear above (scaled by delta)."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class CosineSimilarity(Module):
    """Cosine similarity along `dim`."""

    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """p-norm distance between rows."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
