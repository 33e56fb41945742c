"""ember.nn.functional's margin, embedding and likelihood losses: cosine/hinge embedding, margin
ranking, (multi-label) (soft) margin, triplet margin, Poisson and Gaussian negative log likelihood.

Each is the formula of PyTorch's ATen kernel (or Python function) written with ember ops, so
autograd and ember.compile come from those ops. ``reduction`` / the legacy ``size_average`` /
``reduce`` arguments are parsed by functional._reduction (0 none, 1 mean, 2 sum).
"""
import math as _math

from ..ops.registry import export as _export
from .functional import _reduction

__all__ = ["cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss", "soft_margin_loss",
           "multilabel_soft_margin_loss", "multilabel_margin_loss", "multi_margin_loss", "triplet_margin_loss",
           "triplet_margin_with_distance_loss", "poisson_nll_loss", "gaussian_nll_loss"]

_EPSILON = 1e-12  # ATen's cosine_embedding_loss adds it to both squared norms


def _ember():
    import ember
    return ember


def _reduce(loss, enum):
    return loss if enum == 0 else loss.mean() if enum == 1 else loss.sum()


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1."""
    ember = _ember()
    enum = _reduction(reduction, size_average, reduce)
    tdim = target.dim()
    if tdim not in (0, 1):
        raise RuntimeError("cosine_embedding_loss: 0D or 1D target tensor expected, multi-target not supported")
    if (input1.dim(), input2.dim()) != (tdim + 1, tdim + 1):
        raise RuntimeError(f"cosine_embedding_loss: {tdim}D target tensor expects {tdim + 1}D input tensors, but "
                           f"found inputs with sizes {list(input1.shape)} and {list(input2.shape)}.")
    prod = (input1 * input2).sum(tdim)
    denom = (((input1 * input1).sum(tdim) + _EPSILON) * ((input2 * input2).sum(tdim) + _EPSILON)).sqrt()
    cos = prod / denom
    zeros = ember.zeros_like(cos)
    loss = ember.where(target == 1, 1 - cos, zeros) + ember.where(target == -1, (cos - margin).clamp_min(0), zeros)
    return _reduce(loss, enum)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """x where target is 1, max(0, margin - x) where it is -1."""
    ember = _ember()
    enum = _reduction(reduction, size_average, reduce)
    zeros = ember.zeros_like(input)
    loss = (ember.where(target != 1, (margin - input).clamp_min(0), zeros)
            + ember.where(target != -1, input, zeros))
    return _reduce(loss, enum)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -target * (x1 - x2) + margin)."""
    enum = _reduction(reduction, size_average, reduce)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), enum)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * x))."""
    enum = _reduction(reduction, size_average, reduce)
    return _reduce((-input * target).exp().log1p(), enum)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Per-class binary logistic loss, averaged over the classes (last dim)."""
    from . import functional as F
    if size_average is not None or reduce is not None:
        reduction = ("none", "mean", "sum")[_reduction(reduction, size_average, reduce)]
    loss = -(target * F.logsigmoid(input) + (1 - target) * F.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(dim=class_dim) / input.size(class_dim)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, ("none", "mean", "sum").index(reduction))


