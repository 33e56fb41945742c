"""The cyclic learning-rate schedules of torch.optim.lr_scheduler: CosineAnnealingWarmRestarts (SGDR),
OneCycleLR (one warm-up and annealing cycle) and CyclicLR (triangular / triangular2 / exp_range cycles between two bounds), both
moving momentum (or Adam's beta1) against the lr. Imported into ember.optim.lr_scheduler."""
from __future__ import annotations

import math
import types

from .lr_scheduler import LRScheduler, _check_optimizer, _flag, _per_group, _warn_get_lr_called_within_step

__all__ = ["CosineAnnealingWarmRestarts", "OneCycleLR", "CyclicLR"]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing restarted every ``T_i`` epochs, the period growing by ``T_mult`` (SGDR); ``T_cur``
    counts epochs since the last restart and ``step(epoch)`` accepts fractional epochs."""

    _rule = "CosineAnnealingWarmRestarts"

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1) -> None:
        if not (T_0 > 0 and isinstance(T_0, int)):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if not (T_mult >= 1 and isinstance(T_mult, int)):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}")
        self.T_0, self.T_i, self.T_mult, self.eta_min, self.T_cur = T_0, T_0, T_mult, eta_min, last_epoch
        super().__init__(optimizer, last_epoch)

    def step(self, epoch=None) -> None:
        """Advance one epoch, or (re)position the cycle at ``epoch``."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:  # restart, with a longer period
                self.T_cur, self.T_i = self.T_cur % self.T_i, self.T_i * self.T_mult
        elif epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        elif epoch < self.T_0:
            self.T_i, self.T_cur = self.T_0, epoch
        elif self.T_mult == 1:
            self.T_cur = epoch % self.T_0
        else:
            # cycle n starts at T_0 * (T_mult**n - 1) / (T_mult - 1) (geometric series of the periods)
            n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
            self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
            self.T_i = self.T_0 * self.T_mult ** n
        self.last_epoch = math.floor(epoch)
        with _flag(self, "_get_lr_called_within_step"):
            lrs = self.get_lr()
        self._apply(lrs)


_ANNEAL = {
    "cos": lambda start, end, pct: end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1),
    "linear": lambda start, end, pct: (end - start) * pct + start,
}
_PHASE_KEYS = ("end_step", "start_lr", "end_lr", "start_momentum", "end_momentum")


