"""Sparse COO tensors, the part graph networks use: ``ember.sparse_coo_tensor(indices, values, size)``,
``Tensor.to_sparse()``, ``ember.sparse.mm`` / ``ember.spmm`` / ``ember.mm`` / ``@`` of a sparse
matrix by a dense one (differentiable in the dense operand and in the values), ``to_dense``,
``coalesce``, ``indices``/``values``.

A ``SparseCOOTensor`` is not an ``ember.Tensor`` (PyTorch's is): it holds its indices and values as
dense tensors. Only fully sparse tensors are built (``len(size) == indices.shape[0]``; no hybrid
dense dimensions). Ember operators reached with one answer through the Python dispatch key, as
fx Proxies do (ember/utils/_python_dispatch.py): ``mm``/``matmul`` with the sparse matrix first
are computed here, and any other operator raises NotImplementedError naming itself.
"""
from __future__ import annotations

import numpy as np

from ._core.dispatch import DispatchKey

__all__ = ["SparseCOOTensor", "sparse_coo_tensor", "mm", "spmm", "FloatTensor", "DoubleTensor", "LongTensor"]


class SparseCOOTensor:
    """A sparse tensor in coordinate format: ``indices`` (int64, sparse_dim x nnz) and ``values`` (nnz)."""

    _keys = 1 << DispatchKey.Python   # ember operators hand the call to __ember_dispatch__
    is_sparse = True
    is_sparse_csr = False
    layout = "sparse_coo"

    def __init__(self, indices, values, size, coalesced=False):
        self._indices_t, self._values_t = indices, values
        import ember
        self.shape = ember.Size(int(s) for s in size)
        self._coalesced = coalesced

    # -- metadata ----------------------------------------------------------------------------
    dtype = property(lambda self: self._values_t.dtype)
    device = property(lambda self: self._values_t.device)
    requires_grad = property(lambda self: self._values_t.requires_grad)
    ndim = property(lambda self: len(self.shape))

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def dim(self) -> int:
        return len(self.shape)

    def sparse_dim(self) -> int:
        return len(self.shape)

    def dense_dim(self) -> int:
        return 0

    def _nnz(self) -> int:
        return int(self._values_t.shape[0])

    def is_coalesced(self) -> bool:
        return self._coalesced

    def indices(self):
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._indices_t

    def values(self):
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._values_t

    def _indices(self):
        return self._indices_t

    def _values(self):
        return self._values_t

    # -- conversions -------------------------------------------------------------------------
    def coalesce(self) -> "SparseCOOTensor":
        """Indices sorted (row-major) and duplicates summed, as PyTorch's coalesce."""
        if self._coalesced:
            return self
        import ember
        idx = self._indices_t.numpy()
        linear = np.ravel_multi_index(tuple(idx), tuple(self.shape)) if idx.shape[1] else np.zeros(0, np.int64)
        unique, inverse = np.unique(linear, return_inverse=True)
        new_indices = ember.from_numpy(np.stack(np.unravel_index(unique, tuple(self.shape))).astype(np.int64)
                                       .reshape(len(self.shape), -1))
        values = ember.zeros(len(unique), dtype=self.dtype).index_add(0, ember.from_numpy(inverse.astype(np.int64)),
                                                                      self._values_t)
        return SparseCOOTensor(new_indices, values, self.shape, coalesced=True)

    def to_dense(self):
        import ember
        flat = ember.zeros(int(np.prod(self.shape)), dtype=self.dtype)
        if self._nnz():
            linear = np.ravel_multi_index(tuple(self._indices_t.numpy()), tuple(self.shape))
            flat = flat.index_add(0, ember.from_numpy(linear.astype(np.int64)), self._values_t)
        return flat.reshape(tuple(self.shape))

    def to_sparse(self):
        return self

    def t(self) -> "SparseCOOTensor":
        if self.dim() != 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
        return SparseCOOTensor(self._indices_t.flip(0), self._values_t, (self.shape[1], self.shape[0]))

    def to(self, *args, **kwargs):
        return SparseCOOTensor(self._indices_t, self._values_t.to(*args, **kwargs), self.shape, self._coalesced)

    def float(self):
        return self.to(_ember().float32)

    def double(self):
        return self.to(_ember().float64)

    def __matmul__(self, other):
        return mm(self, other)

    def __repr__(self):
        return (f"tensor(indices={self._indices_t!r},\n       values={self._values_t!r},\n       "
                f"size={tuple(self.shape)}, nnz={self._nnz()}, layout=ember.sparse_coo)")

    @staticmethod
    def __ember_dispatch__(op, args, kwargs):
        name = op.name.split("::")[-1].split(".")[0]
        if name in ("mm", "matmul") and isinstance(args[0], SparseCOOTensor) and not kwargs:
            return mm(args[0], args[1])
        raise NotImplementedError(f"{op.name}: not supported for sparse COO tensors in ember (supported: mm/matmul "
                                  f"of a sparse matrix by a dense one, to_dense, coalesce)")


