"""Derivatives of the operators functionalisation adds (ember/ops/table/functionalization.py).

The scatter ops send the written window's gradient to ``src`` and the rest to ``self``; a
functional variant (``fill.Scalar``) differentiates as its in-place op (``fill_.Scalar``) and a
``<view>_copy`` as its view: their formulas are looked up in the families that define those.
"""
from __future__ import annotations

from importlib import import_module


def _zeros_like(t):
    from ... import zeros_like
    return zeros_like(t)


def _aten():
    from ..registry import aten
    return aten


FORMULAS = {
    "select_scatter": lambda grad, src, dim, index: (
        _aten().select_scatter.default(grad, _zeros_like(src), dim, index), _aten().select.int(grad, dim, index)),
    "slice_scatter": lambda grad, src, dim, start, end, step: (
        _aten().slice_scatter.default(grad, _zeros_like(src), dim, start, end, step),
        _aten().slice.Tensor(grad, dim, start, end, step)),
    "diagonal_scatter": lambda grad, src, offset, dim1, dim2: (
        _aten().diagonal_scatter.default(grad, _zeros_like(src), offset, dim1, dim2),
        _aten().diagonal.default(grad, offset, dim1, dim2)),
    "as_strided_scatter": lambda grad, src, size, stride, storage_offset: (
        _aten().as_strided_scatter.default(grad, _zeros_like(src), size, stride, storage_offset),
        _aten().as_strided.default(grad.contiguous(), size, stride, storage_offset)),
}
NONDIFFERENTIABLE = set()


def _inherit():
    """Variants and view copies take the formula (or the nondifferentiable mark) of their source."""
    from ..table import functionalization as table
    sources = {}
    for family in ("pointwise", "shape", "misc", "nn", "indexing"):
        module = import_module(f"{__package__}.{family}")
        for name, fn in getattr(module, "FORMULAS", {}).items():
            sources[name] = fn
        for name in getattr(module, "NONDIFFERENTIABLE", ()):
            sources[name] = None
    pairs = [(inplace, schema.split("(", 1)[0]) for inplace, schema in table.FUNCTIONAL_VARIANTS.items()]
    pairs += [(row.schema.split("(", 1)[0], table._copy_schema(row.schema).split("(", 1)[0])
              for row in table.VIEW_COPY_SOURCES]
    for source, derived in pairs:
        if source in sources:
            if sources[source] is None:
                NONDIFFERENTIABLE.add(derived)
            else:
                FORMULAS[derived] = sources[source]


_inherit()
