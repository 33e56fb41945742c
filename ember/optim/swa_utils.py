"""Stochastic weight averaging (torch.optim.swa_utils): AveragedModel keeps a running (SWA) or
exponential (EMA) average of a model's parameters, SWALR anneals the lr to a constant SWA lr, and
update_bn recomputes BatchNorm statistics for the averaged weights with one pass over the data."""
from __future__ import annotations

import itertools
import math
from copy import deepcopy

import ember
from ember.nn import Module

from .lr_scheduler import LRScheduler, _per_group, _warn_get_lr_called_within_step

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_avg_fn(decay=0.999):
    """avg_fn for an exponential moving average: decay * averaged + (1 - decay) * current."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with ember.no_grad():
            return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """avg_fn for the running mean: averaged + (current - averaged) / (n + 1)."""
    def swa_update(averaged_param, current_param, num_averaged):
        with ember.no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


def get_ema_multi_avg_fn(decay=0.999):
    """multi_avg_fn (updates lists of tensors in place) for an exponential moving average."""
    _check_decay(decay)

    def ema_update(ema_params, current_params, _num_averaged):
        with ember.no_grad():
            for ema, current in zip(ema_params, current_params, strict=True):
                if ema.is_floating_point() or ema.is_complex():
                    ema.lerp_(current, 1 - decay)
                else:
                    ema.copy_(ema * decay + current * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """multi_avg_fn for the running mean."""
    def swa_update(averaged_params, current_params, num_averaged):
        with ember.no_grad():
            for averaged, current in zip(averaged_params, current_params, strict=True):
                if averaged.is_floating_point() or averaged.is_complex():
                    averaged.lerp_(current, float(1 / (num_averaged + 1)))
                elif isinstance(num_averaged, ember.Tensor):   # integer division is refused, as torch's
                    averaged.addcdiv_(current - averaged, num_averaged + 1)
                else:
                    averaged.add_(current - averaged, alpha=1.0 / (num_averaged + 1))
    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters (and, with ``use_buffers``, buffers) are the average of the
    ones passed to ``update_parameters``; ``n_averaged`` counts them. Calls run the averaged copy."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", ember.tensor(0, dtype=ember.long, device=device))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _averaged_tensors(self, model):
        if self.use_buffers:
            return (itertools.chain(self.module.parameters(), self.module.buffers()),
                    itertools.chain(model.parameters(), model.buffers()))
        return self.parameters(), model.parameters()

    def update_parameters(self, model) -> None:
        """Fold ``model``'s current values into the average (the first call copies them)."""
        mine, theirs = self._averaged_tensors(model)
        pairs = [(a.detach(), m.detach().to(a.device)) for a, m in zip(mine, theirs)]
        with ember.no_grad():
            if int(self.n_averaged) == 0:
                for averaged, current in pairs:
                    averaged.copy_(current)
            elif self.multi_avg_fn is not None:
                self.multi_avg_fn([a for a, _ in pairs], [c for _, c in pairs], self.n_averaged)
            else:   # torch's CPU path: the per-tensor running mean unless another avg_fn is given
                average = self.avg_fn or get_swa_avg_fn()
                for averaged, current in pairs:
                    averaged.copy_(average(averaged, current, self.n_averaged))
            if not self.use_buffers:   # buffers (BatchNorm statistics) follow the model itself
                for mine_b, theirs_b in zip(self.module.buffers(), model.buffers(), strict=True):
                    mine_b.copy_(theirs_b.detach().to(mine_b.device))
            self.n_averaged += 1


def update_bn(loader, model, device=None) -> None:
    """Recompute the running statistics of every BatchNorm in ``model`` over ``loader`` (cumulative
    averages: momentum None during the pass), leaving the model's training mode as it was."""
    from ember.nn.modules.normalization import _BatchNorm
    momenta = {m: m.momentum for m in model.modules() if isinstance(m, _BatchNorm)}
    if not momenta:
        return
    for module in momenta:
        module.reset_running_stats()
        module.momentum = None
    was_training = model.training
    model.train()
    with ember.no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            model(batch if device is None else batch.to(device))
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


_SWA_ANNEAL = {"cos": lambda t: (1 - math.cos(math.pi * t)) / 2, "linear": lambda t: t}


class SWALR(LRScheduler):
    """Anneal each group's lr to ``swa_lr`` over ``anneal_epochs`` epochs (cosine or linear), then hold it."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1) -> None:
        for value, group in zip(_per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups, strict=True):
            group["swa_lr"] = value
        if anneal_strategy not in _SWA_ANNEAL:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_strategy = anneal_strategy
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def anneal_func(self, t):
        return _SWA_ANNEAL[self._anneal_strategy](t)

    def get_lr(self):
        """Recover the lr the annealing started from (the previous step's mix), then mix the next step's."""
        _warn_get_lr_called_within_step(self)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        span = max(1, self.anneal_epochs)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / span)))
        alpha = self.anneal_func(max(0, min(1, step / span)))
        lrs = []
        for group in self.optimizer.param_groups:
            start = group["swa_lr"] if prev_alpha == 1 else (group["lr"] - prev_alpha * group["swa_lr"]) / (1 - prev_alpha)
            lrs.append(group["swa_lr"] * alpha + start * (1 - alpha))
        return lrs