def _ember():
    import ember
    return ember


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, requires_grad=False,
                      check_invariants=None, is_coalesced=None) -> SparseCOOTensor:
    ember = _ember()
    indices = indices if isinstance(indices, ember.Tensor) else ember.tensor(indices)
    values = values if isinstance(values, ember.Tensor) else ember.tensor(values, dtype=dtype)
    if dtype is not None:
        values = values.to(dtype)
    if indices.dtype != ember.int64:
        raise RuntimeError(f"indices must be an int64 tensor, got {indices.dtype}")
    if indices.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    if values.dim() != 1 or values.shape[0] != indices.shape[1]:
        raise NotImplementedError("ember.sparse_coo_tensor: values must be one number per index column "
                                  "(hybrid sparse/dense tensors are not supported)")
    idx = indices.numpy()
    if size is None:
        size = tuple(int(v) + 1 for v in idx.max(axis=1)) if idx.shape[1] else (0,) * idx.shape[0]
    size = tuple(int(s) for s in size)
    if len(size) != idx.shape[0]:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                           f"sparse_dim = {idx.shape[0]}, dense_dim = 0")
    for d, s in enumerate(size):
        if idx.shape[1] and (idx[d].max() >= s or idx[d].min() < 0):
            bad = idx[d].max() if idx[d].max() >= s else idx[d].min()
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {s} but found index {bad}")
    if requires_grad:
        values = values.detach().requires_grad_(True)
    return SparseCOOTensor(indices, values, size, coalesced=bool(is_coalesced))


def to_sparse(t, sparse_dim=None) -> SparseCOOTensor:
    """``Tensor.to_sparse()``: the nonzero entries of a dense tensor, coalesced."""
    ember = _ember()
    if sparse_dim is not None and sparse_dim != t.dim():
        raise NotImplementedError("ember: to_sparse(sparse_dim) with dense dimensions is not supported")
    nz = np.nonzero(t.detach().numpy())
    indices = ember.from_numpy(np.stack(nz).astype(np.int64).reshape(t.dim(), -1))
    values = t[tuple(ember.from_numpy(i.astype(np.int64)) for i in nz)] if t.dim() else t.reshape(1)
    return SparseCOOTensor(indices, values, t.shape, coalesced=True)


def mm(sparse, dense):
    """``sparse @ dense`` for a 2-D sparse matrix: out[r] += v * dense[c] for each entry (r, c, v);
    differentiable in `dense` and in the sparse values."""
    ember = _ember()
    if not isinstance(sparse, SparseCOOTensor):
        return ember.mm(sparse, dense)
    if sparse.dim() != 2 or dense.dim() != 2:
        raise RuntimeError(f"mm: expected 2-D matrices, got {sparse.dim()}-D and {dense.dim()}-D")
    if sparse.shape[1] != dense.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sparse.shape[0]}x{sparse.shape[1]} and "
                           f"{dense.shape[0]}x{dense.shape[1]})")
    rows, cols = sparse._indices_t[0], sparse._indices_t[1]
    contributions = sparse._values_t.unsqueeze(1) * dense.index_select(0, cols)
    out = ember.zeros(sparse.shape[0], dense.shape[1], dtype=contributions.dtype)
    return out.index_add(0, rows, contributions)


spmm = mm


def _legacy(dtype_name):
    def construct(indices, values, size=None):
        return sparse_coo_tensor(indices, values, size, dtype=getattr(_ember(), dtype_name))
    construct.__name__ = construct.__qualname__ = {"float32": "FloatTensor", "float64": "DoubleTensor",
                                                   "int64": "LongTensor"}[dtype_name]
    return construct


FloatTensor, DoubleTensor, LongTensor = _legacy("float32"), _legacy("float64"), _legacy("int64")
