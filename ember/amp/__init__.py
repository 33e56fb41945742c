"""``ember.amp``: automatic mixed precision (``ember.autocast``), as ``torch.amp``."""
from .autocast_mode import autocast, is_autocast_available

__all__ = ["autocast", "is_autocast_available"]
