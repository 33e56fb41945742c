"""ember.nn.functional: the operators of the table whose namespace is "nn.functional"."""
from ..ops.registry import FUNCTIONS as _FUNCTIONS

globals().update(_FUNCTIONS.get("nn.functional", {}))
