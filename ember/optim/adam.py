"""Adam and AdamW (Adam with decoupled weight decay): torch.optim.Adam's single-tensor algorithm."""
from __future__ import annotations

import ember
from ember._core.dispatch import AUTOGRAD_BIT, CPU_BIT, CUDA_BIT, tls
from ember._core.tensor import Tensor
from ember.ops import native

from .optimizer import Optimizer, _step_counter, ADAM_FAMILY_RULES, weight_decayed

__all__ = ["Adam", "AdamW"]


def adam_state(param, group) -> dict:
    """A parameter's fresh state: step 0 and zero moments shaped like it."""
    state = {"step": _step_counter(), "exp_avg": ember.zeros_like(param, memory_format=ember.preserve_format),
             "exp_avg_sq": ember.zeros_like(param, memory_format=ember.preserve_format)}
    if group["amsgrad"]:
        state["max_exp_avg_sq"] = ember.zeros_like(param, memory_format=ember.preserve_format)
    return state


def adam_update(param, grad, state, group) -> None:
    """Moving averages m (of g) and v (of g*g, or its running maximum under AMSGrad), bias-corrected
    by the step count t: p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)."""
    if not state:
        state.update(adam_state(param, group))
    lr, eps = group["lr"], group["eps"]
    beta1, beta2 = group["betas"]
    counter = state["step"]
    counter += 1
    t = counter.item()
    if param._keys & CUDA_BIT:
        from .._cuda.optim import adam_step     # the whole update in one kernel on the GPU
        if adam_step(param, grad, state["exp_avg"], state["exp_avg_sq"], group, t):
            return
    decoupled = bool(group.get("decoupled_weight_decay") and group["weight_decay"])
    shrink = 1.0
    if decoupled:
        shrink = 1 - lr * group["weight_decay"]     # weight_decayed's AdamW step, fused below
    else:
        grad = weight_decayed(param, grad, group)
    mean, second = state["exp_avg"], state["exp_avg_sq"]
    if not group["amsgrad"] and _native_step(param, grad, mean, second, lr, beta1, beta2, eps, t, shrink):
        return
    if decoupled:
        param.mul_(shrink)
    mean.lerp_(grad, 1 - beta1)
    second.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    if group["amsgrad"]:
        peak = state["max_exp_avg_sq"]
        ember.maximum(peak, second, out=peak)
        second = peak
    # the operations and their order follow torch's so that float32 results round identically
    denom = (second.sqrt() / (1 - beta2 ** t) ** 0.5).add_(eps)
    param.addcdiv_(mean, denom, value=-(lr / (1 - beta1 ** t)))


def adam_foreach(pairs, group, state_of, negate):
    """foreach (torch's default on CUDA): the group's CUDA parameters in one kernel launch per
    dtype and step count (ember/_cuda/optim.py); CPU parameters, AMSGrad and foreach=False run
    the for-loop update."""
    if group["amsgrad"] or group.get("foreach") is False or not any(p._keys & CUDA_BIT for p, _ in pairs):
        return pairs
    from .._cuda.optim import adam_foreach as on_cuda
    return on_cuda(pairs, group, state_of, negate, adam_state)


def adam_fused(pairs, group, state_of, negate):
    """fused=True: the group's parameters in one generated kernel (from the second step on, when
    they share one step count); AMSGrad runs the for-loop update."""
    if group["amsgrad"] or not pairs:
        return pairs
    from .._inductor import fused_optim
    by_step = {}
    for p, g in pairs:
        state = state_of.get(p)
        if not state:
            return pairs                   # the first step creates the state: the for-loop update
        by_step.setdefault(state["step"].item() + 1, []).append((p, g, state))
    if len(by_step) != 1:                  # parameters at different steps (added to the group later)
        return pairs
    (step, rows), = by_step.items()
    params, grads, states = zip(*rows)
    if not fused_optim.adam(params, grads, [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states],
                            group, step, negate):
        return pairs                       # a tensor the kernel cannot take (checked before any write)
    for s in states:
        s["step"] += 1
    return []


def _native_step(param, grad, mean, second, lr, beta1, beta2, eps, t, shrink) -> bool:
    """The update below as one C loop (ember/ops/native.py) when every tensor is a plain contiguous
    CPU float32/float64 array of one shape and the hyper-parameters are numbers; False otherwise."""
    if tls.include & ~native.PROFILER_BIT or not all(type(h) in (float, int) for h in (lr, beta1, beta2, eps, shrink)):
        return False
    p = param._data
    for x in (param, grad, mean, second):
        a = x._data
        if x._keys & ~AUTOGRAD_BIT != CPU_BIT or a.dtype is not p.dtype or a.shape != p.shape \
                or not a.flags.c_contiguous:
            return False
    fn = native.kernel("adam_step", p.dtype) if p.flags.writeable else None
    if fn is None:
        return False
    fn(p, grad._data, mean._data, second._data, p.size, 1 - beta1, beta2, 1 - beta2, (1 - beta2 ** t) ** 0.5, eps,
       -(lr / (1 - beta1 ** t)), shrink)
    for x in (param, mean, second):
        x._bump_version()
    return True


def _float_or_tensor_pair(betas) -> bool:
    return all(isinstance(b, float) for b in betas[:2]) or all(isinstance(b, Tensor) for b in betas[:2])


class Adam(Optimizer):
    """Implements the Adam algorithm (optionally AMSGrad, maximize and decoupled weight decay)."""

    KEYS = ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach", "capturable",
            "differentiable", "fused", "decoupled_weight_decay")
    RULES = ADAM_FAMILY_RULES + (
        ("betas", _float_or_tensor_pair, "betas must be either both floats or both Tensors"),
        (("betas", 0), lambda b: not isinstance(b, Tensor), "Tensor betas are not supported by ember; pass floats",
         NotImplementedError),
    )

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False) -> None:
        betas = tuple(betas)  # torch stores the pair as a tuple whatever sequence was passed
        self._setup(params, locals())

    fused_update = staticmethod(adam_fused)
    foreach_update = staticmethod(adam_foreach)

    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        return self._step_with(closure, adam_update, RuntimeError(
            "Adam does not support sparse gradients, please consider SparseAdam instead"))


class AdamW(Adam):
    """Implements AdamW: Adam with decoupled weight decay (default ``weight_decay=1e-2``)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None) -> None:
        betas = tuple(betas)
        self._setup(params, dict(locals(), decoupled_weight_decay=True))

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:  # whatever was loaded, AdamW stays decoupled (as torch)
            group["decoupled_weight_decay"] = True
