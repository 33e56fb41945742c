"""The autograd graph: per-tensor autograd metadata, nodes (``grad_fn``), edges, saved tensors.

A tensor that requires grad carries ``_autograd``, an `AutogradMeta` holding its ``grad``,
its ``grad_fn`` (the node that made it; None for leaves) and which output of that node it is.
A node's ``next_functions`` are edges ``(node, input_nr)`` to the nodes that produced its
inputs; a leaf that requires grad is reached through its `AccumulateGrad` node.
"""
from __future__ import annotations

import itertools
import sys
import weakref

import numpy as np

from .._core.dispatch import AUTOGRAD_BIT, BACKEND_MASK, CUDA_BIT, INFERENCE_BIT, tls
from .._core.tensor import CPU_BIT, Tensor, _make, alias as alias_of, wrap
from .grad_mode import is_grad_enabled, no_grad


class AutogradMeta:
    """What autograd keeps on a tensor (c10's AutogradMeta)."""
    __slots__ = ("grad", "grad_fn", "output_nr", "accumulator", "hooks", "post_accumulate_hooks", "retains_grad",
                 "view_base", "__weakref__")
    # hooks: a leaf's tensor hooks (run by the engine before its AccumulateGrad; a non-leaf's
    # hooks live on its grad_fn's ``pre_hooks``). post_accumulate_hooks: a leaf's hooks run
    # after its .grad was updated. retains_grad: set by ``retain_grad()``.

    def __init__(self, grad_fn=None, output_nr=0):
        self.grad = None
        self.grad_fn = grad_fn
        self.output_nr = output_nr
        self.accumulator = None     # weakref to the leaf's AccumulateGrad
        self.hooks = None           # tensor hooks of a leaf (non-leaf hooks live on grad_fn)
        self.post_accumulate_hooks = None
        self.retains_grad = False
        self.view_base = None       # the tensor this one is a view of, when it is a view


def meta_of(t) -> AutogradMeta:
    meta = t._autograd
    if meta is None:
        meta = t._autograd = AutogradMeta()
    return meta


def gradient_edge(t):
    """The edge gradients for `t` flow into: its grad_fn, or its leaf's AccumulateGrad."""
    meta = t._autograd
    if meta is not None and meta.grad_fn is not None:
        return (meta.grad_fn, meta.output_nr)
    if not t._keys & AUTOGRAD_BIT:
        return None
    meta = meta_of(t)
    acc = meta.accumulator() if meta.accumulator is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        meta.accumulator = weakref.ref(acc)
    return (acc, 0)


# Numbers nodes in creation order (the engine runs the newest ready node first). A counter, not a
# class attribute: assigning one (``Node._sequence += 1``) invalidates the type cache of Node and
# of every subclass (one per op), which cost ~30 us per recorded op.
next_sequence_nr = itertools.count(1).__next__

_HOOK_CONTAINERS = {"pre_hooks": dict, "retain_hooks": dict, "hooks": list, "metadata": dict}


class Node:
    """A backward function. ``apply(grads)`` maps output grads to input grads.

    Its hook containers are made on first use (`__getattr__`): most nodes never get a hook, and
    four empty containers per node were ~1 us of every recorded op. ``_hooked`` turns True once
    one of them exists, so the engine looks for hooks only on nodes that may have some."""

    _hooked = False

    def __init__(self, next_edges=()):
        # PyTorch shows an input that needs no gradient as the edge (None, 0).
        self.next_functions = tuple((None, 0) if e is None else e for e in next_edges)
        self.sequence_nr = next_sequence_nr()

    def __getattr__(self, name):
        # pre_hooks: output_nr -> [hook(grad) -> grad or None]; -1: whole-node prehooks.
        # retain_hooks: output_nr -> retain_grad hook (always runs after the tensor hooks).
        # hooks: [hook(grad_inputs, grad_outputs)]. metadata: the user's dict.
        make = _HOOK_CONTAINERS.get(name)
        if make is None:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        value = self.__dict__[name] = make()
        if name != "metadata":
            self._hooked = True
        return value

    def name(self) -> str:
        return type(self).__name__

    def register_hook(self, fn):
        self.hooks.append(fn)
        return _Handle(self.hooks, fn)

    def register_prehook(self, fn):
        self.pre_hooks.setdefault(-1, []).append(fn)
        return _Handle(self.pre_hooks[-1], fn)

    def apply(self, grads):  # pragma: no cover - subclasses
        raise NotImplementedError

    def release(self):
        """Free saved tensors (after a backward without retain_graph)."""

    def __call__(self, *grads):
        return self.apply(list(grads))

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"


class _Handle:
    def __init__(self, container, item):
        self.container, self.item = container, item

    def remove(self):
        try:
            self.container.remove(self.item)
        except ValueError:
            pass


# Who holds an incoming gradient while _sole_owner counts: the engine's list of the node's
# gradients (engine._run_graph drops its buffer dict, the previous node's outputs and its loop
# names first), AccumulateGrad.apply's local `g`, _sole_owner's parameter and sys.getrefcount's
# argument; its array: the tensor, apply's local `arr`, the parameter and getrefcount's argument.
# One more holder (a hook that kept it, a second leaf it also flows to, a saved tensor, a view) and
# it is copied.
_GRAD_REFS, _ARRAY_REFS = 4, 4


