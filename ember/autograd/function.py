"""Custom autograd functions: ``class F(ember.autograd.Function)`` with static ``forward(ctx,
...)`` and ``backward(ctx, *grads)``.

``F.apply(...)`` runs forward without recording and makes one node of class ``FBackward``
(one per Function class, as PyTorch's ``F._backward_cls``). As in PyTorch, that node *is* the
``ctx``: ``y.grad_fn.saved_tensors`` works. Its ``next_functions`` are the edges of the tensor
arguments; ``backward`` returns one gradient per argument of ``forward`` (None for non-tensors).
"""
from __future__ import annotations

from .._core.dispatch import AUTOGRAD_BIT
from .._core.tensor import Tensor
from .graph import Node, SavedTensor, gradient_edge, meta_of
from .grad_mode import no_grad, is_grad_enabled


class FunctionCtx:
    """The ``ctx`` of a custom Function: saves tensors and flags for backward."""

    def save_for_backward(self, *tensors):
        """Save tensors (or None) for backward; read back through ``ctx.saved_tensors``, which
        checks that none was modified in place since."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{tensors.index(t)} is of type {type(t).__name__}")
        self._to_save = tensors

    @property
    def saved_tensors(self):
        saved = getattr(self, "_saved", None)
        if saved is None:
            return tuple(getattr(self, "_to_save", ()))
        return tuple(s.unpack(self.name()) if isinstance(s, SavedTensor) else s for s in saved)

    def mark_non_differentiable(self, *tensors):
        """Outputs that get no gradient (their grad in backward is zeros / None)."""
        self._non_differentiable = getattr(self, "_non_differentiable", set()) | {id(t) for t in tensors}

    def mark_dirty(self, *tensors):
        """Inputs that forward modified in place (they get this node as their new history)."""
        self._dirty = getattr(self, "_dirty", set()) | {id(t) for t in tensors}

    def set_materialize_grads(self, value: bool):
        """Whether None output gradients are passed to backward as zeros (default True)."""
        self.materialize_grads = value


class BackwardCFunction(Node, FunctionCtx):
    """Base of the per-Function node classes (``FBackward``)."""
    _forward_cls = None
    materialize_grads = True

    def __init__(self):
        super().__init__(())
        self.needs_input_grad = ()
        self.out_meta = ()
        self._tensor_args = ()      # positions of the tensor arguments of forward
        self._saved = None

    def apply(self, grads):
        from .. import zeros
        grads = list(grads) + [None] * (len(self.out_meta) - len(grads))
        if self.materialize_grads:
            grads = [zeros(m[0], dtype=m[1], device=m[2]) if g is None and m is not None else g
                     for g, m in zip(grads, self.out_meta)]
        out = self._forward_cls.backward(self, *grads)
        if not isinstance(out, tuple):
            out = (out,)
        n_args = len(self.needs_input_grad)
        if len(out) != n_args:
            if len(out) < n_args or any(g is not None for g in out[n_args:]):
                raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients (expected "
                                   f"{n_args}, got {len(out)})")
        tensor_args = set(self._tensor_args)
        for pos, g in enumerate(out[:n_args]):  # PyTorch's checks, in its order (RuntimeError for all)
            if g is None:
                continue
            if pos not in tensor_args:
                raise RuntimeError(f"function {self.name()} returned a gradient different than None at position "
                                   f"{pos + 1}, but the corresponding forward input was not a Variable")
            if not isinstance(g, Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(g).__name__})")
        result = []
        for pos, (edge, (shape, dtype)) in zip(self._tensor_args, zip(self.next_functions, self._in_meta)):
            g = out[pos]
            if g is not None and edge[0] is not None:
                if tuple(g.shape) != shape:
                    from .kernel import sum_to
                    if not _expandable(shape, tuple(g.shape)):
                        raise RuntimeError(f"Function {self.name()} returned an invalid gradient at index {pos} - "
                                           f"got {list(g.shape)} but expected shape compatible with {list(shape)}")
                    g = sum_to(g, shape)
                if g.dtype is not dtype:
                    g = g.to(dtype)
            result.append(g if edge[0] is not None else None)
        return result

    def release(self):
        for s in self._saved or ():
            if isinstance(s, SavedTensor):
                s.release()


def _expandable(shape, to):
    if len(shape) > len(to):
        return False
    return all(a == b or a == 1 for a, b in zip(reversed(shape), reversed(to)))


class FunctionMeta(type):
    """Gives every Function subclass its node class ``<Name>Backward``."""

    def __init__(cls, name, bases, attrs):
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    """Base class for user-defined differentiable operations."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` and, if an input requires grad, record the node."""
        node = cls._backward_cls()
        node.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        record = is_grad_enabled() and any(node.needs_input_grad)
        with no_grad():
            out = cls.forward(node, *args, **kwargs)
        outs = out if isinstance(out, tuple) else (out,)
        non_diff = getattr(node, "_non_differentiable", set())
        dirty = getattr(node, "_dirty", set())
        to_save = getattr(node, "_to_save", ())
        if not record:
            return out
        tensor_args = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        node._tensor_args = tensor_args
        node._in_meta = [(tuple(args[i].shape), args[i].dtype) for i in tensor_args]
        node.next_functions = tuple((gradient_edge(args[i]) if args[i].requires_grad else None) or (None, 0)
                                    for i in tensor_args)
        node.out_meta = tuple(None if (not isinstance(o, Tensor) or id(o) in non_diff or o.dtype.category < 2)
                              else (tuple(o.shape), o.dtype, o.device) for o in outs)
        inputs = {id(args[i]) for i in tensor_args}
        result = []
        for nr, o in enumerate(outs):
            if isinstance(o, Tensor) and id(o) in dirty:
                meta = o._autograd
                if o.requires_grad and (meta is None or meta.grad_fn is None):
                    raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
            elif isinstance(o, Tensor) and id(o) in inputs:
                with no_grad():  # an input returned as is: a fresh tensor carries the new history
                    o = o.view_as(o) if node.out_meta[nr] is not None else o.detach()
            if node.out_meta[nr] is not None:
                o._keys |= AUTOGRAD_BIT
                meta = meta_of(o)
                meta.grad_fn, meta.output_nr = node, nr
            result.append(o)
        # Saved outputs hold no strong reference to the node (no cycle); inputs are saved as is.
        out_pos = {id(o): nr for nr, o in enumerate(outs) if isinstance(o, Tensor)}
        node._saved = tuple(
            None if t is None else
            SavedTensor(result[out_pos[id(t)]], node, is_output=True, output_nr=out_pos[id(t)])
            if id(t) in out_pos else SavedTensor(t)
            for t in to_save)
        node._to_save = ()
        return tuple(result) if isinstance(out, tuple) else result[0]


class once_differentiable:  # noqa: N801 - PyTorch's name
    """Decorator for ``backward``: it runs without recording a graph."""

    def __new__(cls, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(ctx, *args):
            with no_grad():
                return fn(ctx, *args)
        return wrapper
