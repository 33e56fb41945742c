"""The Functionalize dispatch key: functional tensor wrappers and the key's kernel.

A `FunctionalTensor` stands for a tensor while a program is functionalised. It holds the
tensor's latest *value* (a plain tensor that nothing ever writes) and its place in an alias
group: the group's `_Storage` (the latest value of the group's base) and the chain of view
functions (`ViewMeta`) that computes this tensor from that base. Its dispatch keys are
Functionalize plus its value's keys, so every op on it reaches `functionalize_kernel`, which
(like PyTorch's FunctionalTensorWrapper / functionalization kernels):

* an op that writes an argument (the op-properties table's ``mutates``, from the schema's
  ``Tensor(a!)``: in-place ops, ``out=`` overloads) runs its functional variant (same name
  without ``_``, same arguments without the out ones) and *replaces* the written wrapper's
  value. Written through a view, the new value is scattered into the base at once through the
  view chain's inverses (``select`` -> ``select_scatter``, ``view`` -> ``view`` back to the base's
  shape ...), and the view is regenerated from the new base; the group's generation advances,
  so every other view of it regenerates lazily, when next used (*view replay*);
* composite ops run their decomposition on the wrappers (its parts are functionalised: a
  composite view such as ``reshape`` becomes ``view``, or ``clone`` + ``view`` where it copies);
* a view op (``is_view``) runs on the base's value, and its result joins the base's group with
  one more ViewMeta (with ``remove_views``: the ``<view>_copy`` op runs instead);
* any other op runs on the values and its results become new wrappers.

Ops run below the key with Functionalize excluded, so make_fx (the Tracer key, below this
one) records only functional ops. While a functionalize() session is active the key is in the
thread's include set, so factory functions' results are wrapped too. A mutation of a plain
tensor by plain tensors is done for real (a tensor from outside the session); mixing a plain
written tensor with wrappers is refused, as in PyTorch.
"""
from __future__ import annotations

import threading

from .._core.dispatch import (DispatchKey, AUTOGRAD_BIT, below, register_fallback, tls,
                              _ExcludeDispatchKeyGuard)
from .._core.tensor import Tensor
from .._core import dtype as _dt

FUNCTIONALIZE_BIT = 1 << DispatchKey.Functionalize
_BELOW = below(DispatchKey.Functionalize)


class _ThreadState(threading.local):
    session = None          # the active functionalize session on this thread (None: none)


state = _ThreadState()


def _inner():
    """Run ops on values: the Functionalize key is skipped (the keys below, the Tracer's
    included, see them)."""
    return _ExcludeDispatchKeyGuard(DispatchKey.Functionalize)


def _call(op, *args):
    """Run `op` (all arguments in schema order) on plain tensors, below the Functionalize key."""
    with _inner():
        return op.call(_keys_of(args), *args)


def _keys_of(args) -> int:
    keys = 0
    for a in args:
        if isinstance(a, Tensor):
            keys |= a._keys
        elif isinstance(a, (list, tuple)):
            for x in a:
                if isinstance(x, Tensor):
                    keys |= x._keys
    return keys


def _aten():
    from ..ops.registry import aten
    return aten


class _Storage:
    """An alias group: the latest value of its base, a generation that every write advances,
    and whether any write happened (an input's write-back)."""
    __slots__ = ("base", "generation", "mutated")

    def __init__(self, base):
        self.base, self.generation, self.mutated = base, 0, False


class ViewMeta:
    """One step of a view chain: ``op(base, *args)`` (output `index` of a multi-output view)."""
    __slots__ = ("op", "args", "index")

    def __init__(self, op, args, index):
        self.op, self.args, self.index = op, tuple(args), index

    def forward(self, base):
        op = self.op
        session = state.session
        if session is not None and session.remove_views:
            op = view_copy_of(op) or op
        out = _call(op, base, *self.args)
        return out if self.index is None else out[self.index]

    def reverse(self, base, mutated):
        """The base with `mutated` written where this view of it is."""
        rule = INVERSES.get(self.op.schema.name, _as_strided_inverse)
        return rule(self, base, mutated)

    def __repr__(self):
        return f"ViewMeta({self.op.name}, {self.args}, {self.index})"


