"""Tensor printing (placeholder: replaced by the PyTorch-identical formatter)."""


def tensor_repr(t):
    if t.is_meta:
        return f"tensor(..., device='meta', size={tuple(t.shape)}, dtype=ember.{t.dtype.name})"
    return f"tensor({t._data.tolist()})"