class OneCycleLR(LRScheduler):
    """The 1cycle policy: anneal the lr from ``max_lr / div_factor`` up to ``max_lr`` and then far below
    the start, while momentum (or Adam's beta1) moves the opposite way.  Steps per batch, ``total_steps``
    times at most."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None, pct_start=0.3,
                 anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85, max_momentum=0.95,
                 div_factor=25.0, final_div_factor=1e4, three_phase=False, last_epoch=-1) -> None:
        self.optimizer = _check_optimizer(optimizer)
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
            for name, count in (("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
                if not (isinstance(count, int) and count > 0):
                    raise ValueError(f"Expected positive integer {name}, but got {count}")
            total_steps = epochs * steps_per_epoch
        elif not (total_steps > 0 and isinstance(total_steps, int)):
            raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
        self.total_steps = total_steps
        # each phase anneals lr and momentum between two named group entries, ending at step `end_step`
        up = (float(pct_start * self.total_steps) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum")
        last = self.total_steps - 1
        phases = [up, (float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr", "base_momentum",
                       "max_momentum"), (last, "initial_lr", "min_lr", "max_momentum", "max_momentum")] \
            if three_phase else [up, (last, "max_lr", "min_lr", "base_momentum", "max_momentum")]
        self._schedule_phases = [dict(zip(_PHASE_KEYS, p)) for p in phases]
        if pct_start < 0 or 1 < pct_start or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in _ANNEAL:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for group, top in zip(optimizer.param_groups, max_lrs):
                group.update(initial_lr=top / div_factor, max_lr=top)
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            highs = _per_group("max_momentum", optimizer, max_momentum)
            lows = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for group, high, low in zip(optimizer.param_groups, highs, lows):
                    self._set_momentum(group, high)
                    group.update(max_momentum=high, base_momentum=low)
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group, value) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def get_lr(self):
        """The lr at step ``last_epoch`` of the cycle (also sets each group's momentum / beta1)."""
        _warn_get_lr_called_within_step(self)
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is {self.total_steps}")
        # the phase holding `step` (the last one absorbs anything beyond) and where it started
        start = 0.0
        for phase in self._schedule_phases:
            if step <= phase["end_step"] or phase is self._schedule_phases[-1]:
                break
            start = phase["end_step"]
        pct = (step - start) / (phase["end_step"] - start)
        anneal = _ANNEAL[self._anneal_func_type]
        lrs = []
        for group in self.optimizer.param_groups:
            lrs.append(anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
            if self.cycle_momentum:
                self._set_momentum(group, anneal(group[phase["start_momentum"]], group[phase["end_momentum"]], pct))
        return lrs


# the built-in amplitude scales: scale_fn(x) with x the cycle number ("cycle") or the iteration
_CYCLIC_MODES = {
    "triangular": ("cycle", lambda gamma: lambda x: 1.0),
    "triangular2": ("cycle", lambda gamma: lambda x: 1 / (2.0 ** (x - 1))),
    "exp_range": ("iterations", lambda gamma: lambda x: gamma ** x),
}


class CyclicLR(LRScheduler):
    """Cyclical learning rates (Smith 2017): the lr climbs from ``base_lr`` to ``max_lr`` in
    ``step_size_up`` steps and back in ``step_size_down``, the amplitude scaled per cycle or per
    iteration by the mode's (or the given) ``scale_fn``; momentum moves the opposite way. Steps per batch."""

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None, mode="triangular",
                 gamma=1.0, scale_fn=None, scale_mode="cycle", cycle_momentum=True, base_momentum=0.8,
                 max_momentum=0.9, last_epoch=-1) -> None:
        self.optimizer = _check_optimizer(optimizer)
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for group, lr in zip(optimizer.param_groups, base_lrs):
                group["lr"] = lr
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in _CYCLIC_MODES and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            self.max_momentums = _per_group("max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for group, high, low in zip(optimizer.param_groups, self.max_momentums, self.base_momentums):
                    self._set_momentum(group, high)
                    group.update(max_momentum=high, base_momentum=low)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        """A built-in mode fixes its scale_fn and scale_mode (not saved: rebuilt from mode and gamma)."""
        if self._scale_fn_custom is None:
            self.scale_mode, make = _CYCLIC_MODES[self.mode]
            self._scale_fn_ref = make(self.gamma)

    def scale_fn(self, x) -> float:
        return (self._scale_fn_custom or self._scale_fn_ref)(x)

    _set_momentum = OneCycleLR._set_momentum

    def get_lr(self):
        """The lr at iteration ``last_epoch`` (also sets each group's momentum / beta1)."""
        _warn_get_lr_called_within_step(self)
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle   # position within the cycle, in [0, 1)
        rise = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base + (top - base) * rise * scale for base, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, low, high in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                self._set_momentum(group, high - (high - low) * rise * scale)
        return lrs

    def state_dict(self) -> dict:
        """As the base's, without the built-in scale function; a custom callable object's __dict__ is kept
        (a plain function cannot be saved: None)."""
        state = super().state_dict()
        state.pop("_scale_fn_ref", None)
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None if fn is None or isinstance(fn, types.FunctionType) else fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state = dict(state_dict)
        saved_fn = state.pop("_scale_fn_custom")
        super().load_state_dict(state)
        if saved_fn is not None:
            self._scale_fn_custom.__dict__.update(saved_fn)
        self._init_scale_fn()
