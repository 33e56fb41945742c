"""Learning-rate schedulers with torch.optim.lr_scheduler's behaviour.

Most schedules are a row of ``_RULES``: a one-line *chainable* step (current lr -> next lr, torch's
recurrences, so sequences are bit-identical and schedulers compose on one optimizer) and, where one exists,
a one-line *closed form* from the base lr (used by the deprecated ``step(epoch)``).  ``state_dict()`` is the
scheduler's ``__dict__`` minus the optimizer, as in torch, so attribute names follow torch's.
"""
from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter, namedtuple
from contextlib import contextmanager
from functools import update_wrapper
from weakref import ref

from ember._core.tensor import Tensor

from .optimizer import Optimizer

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
           "ExponentialLR", "SequentialLR", "PolynomialLR", "CosineAnnealingLR", "ChainedScheduler",
           "ReduceLROnPlateau", "CosineAnnealingWarmRestarts", "OneCycleLR", "CyclicLR"]

inf = math.inf

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. Please "
    "use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available. Please open an issue if you are "
    "unable to replicate your use case: https://github.com/pytorch/pytorch/issues/new/choose.")
_SEE_DOCS = " See more details at https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate"


def _cosine(base_lr, eta_min, t, period):
    """Half-cosine from ``base_lr`` (t=0) down to ``eta_min`` (t=period)."""
    return eta_min + (base_lr - eta_min) * (1 + math.cos(math.pi * t / period)) / 2


def _cosine_step(lr, base_lr, epoch, T_max, eta_min, _is_initial, _step_count, **_):
    """torch's chainable cosine: rescale (lr - eta_min) by the ratio of consecutive cosine terms, with an
    additive step at the trough (where that ratio is 0/0)."""
    if _is_initial:
        return lr
    if _step_count == 1 and epoch > 0:
        return _cosine(base_lr, eta_min, epoch, T_max)
    if (epoch - 1 - T_max) % (2 * T_max) == 0:
        return lr + (base_lr - eta_min) * (1 - math.cos(math.pi / T_max)) / 2
    return (1 + math.cos(math.pi * epoch / T_max)) / (1 + math.cos(math.pi * (epoch - 1) / T_max)) \
        * (lr - eta_min) + eta_min


