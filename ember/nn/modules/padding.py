"""Padding modules: Constant/Zero/Reflection/Replication/Circular Pad 1d, 2d, 3d (torch/nn/modules/padding.py).

Each is F.pad with a mode and a padding tuple of 2 * n ints (an int pads every side); one table
below makes the fifteen classes.
"""
from __future__ import annotations

from .. import functional as F
from ._common import _ntuple
from .module import Module

_MODES = {"Constant": "constant", "Zero": "constant", "Reflection": "reflect", "Replication": "replicate",
          "Circular": "circular"}
__all__ = [f"{kind}Pad{n}d" for kind in _MODES for n in (1, 2, 3)]


class _PadNd(Module):
    _mode = "constant"
    _n = 1

    def __init__(self, padding, value: float = 0.0):
        super().__init__()
        self.padding = _ntuple(2 * self._n, "_padding")(padding)
        if self._mode == "constant":
            self.value = value

    def _check_input_dim(self, input):
        """Circular padding checks the input's rank itself (the others leave it to F.pad)."""
        n = self._n
        if self._mode == "circular" and input.dim() not in (n + 1, n + 2):
            raise ValueError(f"expected {n + 1}D or {n + 2}D input (got {input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        if type(self).__name__.startswith("Constant"):
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


def _constant_init(self, padding, value):
    _PadNd.__init__(self, padding, value)


def _fixed_init(self, padding):
    _PadNd.__init__(self, padding)


for _kind, _mode in _MODES.items():
    for _n in (1, 2, 3):
        _name = f"{_kind}Pad{_n}d"
        globals()[_name] = type(_name, (_PadNd,), {
            "_mode": _mode, "_n": _n, "__module__": __name__,
            "__init__": _constant_init if _kind == "Constant" else _fixed_init,
            "__doc__": f"Pads the last {_n} dims of the input with F.pad(mode={_mode!r}).",
        })
