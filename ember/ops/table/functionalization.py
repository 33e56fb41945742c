"""Operators functionalisation needs (ember/_functorch/functionalize.py), as PyTorch has them:

* the *scatter* ops, inverse of the slicing views: ``select_scatter(self, src, dim, index)`` is a
  copy of ``self`` with ``src`` written where ``self.select(dim, index)`` is. A mutation made
  through a view becomes one of these on the view's base;
* a functional variant of every in-place op whose table has none (``copy_`` -> ``copy``,
  ``fill_.Scalar`` -> ``fill.Scalar``, ``uniform_`` -> ``uniform`` ...): the in-place kernel run on
  a fresh copy, so values and random draws are eager's;
* ``<view>_copy`` for every view row (``view_copy``, ``select_copy.int``, ``t_copy`` ...): the
  view's result as a new tensor, for ``functionalize(fn, remove="mutations_and_views")``.

The variants and copies are rows generated from the rows they derive from, so their schemas
and kernels follow those rows; their derivatives are those rows' formulas
(ember/ops/derivatives/functionalization.py).
"""
from __future__ import annotations

import re

from ..._core.dispatch import DispatchKey
from ..registry import Op, OPERATORS, copy_into
from ..cpu import views as v
from ..cpu.conversion import clone as _clone_cpu, clone_meta as _clone_meta
from . import conversion, creation, nn, shape


def _fresh_copy(t):
    """A copy of `t` on its backend, laid out as ``clone()`` lays it (a meta tensor stays data-less)."""
    return _clone_meta(t) if t.is_meta else _clone_cpu(t)


def _scatter(name, view_kernel):
    """``<view>_scatter(self, src, *view_args)``: a copy of self with src written into the view."""
    def kernel(self, src, *view_args):
        out = _fresh_copy(self)
        target = view_kernel(out, *view_args)
        if tuple(target.shape) != tuple(src.shape):
            raise RuntimeError(f"{name}(): expected src to have a size equal to the slice of self. src size = "
                               f"{list(src.shape)}, slice size = {list(target.shape)}")
        if not out.is_meta:
            copy_into(target, src)
        return out
    kernel.__name__ = name
    return kernel


def _scatter_row(schema, view_kernel):
    name = schema.split("(", 1)[0].split(".")[0]
    kernel = _scatter(name, view_kernel)
    return Op(schema, cpu=kernel, meta=kernel)


SCATTER_OPS = [
    _scatter_row("select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor", v.select),
    _scatter_row("slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, "
                 "SymInt step=1) -> Tensor", v.slice),
    _scatter_row("diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> Tensor",
                 v.diagonal),
    _scatter_row("as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, "
                 "SymInt? storage_offset=None) -> Tensor", v.as_strided),
]

# in-place op -> the schema of its functional variant (PyTorch's names)
FUNCTIONAL_VARIANTS = {
    "copy_": "copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor",
    "fill_.Scalar": "fill.Scalar(Tensor self, Scalar value) -> Tensor",
    "fill_.Tensor": "fill.Tensor(Tensor self, Tensor value) -> Tensor",
    "zero_": "zero(Tensor self) -> Tensor",
    "uniform_": "uniform(Tensor self, float from=0., float to=1., *, Generator? generator=None) -> Tensor",
    "normal_": "normal.functional(Tensor self, float mean=0., float std=1., *, Generator? generator=None) -> Tensor",
    "bernoulli_.Tensor": "bernoulli.Tensor(Tensor self, Tensor p, *, Generator? generator=None) -> Tensor",
    "exponential_": "exponential(Tensor self, float lambd=1., *, Generator? generator=None) -> Tensor",
    "geometric_": "geometric(Tensor self, float p, *, Generator? generator=None) -> Tensor",
    "log_normal_": "log_normal(Tensor self, float mean=1., float std=2., *, Generator? generator=None) -> Tensor",
    "cauchy_": "cauchy(Tensor self, float median=0., float sigma=1., *, Generator? generator=None) -> Tensor",
    "random_.from": "random.from(Tensor self, int from, int? to, *, Generator? generator=None) -> Tensor",
    "random_.to": "random.to(Tensor self, int to, *, Generator? generator=None) -> Tensor",
    "random_": "random(Tensor self, *, Generator? generator=None) -> Tensor",
    "embedding_renorm_": "embedding_renorm(Tensor self, Tensor indices, float max_norm, float norm_type) -> Tensor",
}


def _variant_kernel(inplace_name, key):
    """The in-place op's `key` kernel, run on a fresh copy of self (looked up at call time: the
    in-place row is registered by then)."""
    def kernel(self, *args):
        return OPERATORS["aten::" + inplace_name].kernels[key](_fresh_copy(self), *args)
    kernel.__name__ = inplace_name.split(".")[0].rstrip("_")
    return kernel


def _rows_by_name(*families):
    return {row.schema.split("(", 1)[0]: row for family in families for row in family.OPS}


_SOURCES = _rows_by_name(conversion, creation, nn)
VARIANT_OPS = [Op(schema, cpu=_variant_kernel(name, DispatchKey.CPU), meta=_variant_kernel(name, DispatchKey.Meta),
                  variants="", nondeterministic=_SOURCES[name].nondeterministic)
               for name, schema in FUNCTIONAL_VARIANTS.items()]


def _is_view_row(row) -> bool:
    """A view op: its result aliases ``self`` without writing it (``-> Tensor(a)``)."""
    return re.search(r"->\s*Tensor\(a\)", row.schema) is not None


def _view_copy_kernel(view_op_name, key):
    def kernel(*args):
        out = OPERATORS["aten::" + view_op_name].table[key](*args)
        return [_fresh_copy(o) for o in out] if isinstance(out, (list, tuple)) else _fresh_copy(out)
    return kernel


def _copy_schema(schema: str) -> str:
    head, rest = schema.split("(", 1)
    name, _, overload = head.partition(".")
    return f"{name}_copy{'.' + overload if overload else ''}(" + re.sub(r"\(a!?\)", "", rest)


# the view rows with their own kernels (PyTorch has <view>_copy for each; contiguous is a view
# only when its input already is one: PyTorch has no contiguous_copy)
VIEW_COPY_SOURCES = [row for row in shape.OPS + conversion.OPS
                     if _is_view_row(row) and row.composite is None and not row.schema.startswith("contiguous")]
VIEW_COPY_OPS = [Op(_copy_schema(row.schema), cpu=_view_copy_kernel(row.schema.split("(")[0], DispatchKey.CPU),
                    meta=_view_copy_kernel(row.schema.split("(")[0], DispatchKey.Meta), variants="")
                 for row in VIEW_COPY_SOURCES]

OPS = SCATTER_OPS + VARIANT_OPS + VIEW_COPY_OPS
