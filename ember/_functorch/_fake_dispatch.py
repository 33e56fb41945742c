"""The Fake dispatch key's kernel: run an op on fake tensors (see fake_tensor.py's docstring).

    fake_kernel(op, keys, *args)   # the key's boxed fallback, for every operator

Order of work per call: find the mode and check the arguments, refuse data-dependent ops, compute
the output device, then answer from the mode's cache or run the Meta kernel (or the composite's
parts) and wrap the results. The cache keeps, per (op, argument metadata and values, default
dtype), how each result is made: "argument i itself" (in-place ops) or "new metadata, viewing
argument j's storage or a fresh one", so a hit rebuilds exactly what a run would have given.
"""
from __future__ import annotations

from .._core import dtype as _dt
from .._core.device import device as _device, META
from .._core.dispatch import DispatchKey, FAKE_BIT, META_BIT, BACKEND_MASK, tls
from .._core.storage import MetaArray
from .._core.tensor import Tensor
from ..ops.properties import of_op
from .fake_tensor import (FakeTensor, FakeArray, FakeStorage, DataDependentOutputException,
                          DynamicOutputShapeException, FakeTensorDeviceMismatchError, _state, _make_fake,
                          _normalize_device)

_CPU = _device("cpu")
# Ops that take tensors on several devices and give a result on their first argument's (PyTorch's
# fake_impls.multi_device_op_default): the copy into a tensor, and the scatter-into-a-copy family.
FIRST_ARGUMENT_DEVICE = frozenset({"copy_", "copy", "slice_scatter", "diagonal_scatter", "select_scatter",
                                   "index_put", "index_put_", "_unsafe_index_put"})


# Ops whose schema says their result aliases their argument (``Tensor(a)``) but whose kernel returns
# either that argument itself or a fresh copy: a result that is not the argument is new memory.
MAY_COPY = frozenset({"contiguous"})


def _shape_known(op, args) -> bool:
    """For an op that may have a data-dependent shape: is it known from these arguments?"""
    name = op.schema.name
    if name == "index":                          # integer indices: yes; boolean masks: no
        return all(i is None or i.dtype not in (_dt.bool_, _dt.uint8) for i in args[1])
    if name == "repeat_interleave":              # output_size given
        return args[op.schema.names.index("output_size")] is not None
    if name == "one_hot":                        # num_classes given
        return args[1] >= 0
    return False


class _Bypass(Exception):
    """This call's result is not cached (the reason counts in cache_info().bypasses)."""


# ---------------------------------------------------------------------------------------
# the kernel
# ---------------------------------------------------------------------------------------
def fake_kernel(op, keys, *args):
    mode = _state.modes[-1] if tls.include & FAKE_BIT and _state.modes else None
    args, fakes, mode = _check_arguments(op, args, mode)
    props = of_op(op)
    if props.dynamic_output_shape and not _shape_known(op, args):
        raise DynamicOutputShapeException(op)
    if props.data_dependent_output:
        raise DataDependentOutputException(op)
    device = _output_device(op, args, fakes)
    active = mode if not (tls.include & FAKE_BIT and _state.modes and _state.modes[-1] is mode) else None
    if active is not None:           # ops on fakes outside their mode: factories inside make fakes too
        active.__enter__()
    try:
        if DispatchKey.Meta not in op.kernels and op.composite is not None:
            mode._bypasses["composite"] += 1
            return _run_composite(op, args)
        if not mode.cache_enabled:
            return _run(op, args, device, mode)[0]
        try:
            if props.is_random:
                raise _Bypass("random op")
            key = (op, _dt.get_default_dtype(), _key_of(args))
        except _Bypass as reason:
            mode._bypasses[str(reason)] += 1
            return _run(op, args, device, mode)[0]
        entry = mode._cache.get(key)
        if entry is not None:
            mode._hits += 1
            return _from_entry(entry, args, device, mode)
        out, entry = _run(op, args, device, mode)
        if isinstance(entry, str):
            mode._bypasses[entry] += 1
        else:
            mode._misses += 1
            mode._cache[key] = entry
        return out
    finally:
        if active is not None:
            active.__exit__(None, None, None)


