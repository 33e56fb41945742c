"""``default_collate`` / ``default_convert``: turn samples into batches, as PyTorch does.

Leaves are handled by a dispatch table from type to function (``default_collate_fn_map``):
tensors are stacked along a new first dimension, NumPy arrays and scalars become tensors first,
Python ints an int64 tensor (bools a bool tensor), floats a float64 tensor, and strings and bytes
stay lists. Containers are collated field by field and rebuilt by ``_rebuild``: mappings and
namedtuples keep their type, plain tuples come back as lists (as in PyTorch). ``collate`` with a
``collate_fn_map`` is the extensible core.
"""
from __future__ import annotations

import copy
import re
from collections.abc import Mapping, MutableMapping, MutableSequence, Sequence

import numpy as np

# NumPy dtype kinds that cannot become tensors: bytes, str and object arrays
np_str_obj_array_pattern = re.compile(r"[SaUO]")
default_collate_err_msg_format = ("default_collate: batch must contain tensors, numpy arrays, numbers, "
                                  "dicts or lists; found {}")


def _ember():
    import ember  # imported lazily: ember.utils.data is itself imported while ember initialises
    return ember


def _rebuild(like, children):
    """`children` (a dict for a mapping, else a list) in a container of `like`'s kind.

    Mutable containers are shallow-copied and refilled, so subclasses keep their extra state;
    namedtuples are rebuilt from their fields; plain tuples become lists; a type that cannot be
    built from its children falls back to a dict or a list."""
    kind = type(like)
    if isinstance(like, tuple):
        return kind(*children) if hasattr(like, "_fields") else list(children)
    try:
        if isinstance(like, (MutableMapping, MutableSequence)):
            out = copy.copy(like)
            for key, value in (children.items() if isinstance(children, dict) else enumerate(children)):
                out[key] = value
            return out
        return kind(children)
    except TypeError:
        return dict(children) if isinstance(like, Mapping) else list(children)


def _is_numpy(value) -> bool:
    """A NumPy array or scalar (NumPy's str_/string_ scalars are treated as strings)."""
    kind = type(value)
    return kind.__module__ == "numpy" and kind.__name__ not in ("str_", "string_")


def default_convert(data):
    """Convert NumPy arrays/scalars (inside containers too) to tensors; leave the rest."""
    ember = _ember()
    if isinstance(data, ember.Tensor):
        return data
    if _is_numpy(data):
        if isinstance(data, np.ndarray) and np_str_obj_array_pattern.search(data.dtype.str):
            return data
        return ember.as_tensor(data)
    if isinstance(data, Mapping):
        return _rebuild(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) or (isinstance(data, Sequence) and not isinstance(data, (str, bytes))):
        return _rebuild(data, [default_convert(d) for d in data])
    return data


def _handler(collate_fn_map, elem):
    """The map's function for `elem`: its exact type's, else the first whose key it is an instance of."""
    found = collate_fn_map.get(type(elem))
    if found is None:
        found = next((fn for kind, fn in collate_fn_map.items() if isinstance(elem, kind)), None)
    return found


def collate(batch, *, collate_fn_map=None):
    """Collate `batch` (a list of samples): leaves through `collate_fn_map`, containers field by field."""
    elem = batch[0]
    if collate_fn_map is not None:
        handler = _handler(collate_fn_map, elem)
        if handler is not None:
            return handler(batch, collate_fn_map=collate_fn_map)

    def each(samples):
        return collate(samples, collate_fn_map=collate_fn_map)

    if isinstance(elem, Mapping):
        return _rebuild(elem, {key: each([sample[key] for sample in batch]) for key in elem})
    if isinstance(elem, Sequence):
        if any(len(sample) != len(elem) for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return _rebuild(elem, [each(field) for field in zip(*batch)])
    raise TypeError(default_collate_err_msg_format.format(type(elem)))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    """Stack tensors along a new dimension 0 (shapes must match, as ``ember.stack`` checks)."""
    return _ember().stack(list(batch), 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    """NumPy arrays become tensors, then stack; str/bytes/object arrays are refused."""
    dtype = batch[0].dtype
    if np_str_obj_array_pattern.search(dtype.str):
        raise TypeError(default_collate_err_msg_format.format(dtype))
    return collate([_ember().as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    # np.asarray keeps the scalars' common NumPy dtype (as torch.as_tensor of a list of them does)
    return _ember().as_tensor(np.asarray(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    ember = _ember()
    return ember.tensor(batch, dtype=ember.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    return _ember().tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


def _default_map() -> dict:
    from ...._core.tensor import Tensor
    return {Tensor: collate_tensor_fn, np.ndarray: collate_numpy_array_fn,
            (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
            float: collate_float_fn, int: collate_int_fn, str: collate_str_fn, bytes: collate_str_fn}


default_collate_fn_map = _default_map()


def default_collate(batch):
    """Put a list of samples into a batch with a new leading dimension (see the module doc)."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
