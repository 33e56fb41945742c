"""conv operators (table rows)."""
from ..registry import Op  # noqa: F401

OPS = []
