"""Operators: the table (`table/`), its machinery (`registry.py`, `codegen.py`), and kernels by
backend (`cpu/`, `meta/`). ``ember.ops.aten.add.Tensor`` is an operator overload;
``ember.ops.<ns>`` holds the operators a user defined with ``ember.library``."""
from .registry import aten  # noqa: F401


def __getattr__(name):
    from .registry import _namespaces
    if name in _namespaces:
        return _namespaces[name]
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"ember.ops has no namespace '{name}' (define operators with ember.library)")