class FunctionalTensor(Tensor):
    """A tensor while a program is functionalised (see the module docstring). Metadata reads
    see the latest value (a stale view regenerates first); nothing can write its memory."""
    __slots__ = ("_value", "_storage", "_metas", "_generation")

    @property
    def _data(self):
        return current(self)._data

    @_data.setter
    def _data(self, value):
        raise NotImplementedError("functionalize: the memory of a tensor being functionalised cannot be replaced "
                                  "(.data = / set_ / resize_ are not supported)")

    @property
    def _autograd(self):      # autograd metadata lives on the value (Autograd is below this key)
        return current(self)._autograd

    @_autograd.setter
    def _autograd(self, meta):
        current(self)._autograd = meta

    @property
    def data(self):
        """A detached alias, functionalised like any view (writes through it reach this tensor)."""
        return self.detach()

    @data.setter
    def data(self, value):
        raise NotImplementedError("functionalize: '.data =' would replace the memory of a tensor being "
                                  "functionalised (set_ / resize_ are not supported either)")

    def numpy(self, *, force: bool = False):
        """A read-only view of the value: a write through NumPy would bypass functionalisation."""
        arr = Tensor.numpy(self, force=force).view()
        arr.flags.writeable = False
        return arr

    def requires_grad_(self, requires_grad: bool = True):
        value = current(self)       # the flag belongs to the value, where autograd records
        value.requires_grad_(requires_grad)
        _set_value(self, value)
        return self

    def __repr__(self, *, tensor_contents=None):
        return f"FunctionalTensor({current(self)!r})"


def fresh(value: Tensor) -> FunctionalTensor:
    """A wrapper of `value` that aliases nothing else."""
    return _new(value, _Storage(value), (), 0)


def _new(value, storage, metas, generation):
    w = object.__new__(FunctionalTensor)
    w._storage, w._metas, w._generation = storage, metas, generation
    _set_value(w, value)
    return w


def _set_value(w, value):
    w._value = value
    w._keys = FUNCTIONALIZE_BIT | value._keys


def current(w: FunctionalTensor) -> Tensor:
    """The latest value of `w`, regenerated from its base when the group was written since."""
    storage = w._storage
    if w._generation != storage.generation:
        value = storage.base
        for meta in w._metas:
            value = meta.forward(value)
        _set_value(w, value)
        w._generation = storage.generation
    return w._value


def unwrap(value):
    """Wrappers -> their latest values (inside lists and tuples too); anything else as is."""
    if isinstance(value, FunctionalTensor):
        return current(value)
    if isinstance(value, (list, tuple)) and any(isinstance(v, FunctionalTensor) for v in value):
        return type(value)(unwrap(v) for v in value)
    return value


def _wrap_results(out):
    if isinstance(out, Tensor):
        return fresh(out)
    if isinstance(out, (list, tuple)) and any(isinstance(o, Tensor) for o in out):
        items = [fresh(o) if isinstance(o, Tensor) else o for o in out]
        return type(out)._make(items) if hasattr(type(out), "_make") else type(out)(items)   # namedtuple / structseq
    return out


def _has_wrapper(args) -> bool:
    for a in args:
        if isinstance(a, FunctionalTensor):
            return True
        if isinstance(a, (list, tuple)) and any(isinstance(x, FunctionalTensor) for x in a):
            return True
    return False


# ---------------------------------------------------------------------------------------
# writes
# ---------------------------------------------------------------------------------------
def commit(w: FunctionalTensor, new: Tensor) -> None:
    """`w` now holds `new`: write it into the group's base (through the view chain's inverses
    when `w` is a view) and regenerate `w` from the new base, as PyTorch syncs a written view."""
    storage = w._storage
    if w._metas:
        bases = [storage.base]
        for meta in w._metas[:-1]:
            bases.append(meta.forward(bases[-1]))
        for meta, base in zip(reversed(w._metas), reversed(bases)):
            new = meta.reverse(base, new)
    storage.base = new
    storage.generation += 1
    storage.mutated = True
    w._generation = -1
    current(w)


