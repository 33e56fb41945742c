"""Devices: ``ember.device("cpu")``, ``"cuda:0"``, ``"meta"``."""
from __future__ import annotations

_TYPES = ("cpu", "cuda", "meta")


class device:
    """Where a tensor lives. Compares equal to another device of the same type and index."""

    __slots__ = ("type", "index")

    def __new__(cls, type, index=None):
        if isinstance(type, device):
            return type
        if isinstance(type, int):  # ember.device(0) means cuda:0, as in PyTorch
            type, index = "cuda", type
        if not isinstance(type, str):
            raise TypeError(f"device(): argument 'type' must be str, not {type.__class__.__name__}")
        if ":" in type:
            type, _, idx = type.partition(":")
            if index is not None or not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}:{idx}'")
            index = int(idx)
        if type not in _TYPES:
            raise RuntimeError(f"Expected one of cpu, cuda, meta device type at start of device string: {type}")
        self = object.__new__(cls)
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "index", index)
        return self

    def __setattr__(self, k, v):
        raise AttributeError("device is immutable")

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except RuntimeError:
                return False
        return isinstance(other, device) and self.type == other.type and (
            self.index == other.index or self.index is None or other.index is None)

    def __hash__(self):
        return hash((self.type, self.index))

    def __repr__(self):
        return f"device(type='{self.type}')" if self.index is None else \
            f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __reduce__(self):
        return (device, (self.type, self.index))


CPU = device("cpu")
META = device("meta")
