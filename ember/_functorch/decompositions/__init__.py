"""Decompositions into ember's core op set (ember/_functorch/core_ops.py), by family.

    from ember._functorch.decompositions import core_decompositions, get_decompositions
    gm = make_fx(fn, decomposition_table=core_decompositions())(x)    # only core and kept-whole ops
    get_decompositions([ember.ops.aten.softmax, ember.ops.aten.gelu.default])   # a subset, as torch's

Each family module has ``DECOMPOSITIONS = {"<op>.<overload>": fn}``: one entry per operator,
written in ember ops (``aten.<op>.<overload>(...)`` handles, so the op each step records is the
one the code names), called as PyTorch calls a decomposition: positional arguments, keyword-only
ones by name. An entry may call a non-core op: tracing decomposes that one in turn. Three kinds
of entries are generated, not written:

- ``ALIASES`` (aliases.py): ``subtract.Tensor -> sub.Tensor``: the same arguments, another op;
- a composite row (``reshape``, ``chunk`` ...): its own ``composite`` function (one fact);
- a derived in-place overload (``add_.Tensor``) computes its row's functional op and ends in
  ``copy_`` into ``self``; a derived ``out=`` overload (``add.out``) ends in ``copy_`` into ``out``,
  with eager's dtype check (a result that cannot be cast raises as eager does).
"""
from __future__ import annotations

from importlib import import_module

from ..._core.dispatch import DispatchKey
from ._ops import aten

FAMILIES = ("pointwise", "activation", "reduction", "shape", "indexing", "creation", "linalg", "nn", "loss")

_TABLE: dict = {}       # OperatorHandle -> fn, built on first use

# entries that check their arguments themselves, in eager's order (their Meta kernel checks in another)
# or have no Meta result (a data-dependent size)
OWN_CHECKS = {"lerp.Scalar", "lerp.Tensor", "argwhere", "nonzero_numpy"}

# in-place rows of their own (not derived from a functional row): the functional op they write back
INPLACE_ROWS = {
    "abs_": "abs", "index_add_": "index_add", "index_copy_": "index_copy", "masked_fill_.Scalar": "masked_fill.Scalar",
    "masked_fill_.Tensor": "masked_fill.Tensor", "masked_scatter_": "masked_scatter", "put_": "put",
    "scatter_.reduce": "scatter.reduce", "scatter_.src": "scatter.src", "scatter_add_": "scatter_add",
    "scatter_reduce_.two": "scatter_reduce.two", "index_put_": "index_put",
}


def _written() -> dict:
    """{"name.overload": fn} of every family module, an overload defined twice is an error."""
    from .aliases import alias_entries
    entries = alias_entries()
    for family in FAMILIES:
        module = import_module(f"{__name__}.{family}")
        for name in module.DECOMPOSITIONS:
            if name in entries:
                raise RuntimeError(f"decomposition of {name} is defined twice ({family})")
        entries.update(module.DECOMPOSITIONS)
    return entries


def core_decompositions() -> dict:
    """{OperatorHandle: fn} for every decomposed operator of the table (see core_ops.py)."""
    if not _TABLE:
        from ...ops.registry import OPERATORS
        table = {}
        written = _written()
        for name, fn in written.items():
            op = OPERATORS.get("aten::" + name)
            if op is None:
                raise RuntimeError(f"decomposition of {name}: the table has no such operator")
            table[op] = _checked(op, fn) if DispatchKey.Meta in op.kernels and name not in OWN_CHECKS else fn
        for name, functional in INPLACE_ROWS.items():
            table[OPERATORS["aten::" + name]] = _inplace_entry(OPERATORS["aten::" + name],
                                                               OPERATORS["aten::" + functional])
        view_copies = _view_copies()
        for name, op in OPERATORS.items():
            if op in table or not name.startswith("aten::"):
                continue
            if op.composite is not None and op.row is not None and not op.derived:
                table[op] = op.composite
            elif op.derived:
                table[op] = _derived_entry(op, OPERATORS)
            elif name in view_copies:
                table[op] = _view_copy_entry(OPERATORS[view_copies[name]])
        _TABLE.update(table)
    return dict(_TABLE)


def _checked(op, fn):
    """`fn` after the op's own checks: its Meta kernel runs on metadata-only copies of the tensor
    arguments (nothing computed, recorded or drawn), so bad input raises eager's error and
    message before the decomposition runs (its checks and eager's are one code)."""
    def decomposition(*args, **kwargs):
        check_on_meta(op, args, kwargs)
        return fn(*args, **kwargs)
    decomposition.__name__ = getattr(fn, "__name__", "decomposition")
    decomposition.__wrapped__ = fn
    return decomposition


