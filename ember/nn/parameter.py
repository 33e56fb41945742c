"""``nn.Parameter`` and ``nn.Buffer``: tensors that a Module registers when they are assigned to it;
``UninitializedParameter`` / ``UninitializedBuffer``: their shapeless placeholders."""
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


# -- placeholders for parameters whose shape is not known yet (PyTorch's lazy modules) -----------
_UNINITIALIZED_ALLOWED = {"materialize", "shape", "requires_grad", "requires_grad_", "dtype", "device", "cls_to_become",
                          "persistent", "is_leaf", "grad", "grad_fn", "data", "share_memory_"}
_UNINITIALIZED_OPERATORS = ("add sub mul truediv floordiv mod pow matmul and or xor lshift rshift neg pos abs "
                            "invert lt le gt ge getitem setitem iter len float int bool index").split()


class _UninitializedTensor:
    """What UninitializedParameter and UninitializedBuffer share: a shapeless placeholder that
    refuses to take part in computation (ValueError, PyTorch's type) until ``materialize(shape)``
    gives it storage and turns it into ``cls_to_become``."""

    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None):
        from .. import empty
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        with_grad = self.requires_grad
        object.__setattr__(self, "__class__", self.cls_to_become)
        self.data = empty(shape, dtype=dtype or self.dtype)
        if self.requires_grad != with_grad:
            self.requires_grad_(with_grad)

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually "
                           "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
                           "initialized one. Call `forward` to initialize the parameters before accessing their "
                           "attributes.")

    def __getattribute__(self, name):
        if name.startswith("_") or name in _UNINITIALIZED_ALLOWED:
            return object.__getattribute__(self, name)
        raise ValueError(f"Attempted to use an uninitialized parameter in {name}. This error happens when you are "
                         "using a `LazyModule` or explicitly manipulating `torch.nn.parameter.UninitializedParameter` "
                         "objects. When using LazyModules Call `forward` with a dummy batch to initialize the "
                         "parameters before calling torch functions")

    def __repr__(self):
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, proto):
        return (type(self), (self.requires_grad,))


def _refuse(name):
    def operator(self, *args, **kwargs):
        _UninitializedTensor.__getattribute__(self, name.strip("_"))
    operator.__name__ = name
    return operator


for _op in _UNINITIALIZED_OPERATORS:
    for _name in (f"__{_op}__", f"__r{_op}__", f"__i{_op}__"):
        setattr(_UninitializedTensor, _name, _refuse(_name))


class UninitializedParameter(_UninitializedTensor, Parameter):
    """A Parameter without a shape yet; ``materialize(shape)`` makes it a Parameter."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        from .. import empty
        return _share(cls, empty(0, dtype=dtype), requires_grad)

    def __init__(self, requires_grad: bool = True, device=None, dtype=None):
        pass


class UninitializedBuffer(_UninitializedTensor, Tensor):
    """A buffer without a shape yet; ``materialize(shape)`` makes it a plain Tensor."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True):
        from .. import empty
        out = _share(cls, empty(0, dtype=dtype), requires_grad)
        out.persistent = persistent
        return out

    def __init__(self, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True):
        pass


def is_lazy(param) -> bool:
    """Whether `param` is an uninitialised placeholder (ember has no Lazy* modules of its own)."""
    return isinstance(param, _UninitializedTensor)
