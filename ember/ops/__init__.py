"""Operators: the table (`table/`), its machinery (`registry.py`, `codegen.py`), and kernels by
backend (`cpu/`, `meta/`). ``ember.ops.aten.add.Tensor`` is an operator overload."""
from .registry import aten  # noqa: F401
