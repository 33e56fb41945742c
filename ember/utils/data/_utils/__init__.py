"""Internals of ember.utils.data, laid out as torch.utils.data._utils."""
from . import collate  # noqa: F401
