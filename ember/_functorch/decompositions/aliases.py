"""Operators that are another operator under a second name, with the same arguments
(``subtract.Tensor`` is ``sub.Tensor``): their decomposition calls the other one."""
from __future__ import annotations

ALIASES = {
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh", "arccosh": "acosh",
    "arctanh": "atanh", "arctan2": "atan2", "negative": "neg", "fix": "trunc",
    "subtract.Tensor": "sub.Tensor", "multiply.Tensor": "mul.Tensor", "divide.Tensor": "div.Tensor",
    "divide.Tensor_mode": "div.Tensor_mode", "true_divide.Tensor": "div.Tensor",
    "not_equal.Tensor": "ne.Tensor", "less.Tensor": "lt.Tensor", "less_equal.Tensor": "le.Tensor",
    "greater.Tensor": "gt.Tensor", "greater_equal.Tensor": "ge.Tensor", "clip": "clamp", "clip.Tensor": "clamp.Tensor",
    "linalg_matmul": "matmul", "inverse": "linalg_inv", "det": "linalg_det", "slogdet": "linalg_slogdet",
    "ger": "outer",
    "matrix_power": "linalg_matrix_power",
}


def alias_entries() -> dict:
    from ...ops.registry import OPERATORS
    entries = {}
    for name, target in ALIASES.items():
        op = OPERATORS["aten::" + target]

        def call(*args, _op=op, **kwargs):
            return _op(*args, **kwargs)
        call.__name__ = f"{name.split('.')[0]}_alias"
        entries[name] = call
    return entries
