"""ember.utils: Python dispatch modes (``_python_dispatch``); datasets and loaders (``data``); C++
extensions (``cpp_extension``, imported where used: it needs pybind11 and a C++ compiler)."""
from . import data  # noqa: F401