def _class_input(input, target, op):
    """(input as (N, C), target, whether the input had no batch dim) with ATen's shape checks."""
    if input.dim() > 2:
        raise RuntimeError(f"{op}: Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    unbatched = input.dim() <= 1
    x = input.reshape(1, -1) if unbatched else input
    return x, unbatched


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over target classes j (the entries of target before its first -1) and non-target
    classes i of max(0, 1 - (x[j] - x[i])), divided by the number of classes."""
    ember = _ember()
    enum = _reduction(reduction, size_average, reduce)
    x, unbatched = _class_input(input, target, "multilabel_margin_loss")
    if tuple(target.shape) != tuple(input.shape) and not (unbatched and target.numel() == x.shape[1]):
        raise RuntimeError(f"multilabel_margin_loss: inconsistent target size: {list(target.shape)} for input of "
                           f"size: {list(input.shape)}")
    if target.dtype is not ember.int64:
        raise RuntimeError(f"multilabel_margin_loss: expected target of dtype Long, got {target.dtype}")
    t = target.reshape(x.shape)
    n, c = x.shape
    if t.numel() and (int(t.min()) < -1 or int(t.max()) >= c):
        raise RuntimeError("multilabel_margin_loss: target out of range")
    listed = (t != -1).to(ember.int64).cumprod(1).to(ember.bool)        # entries before the first -1
    safe = t.clamp_min(0)
    is_target = (ember.nn.functional.one_hot(safe, c).to(ember.bool) & listed.unsqueeze(2)).any(1)
    x_t = x.gather(1, safe)                                             # (N, C): x at each listed target
    hinge = (1 - x_t.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0)          # (N, target entry, class)
    mask = (listed.unsqueeze(2) & ~is_target.unsqueeze(1)).to(x.dtype)
    loss = (hinge * mask).sum((1, 2)) / c
    if unbatched:
        loss = loss.reshape(())
    return _reduce(loss, enum)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """sum over i != y of max(0, margin - x[y] + x[i]) ** p (times weight[y]), divided by the classes."""
    ember = _ember()
    enum = _reduction(reduction, size_average, reduce)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    x, unbatched = _class_input(input, target, "multi_margin_loss")
    n, c = x.shape
    if target.numel() != n or target.dim() > 1:
        raise RuntimeError(f"multi_margin_loss: inconsistent target size, expected {n} but got "
                           f"{list(target.shape)}")
    y = target.reshape(n, 1)
    if y.numel() and (int(y.min()) < 0 or int(y.max()) >= c):
        raise RuntimeError("multi_margin_loss: target out of range")
    z = (margin - x.gather(1, y) + x).clamp_min(0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight[y]
    not_y = ember.ones((n, c), dtype=ember.bool).scatter(1, y, ember.zeros((n, 1), dtype=ember.bool))
    loss = (z * not_y.to(z.dtype)).sum(1) / c
    if unbatched:
        loss = loss.reshape(())
    return _reduce(loss, enum)


def _check_triplet_dims(anchor, positive, negative):
    a, p, n = anchor.ndim, positive.ndim, negative.ndim
    if not (a == p == n):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D inputs")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(0, margin + d(a, p) - d(a, n)), d the p-norm pairwise distance (swap: d(a, n) is
    min(d(a, n), d(p, n)))."""
    from . import functional as F
    enum = _reduction(reduction, size_average, reduce)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    d_pos = F.pairwise_distance(anchor, positive, p, eps)
    d_neg = F.pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _ember().minimum(d_neg, F.pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), enum)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """triplet_margin_loss with any distance function (default: pairwise_distance)."""
    from . import functional as F
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    distance = F.pairwise_distance if distance_function is None else distance_function
    d_pos, d_neg = distance(anchor, positive), distance(anchor, negative)
    if swap:
        d_neg = _ember().minimum(d_neg, distance(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), ("none", "mean", "sum").index(reduction))


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """exp(x) - t*x (log_input) or x - t*log(x + eps); full adds Stirling's t*log(t) - t + log(2 pi t)/2
    where t > 1."""
    enum = _reduction(reduction, size_average, reduce)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * _math.pi * target).log()
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, enum)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """(log(var) + (x - t)**2 / var) / 2 with var clamped to eps (the clamp does not reach var's gradient)."""
    ember = _ember()
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * ember.ones_like(input)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif input.ndim == var.ndim and sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1:
            pass  # heteroscedastic with one broadcast dim
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with ember.no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * _math.log(2 * _math.pi)
    return _reduce(loss, ("none", "mean", "sum").index(reduction))


for _name in __all__:
    _export("nn.functional", _name, globals()[_name])
