"""Run one autograd program in ember and in PyTorch and compare what it returns.

    both(lambda T, x: ..., arr)   # arr: NumPy arrays, given to the program as T.tensor(arr)

The program returns a (nested) tuple/list/dict of tensors, numbers, strings and None; tensors
are compared by shape, dtype name and value. `raises(prog)` checks both raise the same type.
"""
from __future__ import annotations

import numpy as np
import torch

import ember


def _norm(v):
    if isinstance(v, (ember.Tensor, torch.Tensor)):
        return ("tensor", str(v.dtype).split(".")[-1], tuple(v.shape), np.asarray(v.detach().cpu().numpy(), dtype=float))
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    return v


def _compare(a, b, rtol, atol, path="out"):
    if isinstance(a, tuple) and a and a[0] == "tensor":
        assert isinstance(b, tuple) and b[0] == "tensor", f"{path}: ember gave a tensor, torch {b!r}"
        assert a[1:3] == b[1:3], f"{path}: dtype/shape {a[1:3]} vs torch {b[1:3]}"
        np.testing.assert_allclose(a[3], b[3], rtol=rtol, atol=atol, err_msg=path)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{path}: {a!r} vs torch {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            _compare(x, y, rtol, atol, f"{path}[{i}]")
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), f"{path}: keys differ"
        for k in a:
            _compare(a[k], b[k], rtol, atol, f"{path}[{k!r}]")
    elif isinstance(a, float):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=path)
    else:
        assert a == b, f"{path}: {a!r} vs torch {b!r}"


def both(prog, *arrays, rtol=1e-6, atol=1e-8):
    """Run `prog(T, *tensors)` with T = ember and T = torch; assert the results match."""
    outs = []
    for lib in (ember, torch):
        args = [lib.tensor(a, requires_grad=np.issubdtype(a.dtype, np.floating)) if isinstance(a, np.ndarray) else a
                for a in arrays]
        outs.append(_norm(prog(lib, *args)))
    _compare(outs[0], outs[1], rtol, atol)
    return outs[0]


def raises(prog, *arrays, match=None):
    """Both libraries raise the same exception type (and, if given, a message containing `match`)."""
    types = []
    for lib in (ember, torch):
        args = [lib.tensor(a, requires_grad=True) if isinstance(a, np.ndarray) else a for a in arrays]
        try:
            prog(lib, *args)
        except Exception as e:  # noqa: BLE001 - we compare the types
            types.append(type(e))
            if match is not None:
                assert match in str(e), f"{lib.__name__}: {e}"
        else:
            types.append(None)
    assert types[1] is not None, "torch did not raise"
    assert types[0] is types[1], f"ember raised {types[0]}, torch {types[1]}"


def arr(*shape, seed=0, low=0.5, high=1.5):
    """A float64 NumPy array with values in [low, high)."""
    return np.random.default_rng(seed).uniform(low, high, size=shape)