def _write_targets(op, props):
    cached = _WRITES.get(op.name)
    if cached is None:
        cached = _WRITES[op.name] = tuple(i for i, a in enumerate(op.schema.arguments) if a.name in props.mutates)
    return cached


_WRITES: dict = {}
_COUNTERPARTS: dict = {}


def functional_counterpart(op):
    """The functional overload of a writing op: the same name without the trailing ``_``, whose
    arguments are the op's (less its ``out=`` ones) by name and type; None when there is none."""
    if op.name in _COUNTERPARTS:
        return _COUNTERPARTS[op.name]
    from ..ops.properties import of_op
    schema = op.schema
    wanted = [(a.name, a.type, a.is_list) for a in schema.arguments if not (schema.is_out and a.is_write)]
    packet = getattr(_aten(), schema.name.rstrip("_"), None) if schema.name.rstrip("_") else None
    found = None
    for candidate in (packet._overloads.values() if packet is not None else ()):
        if not of_op(candidate).mutates and \
                [(a.name, a.type, a.is_list) for a in candidate.schema.arguments] == wanted:
            found = candidate
            break
    _COUNTERPARTS[op.name] = found
    return found


def view_copy_of(op):
    """``<view>_copy`` of a view op (``select.int`` -> ``select_copy.int``), None when ember has none."""
    packet = getattr(_aten(), op.schema.name + "_copy", None)
    return None if packet is None else packet._overloads.get(op.schema.overload_name or "default")


