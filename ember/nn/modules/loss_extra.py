"""The loss modules beyond loss.py's: the margin and embedding losses, PoissonNLLLoss, GaussianNLLLoss,
CTCLoss, NLLLoss2d and LinearCrossEntropyLoss (with its LinearCrossEntropyOptions), each a thin
holder of its options around the functional loss (torch/nn/modules/loss.py)."""
from __future__ import annotations

import dataclasses
import math

from .. import functional as F
from .linear import Linear
from .loss import _Loss, _WeightedLoss, NLLLoss, PairwiseDistance

__all__ = ["CosineEmbeddingLoss", "HingeEmbeddingLoss", "MarginRankingLoss", "SoftMarginLoss",
           "MultiLabelSoftMarginLoss", "MultiLabelMarginLoss", "MultiMarginLoss", "TripletMarginLoss",
           "TripletMarginWithDistanceLoss", "PoissonNLLLoss", "GaussianNLLLoss", "CTCLoss", "NLLLoss2d",
           "LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]


class _MarginLoss(_Loss):
    """A loss with one `margin` option whose functional form takes (*inputs, margin=, reduction=)."""
    _fn = None
    _default_margin = 0.0

    def __init__(self, margin=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = self._default_margin if margin is None else margin

    def forward(self, *inputs):
        return type(self)._fn(*inputs, margin=self.margin, reduction=self.reduction)


class CosineEmbeddingLoss(_MarginLoss):
    """1 - cos(x1, x2) for target 1, max(0, cos(x1, x2) - margin) for target -1."""
    _fn = staticmethod(F.cosine_embedding_loss)


class HingeEmbeddingLoss(_MarginLoss):
    """x for target 1, max(0, margin - x) for target -1."""
    _fn, _default_margin = staticmethod(F.hinge_embedding_loss), 1.0


class MarginRankingLoss(_MarginLoss):
    """max(0, -y * (x1 - x2) + margin)."""
    _fn = staticmethod(F.margin_ranking_loss)


class SoftMarginLoss(_Loss):
    """log(1 + exp(-y * x))."""

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-class multi-label hinge loss; target lists class indices, ended by -1."""

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Per-class logistic loss averaged over the classes."""

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss (p = 1 or 2)."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight=None, size_average=None, reduce=None,
                 reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction)
        if p != 1 and p != 2:
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got {weight.dim()}D instead")
        self.p = p
        self.margin = margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """max(0, margin + d(a, p) - d(a, n)) with the p-norm distance."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                 size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps,
                                     swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """The triplet margin loss with any distance function (a PairwiseDistance module by default)."""

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False, reduction: str = "mean"):
        super().__init__(None, None, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                             f"instead")
        self.distance_function = distance_function if distance_function is not None else PairwiseDistance()
        self.margin = margin
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(anchor, positive, negative,
                                                   distance_function=self.distance_function, margin=self.margin,
                                                   swap=self.swap, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """Negative log likelihood of a Poisson-distributed target."""

    def __init__(self, log_input: bool = True, full: bool = False, size_average=None, eps: float = 1e-8,
                 reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
                                  reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Negative log likelihood of a Gaussian with predicted mean and variance."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class CTCLoss(_Loss):
    """The Connectionist Temporal Classification loss."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(reduction=reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)


class NLLLoss2d(NLLLoss):
    """Deprecated name of NLLLoss (which takes (N, C, H, W) inputs itself)."""


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """PyTorch's settings for a batch-chunked linear_cross_entropy. They change peak memory, not
    values; ember validates them as PyTorch does and computes the unchunked reference path."""
    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        import ember
        if self.acc_policy not in {"auto", "accurate", "balanced", "compact"}:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = self.chunking_method.partition(":")
            factor = factor if sep else "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None or (isinstance(self.batch_chunk_size, int) and self.batch_chunk_size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {self.batch_chunk_size!r}")
        if self.acc_dtype is not None and self.acc_dtype not in (ember.float16, ember.bfloat16, ember.float32,
                                                                 ember.float64):
            raise ValueError(f"acc_dtype must be one of {{None, torch.float16, torch.bfloat16, torch.float32, "
                             f"torch.float64}}, got {self.acc_dtype!r}. Pass acc_dtype=None to let the op pick "
                             f"automatically.")


class LinearCrossEntropyLoss(_WeightedLoss):
    """cross_entropy(linear(input), target) with the Linear layer (`self.linear`) inside the loss."""

    def __init__(self, in_features: int, num_classes: int, *, out_features=(), bias: bool = False, device=None,
                 dtype=None, reduction: str = "mean", weight=None, ignore_index=None, label_smoothing: float = 0.0,
                 options=None):
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got {label_smoothing}")
        super().__init__(weight, None, None, reduction)
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.linear = Linear(in_features, math.prod(out_features, start=num_classes), bias=bias, device=device,
                             dtype=dtype)
        self.options = options

    def forward(self, input, target):
        linear_weight = self.linear.weight.reshape((self.num_classes, *self.out_features, self.linear.in_features))
        linear_bias = None if self.linear.bias is None else self.linear.bias.reshape((self.num_classes,
                                                                                       *self.out_features))
        return F.linear_cross_entropy(input, linear_weight, target, linear_bias=linear_bias, weight=self.weight,
                                      reduction=self.reduction, ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing, options=self.options)

    def extra_repr(self) -> str:
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, out_features="
                f"{self.out_features}, bias={self.linear.bias is not None}, reduction={self.reduction}, "
                f"ignore_index={self.ignore_index}, label_smoothing={self.label_smoothing}, options={self.options}")
