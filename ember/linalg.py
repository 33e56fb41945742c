"""ember.linalg: the operators of the table whose namespace is "linalg"."""
from .ops.registry import FUNCTIONS as _FUNCTIONS

globals().update(_FUNCTIONS.get("linalg", {}))