def _check_arguments(op, args, mode):
    """(args with allowed real tensors converted, the fake tensors in order, the mode)."""
    fakes, reals, numbers = [], [], False
    for a in args:
        if isinstance(a, Tensor):
            if a.__class__ is FakeTensor or isinstance(a, FakeTensor):
                fakes.append(a)
            elif a._wrapped_number:        # a Python number the binding made a 0-d tensor of
                numbers = True
            else:
                reals.append(a)
        elif isinstance(a, (list, tuple)):
            for x in a:
                if isinstance(x, Tensor):
                    (fakes if isinstance(x, FakeTensor) else reals).append(x)
    for f in fakes:
        if mode is None:
            mode = f.fake_mode
        elif f.fake_mode is not mode:
            raise AssertionError(f"Mixing fake modes NYI: {f.fake_mode} vs {mode} in {_render(op, args)}")
    if mode is None:                 # Fake key on a fake-free call: a stale include bit
        raise AssertionError(f"{op.name}: the Fake dispatch key without a fake tensor or a FakeTensorMode")
    if reals and not mode.allow_non_fake_inputs:
        raise AssertionError("Please convert all Tensors to FakeTensors first or instantiate FakeTensorMode "
                             f"with 'allow_non_fake_inputs'. Found in {_render(op, args)}")
    if reals or numbers:
        args = tuple(_converted(a, mode) for a in args)
        fakes = [x for a in args for x in (a if isinstance(a, (list, tuple)) else (a,)) if isinstance(x, FakeTensor)]
    return args, fakes, mode


def _converted(a, mode):
    if isinstance(a, Tensor):
        return mode.from_tensor(a)
    if isinstance(a, (list, tuple)) and any(isinstance(x, Tensor) for x in a):
        return type(a)(mode.from_tensor(x) if isinstance(x, Tensor) else x for x in a)
    return a


def _render(op, args) -> str:
    """PyTorch's spelling of a call in its errors: aten.add.Tensor(FakeTensor(..., size=(2,)), tensor([...], size=(2,)))."""
    def one(a):
        if isinstance(a, FakeTensor):
            return repr(a)
        if isinstance(a, Tensor):
            return f"tensor([...], size={tuple(a.shape)})"
        if isinstance(a, (list, tuple)):
            return "[" + ", ".join(one(x) for x in a) + "]"
        return repr(a)
    shown = [(a, arg) for a, arg in zip(args, op.schema.arguments)
             if not (arg.kwarg_only and arg.has_default and _equal(a, arg.default))]
    while shown and shown[-1][1].has_default and _equal(shown[-1][0], shown[-1][1].default):
        shown.pop()                                  # as PyTorch prints a call: defaults left out
    return f"{op.name.replace('::', '.')}({', '.join(one(a) for a, _ in shown)})"


def _equal(value, default) -> bool:
    return type(value) is type(default) and value == default if not isinstance(value, Tensor) else False


# ---------------------------------------------------------------------------------------
# devices
# ---------------------------------------------------------------------------------------
def _output_device(op, args, fakes):
    """PyTorch's device of a fake result: the op's ``device`` argument; the first argument's for
    copy-like ops; else the inputs' common device, where a 0-d cpu tensor gives way to the others
    (FakeTensor._find_common_device); cpu when there are no tensors."""
    names = op.schema.names
    if "device" in names:
        d = args[names.index("device")]
        if d is not None:
            return _normalize_device(d)
    if op.schema.name in FIRST_ARGUMENT_DEVICE and fakes:
        return fakes[0]._data.device
    common, common_is_cpu_scalar = None, False
    for t in fakes:
        data = t._data
        d, is_cpu_scalar = data.device, data.device.type == "cpu" and not data.shape
        if common is None:
            common, common_is_cpu_scalar = d, is_cpu_scalar
        elif d == common:
            common_is_cpu_scalar = common_is_cpu_scalar and is_cpu_scalar
        elif is_cpu_scalar:
            continue
        elif common_is_cpu_scalar:
            common, common_is_cpu_scalar = d, False
        else:
            raise FakeTensorDeviceMismatchError(op, common, d)
    return _CPU if common is None else common


# ---------------------------------------------------------------------------------------
# running and wrapping
# ---------------------------------------------------------------------------------------
def _run_composite(op, args):
    """A composite op: its parts dispatch one by one (each through fake_kernel), outside any
    kernel invocation, so they see fake devices."""
    saved, _state.in_kernel = _state.in_kernel, 0
    try:
        return op.composite(*args)
    finally:
        _state.in_kernel = saved


def _alias_sources(op) -> tuple:
    """For each result of `op`: the index of the argument it is a view of (schema alias
    annotations: ``Tensor(a) self -> Tensor(a)``), or None."""
    sources = _ALIASES.get(op.name)
    if sources is None:
        by_alias = {a.alias: i for i, a in enumerate(op.schema.arguments) if a.alias is not None}
        sources = _ALIASES[op.name] = tuple(by_alias.get(r.alias) if r.alias is not None else None
                                            for r in op.schema.returns)
    return sources


_ALIASES: dict = {}


