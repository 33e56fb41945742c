"""ember.utils: Python dispatch modes (``_python_dispatch``); datasets and loaders (``data``)."""
from . import data  # noqa: F401

