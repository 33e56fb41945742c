"""``nn.Parameter`` and ``nn.Buffer``: tensors that a Module registers when they are assigned to it."""
from __future__ import annotations

from .._core.tensor import Tensor, alias
from .._core.dispatch import AUTOGRAD_BIT


def _share(cls, data: Tensor, requires_grad: bool):
    """A `cls` instance viewing the same storage (and version counter) as `data`, detached."""
    if not isinstance(data, Tensor):
        raise TypeError(f"{cls.__name__}: expected a Tensor as data, got {type(data).__name__}")
    out = alias(data, data._keys & ~AUTOGRAD_BIT, cls)     # (a fake tensor's Parameter is fake)
    out._version_counter = data._shared_version_counter()
    if requires_grad:
        out.requires_grad_(True)  # raises PyTorch's error for integer dtypes
    return out


class Parameter(Tensor):
    """A Tensor that is a module parameter: assigning it to a Module attribute registers it.

    ``Parameter(data=None, requires_grad=True)`` shares `data`'s storage; it is a leaf.
    """

    def __new__(cls, data=None, requires_grad: bool = True):
        if data is None:
            from .. import empty
            data = empty(0)
        return _share(cls, data, requires_grad)

    def __init__(self, data=None, requires_grad: bool = True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        out = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = out
        return out

    def __reduce_ex__(self, proto):
        import numpy as np
        return (_rebuild_parameter, (np.array(self.numpy(force=True)), self.requires_grad))


def _rebuild_parameter(arr, requires_grad):
    from .._core.tensor import wrap
    return Parameter(wrap(arr), requires_grad)


class Buffer(Tensor):
    """A marker: ``module.x = Buffer(t, persistent=True)`` registers `t` as a buffer.

    Like PyTorch, the module stores a plain Tensor (the marker only carries ``persistent``)."""

    def __new__(cls, data=None, *, persistent: bool = True):
        if data is None:
            from .. import empty
            data = empty(0)
        out = _share(cls, data, data.requires_grad)
        out.persistent = persistent
        return out

    def __init__(self, data=None, *, persistent: bool = True):
        pass


def is_lazy(param) -> bool:
    """ember has no lazy modules."""
    return False