# step(lr, base_lr, epoch, **options) -> next lr;  closed(base_lr, epoch, **options) -> lr at ``epoch``.
# ``options`` are the scheduler's attributes (plus ``group``, the param-group index); ``_is_initial`` is
# True for the step the constructor makes.
_Rule = namedtuple("_Rule", "step closed")
_RULES = {
    "LambdaLR": _Rule(
        lambda lr, base_lr, epoch, lr_lambdas, group, **_: base_lr * lr_lambdas[group](epoch), None),
    "MultiplicativeLR": _Rule(
        lambda lr, base_lr, epoch, lr_lambdas, group, _is_initial, **_:
            lr if _is_initial else lr * lr_lambdas[group](epoch), None),
    "StepLR": _Rule(
        lambda lr, base_lr, epoch, step_size, gamma, **_: lr if epoch == 0 or epoch % step_size else lr * gamma,
        lambda base_lr, epoch, step_size, gamma, **_: base_lr * gamma ** (epoch // step_size)),
    "MultiStepLR": _Rule(  # milestones is a Counter: a repeated milestone decays once per repetition
        lambda lr, base_lr, epoch, milestones, gamma, **_:
            lr * gamma ** milestones[epoch] if epoch in milestones else lr,
        lambda base_lr, epoch, milestones, gamma, **_:
            base_lr * gamma ** bisect_right(sorted(milestones.elements()), epoch)),
    "ConstantLR": _Rule(
        lambda lr, base_lr, epoch, factor, total_iters, **_:
            lr * factor if epoch == 0 else lr * (1.0 / factor) if epoch == total_iters else lr,
        lambda base_lr, epoch, factor, total_iters, **_:
            base_lr * (factor + (epoch >= total_iters) * (1 - factor))),
    "LinearLR": _Rule(
        lambda lr, base_lr, epoch, start_factor, end_factor, total_iters, _is_initial, **_:
            lr * start_factor if epoch == 0 else lr if _is_initial or epoch > total_iters else
            lr * (1.0 + (end_factor - start_factor)
                  / (total_iters * start_factor + (epoch - 1) * (end_factor - start_factor))),
        lambda base_lr, epoch, start_factor, end_factor, total_iters, **_:
            base_lr * (start_factor + (end_factor - start_factor) * min(total_iters, epoch) / total_iters)),
    "ExponentialLR": _Rule(
        lambda lr, base_lr, epoch, gamma, _is_initial, **_: lr if _is_initial else lr * gamma,
        lambda base_lr, epoch, gamma, **_: base_lr * gamma ** epoch),
    "PolynomialLR": _Rule(
        lambda lr, base_lr, epoch, total_iters, power, _is_initial, **_:
            lr if _is_initial or epoch > total_iters else
            lr * ((1.0 - epoch / total_iters) / (1.0 - (epoch - 1) / total_iters)) ** power,
        lambda base_lr, epoch, total_iters, power, **_:
            base_lr * (1.0 - min(total_iters, epoch) / total_iters) ** power),
    "CosineAnnealingLR": _Rule(
        _cosine_step, lambda base_lr, epoch, T_max, eta_min, **_: _cosine(base_lr, eta_min, epoch, T_max)),
    # T_cur / T_i are maintained by CosineAnnealingWarmRestarts.step
    "CosineAnnealingWarmRestarts": _Rule(
        lambda lr, base_lr, epoch, eta_min, T_cur, T_i, **_: _cosine(base_lr, eta_min, T_cur, T_i), None),
}


# helpers: param-group values are copied on read and filled in place on write when they are Tensors, so a
# scheduler never aliases the optimizer's lr tensors
def _copy(v):
    return v.clone() if isinstance(v, Tensor) else v


def _read(optimizer, key):
    return [_copy(g[key]) for g in optimizer.param_groups]


def _write(group, key, value):
    if isinstance(group[key], Tensor):
        group[key].fill_(value.item() if isinstance(value, Tensor) else value)
    else:
        group[key] = value


def _per_group(name, optimizer, value):
    """One value per param group: a list/tuple of matching length, or a scalar broadcast."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)) and len(value) != n:
        raise ValueError(f"{name} must have the same length as optimizer.param_groups. "
                         f"{name} has {len(value)} values, param_groups has {n}.")
    return [_copy(v) for v in (value if isinstance(value, (list, tuple)) else [value] * n)]


@contextmanager
def _flag(obj, name):
    """Set the boolean attribute ``name`` while the block runs (it lands in the instance, as in torch)."""
    setattr(obj, name, True)
    try:
        yield
    finally:
        setattr(obj, name, False)


def _check_optimizer(optimizer):
    if isinstance(optimizer, Optimizer):
        return optimizer
    raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def _warn_get_lr_called_within_step(sched) -> None:
    if not sched._get_lr_called_within_step:
        warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                      UserWarning, stacklevel=2)


def _mark_optimizer_steps(optimizer) -> None:
    """Wrap the optimizer instance's ``step`` so it records that it ran (``_opt_called``): the scheduler
    warns when its own first step comes before the optimizer's."""
    if hasattr(optimizer.step, "_wrapped_by_lr_sched"):
        return
    inner, owner = optimizer.step.__func__, ref(optimizer)

    def step(*args, **kwargs):
        opt = owner()
        opt._opt_called = True
        return inner(opt, *args, **kwargs)

    update_wrapper(step, inner)
    step._wrapped_by_lr_sched = True
    optimizer.step = step


class LRScheduler:
    """Base class: records each group's ``initial_lr`` (``base_lrs``), counts ``last_epoch`` and at every
    ``step()`` writes ``get_lr()`` into the param groups; the constructor makes the step to epoch 0.
    Subclasses name a row of ``_RULES`` in ``_rule`` or override ``get_lr`` (optionally ``_get_closed_form_lr``).
    """

    _rule = None
    _get_lr_called_within_step = False
    _is_initial = False
    # attributes saved specially by state_dict: name -> (save(value), load(scheduler, saved))
    _special_state: dict = {}

    def __init__(self, optimizer, last_epoch=-1) -> None:
        self.optimizer = _check_optimizer(optimizer)
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", _copy(group["lr"]))
            elif "initial_lr" not in group:
                raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming scheduler "
                               "with last_epoch >= 0.\nThis typically happens when:\n1. You're trying to resume "
                               "training from a checkpoint but haven't properly loaded the optimizer state\n2. "
                               "You're using last_epoch >= 0 for a fresh training run (not recommended)")
        self.base_lrs = _read(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _mark_optimizer_steps(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        with _flag(self, "_is_initial"):
            self.step()

    def state_dict(self) -> dict:
        """The scheduler's attributes except the optimizer (callables and nested schedulers as their state)."""
        return {k: (self._special_state[k][0](v) if k in self._special_state else v)
                for k, v in vars(self).items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore attributes saved by ``state_dict()`` (the given dict is left unchanged)."""
        special = {k: state_dict[k] for k in self._special_state}
        vars(self).update({k: v for k, v in state_dict.items() if k not in special})
        for k, saved in special.items():
            self._special_state[k][1](self, saved)

    def get_last_lr(self) -> list:
        """The learning rates the last ``step()`` set, one per param group (copies, never aliases)."""
        return self._last_lr

    def get_lr(self) -> list:
        """The next lr of every param group (called by ``step()``; use ``get_last_lr()`` to inspect)."""
        if self._rule is None:
            raise NotImplementedError
        _warn_get_lr_called_within_step(self)
        options = {**vars(self), "_is_initial": self._is_initial}
        return [_RULES[self._rule].step(lr, base_lr, self.last_epoch, group=i, **options)
                for i, (lr, base_lr) in enumerate(zip(_read(self.optimizer, "lr"), self.base_lrs))]

    def _closed_form(self):
        """The lrs at ``last_epoch`` from the closed form, or None where the schedule has none."""
        if hasattr(self, "_get_closed_form_lr"):
            return self._get_closed_form_lr()
        closed = self._rule and _RULES[self._rule].closed
        if closed is None:
            return None
        return [closed(base_lr, self.last_epoch, group=i, **vars(self)) for i, base_lr in enumerate(self.base_lrs)]

    def step(self, epoch=None) -> None:
        """Advance one epoch; ``epoch`` (deprecated) jumps there, through the closed form when there is one."""
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                warnings.warn("Seems like `optimizer.step()` has been overridden after learning rate scheduler "
                              "initialization. Please, make sure to call `optimizer.step()` before "
                              "`lr_scheduler.step()`." + _SEE_DOCS, UserWarning, stacklevel=2)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 "
                              "and later, you should call them in the opposite order: `optimizer.step()` before "
                              "`lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping the first "
                              "value of the learning rate schedule." + _SEE_DOCS, UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None) -> None:
        with _flag(self, "_get_lr_called_within_step"):
            self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
            lrs = (None if epoch is None else self._closed_form()) or self.get_lr()
        self._apply(lrs)

    def _apply(self, lrs) -> None:
        for group, lr in zip(self.optimizer.param_groups, lrs, strict=True):
            _write(group, "lr", lr)
        self._last_lr = _read(self.optimizer, "lr")


class _LRScheduler(LRScheduler):
    """Backward-compatible name of ``LRScheduler``."""


# formula schedulers: constructors validate and store options under torch's attribute names
def _save_lambdas(fns):
    # plain functions cannot be saved; callable objects are saved as their __dict__
    return [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy() for fn in fns]


def _load_lambdas(sched, saved):
    for fn, state in zip(sched.lr_lambdas, saved):
        if state is not None:
            fn.__dict__.update(state)


def _lambdas(optimizer, lr_lambda):
    n = len(optimizer.param_groups)
    if not isinstance(lr_lambda, (list, tuple)):
        return [lr_lambda] * n
    if len(lr_lambda) != n:
        raise ValueError(f"Expected {n} lr_lambdas, but got {len(lr_lambda)}")
    return list(lr_lambda)


class LambdaLR(LRScheduler):
    """lr = initial_lr * lr_lambda(epoch), with one function or one per param group."""
    _rule = "LambdaLR"
    _special_state = {"lr_lambdas": (_save_lambdas, _load_lambdas)}

    def __init__(self, optimizer, lr_lambda, last_epoch=-1) -> None:
        self.optimizer = optimizer
        self.lr_lambdas = _lambdas(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)


class MultiplicativeLR(LRScheduler):
    """Multiply the lr by lr_lambda(epoch) at every step after the first."""
    _rule = "MultiplicativeLR"
    _special_state = LambdaLR._special_state

    def __init__(self, optimizer, lr_lambda, last_epoch=-1) -> None:
        self.optimizer = optimizer
        self.lr_lambdas = _lambdas(optimizer, lr_lambda)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` epochs."""
    _rule = "StepLR"

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1) -> None:
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)


class MultiStepLR(LRScheduler):
    """Multiply the lr by ``gamma`` at each milestone epoch."""
    _rule = "MultiStepLR"

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1) -> None:
        self.milestones, self.gamma = Counter(milestones), gamma
        super().__init__(optimizer, last_epoch)


class ConstantLR(LRScheduler):
    """Scale the lr by ``factor`` for the first ``total_iters`` epochs."""
    _rule = "ConstantLR"

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1) -> None:
        if factor < 0 or 1.0 < factor:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)