def check_on_meta(op, args, kwargs) -> None:
    from ..._core.dispatch import _ExcludeDispatchKeyGuard
    from ..._core.tensor import Tensor
    from ... import no_grad

    def meta(value):
        if isinstance(value, Tensor):
            return _meta_copy(value)
        if isinstance(value, (list, tuple)):
            return type(value)(meta(v) for v in value)
        return value
    with _ExcludeDispatchKeyGuard(DispatchKey.Tracer), no_grad():
        op(*(meta(a) for a in args), **{k: meta(v) for k, v in kwargs.items()})


def _meta_copy(t):
    from ..._core.dispatch import META_BIT
    from ..._core.storage import MetaArray
    from ..._core.tensor import _make
    data = t._data
    return _make(MetaArray(data.shape, t.stride(), data.dtype), META_BIT)


def get_decompositions(ops) -> dict:
    """The entries of `ops`: overload handles, or packets (``ember.ops.aten.softmax``: all its
    decomposed overloads), as ``torch._decomp.get_decompositions``."""
    table = core_decompositions()
    picked = {}
    for op in ops:
        overloads = getattr(op, "_overloads", None)
        for handle in (overloads.values() if isinstance(overloads, dict) else (op,)):
            if handle in table:
                picked[handle] = table[handle]
    return picked


def _view_copies() -> dict:
    """{"aten::<view>_copy.<overload>": "aten::<view>.<overload>"}: functionalisation's copies of
    the view rows (ember/ops/table/functionalization.py)."""
    from ...ops.table.functionalization import VIEW_COPY_OPS
    pairs = {}
    for row in VIEW_COPY_OPS:
        name = row.schema.split("(", 1)[0]
        base, _, overload = name.partition(".")
        view = base[:-len("_copy")] + ("." + overload if overload else "")
        pairs["aten::" + name] = "aten::" + view
    return pairs


def _view_copy_entry(view_op):
    """``<view>_copy(*args)`` = a clone of each result of ``<view>(*args)``, laid out as clone lays it
    (the copy op's own kernel does the same)."""
    def decomposition(*args, **kwargs):
        out = view_op(*args, **kwargs)
        if isinstance(out, (list, tuple)):
            return [aten.clone.default(o) for o in out]
        return aten.clone.default(out)
    return decomposition


def _functional_of(op, operators):
    """The functional operator a derived overload comes from (its row's)."""
    row_name = op.row.schema.split("(", 1)[0]
    return operators["aten::" + row_name]


def _derived_entry(op, operators):
    functional = _functional_of(op, operators)
    n_outs = sum(1 for a in op.schema.arguments if a.is_write and a.kwarg_only)
    if not n_outs:
        return _inplace_entry(op, functional)
    return _out_entry(op, functional, n_outs)


def _check_cast(op, dst, result):
    from ..._core import dtype as _dt
    if not _dt.can_cast(result.dtype, dst.dtype):
        raise RuntimeError(f"{op.schema.name}(): result type {result.dtype.c10_name} can't be cast to the desired "
                           f"output type {dst.dtype.c10_name}")


def _inplace_entry(op, functional):
    from ._ops import aten

    def inplace(self, *args, **kwargs):
        result = functional(self, *args, **kwargs)
        _check_cast(op, self, result)
        if tuple(result.shape) != tuple(self.shape):
            raise RuntimeError(f"{op.schema.name}(): output with shape {list(self.shape)} doesn't match the "
                               f"broadcast shape {list(result.shape)}")
        return aten.copy_(self, result)
    inplace.__name__ = f"{op.schema.name}_decomposition"
    return inplace


def _out_entry(op, functional, n_outs):
    from ._ops import aten
    out_names = [a.name for a in op.schema.arguments if a.is_write and a.kwarg_only]

    def out_variant(*args, **kwargs):
        outs = [kwargs.pop(name) for name in out_names]
        results = functional(*args, **kwargs)
        results = (results,) if n_outs == 1 else tuple(results)
        for out, result in zip(outs, results):
            if tuple(out.shape) != tuple(result.shape):
                raise NotImplementedError(f"{op.name}: resizing out= (shape {list(out.shape)}, result "
                                          f"{list(result.shape)}) has no decomposition; pass an out tensor of "
                                          f"the result's shape")
            if n_outs == 1:
                _check_cast(op, out, result)
            elif out.dtype != result.dtype:
                raise RuntimeError(f"{op.schema.name}(): Expected out tensor to have dtype {result.dtype.c10_name}, "
                                   f"but got {out.dtype.c10_name} instead")
        written = [aten.copy_(out, result) for out, result in zip(outs, results)]
        if n_outs == 1:
            return written[0]
        from ... import return_types
        return getattr(return_types, op.schema.name + "_out", tuple)(written)
    out_variant.__name__ = f"{op.schema.name}_out_decomposition"
    return out_variant
