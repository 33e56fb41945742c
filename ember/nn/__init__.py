"""ember.nn (modules arrive with the autograd/nn issue); ``ember.nn.functional`` is here."""
from . import functional  # noqa: F401