def _sole_owner(g, arr) -> bool:
    """Whether `g` and its array are referenced only by the engine (so `.grad` may be `g` itself)."""
    return arr.base is None and sys.getrefcount(arr) == _ARRAY_REFS and sys.getrefcount(g) == _GRAD_REFS


class AccumulateGrad(Node):
    """Adds the incoming gradient into a leaf's ``.grad``."""

    def __init__(self, variable):
        super().__init__(())
        self.variable = variable

    def apply(self, grads):
        # The leaf's tensor hooks ran already (hooks.run_pre_hooks), as in PyTorch.
        g = grads[0] if grads else None
        if g is None:
            return []
        variable = self.variable
        meta = variable._autograd
        if meta is None:
            meta = meta_of(variable)
        grad_enabled = not tls.exclude & AUTOGRAD_BIT     # (is_grad_enabled without its call: one per leaf)
        if meta.grad is None:
            # A copy: the same gradient object may reach several leaves (a + b), and users
            # zero .grad in place. Under create_graph the grad keeps its history. A plain CPU
            # gradient with no mode active (profiler, dispatch modes) is copied as clone's kernel
            # would copy it, without the two dispatches (a training step's parameters: ~30 us each).
            if grad_enabled:
                meta.grad = g
            elif (g._keys == CPU_BIT and g._data.__class__ is np.ndarray or g._keys == CUDA_BIT) \
                    and not tls.include and g.__class__ is Tensor:     # (a CUDA one likewise, on CuPy)
                arr = g._data
                if _sole_owner(g, arr) and arr.strides == variable._data.strides:
                    meta.grad = g       # nobody else can see it: kept, not copied (PyTorch steals it too)
                else:
                    meta.grad = _make(arr.copy(order="K"), g._keys)
            else:
                meta.grad = g.detach().clone()
        elif grad_enabled:
            meta.grad = meta.grad + g  # create_graph: out of place, so the sum has history
        else:
            with no_grad():  # in place, like PyTorch: `g = x.grad` stays x.grad after backward
                meta.grad.add_(g)
        if meta.post_accumulate_hooks:
            from .hooks import run_post_accumulate_hooks
            run_post_accumulate_hooks(variable)
        return []


class SavedTensor:
    """A tensor saved for backward, checked against its version counter when unpacked."""
    __slots__ = ("tensor", "version", "is_output", "node", "released", "producer", "output_nr")

    def __init__(self, tensor, node=None, is_output=False, expected_bump=0, output_nr=0):
        self.is_output = is_output
        self.node = None
        meta = tensor._autograd
        # The node that produced the tensor, for the error message (PyTorch names it).
        self.producer = None if is_output or meta is None or meta.grad_fn is None else type(meta.grad_fn).__name__
        self.output_nr = output_nr if is_output else (0 if meta is None else meta.output_nr)
        if is_output:
            # An alias without history, and a weak reference to the node that saves it: saving
            # the output itself (or the node strongly) would make a reference cycle
            # node -> saved -> output -> grad_fn -> node, which only gc could free.
            alias = alias_of(tensor, tensor._keys & BACKEND_MASK)
            alias._version_counter = tensor._shared_version_counter()
            self.tensor = alias
            self.node = weakref.ref(node) if node is not None else None
            self.producer = node.name() if node is not None else None
        else:
            if tensor._keys & INFERENCE_BIT:
                from .inference import SAVE_MESSAGE
                raise RuntimeError(SAVE_MESSAGE)
            self.tensor = tensor
        # A tensor without a counter is at version 0, and gets one at its first in-place write or view
        # (shared with the view): `unpack` reads the tensor's counter then, so none is made here for the
        # ~200 activations a GPT-2 step saves (a counter and the tensor's __dict__ each: gc-tracked objects).
        vc = tensor._version_counter    # (an output's is shared with its saved alias)
        self.version = (0 if vc is None else vc.value) + expected_bump
        self.released = False

    def unpack(self, node_name: str):
        if self.released:
            raise RuntimeError("Trying to backward through the graph a second time (or directly access saved "
                               "tensors after they have already been freed). Saved intermediate values of the graph "
                               "are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if "
                               "you need to backward through the graph a second time or if you need to access saved "
                               "tensors after calling backward.")
        t = self.tensor
        vc = t._version_counter     # (`_version` without its property: never an inference tensor)
        if (0 if vc is None else vc.value) != self.version:
            which = f", which is output {self.output_nr} of {self.producer}," if self.producer else ""
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace operation: "
                f"[{t.dtype} {list(t.shape)}]{which} is at version {t._version}; expected version {self.version} "
                f"instead (needed by {node_name}). Hint: the backtrace further above can show the operation that "
                "failed to compute its gradient. The variable in question was changed in there or anywhere later.")
        node = self.node() if self.node is not None else None
        if self.is_output and node is not None:
            if is_grad_enabled():  # double backward: the output is connected to its node again
                out = alias_of(t, t._keys | AUTOGRAD_BIT)
                out._version_counter = t._version_counter
                out._autograd = AutogradMeta(node, self.output_nr)
                return out
        return t

    def release(self):
        self.released = True
        self.tensor = None
        self.node = None
