"""Indexing operators (table rows). ``Tensor.__getitem__`` / ``__setitem__``, which decompose a
subscript into these operators, are in ember/ops/tensor_indexing.py."""
from __future__ import annotations

from ..registry import Op
from ..cpu import indexing as cpu
from ..meta import indexing as meta


def _inplace(schema, cpu_kernel, meta_kernel):
    """An in-place row of a functional kernel (its source must not overlap self: ops/overlap.py)."""
    name = schema.split("(")[0]
    return Op(schema, cpu=cpu.inplace(cpu_kernel, name), meta=cpu.meta_inplace(meta_kernel, name), variants="method")


OPS = [
    Op("index.Tensor(Tensor self, Tensor?[] indices) -> Tensor", cpu=cpu.index, meta=meta.index),
    Op("index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)",
       cpu=cpu.index_put_, meta=meta.index_put_),
    Op("index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor",
       cpu=cpu.index_put, meta=meta.index_put),
    Op("index_select(Tensor self, int dim, Tensor index) -> Tensor", cpu=cpu.index_select, meta=meta.index_select,
       out=True),
    Op("gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor", cpu=cpu.gather,
       meta=meta.gather, out=True),
    # value overloads first: a number must not bind to the Tensor overload
    Op("scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor", cpu=cpu.scatter_value,
       meta=meta.scatter, inplace=True),
    Op("scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", cpu=cpu.scatter_src,
       meta=meta.scatter),
    _inplace("scatter_.src(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)", cpu.scatter_src,
             meta.scatter),
    Op("scatter.value_reduce(Tensor self, int dim, Tensor index, Scalar value, *, str reduce) -> Tensor",
       cpu=cpu.scatter_value_reduce, meta=meta.scatter, inplace=True),
    Op("scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor",
       cpu=cpu.scatter_reduce_src, meta=meta.scatter),
    _inplace("scatter_.reduce(Tensor(a!) self, int dim, Tensor index, Tensor src, *, str reduce) -> Tensor(a!)",
             cpu.scatter_reduce_src, meta.scatter),
    Op("scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", cpu=cpu.scatter_add,
       meta=meta.scatter_add),
    _inplace("scatter_add_(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)", cpu.scatter_add,
             meta.scatter_add),
    Op("scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, bool include_self=True) "
       "-> Tensor", cpu=cpu.scatter_reduce_two, meta=meta.scatter_reduce),
    _inplace("scatter_reduce_.two(Tensor(a!) self, int dim, Tensor index, Tensor src, str reduce, *, "
             "bool include_self=True) -> Tensor(a!)", cpu.scatter_reduce_two, meta.scatter_reduce),
    Op("index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor",
       cpu=cpu.index_add, meta=meta.index_add),
    _inplace("index_add_(Tensor(a!) self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor(a!)",
             cpu.index_add, meta.index_add),
    Op("index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor", cpu=cpu.index_copy,
       meta=meta.index_copy),
    _inplace("index_copy_(Tensor(a!) self, int dim, Tensor index, Tensor source) -> Tensor(a!)", cpu.index_copy,
             meta.index_copy),
    Op("index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor", cpu=cpu.index_fill,
       meta=meta.index_fill, inplace=True),
    Op("index_fill.int_Tensor(Tensor self, int dim, Tensor index, Tensor value) -> Tensor", cpu=cpu.index_fill,
       meta=meta.index_fill, inplace=True),
    Op("masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor", cpu=cpu.masked_fill,
       meta=meta.masked_fill),
    Op("masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor", cpu=cpu.masked_fill,
       meta=meta.masked_fill),
    Op("masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)", cpu=cpu.masked_fill_,
       meta=meta.masked_fill_, variants="method"),
    Op("masked_fill_.Tensor(Tensor(a!) self, Tensor mask, Tensor value) -> Tensor(a!)", cpu=cpu.masked_fill_,
       meta=meta.masked_fill_, variants="method"),
    Op("masked_select(Tensor self, Tensor mask) -> Tensor", cpu=cpu.masked_select, meta=meta.masked_select,
       out=True),
    Op("masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor", cpu=cpu.masked_scatter,
       meta=meta.masked_scatter),
    Op("masked_scatter_(Tensor(a!) self, Tensor mask, Tensor source) -> Tensor(a!)", cpu=cpu.masked_scatter_,
       meta=meta.masked_scatter_, variants="method"),
    Op("take(Tensor self, Tensor index) -> Tensor", cpu=cpu.take, meta=meta.take, out=True),
    Op("take_along_dim(Tensor self, Tensor indices, int? dim=None) -> Tensor", cpu=cpu.take_along_dim,
       meta=meta.take_along_dim, out=True),
    Op("put_(Tensor(a!) self, Tensor index, Tensor source, bool accumulate=False) -> Tensor(a!)", cpu=cpu.put_,
       meta=meta.put_, variants="method"),
    Op("put(Tensor self, Tensor index, Tensor source, bool accumulate=False) -> Tensor", cpu=cpu.put,
       meta=meta.put),
    Op("nonzero(Tensor self) -> Tensor", cpu=cpu.nonzero, meta=meta.nonzero, out=True),
    Op("nonzero_numpy(Tensor self) -> Tensor[]", cpu=cpu.nonzero_numpy, meta=meta.nonzero, variants="function"),
    Op("argwhere(Tensor self) -> Tensor", cpu=cpu.argwhere, meta=meta.argwhere),
]
