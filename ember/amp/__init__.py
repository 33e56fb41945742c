"""``ember.amp``: automatic mixed precision (``ember.autocast``, ``GradScaler``), as ``torch.amp``."""
from .autocast_mode import autocast, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "is_autocast_available", "GradScaler"]
