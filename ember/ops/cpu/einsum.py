"""einsum: PyTorch's equation parsing and checks, computed with ``np.einsum``.

`parse` is shared with the Meta kernel: it validates the equation against the operands (with
PyTorch's messages) and returns the result shape and dtype plus a fully explicit NumPy equation
(ellipses spelled out as letters, so broadcasting of ``...`` and of size-1 labelled dims is ours,
not NumPy's).
"""
from __future__ import annotations

import numpy as np

from ..._core import dtype as _dt
from ..._core.storage import make_strided, root_array, data_address
from ..._core.tensor import wrap
from .. import rules

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _split_terms(lhs: str) -> list:
    terms = lhs.split(",")
    for t in terms:
        body = t.replace("...", "")
        for ch in body:
            if ch not in _LETTERS and ch != " ":
                i = lhs.index(ch) if ch != "." else lhs.index(".")
                raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation string, "
                                   "subscripts must be in [a-zA-Z]")
    return [t.replace(" ", "") for t in terms]


def parse(equation: str, tensors):
    """(result shape, result dtype, numpy equation, label sizes, summed?) or PyTorch's error."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = _split_terms(lhs)
    if len(terms) > len(tensors):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < len(tensors):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    if not tensors:
        raise RuntimeError("einsum(): must provide at least one operand")
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        if t.dtype is not dtype:
            raise RuntimeError(f"expected scalar type {dtype.c10_name} but found {t.dtype.c10_name}")
    used = set(lhs) | set(rhs)
    spare = [c for c in _LETTERS if c not in used]
    sizes, ell_shape, np_terms, counts = {}, (), [], {}
    ell_max = max((t.ndim - len(term.replace("...", "")) for term, t in zip(terms, tensors) if "..." in term),
                  default=0)
    ell_letters = "".join(spare[:ell_max])
    for k, (term, t) in enumerate(zip(terms, tensors)):
        labels = term.replace("...", "")
        shape = tuple(t.shape)
        if "..." in term:
            n_ell = t.ndim - len(labels)
            if n_ell < 0:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(labels)}) is more "
                                   f"than the number of dimensions ({t.ndim}) for operand {k}")
            pre, post = term.split("...")
            ell = ell_letters[ell_max - n_ell:]
            ell_shape = rules.broadcast_shapes(ell_shape, shape[len(pre):len(pre) + n_ell], op="einsum")
            full = pre + ell + post
        else:
            if len(labels) != t.ndim:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(labels)}) does not "
                                   f"match the number of dimensions ({t.ndim}) for operand {k} and no ellipsis "
                                   "was given")
            full = labels
        seen = {}
        for ch, s in zip(full, shape):
            if ch in seen and seen[ch] != s:
                raise RuntimeError(f"einsum(): subscript {ch} is repeated for operand {k} but the sizes don't match, "
                                   f"{s} != {seen[ch]}")
            seen[ch] = s
            prev = sizes.get(ch)
            if prev is None or prev == 1:
                sizes[ch] = s
            elif s != 1 and s != prev:
                raise RuntimeError(f"einsum(): subscript {ch} has size {s} for operand {k} which does not broadcast "
                                   f"with previously seen size {prev}")
        for ch in labels:
            counts[ch] = counts.get(ch, 0) + 1
        np_terms.append(full)
    if arrow:
        out_labels = rhs.replace("...", "")
        for i, ch in enumerate(out_labels):
            if ch not in _LETTERS:
                raise RuntimeError(f"einsum(): invalid subscript given at index {len(lhs) + 2 + rhs.index(ch)} in "
                                   "the equation string, subscripts must be in [a-zA-Z]")
            if ch not in counts:
                raise RuntimeError(f"einsum(): output subscript {ch} does not appear in the equation for any input "
                                   "operand")
            if out_labels.count(ch) > 1:
                raise RuntimeError(f"einsum(): output subscript {ch} appears more than once in the output")
        out = rhs.replace("...", ell_letters)  # ellipsis dims left out of the output are summed
    else:
        out = ell_letters + "".join(sorted(ch for ch, n in counts.items() if n == 1))
    summed = any(ch not in out for term in np_terms for ch in term)
    out_shape = tuple(ell_shape[ell_letters.index(ch)] if ch in ell_letters else sizes[ch] for ch in out)
    if summed and dtype.category <= _dt.INT and (len(tensors) == 1 or _private_sum(np_terms, tensors, out)):
        dtype = _dt.int64  # PyTorch sums such dims with torch.sum first, which promotes integers
    return out_shape, dtype, ",".join(np_terms) + "->" + out, sizes, summed


def _private_sum(terms, tensors, out) -> bool:
    """Does some operand have a summed label that no other operand shares (size-1 dims broadcast,
    so they do not count as sharing)? PyTorch sums those out of the operand first."""
    for k, term in enumerate(terms):
        for ch in set(term) - set(out):
            if not any(j != k and ch in t and tensors[j].shape[t.index(ch)] != 1 for j, t in enumerate(terms)):
                return True
    return False


def _broadcast(term, arr, sizes):
    target = tuple(sizes[ch] for ch in term)
    if arr.shape != target and len(set(term)) == len(term):
        arr = np.broadcast_to(arr, target)  # size-1 labelled dims broadcast, as in PyTorch
    return arr


def _sum_private_labels(terms, arrays, out):
    """PyTorch sums a label that no other operand has at a size above 1 out of its operand before
    multiplying (the others' size-1 dims of it are dropped): no product contracts it, so integer
    einsums like ``ij,j`` with a (1,) operand compute on CUDA, whose GEMMs refuse integers."""
    terms, arrays = list(terms), list(arrays)
    for k in range(len(terms)):
        for ch in [c for c in terms[k] if c not in out and terms[k].count(c) == 1]:
            others = [j for j, t in enumerate(terms) if j != k and ch in t]
            if any(terms[j].count(ch) != 1 or arrays[j].shape[terms[j].index(ch)] != 1 for j in others):
                continue
            arrays[k] = arrays[k].sum(axis=terms[k].index(ch), dtype=arrays[k].dtype)
            terms[k] = terms[k].replace(ch, "")
            for j in others:
                arrays[j] = np.take(arrays[j], 0, axis=terms[j].index(ch))
                terms[j] = terms[j].replace(ch, "")
    return terms, arrays


def einsum(equation, tensors, path=None):
    """aten::einsum on NumPy; a single operand without summation gives a view like PyTorch."""
    shape, dtype, np_eq, sizes, summed = parse(equation, tensors)
    in_dt = tensors[0].dtype
    if dtype is _dt.bool_ and len(tensors) > 1 and summed and all(t.numel() for t in tensors):
        raise NotImplementedError("\"bmm\" not implemented for 'Bool'")
    if len(tensors) == 1 and not summed:
        view = np.einsum(np_eq, _broadcast(np_eq.split("->")[0], tensors[0]._data, sizes))
        x = tensors[0]
        item = view.itemsize
        if view.size and np.shares_memory(view, x._data):
            offset = (data_address(view) - data_address(root_array(x._data))) // item
            out = wrap(make_strided(x._data, view.shape, tuple(s // item for s in view.strides), offset))
            out._version_counter = x._shared_version_counter()
            return out
        return wrap(np.array(view))
    cdt = np.dtype(np.float32) if in_dt in (_dt.float16, _dt.bfloat16) else in_dt.np
    if dtype is _dt.int64 and in_dt is not _dt.int64:
        cdt = np.dtype(np.int64)
    arrays = [t._data.astype(cdt) if t._data.dtype != cdt else t._data for t in tensors]
    terms, out = np_eq.split("->")
    terms = terms.split(",")
    if len(arrays) > 1:
        terms, arrays = _sum_private_labels(terms, arrays, out)
    arrays = [_broadcast(term, a, sizes) for term, a in zip(terms, arrays)]
    res = np.einsum(",".join(terms) + "->" + out, *arrays, optimize=len(arrays) > 1)
    return wrap(np.asarray(res).astype(dtype.np, copy=False).reshape(shape))