def _check_leaf_write(op, targets):
    """Eager autograd's refusals of in-place writes to leaves that require grad."""
    if tls.exclude & AUTOGRAD_BIT:      # no_grad: allowed, as in eager
        return
    for t in targets:
        storage = t._storage
        base = storage.base
        if not t._metas and current(t)._keys & AUTOGRAD_BIT and current(t).grad_fn is None:
            # AOT autograd's trace: its leaf stands for the caller's input, checked per call
            if state.session is not None and state.session.leaf_write_allowed(base):
                continue
            raise RuntimeError(f"{op.schema.name}(): a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        if t._metas and base._keys & AUTOGRAD_BIT and base.grad_fn is None:
            raise RuntimeError(f"{op.schema.name}(): a view of a leaf Variable that requires grad is being used in "
                               "an in-place operation.")


def _checked_result(op, target, result, args):
    """The new value of `target` from the functional op's `result`: eager's shape and dtype
    checks (before anything is written), then cast to the target's dtype."""
    from ..ops import out_dtype
    label = op.schema.name
    old = current(target)
    if tuple(result.shape) != tuple(old.shape):
        if not op.schema.is_out:
            raise RuntimeError(f"{label}(): output with shape {list(old.shape)} doesn't match the broadcast shape "
                               f"{list(result.shape)}")
        if target._metas:
            raise NotImplementedError(f"functionalize: {label}(out=...) would resize a view of another tensor; "
                                      "ember cannot functionalize that")
        if old.numel() != 0:
            import warnings
            warnings.warn(f"An output with one or more elements was resized since it had shape {list(old.shape)}, "
                          f"which does not match the required output shape {list(result.shape)}.")
    if op.schema.is_out:
        inputs = [a for a, arg in zip(args, op.schema.arguments) if not arg.is_write]
        out_dtype.check(label, out_dtype.policy(label), result.dtype, old, inputs)
    elif result.dtype is not old.dtype and not _dt.can_cast(result.dtype, old.dtype):
        raise RuntimeError(f"{label}(): result type {result.dtype.c10_name} can't be cast to the desired output "
                           f"type {old.dtype.c10_name}")
    if result.dtype is not old.dtype:
        result = _call(_aten()._to_copy.default, result, old.dtype, None, None, None, False, None)
    return result


def _mutation(op, keys, args, props):
    indices = _write_targets(op, props)
    targets = [args[i] for i in indices]
    wrapped = [isinstance(t, FunctionalTensor) for t in targets]
    if not any(wrapped) and not _has_wrapper(args):
        with _inner():       # a tensor from outside the session, written by tensors from outside: for real
            return op.redispatch((keys | (_keys_of(args) & ~tls.exclude)) & _BELOW, *args)
    if not all(wrapped):
        raise RuntimeError(f"{op.name}: mutating a non-functional tensor with a functional tensor is not allowed. "
                           "Please ensure that all of your inputs are wrapped inside of a functionalize() call.")
    counterpart = functional_counterpart(op)
    if counterpart is None:
        raise NotImplementedError(f"functionalize: '{op.name}' writes its argument "
                                  f"'{op.schema.arguments[indices[0]].name}' and has no functional variant, so "
                                  "ember cannot functionalize it")
    _check_leaf_write(op, targets)
    schema = op.schema
    functional_args = [a for a, arg in zip(args, schema.arguments) if not (schema.is_out and arg.is_write)]
    from ..ops.properties import of_op
    if of_op(counterpart).is_view:       # t_, transpose_, squeeze_ ...: self becomes a view of itself
        target = targets[0]
        meta = ViewMeta(counterpart, unwrap(functional_args[1:]), None)
        value = meta.forward(current(target))
        target._metas = target._metas + (meta,)
        _set_value(target, value)
        return target
    results = functionalize_kernel(counterpart, keys, *functional_args)
    results = list(results) if len(targets) > 1 else [results]
    new_values = [_checked_result(op, t, current(r), args) for t, r in zip(targets, results)]
    for t, value in zip(targets, new_values):
        commit(t, value)
    if len(targets) == 1:
        return targets[0]
    from .. import return_types
    return getattr(return_types, schema.name + "_out", tuple)(targets)


# ---------------------------------------------------------------------------------------
# views
# ---------------------------------------------------------------------------------------
_ALIASED_ARG: dict = {}


def _aliased_arg(op) -> int:
    """The index of the argument a view op's result aliases (the one annotated like its return)."""
    index = _ALIASED_ARG.get(op.name)
    if index is None:
        alias = op.schema.returns[0].alias
        index = _ALIASED_ARG[op.name] = next(i for i, a in enumerate(op.schema.arguments) if a.alias == alias)
    return index


def _view(op, keys, args):
    index = _aliased_arg(op)
    base = args[index]
    if not isinstance(base, FunctionalTensor):
        return _functional(op, keys, args)
    if op.schema.name == "contiguous":    # a view in the table, but: self, or a new tensor (a clone)
        return base if current(base).is_contiguous() else _functional(op, keys, args)
    session = state.session
    view_op = op
    if session is not None and session.remove_views:
        view_op = view_copy_of(op) or op
    rest = unwrap(list(args[:index]) + list(args[index + 1:]))
    base_value = current(base)
    out = _call(view_op, *rest[:index], base_value, *rest[index:])
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    storage = base._storage
    wrapped = [_new(o, storage, base._metas + (ViewMeta(op, rest, i if isinstance(out, (list, tuple)) else None),),
                    storage.generation) for i, o in enumerate(outs)]
    if isinstance(out, (list, tuple)):
        return type(out)(wrapped)
    return wrapped[0]


def _functional(op, keys, args):
    values = [unwrap(a) for a in args]
    with _inner():
        out = op.redispatch((keys | (_keys_of(values) & ~tls.exclude)) & _BELOW, *values)
    return _wrap_results(out)


def functionalize_kernel(op, keys, *args):
    """The Functionalize key's boxed kernel (see the module docstring)."""
    from ..ops.properties import of_op
    if state.session is None and not _has_wrapper(args):
        with _inner():       # the key is on without a session (a test, a stray include): pass through
            return op.redispatch((keys | (_keys_of(args) & ~tls.exclude)) & _BELOW, *args)
    props = of_op(op)
    if props.mutates and not (op.composite is not None and not op.derived):
        return _mutation(op, keys, args, props)
    if op.composite is not None:      # views too (reshape may copy): each part is functionalised
        return op.composite(*args)
    if props.is_view:
        return _view(op, keys, args)
    return _functional(op, keys, args)


# ---------------------------------------------------------------------------------------
# inverses of views: the base with a new value written where the view is
# (PyTorch's FunctionalInverses); views not listed go through as_strided_scatter
# ---------------------------------------------------------------------------------------
def _op(name, overload="default"):
    session = state.session
    packet = getattr(_aten(), name)
    if session is not None and session.remove_views and hasattr(_aten(), name + "_copy"):
        packet = getattr(_aten(), name + "_copy")
    return getattr(packet, overload)


def _reshape_inverse(meta, base, mutated):
    if meta.op.name == "aten::view.dtype":
        return _call(_op("view", "dtype"), mutated, base.dtype)
    return _call(_op("view"), mutated, list(base.shape))


def _same_op_inverse(meta, base, mutated):          # alias, detach: the view is the base
    return _call(_op(meta.op.schema.name), mutated)


def _unsqueeze_inverse(meta, base, mutated):
    return _call(_op("squeeze", "dim"), mutated, meta.args[0])


def _transpose_inverse(meta, base, mutated):
    return _call(_op("transpose", "int"), mutated, *meta.args)


def _permute_inverse(meta, base, mutated):
    dims = [d % base.ndim for d in meta.args[0]]
    return _call(_op("permute"), mutated, sorted(range(len(dims)), key=dims.__getitem__))


def _select_inverse(meta, base, mutated):
    if meta.op.schema.name == "unbind":
        return _call(_aten().select_scatter.default, base, mutated, meta.args[0], meta.index)
    return _call(_aten().select_scatter.default, base, mutated, *meta.args)


def _slice_inverse(meta, base, mutated):
    return _call(_aten().slice_scatter.default, base, mutated, *meta.args)


def _split_inverse(meta, base, mutated):
    size, dim = meta.args[0], meta.args[1]
    dim %= base.ndim
    sizes = [size] * (base.shape[dim] // size) + ([base.shape[dim] % size] if base.shape[dim] % size else []) \
        if isinstance(size, int) else list(size)
    start = sum(sizes[:meta.index])
    return _call(_aten().slice_scatter.default, base, mutated, dim, start, start + sizes[meta.index], 1)


def _diagonal_inverse(meta, base, mutated):
    return _call(_aten().diagonal_scatter.default, base, mutated, *meta.args)


def _as_strided_inverse(meta, base, mutated):
    """Any view: find where it lies in a copy of the base laid out as clone() lays it (a meta
    probe), and write it there with as_strided_scatter."""
    from .._core.tensor_spec import meta_like
    from ..ops.cpu.conversion import clone_meta
    if meta.op.schema.name == "as_strided":
        size, stride, offset = meta.args
    else:
        probe = clone_meta(meta_like(base))
        with _ExcludeDispatchKeyGuard([DispatchKey.Functionalize, DispatchKey.Tracer]):
            view = meta.op.call(probe._keys, probe, *meta.args)
        view = view if meta.index is None else view[meta.index]
        size, stride, offset = list(view.shape), list(view.stride()), view.storage_offset()
    return _call(_aten().as_strided_scatter.default, base, mutated, size, stride, offset)


def _expand_inverse(meta, base, mutated):
    raise NotImplementedError("functionalize: writing into an expanded tensor (expand / broadcast_to) is not "
                              "supported")


# by schema name; the view ops of the table with kernels of their own (composite views
# decompose into these before they are functionalised)
INVERSES = {
    "view": _reshape_inverse, "squeeze": _reshape_inverse, "unsqueeze": _unsqueeze_inverse,
    "alias": _same_op_inverse, "detach": _same_op_inverse,
    "transpose": _transpose_inverse, "t": lambda meta, base, mutated: _call(_op("t"), mutated),
    "permute": _permute_inverse, "select": _select_inverse, "unbind": _select_inverse,
    "slice": _slice_inverse, "split": _split_inverse, "split_with_sizes": _split_inverse,
    "diagonal": _diagonal_inverse, "expand": _expand_inverse,
}

register_fallback(DispatchKey.Functionalize, functionalize_kernel)
