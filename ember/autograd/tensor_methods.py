"""Tensor methods that belong to autograd: backward, hooks, retain_grad, detach_, and the
``.grad`` property (a non-leaf's ``.grad`` warns, as PyTorch does; the setter checks size and dtype)."""
from __future__ import annotations

import warnings
import weakref

from .._core.dispatch import AUTOGRAD_BIT
from .._core.tensor import Tensor
from .engine import backward as _run_backward
from .graph import meta_of, _Handle


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradient of this tensor into the leaves' ``.grad``."""
    _run_backward([self], None if gradient is None else [gradient], retain_graph, create_graph, inputs)


def register_hook(self, hook):
    """Call ``hook(grad)`` when this tensor's gradient is computed; it may return a new grad.
    Returns a handle whose ``remove()`` unregisters the hook."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    meta = meta_of(self)
    if meta.grad_fn is None:
        if meta.hooks is None:
            meta.hooks = []
        meta.hooks.append(hook)
        return _Handle(meta.hooks, hook)
    hooks = meta.grad_fn.pre_hooks.setdefault(meta.output_nr, [])
    hooks.append(hook)
    return _Handle(hooks, hook)


def register_post_accumulate_grad_hook(self, hook):
    """Call ``hook(tensor)`` after backward accumulated this leaf's ``.grad`` (it must return
    None). Returns a handle whose ``remove()`` unregisters the hook."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    meta = meta_of(self)
    if meta.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if meta.post_accumulate_hooks is None:
        meta.post_accumulate_hooks = []
    meta.post_accumulate_hooks.append(hook)
    return _Handle(meta.post_accumulate_hooks, hook)


def retain_grad(self):
    """Keep ``.grad`` for a non-leaf tensor after backward (a no-op on leaves)."""
    if not self.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    meta = meta_of(self)
    if meta.grad_fn is None or meta.retains_grad:
        return
    meta.retains_grad = True
    ref = weakref.ref(meta)  # the node must not keep the tensor's metadata alive (a cycle)

    def keep(grad):
        m = ref()
        if m is None:
            return
        if m.grad is None:
            m.grad = grad.detach().clone()
        else:
            m.grad = m.grad + grad.detach()
    meta.grad_fn.retain_hooks[meta.output_nr] = keep


def retains_grad(self):
    """Whether ``retain_grad()`` was called on this non-leaf tensor."""
    meta = self._autograd
    return bool(meta is not None and meta.retains_grad and meta.grad_fn is not None)


def detach_(self):
    """Detach in place: this tensor becomes a leaf that does not require grad."""
    meta = self._autograd
    if meta is not None and meta.view_base is not None:
        raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel "
                           "(DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP "
                           "buckets, and hence detach_() cannot be called on these gradients. To fix this error, "
                           "please refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the "
                           "solution.")
    self._keys &= ~AUTOGRAD_BIT
    if meta is not None:
        meta.grad_fn = None
        meta.output_nr = 0
    return self


def _get_grad(self):
    meta = self._autograd
    if meta is None:
        return None
    if meta.grad_fn is not None and not meta.retains_grad and meta.grad is None:
        warnings.warn("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
                      "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
                      "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
                      "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead.",
                      UserWarning, stacklevel=2)
    return meta.grad


def _set_grad(self, value):
    if value is not None:
        if not isinstance(value, Tensor):
            raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                            f"{type(value).__name__}")
        if value.dtype is not self.dtype:
            raise RuntimeError(f"attempting to assign a gradient with dtype '{value.dtype}' to a tensor with "
                               f"dtype '{self.dtype}'. Please ensure that the gradient and the tensor have the "
                               "same dtype")
        if value.device != self.device:
            raise RuntimeError(f"attempting to assign a gradient located on device '{value.device}' to a tensor "
                               f"located on device '{self.device}'. Please ensure that the gradient and the tensor "
                               "are on the same device")
        if tuple(value.shape) != tuple(self.shape):
            raise RuntimeError(f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of size "
                               f"'{list(self.shape)}'. Please ensure that the gradient and the tensor are the same "
                               "size")
    if value is None and self._autograd is None:
        return
    meta_of(self).grad = value


def install():
    Tensor.backward = backward
    Tensor.register_hook = register_hook
    Tensor.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook
    Tensor.retain_grad = retain_grad
    Tensor.retains_grad = property(retains_grad)
    Tensor.detach_ = detach_
    Tensor.grad = property(_get_grad, _set_grad, doc="The gradient accumulated by backward (None until then).")
    Tensor.output_nr = property(lambda self: 0 if self._autograd is None else self._autograd.output_nr)
