"""ember.special: the operators of the table whose namespace is "special"."""
from .ops.registry import FUNCTIONS as _FUNCTIONS

globals().update(_FUNCTIONS.get("special", {}))
