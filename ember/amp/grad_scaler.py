"""``ember.amp.GradScaler``: dynamic loss scaling for float16 training, as ``torch.amp.GradScaler``.

``scale(loss)`` multiplies by the scale; ``unscale_(opt)`` divides the gradients back and notes any
inf/NaN; ``step(opt)`` skips the optimizer step when there was one; ``update()`` halves the scale
after an overflow and doubles it after ``growth_interval`` clean steps. The scale and the growth
tracker are tensors on the scaler's device, as in PyTorch; the inf/NaN check stays there too, and
``step`` reads it back once to decide.
"""
from __future__ import annotations

import warnings

_READY, _UNSCALED, _STEPPED = 0, 1, 2


class GradScaler:
    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        from .. import cuda
        self._device = str(device)
        if enabled and self._device.startswith("cuda") and not cuda.is_available():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.")
            enabled = False
        self._enabled = enabled
        self._init_scale, self._growth_factor, self._backoff_factor = init_scale, growth_factor, backoff_factor
        self._growth_interval = growth_interval
        self._scale = self._growth_tracker = None
        self._per_optimizer = {}

    def _lazy_init(self):
        from .. import full, zeros, float32, int32
        if self._scale is None:
            self._scale = full((), self._init_scale, dtype=float32, device=self._device)
            self._growth_tracker = zeros((), dtype=int32, device=self._device)

    def scale(self, outputs):
        """`outputs` (a tensor or nested sequences of them) times the current scale."""
        if not self._enabled:
            return outputs
        self._lazy_init()
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        return outputs * self._scale.to(outputs.device)

    def _state(self, optimizer):
        return self._per_optimizer.setdefault(id(optimizer), {"stage": _READY, "found_inf": None})

    def unscale_(self, optimizer):
        """Divide the optimizer's gradients by the scale, in place, noting whether any is inf/NaN."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state["stage"] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        from .. import float64, float32, zeros, isfinite
        self._lazy_init()
        inv_scale = self._scale.to(float64).reciprocal().to(float32)
        found = zeros((), dtype=float32, device=self._device)
        with _no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    found = found.maximum((~isfinite(p.grad).all()).to(float32).to(found.device))
                    p.grad.mul_(inv_scale.to(p.grad.device, p.grad.dtype))
        state["found_inf"], state["stage"] = found, _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step()`` unless the unscaled gradients held an inf or NaN; returns its result."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        state = self._state(optimizer)
        if state["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        result = None if float(state["found_inf"]) else optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return result

    def update(self, new_scale=None):
        """Back off after an overflow, grow after `growth_interval` clean steps (or set `new_scale`)."""
        if not self._enabled:
            return
        self._lazy_init()
        if new_scale is not None:
            self._scale.fill_(float(new_scale))
        else:
            found = [s["found_inf"] for s in self._per_optimizer.values() if s["found_inf"] is not None]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            if any(float(f) for f in found):
                self._scale.mul_(self._backoff_factor)
                self._growth_tracker.fill_(0)
            else:
                self._growth_tracker.add_(1)
                if int(self._growth_tracker) == self._growth_interval:
                    self._scale.mul_(self._growth_factor)
                    self._growth_tracker.fill_(0)
        self._per_optimizer = {}

    def get_scale(self) -> float:
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale)

    def get_growth_factor(self):
        return self._growth_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def get_growth_interval(self):
        return self._growth_interval

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": 0 if self._growth_tracker is None else int(self._growth_tracker)}

    def load_state_dict(self, state_dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        self._growth_factor, self._backoff_factor = state_dict["growth_factor"], state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._scale = None
        self._lazy_init()
        self._growth_tracker.fill_(state_dict["_growth_tracker"])


def _no_grad():
    from ..autograd.grad_mode import no_grad
    return no_grad()