class LinearLR(LRScheduler):
    """Move the lr factor linearly from ``start_factor`` to ``end_factor`` over ``total_iters`` epochs."""
    _rule = "LinearLR"

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1) -> None:
        if start_factor <= 0 or 1.0 < start_factor:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and less or equal to 1.")
        if end_factor < 0 or 1.0 < end_factor:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)


class ExponentialLR(LRScheduler):
    """Multiply the lr by ``gamma`` every epoch."""
    _rule = "ExponentialLR"

    def __init__(self, optimizer, gamma, last_epoch=-1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)


class PolynomialLR(LRScheduler):
    """Decay the lr to zero as (1 - epoch/total_iters) ** power."""
    _rule = "PolynomialLR"

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1) -> None:
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial lr to ``eta_min`` over ``T_max`` epochs (and back, periodically)."""
    _rule = "CosineAnnealingLR"

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1) -> None:
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)


class ReduceLROnPlateau(LRScheduler):
    """Multiply the lr by ``factor`` (not below ``min_lr``) once ``metrics`` passed to ``step`` has not
    improved by more than ``threshold`` for ``patience`` epochs; then wait ``cooldown`` epochs."""

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel",
                 cooldown=0, min_lr=0, eps=1e-8) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        self.optimizer = _check_optimizer(optimizer)
        n = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != n:
                raise ValueError(f"expected {n} min_lrs, got {len(min_lr)}")
            self.default_min_lr, self.min_lrs = None, list(min_lr)
        else:
            self.default_min_lr, self.min_lrs = min_lr, [min_lr] * n
        self.patience, self.cooldown, self.eps = patience, cooldown, eps
        self.last_epoch = 0
        self._last_lr = _read(optimizer, "lr")
        self._init_is_better(mode=mode, threshold=threshold, threshold_mode=threshold_mode)
        self._reset()

    def _reset(self) -> None:
        self.best, self.cooldown_counter, self.num_bad_epochs = self.mode_worse, 0, 0

    def _init_is_better(self, mode, threshold, threshold_mode) -> None:
        if mode not in ("min", "max"):
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode_worse = inf if mode == "min" else -inf
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0

    def _is_better(self, a, best):
        lower = self.mode == "min"
        if self.threshold_mode == "rel":
            bound = best * (1.0 - self.threshold if lower else self.threshold + 1.0)
        else:
            bound = best - self.threshold if lower else best + self.threshold
        return a < bound if lower else a > bound

    def step(self, metrics, epoch=None) -> None:
        """Record this epoch's ``metrics`` (a number or 0-d tensor) and reduce the lrs on a plateau."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:  # bad epochs during the cooldown do not count
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr(epoch)
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = _read(self.optimizer, "lr")

    def _reduce_lr(self, epoch) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):  # a param group was added since construction
            if self.default_min_lr is None:
                raise RuntimeError(f"The number of param groups in the `optimizer` ({len(groups)}) differs from "
                                   f"when `ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), usually due "
                                   "to a new param group being added to the optimizer. Please modify the `min_lrs` "
                                   "field to match the length of the `optimizer` param groups.")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, floor in zip(groups, self.min_lrs):
            old = float(group["lr"])
            new = max(old * self.factor, floor)
            if old - new > self.eps:  # skip updates too small to matter
                _write(group, "lr", new)

    def load_state_dict(self, state_dict) -> None:
        """Restore the state saved by ``state_dict()`` (re-validating mode and threshold_mode)."""
        super().load_state_dict(state_dict)
        self._init_is_better(mode=self.mode, threshold=self.threshold, threshold_mode=self.threshold_mode)


