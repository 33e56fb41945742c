"""Tensor methods that are not operators: Python callables applied element by element (apply_,
map_, map2_), the legacy constructor ``Tensor.new``, layout and memory queries (dim_order,
const_data_ptr, is_shared ...), the conjugate transposes ``H``/``mH``, and the CPU answers to
device and memory requests for hardware ember does not have (pin_memory, xpu, record_stream ...),
raising as a CPU-only build of PyTorch does. Also the methods PyTorch removed but keeps as names
that raise (eig, symeig, lstsq, solve, reinforce), so a program that calls them fails the same way.
"""
from __future__ import annotations

import warnings

import numpy as np

OPS = []


def _apply_elementwise(self, name, fn, *others):
    if self.requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() "
                           f"instead.")
    import ember
    arrays = [ember.broadcast_to(o, self.shape).to(self.dtype).numpy() for o in others]
    values = self.numpy()
    out = np.empty(values.shape, dtype=object)
    for index in np.ndindex(values.shape):
        out[index] = fn(*(a[index].item() for a in (values, *arrays)))
    result = ember.tensor(out.tolist(), dtype=self.dtype) if values.ndim else ember.tensor(out.item(),
                                                                                           dtype=self.dtype)
    with ember.no_grad():
        self.copy_(result)
    return self


def apply_(self, callable):
    """Replaces every element x by callable(x) (CPU tensors only; slow, as PyTorch warns)."""
    return _apply_elementwise(self, "apply_", callable)


def map_(self, tensor, callable):
    return _apply_elementwise(self, "map_", callable, tensor)


def map2_(self, x, y, callable):
    return _apply_elementwise(self, "map2_", callable, x, y)


def new(self, *args, **kwargs):
    """The legacy constructor with self's dtype: sizes, or data (``x.new(2, 3)``, ``x.new([1, 2])``)."""
    from ..._core.legacy import construct
    return construct(self.dtype, args, kwargs)


def dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory (by decreasing stride; ties keep dim order)."""
    strides = self.stride()
    return tuple(sorted(range(self.dim()), key=lambda d: -strides[d]))


def _conj_transpose(self):
    if self.dim() == 0:
        return self
    if self.dim() != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.dim()}-D tensor.")
    return self.adjoint()


def is_set_to(self, tensor):
    """True when both use the same memory with the same geometry."""
    return (self.data_ptr() == tensor.data_ptr() and tuple(self.shape) == tuple(tensor.shape)
            and tuple(self.stride()) == tuple(tensor.stride()) and self.dtype == tensor.dtype)


def _no_accelerator(self, *args, **kwargs):
    raise RuntimeError("Cannot access accelerator device when none is available.")


def _not_compiled(name):
    def method(self, *args, **kwargs):
        raise AssertionError(f"Torch not compiled with {name} enabled")
    method.__name__ = name.lower()
    return method


def _ipu(self, *args, **kwargs):
    raise RuntimeError("PyTorch is not linked with support for ipu devices")


def _record_stream(self, stream):
    raise RuntimeError("record_stream: ember has no streams on CPU tensors")


def _volatile(self):
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2)
    return False


def share_memory_(self):
    """ember's CPU memory is process memory: the tensor is marked shared, as a no-op move."""
    self.__dict__["_shared"] = True
    return self


def module_load(self, other, assign=False):
    """What ``Module.load_state_dict`` stores for a parameter: `other` itself (its own class decides)."""
    return other


_REMOVED = {
    "eig": "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than real "
           "tensors mimicking complex tensors.",
    "symeig": "The default behavior has changed from using the upper triangular portion of the matrix by "
              "default to using the lower triangular portion. Use torch.linalg.eigh.",
    "lstsq": "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.",
    "solve": "`torch.solve` is deprecated in favor of `torch.linalg.solve`.",
}


def _removed(name, hint):
    def method(self, *args, **kwargs):
        raise RuntimeError(f"This function was deprecated since version 1.9 and is now removed. {hint}")
    method.__name__ = name
    return method


def _reinforce(self, reward):
    raise RuntimeError("reinforce() was removed.\nUse torch.distributions instead.")


PYTHON_METHODS = {
    "apply_": apply_, "map_": map_, "map2_": map2_, "new": new, "dim_order": dim_order,
    "const_data_ptr": lambda self: self.data_ptr(),
    "H": property(_conj_transpose), "mH": property(lambda self: self.adjoint()),
    "is_set_to": is_set_to, "is_shared": lambda self: self.__dict__.get("_shared", False), "is_pinned": lambda self, device=None: False,
    "is_distributed": lambda self: False, "share_memory_": share_memory_,
    "pin_memory": _no_accelerator, "xpu": _not_compiled("XPU"), "mtia": _not_compiled("MTIA"), "ipu": _ipu,
    "record_stream": _record_stream, "volatile": property(_volatile), "name": property(lambda self: None),
    "grad_dtype": property(lambda self: self.dtype), "module_load": module_load,
    "reinforce": _reinforce, **{name: _removed(name, hint) for name, hint in _REMOVED.items()},
}