def _run(op, args, device, mode):
    """Run the Meta kernel on `args`; (results wrapped as fakes, cache entry or bypass reason)."""
    written = [(a, a._data) for a, arg in zip(args, op.schema.arguments)
               if arg.is_write and isinstance(a, FakeTensor)]
    for t, _ in written:            # a constant written to is no longer known
        t.__dict__.pop("constant", None)
    call_args = args
    names = op.schema.names
    if "device" in names:       # factories: the kernel makes a meta tensor (random ones would draw on cpu)
        call_args = list(args)
        call_args[names.index("device")] = META
    _state.in_kernel += 1
    try:
        out = op.redispatch(META_BIT, *call_args)
    finally:
        _state.in_kernel -= 1
    reason = None
    for t, before in written:       # resized out= tensors, transpose_ ...: keep device and storage
        if t._data is not before:
            reason = "metadata mutation"
            if not isinstance(t._data, FakeArray):
                t._data = FakeArray(t._data, before.device, before.storage)
    sources = _alias_sources(op)
    recipes = []
    if isinstance(out, Tensor):
        out = _wrap(out, args, sources[0] if sources else None, device, mode, recipes, op.schema.name)
    elif isinstance(out, (tuple, list)) and all(isinstance(o, Tensor) for o in out):
        many = len(sources) == 1 and len(out) != 1      # Tensor(a)[]: every element views the argument
        items = [_wrap(o, args, sources[0 if many else i] if sources else None, device, mode, recipes,
                       op.schema.name)
                 for i, o in enumerate(out)]
        out = _rebuild(out, items)
    else:
        reason = reason or "non-tensor result"
    if None in recipes:
        reason = reason or "result made by fake ops inside the kernel"
    return out, reason or (out.__class__ if not isinstance(out, Tensor) else None, tuple(recipes))


def _wrap(t, args, source, device, mode, recipes, op_name):
    """Result `t` of a Meta kernel as a fake on `device`; appends how to rebuild it to `recipes`."""
    for i, a in enumerate(args):
        if t is a:                                  # in-place: the argument itself
            recipes.append(("argument", i))
            return t
    if isinstance(t, FakeTensor):                   # made by fake ops inside the kernel: not rebuilt
        recipes.append(None)
        if t._data.device == META and device != META:
            # the kernel saw its inputs on meta: a fake function's `empty(..., device=x.device)` made
            # this, and it lives where the op's output does (PyTorch's fake functions see the real device)
            return _make_fake(t._data, t._keys, device, t._data.storage)
        return t
    data = t._data
    if isinstance(data, FakeArray):                 # shares an argument's _data (an alias)
        storage = data.storage
        source = next((i for i, a in enumerate(args) if isinstance(a, FakeTensor) and a._data.storage is storage),
                      None)
        if source is None:
            recipes.append(None)                    # another fake's memory: not rebuilt from the arguments
            return _make_fake(data, t._keys, device, storage)
    elif source is not None and isinstance(args[source], FakeTensor) and op_name not in MAY_COPY:
        storage = args[source]._data.storage
    else:
        source, storage = None, FakeStorage(mode)
    fake = _make_fake(data, t._keys, device, storage)
    vc = t._version_counter
    if vc is not None:
        fake._version_counter = vc
    recipes.append(("new", MetaArray(data.shape, data.elem_strides, data.dtype, data.offset),
                    t._keys & ~BACKEND_MASK, source))
    return fake


def _rebuild(container, items):
    cls = container.__class__
    if cls is list or cls is tuple:
        return cls(items)
    return getattr(cls, "_make", cls)(items)     # return_types' structseqs, named tuples


def _from_entry(entry, args, device, mode):
    kind, recipes = entry
    items = []
    for recipe in recipes:
        if recipe[0] == "argument":
            items.append(args[recipe[1]])
        else:
            _, meta, keys, source = recipe
            storage = args[source]._data.storage if source is not None else FakeStorage(mode)
            items.append(_make_fake(MetaArray(meta.shape, meta.elem_strides, meta.dtype, meta.offset), keys,
                                    device, storage))
    if kind is None:
        return items[0]
    return kind(items) if kind is list or kind is tuple else getattr(kind, "_make", kind)(items)


# ---------------------------------------------------------------------------------------
# cache keys
# ---------------------------------------------------------------------------------------
_SCALARS = (bool, int, float, complex, str)


def _key_of(value):
    """A hashable record of an argument: a fake tensor's metadata, a number's type and value."""
    if isinstance(value, FakeTensor):
        d = value._data
        return (d.shape, d.elem_strides, d.dtype, d.offset, d.device, value._keys)
    if value is None or value.__class__ in _SCALARS:
        return (value.__class__, value)
    if isinstance(value, (tuple, list)):
        return (value.__class__, tuple(_key_of(v) for v in value))
    if isinstance(value, (_dt.dtype, _device)):
        return value
    if isinstance(value, Tensor):
        raise _Bypass("non-fake tensor")
    raise _Bypass(f"{type(value).__name__} argument")
