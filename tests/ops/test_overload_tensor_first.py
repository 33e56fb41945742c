"""Overload choice where a 0-d integer tensor fits both an int and a Tensor parameter: PyTorch's
parser picks the Tensor overload, a Python int the int one (checked by logging the operators each
library dispatches under its TorchDispatchMode: PyTorch decomposes repeat_interleave, and its
Tensor overloads are the ones that build an index with ``repeat_interleave.Tensor``)."""
import numpy as np
import pytest
import torch

import ember
from ember.utils._python_dispatch import TorchDispatchMode as EmberMode
from torch.utils._python_dispatch import TorchDispatchMode as TorchMode


def _logged(lib, mode_cls, fn):
    names = []

    class Log(mode_cls):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            names.append(str(func.__name__))
            return func(*args, **(kwargs or {}))
    x = lib.arange(6).reshape(2, 3)
    with Log():
        fn(lib, x)
    return names


CALLS = {
    "0-d tensor repeats": lambda L, x: x.repeat_interleave(L.tensor(2), dim=0),
    "int repeats": lambda L, x: x.repeat_interleave(2, dim=0),
    "1-d tensor repeats": lambda L, x: x.repeat_interleave(L.tensor([1, 2]), dim=0),
    "0-d tensor repeats, flattened": lambda L, x: L.repeat_interleave(x, L.tensor(3)),
    "add a 0-d tensor": lambda L, x: x.add(L.tensor(2)),
    "add an int": lambda L, x: x.add(2),
}


def _took_tensor(names):
    return any(n in ("repeat_interleave.Tensor", "repeat_interleave.self_Tensor", "add.Tensor") for n in names)


@pytest.mark.parametrize("name", list(CALLS))
def test_overload_kind_matches_pytorch(name):
    fn = CALLS[name]
    want = _logged(torch, TorchMode, fn)
    got = _logged(ember, EmberMode, fn)
    assert _took_tensor(got) == _took_tensor(want), (got, want)


def test_the_tensor_overload_gives_pytorch_values():
    x = np.arange(6).reshape(2, 3)
    for fn in CALLS.values():
        np.testing.assert_array_equal(fn(ember, ember.from_numpy(x)).numpy(), fn(torch, torch.from_numpy(x)).numpy())
