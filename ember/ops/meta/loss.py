"""Meta kernels of the losses, and the shape/dtype rules the CPU loss kernels (``cpu/loss.py``)
share with them: each ``*_rule`` checks its op's arguments the way ATen does and returns the
output's shape and dtype. (The other nn ops' rules: ``meta/nn.py``.)
"""
from __future__ import annotations

from ..._core import dtype as _dt
from ..._core.tensor import wrap_meta
from .. import rules
from .nn import not_implemented, require_float

# ---------------------------------------------------------------------------------------
# losses (reduction: 0 none, 1 mean, 2 sum)
# ---------------------------------------------------------------------------------------
def _loss_shape(shape, reduction):
    return tuple(shape) if reduction == 0 else ()


def pointwise_loss_rule(name, x, y):
    """mse / smooth_l1 / huber: broadcast shape and a floating common dtype."""
    shape = rules.broadcast_shapes(x.shape, y.shape, op=f"{name}_loss")
    dt = rules.common_dtype(x, y)
    if dt.category != _dt.FLOAT:
        raise not_implemented(f"{name}_cpu", dt)
    return shape, dt


def l1_loss_rule(x, y, reduction):
    """(dtype of x - y, result dtype): abs of complex is real; ints only sum (as int64)."""
    rules.broadcast_shapes(x.shape, y.shape, op="l1_loss")
    dt = rules.common_dtype(x, y)
    if dt is _dt.bool_:
        raise RuntimeError("l1_loss(): Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    out = dt.to_real()
    if out.category == _dt.INT:
        if reduction == 1:
            raise RuntimeError(f"l1_loss(): mean(): could not infer output dtype. Input dtype must be either a "
                               f"floating point or complex dtype. Got: {out.c10_name}")
        if reduction == 2:
            out = _dt.int64
    return dt, out


def bce_rule(x, y, weight):
    require_float("binary_cross_entropy", x)
    if y.dtype is not x.dtype:
        raise RuntimeError(f"binary_cross_entropy(): expected scalar type {x.dtype.c10_name} but found {y.dtype.c10_name}")
    if tuple(y.shape) != tuple(x.shape):
        raise RuntimeError(f"binary_cross_entropy(): target of shape {list(y.shape)} does not match input of "
                           f"shape {list(x.shape)}")
    if weight is not None:
        if rules.broadcast_shapes(x.shape, weight.shape, op="binary_cross_entropy") != tuple(x.shape):
            raise RuntimeError(f"binary_cross_entropy(): weight of shape {list(weight.shape)} can't be broadcast "
                               f"to the input shape {list(x.shape)}")
    return tuple(x.shape), x.dtype


def bce_logits_rule(x, y, weight, pos_weight):
    ops = [t for t in (x, y, weight, pos_weight) if t is not None]
    shape = rules.broadcast_shapes(*(t.shape for t in ops), op="binary_cross_entropy_with_logits")
    dt = rules.common_dtype(*ops)
    if dt.category != _dt.FLOAT:
        raise not_implemented("log_sigmoid_cpu", dt)
    return shape, dt


def kl_div_rule(x, y):
    if x.dtype.category == _dt.COMPLEX or y.dtype.category == _dt.COMPLEX:
        raise RuntimeError("kl_div: Complex inputs not supported.")
    if x.dtype.category <= _dt.INT or y.dtype.category <= _dt.INT:
        raise RuntimeError("kl_div: Integral inputs not supported.")
    return rules.broadcast_shapes(x.shape, y.shape, op="kl_div"), rules.common_dtype(x, y)


def nll_rule(op, x, target, weight):
    """nll_loss_nd's checks; returns the unreduced output shape."""
    if x.ndim < 1:
        raise ValueError(f"{op}(): Expected 1 or more dimensions (got {x.ndim})")
    if x.ndim != 1 and (target.ndim == 0 or x.shape[0] != target.shape[0]):
        raise ValueError(f"{op}(): Expected input batch_size ({x.shape[0]}) to match target batch_size "
                         f"({target.shape[0] if target.ndim else 0}).")
    n_classes = x.shape[0 if x.ndim == 1 else 1]
    if x.ndim == 1 and target.ndim == 1 and target.shape[0] != 1:
        raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {target.shape[0]}")
    if x.ndim <= 2:
        if target.ndim > 1:
            raise RuntimeError(f"{op}(): 0D or 1D target tensor expected, multi-target not supported")
        if not (x.ndim == 1 and target.ndim == 0) and x.shape[0] != target.shape[0]:
            raise RuntimeError(f"{op}(): size mismatch (got input: {list(x.shape)}, target: {list(target.shape)})")
        out = tuple(target.shape) if x.ndim == 2 or target.ndim else ()
    else:
        if x.ndim == 4 and target.ndim != 3:
            raise RuntimeError(f"{op}(): only batches of spatial targets supported (3D tensors) but got targets "
                               f"of dimension: {target.ndim}")
        if tuple(target.shape[1:]) != tuple(x.shape[2:]):
            raise RuntimeError(f"{op}(): Expected target size {[x.shape[0]] + list(x.shape[2:])}, got "
                               f"{list(target.shape)}")
        out = (x.shape[0],) + tuple(x.shape[2:])
    if weight is not None and (weight.ndim != 1 or weight.numel() != n_classes):
        raise RuntimeError(f"{op}(): weight tensor should be defined either for all {n_classes} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")
    require_float("nll_loss_out_frame", x)
    if target.dtype not in (_dt.int64, _dt.uint8):
        raise RuntimeError(f"{op}(): expected scalar type Long but found {target.dtype.c10_name}")
    if weight is not None and weight.dtype is not x.dtype:
        raise RuntimeError(f"{op}(): expected scalar type {x.dtype.c10_name} but found {weight.dtype.c10_name}")
    return out


def cross_entropy_rule(x, target, weight, ignore_index, label_smoothing):
    """(probability targets?, result dtype), with ATen's checks."""
    if tuple(x.shape) == tuple(target.shape) and x.ndim > 0:
        if target.dtype.category != _dt.FLOAT:
            raise RuntimeError(f"cross_entropy(): Expected floating point type for target with class "
                               f"probabilities, got {target.dtype.c10_name}")
        if ignore_index >= 0:
            raise RuntimeError("cross_entropy(): ignore_index is not supported for floating point target")
        if label_smoothing > 1.0 or label_smoothing < 0:
            raise RuntimeError(f"cross_entropy(): label_smoothing must be between 0.0 and 1.0. Got: "
                               f"{label_smoothing}")
        n_classes = x.shape[0 if x.ndim == 1 else 1]
        if weight is not None and (weight.ndim != 1 or weight.numel() != n_classes):
            raise RuntimeError(f"cross_entropy(): weight tensor should be defined either for all {n_classes} "
                               f"classes or no classes but got weight tensor of shape: {list(weight.shape)}")
        require_float("log_softmax_lastdim_kernel_impl", x)
        return True, rules.common_dtype(*[t for t in (x, target, weight) if t is not None])
    if label_smoothing > 1.0:
        raise RuntimeError(f"cross_entropy(): label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if x.ndim >= 1:
        require_float("log_softmax_lastdim_kernel_impl", x)
    nll_rule("cross_entropy", x, target, weight)
    return False, x.dtype


def mse_loss(x, y, reduction=1):
    shape, dt = pointwise_loss_rule("mse", x, y)
    return wrap_meta(_loss_shape(shape, reduction), dt)


def smooth_l1_loss(x, y, reduction=1, beta=1.0):
    shape, dt = pointwise_loss_rule("smooth_l1", x, y)
    return wrap_meta(_loss_shape(shape, reduction), dt)


def huber_loss(x, y, reduction=1, delta=1.0):
    shape, dt = pointwise_loss_rule("huber", x, y)
    return wrap_meta(_loss_shape(shape, reduction), dt)


def l1_loss(x, y, reduction=1):
    _, out = l1_loss_rule(x, y, reduction)
    return wrap_meta(_loss_shape(rules.broadcast_shapes(x.shape, y.shape), reduction), out)


def binary_cross_entropy(x, y, weight=None, reduction=1):
    shape, dt = bce_rule(x, y, weight)
    return wrap_meta(_loss_shape(shape, reduction), dt)


def binary_cross_entropy_with_logits(x, y, weight=None, pos_weight=None, reduction=1):
    shape, dt = bce_logits_rule(x, y, weight, pos_weight)
    return wrap_meta(_loss_shape(shape, reduction), dt)


def kl_div(x, y, reduction=1, log_target=False):
    shape, dt = kl_div_rule(x, y)
    return wrap_meta(_loss_shape(shape, reduction), dt)


def nll_loss_nd(x, target, weight=None, reduction=1, ignore_index=-100):
    return wrap_meta(_loss_shape(nll_rule("nll_loss", x, target, weight), reduction), x.dtype)


def cross_entropy_loss(x, target, weight=None, reduction=1, ignore_index=-100, label_smoothing=0.0):
    prob, dt = cross_entropy_rule(x, target, weight, ignore_index, label_smoothing)
    if prob:
        axis = 0 if x.ndim == 1 else 1
        shape = tuple(s for i, s in enumerate(x.shape) if i != axis)
    else:
        shape = nll_rule("cross_entropy", x, target, weight)
    return wrap_meta(_loss_shape(shape, reduction), dt)
