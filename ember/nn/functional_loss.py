"""ember.nn.functional's losses: PyTorch's Python wrappers (reduction= and the legacy
size_average= / reduce= arguments) around the loss operators of ember/ops/table/nn.py."""
import warnings as _warnings

from ..ops.registry import aten as _aten, export as _export
from .functional import _reduction

__all__ = ['cross_entropy', 'nll_loss', 'mse_loss', 'l1_loss', 'smooth_l1_loss', 'huber_loss', 'binary_cross_entropy', 'binary_cross_entropy_with_logits', 'kl_div']


def _warn_size(input, target):
    if tuple(target.shape) != tuple(input.shape):
        _warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have "
                      "the same size.", stacklevel=3)


def _no_weight(name, weight):
    if weight is not None:
        raise NotImplementedError(f"{name}: weight= is not implemented in ember")


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """log_softmax + nll_loss for class indices, or -sum(target * log_softmax) for probabilities."""
    return _aten.cross_entropy_loss.default(input, target, weight, _reduction(reduction, size_average, reduce),
                                           ignore_index, label_smoothing)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    return _aten.nll_loss_nd.default(input, target, weight, _reduction(reduction, size_average, reduce),
                                    ignore_index)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _warn_size(input, target)
    _no_weight("mse_loss", weight)
    return _aten.mse_loss.default(input, target, _reduction(reduction, size_average, reduce))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _warn_size(input, target)
    _no_weight("l1_loss", weight)
    return _aten.l1_loss.default(input, target, _reduction(reduction, size_average, reduce))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    _warn_size(input, target)
    enum = _reduction(reduction, size_average, reduce)
    if beta == 0.0:
        return _aten.l1_loss.default(input, target, enum)
    return _aten.smooth_l1_loss.default(input, target, enum, beta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    _warn_size(input, target)
    _no_weight("huber_loss", weight)
    return _aten.huber_loss.default(input, target, _reduction(reduction), delta)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    enum = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    return _aten.binary_cross_entropy.default(input, target, weight, enum)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    enum = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    return _aten.binary_cross_entropy_with_logits.default(input, target, weight, pos_weight, enum)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL divergence; 'batchmean' divides the sum by the batch size."""
    if size_average is not None or reduce is not None:
        enum = _reduction(reduction, size_average, reduce)
    else:
        if reduction == "mean":
            _warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                          "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                          "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                          stacklevel=2)
        enum = 2 if reduction == "batchmean" else _reduction(reduction)
    out = _aten.kl_div.default(input, target, enum, log_target=log_target)
    if reduction == "batchmean" and input.dim() != 0:
        out = out / input.size(0)
    return out


# torch.kl_div / torch.binary_cross_entropy_with_logits: PyTorch's Python bindings default
# reduction to 0 ('none'), not the schema's Mean; mirror that quirk.
def _torch_kl_div(input, target, reduction=0, *, log_target=False):
    return _aten.kl_div.default(input, target, reduction, log_target=log_target)


def _torch_bce_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    return _aten.binary_cross_entropy_with_logits.default(input, target, weight, pos_weight, reduction)

for _fn in (cross_entropy, nll_loss, mse_loss, l1_loss, smooth_l1_loss, huber_loss,
           binary_cross_entropy, binary_cross_entropy_with_logits, kl_div,):
    _export("nn.functional", _fn.__name__, _fn)
_export("", "kl_div", _torch_kl_div)
_export("", "binary_cross_entropy_with_logits", _torch_bce_with_logits)