# composite schedulers: the children's states are nested in state_dict
def _load_children(sched, saved):
    for child, state in zip(sched._schedulers, saved):
        child.load_state_dict(state)


_CHILDREN_STATE = {"_schedulers": (lambda children: [s.state_dict() for s in children], _load_children)}


def _check_children(owner, optimizer, schedulers) -> None:
    name = type(owner).__name__
    for i, s in enumerate(schedulers):
        if not hasattr(s, "optimizer"):
            raise TypeError(f"{name} at index {i} should have `optimizer` as its attribute.")
        if isinstance(s, ReduceLROnPlateau):
            raise ValueError(f"{name} does not support `ReduceLROnPlateau` scheduler as it requires additional "
                             "kwargs to be specified when calling `step`, but got one at index "
                             f"{i} in the given schedulers sequence.")
        if optimizer != s.optimizer:
            raise ValueError(f"{name} expects all schedulers to belong to the same optimizer, but got scheduler "
                             f"{type(s).__name__} at index {i} has {s.optimizer}, which is "
                             f"different from {type(optimizer).__name__}.")


class SequentialLR(LRScheduler):
    """Hand the optimizer to ``schedulers[i]`` from epoch ``milestones[i-1]`` on; each scheduler starts its
    own schedule (epoch 0, from the initial lr's closed form) when it takes over."""

    _special_state = _CHILDREN_STATE

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1) -> None:
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler, but got no scheduler.")
        _check_children(self, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be one more than the "
                             f"number of milestone points, but got number of schedulers {len(schedulers)} and the "
                             f"number of milestones to be equal to {len(milestones)}")
        self._schedulers, self._milestones = schedulers, milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # the children stepped once when they were built: start over from the initial lrs, with only the
        # scheduler active at epoch 0 making its first step
        for group in optimizer.param_groups:
            _write(group, "lr", group["initial_lr"])
        self.recursive_undo()
        first = schedulers[bisect_right(milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def recursive_undo(self, sched=None) -> None:
        """Take back the constructor step of every (nested) child scheduler."""
        target = self if sched is None else sched
        if hasattr(target, "_schedulers"):  # a composite: undo its children instead
            for child in target._schedulers:
                self.recursive_undo(child)
        elif hasattr(target, "last_epoch"):
            target.last_epoch -= 1

    def step(self) -> None:
        """Advance one epoch, switching scheduler at a milestone."""
        self.last_epoch += 1
        i = bisect_right(self._milestones, self.last_epoch)
        current = self._schedulers[i]
        if i > 0 and self._milestones[i - 1] == self.last_epoch:
            current._update_lr(0)
        else:
            current.step()
        self._last_lr = current.get_last_lr()


class ChainedScheduler(LRScheduler):
    """Step every scheduler of ``schedulers`` at each ``step()``, so their chainable updates compose."""

    _special_state = _CHILDREN_STATE

    def __init__(self, schedulers, optimizer=None) -> None:
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler to be chained, but got no "
                             "scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        _check_children(self, optimizer, schedulers)
        self._schedulers, self.optimizer = schedulers, optimizer
        self._last_lr = _read(schedulers[-1].optimizer, "lr")

    def step(self) -> None:
        """Step each child scheduler in order."""
        for s in self._schedulers:
            s.step()
        self._last_lr = _read(self._schedulers[-1].optimizer, "lr")


# the cyclic schedules live in their own module (which builds on the classes above)
from .lr_scheduler_cyclic import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR  # noqa: E402
