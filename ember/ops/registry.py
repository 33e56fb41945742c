"""The operator table's machinery: `Op` entries become dispatcher operators and Python bindings.

An entry (see ``ember/ops/table/*.py``) is one line of data, like native_functions.yaml:

    Op("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
       cpu=pointwise.add, meta=meta.binary, inplace=True, out=True, numbers_as_tensors=True)

`register(entry)` parses the schema, creates the ``OperatorHandle`` (``ember.ops.aten.add.Tensor``),
derives the in-place (``add_.Tensor``) and out= (``add.out``) overloads and their kernels when
asked, and generates the bindings ``ember.add``, ``Tensor.add`` and ``Tensor.add_``.

Every binding calls the dispatcher (``op.call``), except those of rows marked
``direct_binding=True``: they call the CPU kernel straight when nothing but the CPU backend
needs to see the call (see ``Op``). ``direct_ops()`` lists them; ``binding_source(name)`` shows
either kind.
"""
from __future__ import annotations

import dataclasses
import types
from typing import Callable

import numpy as np

from .._core import dtype as _dt
from .._core.dispatch import DispatchKey, OperatorHandle
from .._core.schema import parse_schema, Argument, FunctionSchema
from .._core.tensor import Tensor
from . import codegen, out_dtype, overlap
from .overloads import _resolver
from .table import CUDA_REFUSALS, NO_CUDA_KERNEL


@dataclasses.dataclass
class Op:
    """One row of the operator table.

    direct_binding: the generated bindings (functional, in-place and out= overloads of the row)
    get the *fast path*: when the key set computed from the arguments is just {CPU} and no
    thread-local key is included, they call the CPU kernel straight from the op's table instead
    of ``op.call`` (like ``manual_cpp_bindings`` ops in PyTorch, which skip the generic binding
    code). Any other key — a tensor that requires grad, a profiler, tracer or Python mode that
    includes its key in TLS, another device — turns it off, so nothing that needs to see the op
    misses it. It saves the dispatcher's share of a tiny op (bench/dispatch_overhead.py);
    reserve it for hot ops (add, mul, relu, sum, matmul ...): every other op goes through the
    dispatcher, which is the path the functionality keys are tested on.
    """
    schema: str
    cpu: Callable | None = None          # kernel(*args) on NumPy
    meta: Callable | None = None         # kernel(*args) computing shape/dtype/strides only
    cuda: Callable | None = None
    composite: Callable | None = None    # written in ember ops: serves every backend and autograd
    variants: str = "function method"   # which Python bindings to generate
    inplace: bool = False               # derive `name_` that writes the result into self
    out: bool = False                   # derive the out= overload
    numbers_as_tensors: bool = False    # Tensor arguments accept Python numbers (wrapped numbers)
    varargs: bool = False               # f(2, 3) for the one int[] positional parameter
    nondeterministic: bool = False      # random: never CSE'd or constant-folded
    python_name: str | None = None      # defaults to the schema's name
    namespace: str = ""                 # "", "nn.functional", "linalg", "special", "fft"
    method_name: str | None = None      # Tensor method name when it differs
    direct_binding: bool = False         # fast path to the CPU kernel in the bindings (see above)


# ember.ops.aten.<name>.<overload> objects, and the Python bindings by namespace
class _Packet:
    """``ember.ops.aten.add``: the overloads of one op; calling it picks one like ``ember.add``."""

    def __init__(self, name):
        self.__name__ = name
        self._overloads = {}
        self._binding = None

    def overloads(self):
        return list(self._overloads)

    def __getattr__(self, item):
        try:
            return self.__dict__["_overloads"][item]
        except KeyError:
            raise AttributeError(f"'aten.{self.__name__}' has no overload '{item}'") from None

    def __call__(self, *args, **kwargs):
        if self._binding is None:
            return next(iter(self._overloads.values()))(*args, **kwargs)
        return self._binding(*args, **kwargs)

    def __repr__(self):
        return f"aten.{self.__name__}"


class _Namespace:
    def __init__(self, name):
        self._name = name

    def __getattr__(self, item):
        raise AttributeError(f"'{self._name}' has no operator '{item}'")


aten = _Namespace("aten")
OPERATORS: dict = {}                   # "aten::add.Tensor" -> OperatorHandle
ENTRIES: dict = {}                     # "aten::add.Tensor" -> Op
FUNCTIONS: dict = {}                   # namespace -> {python name: binding}
METHODS: dict = {}                     # Tensor method name -> binding
_OVERLOADS_BY_NAME: dict = {}          # (namespace, python name) -> [(schema, binding)]


def _overload_call(self, *args, **kwargs):
    return self.entry(*args, **kwargs)


OperatorHandle.__call__ = _overload_call


def _make_handle(schema: FunctionSchema, ns: str = "aten") -> OperatorHandle:
    name = f"{ns}::{schema.qualified_name}"
    if name in OPERATORS:
        raise RuntimeError(f"operator {name} is registered twice")
    handle = OperatorHandle(name, schema)
    handle.nondeterministic = False
    handle.direct_binding = False       # set by register() from the row
    handle.row = None                   # the Op row it comes from (derived overloads: their row's)
    handle.derived = False              # an in-place / out= overload derived from a functional row
    OPERATORS[name] = handle
    namespace = aten if ns == "aten" else _namespace_for(ns)
    packet = namespace.__dict__.get(schema.name)
    if packet is None:
        packet = _Packet(schema.name)
        setattr(namespace, schema.name, packet)
    overload = schema.overload_name or "default"
    packet._overloads[overload] = handle
    if not hasattr(_Packet, overload) and overload not in packet.__dict__:
        # also a plain attribute: reaching __getattr__ costs a raised AttributeError first (~1.3 us
        # of every ``aten.view.default(...)`` that Tensor.view and other Python wrappers make)
        packet.__dict__[overload] = handle
    handle.overloadpacket = packet
    handle._schema = schema
    handle.__name__ = f"{schema.name}.{schema.overload_name or 'default'}"
    return handle


_namespaces = {"aten": aten}


def _namespace_for(ns):
    if ns not in _namespaces:
        _namespaces[ns] = _Namespace(ns)
    return _namespaces[ns]


def _install(handle, entry_kernels: dict, composite=None):
    for key, kernel in entry_kernels.items():
        if kernel is not None:
            handle.kernels[key] = kernel
    handle.composite = composite
    handle._refresh()


# PyTorch's overload names of out= forms that the naming rule below does not give
_OUT_OVERLOADS = {"max.dim": "dim_max", "min.dim": "dim_min", "sort": "values", "sort.stable": "values_stable",
                  "topk": "values", "kthvalue": "values", "mode": "values", "median.dim": "dim_values",
                  "nanmedian.dim": "dim_values", "max": "unary_out", "min": "unary_out", "max.other": "out",
                  "min.other": "out"}


def _derived_schema(schema: FunctionSchema, kind: str) -> FunctionSchema:
    args = list(schema.arguments)
    ret = schema.returns
    if kind == "inplace":
        args[0] = dataclasses.replace(args[0], alias="a", is_write=True, spelling="")
        ret = (Argument(name="", type="Tensor", alias="a", is_write=True),)
        name, overload = schema.name + "_", schema.overload_name
    elif len(schema.returns) > 1:  # max.dim -> max.dim_max(..., *, Tensor(a!) values, Tensor(b!) indices)
        aliases = "abcdefgh"
        outs = [Argument(name=r.name, type="Tensor", alias=aliases[i], is_write=True, kwarg_only=True)
                for i, r in enumerate(schema.returns)]
        args += outs
        ret = tuple(dataclasses.replace(o, kwarg_only=False) for o in outs)
        name = schema.name
        overload = _OUT_OVERLOADS.get(schema.qualified_name, "out")
    else:
        args.append(Argument(name="out", type="Tensor", alias="a", is_write=True, kwarg_only=True))
        ret = (Argument(name="", type="Tensor", alias="a", is_write=True),)
        name = schema.name
        # PyTorch's naming: add.Tensor -> add.out, sum.dim_IntList -> sum.IntList_out
        base = schema.overload_name
        overload = "out" if base in ("", "Tensor", "default", "int") else (
            base.split("_", 1)[1] + "_out" if base.startswith("dim_") else base + "_out")
        if f"aten::{name}.{overload}" in OPERATORS:  # clamp.out is taken: clamp.Tensor -> clamp.Tensor_out
            overload = f"{base}_out"
        overload = _OUT_OVERLOADS.get(schema.qualified_name, overload)
    return FunctionSchema(name=name, overload_name=overload, arguments=tuple(args), returns=ret,
                          names=tuple(a.name for a in args))


def _binding(handle, func_name, entry: Op, *, varargs=False, out_target=None, out_fn=None, direct=None, bound=None):
    schema = handle.schema
    extra = (("requires_grad", False),) if any(a.name == "device" for a in schema.arguments) else ()
    direct = (entry.direct_binding or None) if direct is None else direct    # None: the CUDA line only
    check = overlap.checker(schema, derived=handle.derived)  # None for ops that write nothing
    src = codegen.generate(schema, func_name=func_name, op_label=entry.python_name or schema.name,
                           numbers_as_tensors=entry.numbers_as_tensors, varargs=varargs,
                           out_target="_out_entry" if out_fn else None, extra_kwargs=extra, direct=direct,
                           overlap_check=check is not None, bound=bound)
    extra_globals = {"_out_entry": out_fn} if out_fn else {}
    if check is not None:
        extra_globals["_overlap_check"] = check
    return codegen.compile_binding(src, func_name, handle, extra_globals)


def register(entry: Op) -> OperatorHandle:
    """Turn one table row into operators and bindings (see the module docstring)."""
    schema = parse_schema(entry.schema)
    handle = _make_handle(schema)
    handle.nondeterministic = entry.nondeterministic
    cuda = entry.cuda if entry.cuda is not None or entry.cpu is None or schema.name in NO_CUDA_KERNEL \
        else _cuda_from_cpu(entry)
    if schema.name in CUDA_REFUSALS and cuda is not None:
        cuda = _refusing(cuda, CUDA_REFUSALS[schema.name])
    kernels = {DispatchKey.CPU: entry.cpu, DispatchKey.Meta: entry.meta, DispatchKey.CUDA: cuda}
    _install(handle, kernels, entry.composite)
    ENTRIES[handle.name] = entry
    handle.row, handle.direct_binding = entry, entry.direct_binding
    py_name = entry.python_name or schema.name
    label = py_name
    handle.entry = _binding(handle, schema.name, entry)

    out_fn = None
    if entry.out:
        out_handle = _make_handle(_derived_schema(schema, "out"))
        out_handle.nondeterministic, out_handle.derived = entry.nondeterministic, True
        out_handle.row, out_handle.direct_binding = entry, entry.direct_binding
        rule = overlap.rule_for(out_handle.schema, derived=True)
        checks = dict(check_internal=rule.internal and rule.resize_first,  # (else the binding checked it)
                      late_check=overlap.checker(out_handle.schema, derived=True, late=True),
                      dtype_policy=out_dtype.policy(schema.name),
                      dtype_index=schema.names.index("dtype") if "dtype" in schema.names else None,
                      n_outs=len(schema.returns))
        _install(out_handle, {k: _out_of(v, label, **checks) for k, v in kernels.items() if v is not None},
                 _out_of(entry.composite, label, **checks) if entry.composite else None)
        out_handle.entry = out_fn = _binding(out_handle, schema.name + "_out", entry)
    if entry.inplace:
        ip_handle = _make_handle(_derived_schema(schema, "inplace"))
        ip_handle.nondeterministic, ip_handle.derived = entry.nondeterministic, True
        ip_handle.row, ip_handle.direct_binding = entry, entry.direct_binding
        late = overlap.checker(ip_handle.schema, derived=True, late=True)
        _install(ip_handle, {k: _inplace_of(v, label + "_", late) for k, v in kernels.items() if v is not None},
                 _inplace_of(entry.composite, label + "_", late) if entry.composite else None)
        ip_handle.entry = _binding(ip_handle, schema.name + "_", entry)
        if "method" in entry.variants:
            _add_method((entry.method_name or py_name) + "_", ip_handle.schema, ip_handle.entry, entry)
        if "function" in entry.variants and not entry.namespace:
            _add_function("", py_name + "_", ip_handle.schema, ip_handle.entry)

    is_factory = not any(a.type == "Tensor" for a in schema.arguments)
    if "function" in entry.variants:
        fn = handle.entry
        if out_fn is not None or (entry.varargs and is_factory):
            fn = _binding(handle, py_name, entry, varargs=entry.varargs and is_factory, out_fn=out_fn)
        _add_function(entry.namespace, py_name, schema, fn)
    if "method" in entry.variants:
        meth = _binding(handle, py_name, entry, varargs=True) if entry.varargs else handle.entry
        _add_method(entry.method_name or py_name, schema, meth, entry)
    return handle


def _cuda_from_cpu(entry: Op):
    """The CUDA kernel of a row with a CPU kernel only: the row's CPU kernel run on CuPy
    (ember/_cuda/kernels.py), found on the first call so that ``import ember`` imports no CuPy."""
    found = []

    def cuda_kernel(*args):
        if not found:
            from .._cuda.kernels import kernel_for
            kernel = kernel_for(entry)
            if kernel is None:
                raise NotImplementedError(f"Could not run '{entry.schema.split('(')[0]}' with arguments from the "
                                          "'CUDA' backend: it has no CUDA kernel.")
            found.append(kernel)
        return found[0](*args)
    cuda_kernel.__name__ = "cuda_" + getattr(entry.cpu, "__name__", "kernel")
    cuda_kernel.cuda_from_cpu = True
    return cuda_kernel


def _refusing(kernel, refused):
    """`kernel` (a CUDA kernel) raising PyTorch CUDA's error for the dtypes of `refused`
    (table.CUDA_REFUSALS): only the few ops listed there pay for the look-up."""
    def cuda_kernel(*args):
        dtype = args[0].dtype
        refusal = refused.get(dtype.name)
        if refusal is not None:
            raise refusal[0](refusal[1].format(dtype=dtype.c10_name))
        return kernel(*args)
    cuda_kernel.__name__ = getattr(kernel, "__name__", "cuda_kernel")
    cuda_kernel.cuda_from_cpu = getattr(kernel, "cuda_from_cpu", False)
    return cuda_kernel


def _cuda_fast_path(op):
    """The CUDA form of cpu/inplace.py's direct in-place kernel for `op` (None if it has none),
    loaded on its first call."""
    from .cpu.inplace import FAST
    if op not in FAST:
        return None
    found = []

    def run(self, *args):
        if not found:
            from .._cuda.kernels import inplace_fast_path
            found.append(inplace_fast_path(op))
        return found[0](self, *args)
    return run


def _add_function(namespace, name, schema, fn):
    key = (namespace, name)
    _OVERLOADS_BY_NAME.setdefault(key, []).append((schema, fn))
    overloads = _OVERLOADS_BY_NAME[key]
    export(namespace, name, fn if len(overloads) == 1 else _resolver(name, overloads, key))


def _add_method(name, schema, fn, entry):
    key = ("Tensor", name)
    _OVERLOADS_BY_NAME.setdefault(key, []).append((schema, fn))
    overloads = _OVERLOADS_BY_NAME[key]
    METHODS[name] = fn if len(overloads) == 1 else _resolver(name, overloads, key)
    setattr(Tensor, name, METHODS[name])


# ---------------------------------------------------------------------------------------
# from a Python function back to its operators and its public name
# ---------------------------------------------------------------------------------------
# where each namespace of FUNCTIONS is reached by users, in order of preference for a function
# exported under several names (ember.relu over ember.nn.functional.relu)
PUBLIC_MODULES = {"": "ember", "nn.functional": "ember.nn.functional", "linalg": "ember.linalg",
                  "special": "ember.special", "fft": "ember.fft"}
_RANK = {ns: i for i, ns in enumerate(PUBLIC_MODULES)}
# id(function) -> (function, namespace, name): the public name it was exported under. Keyed by id,
# not by the function, so that asking about a user object never calls its __hash__/__eq__ (dynamo
# asks about every callable it meets, and user code must run exactly as often as in eager).
_EXPORTED: dict = {}


def export(namespace: str, name: str, fn) -> None:
    """Make `fn` ``FUNCTIONS[namespace][name]`` (``ember.<name>`` for namespace ""), and remember
    the name for ``public_name(fn)``."""
    FUNCTIONS.setdefault(namespace, {})[name] = fn
    if callable(fn) and not isinstance(fn, type):
        old = _EXPORTED.get(id(fn))
        if old is None or _RANK.get(namespace, len(_RANK)) < _RANK.get(old[1], len(_RANK)):
            _EXPORTED[id(fn)] = (fn, namespace, name)


def op_of(fn) -> OperatorHandle | None:
    """The operator a generated binding calls (``op_of(ember.tanh) is ember.ops.aten.tanh.default``),
    None for anything else. A binding carries ``__ember_op__``; a copy of its attributes
    (``functools.wraps``) does not have its code, so it is not mistaken for one."""
    op = getattr(fn, "__ember_op__", None)
    if op is None or getattr(getattr(fn, "__code__", None), "co_filename", None) != f"<ember binding {op.name}>":
        return None
    return op


def ops_of(fn) -> tuple:
    """Every operator `fn` may call: (op,) for a binding; for a function that chooses among the
    overloads of one name (``ember.max``, ``Tensor.div``) the ops of all of them; () otherwise."""
    op = op_of(fn)
    if op is not None:
        return (op,)
    key = getattr(fn, "__ember_overloads__", None)
    if key is None:
        return ()
    exported = METHODS.get(key[1]) if key[0] == "Tensor" else FUNCTIONS.get(key[0], {}).get(key[1])
    if exported is not fn:   # a wrapper that copied the attribute
        return ()
    return tuple(op for _, binding in _OVERLOADS_BY_NAME[key] for op in ops_of(binding))


def exported_as(fn) -> tuple | None:
    """``(namespace, name)`` where ``FUNCTIONS[namespace][name] is fn``, else None."""
    entry = _EXPORTED.get(id(fn))
    if entry is None or entry[0] is not fn or FUNCTIONS.get(entry[1], {}).get(entry[2]) is not fn:
        return None
    return entry[1:]


def public_name(fn) -> str | None:
    """The dotted name users reach `fn` by: ``ember.sigmoid``, ``ember.nn.functional.relu``,
    ``ember.is_tensor``; None for anything that is not a public ember function."""
    key = exported_as(fn)
    if key is not None:
        module = PUBLIC_MODULES.get(key[0])
        return f"{module}.{key[1]}" if module is not None else None
    # only plain functions: reading __name__ of any other object could run its __getattr__
    if not isinstance(fn, (types.FunctionType, types.BuiltinFunctionType)):
        return None
    name = fn.__name__
    import sys
    for module in PUBLIC_MODULES.values():   # functions written in those modules themselves
        namespace = sys.modules.get(module)
        if namespace is not None and vars(namespace).get(name) is fn:
            return f"{module}.{name}"
    return None


def public_functions() -> dict:
    """Every public ember function by its dotted name (``"ember.tanh": ember.tanh``)."""
    import sys
    found = {}
    for module in reversed(PUBLIC_MODULES.values()):
        namespace = sys.modules.get(module)
        for name, value in list(vars(namespace).items()) if namespace is not None else ():
            if not name.startswith("_") and public_name(value) is not None:
                found[public_name(value)] = value
    return found


# ---------------------------------------------------------------------------------------
# derived kernels: in-place and out= from a functional kernel
# ---------------------------------------------------------------------------------------
def _copy_result(op: str, dst: Tensor, result: Tensor, *, resize: bool, check_internal=False,
                 check_dtype=True) -> None:
    if check_dtype and not _dt.can_cast(result.dtype, dst.dtype):
        raise RuntimeError(f"{op}(): result type {result.dtype.c10_name} can't be cast to the desired output "
                           f"type {dst.dtype.c10_name}")
    if dst.shape != result.shape:
        if not resize:
            raise RuntimeError(f"{op}(): output with shape {list(dst.shape)} doesn't match the broadcast shape "
                               f"{list(result.shape)}")
        if dst.numel() != 0:
            import warnings
            warnings.warn(f"An output with one or more elements was resized since it had shape {list(dst.shape)}, "
                          f"which does not match the required output shape {list(result.shape)}.")
        dst._data = _empty_like_backend(dst, result.shape)
    elif check_internal:
        overlap.assert_no_internal_overlap(op, dst)
    d = dst._data
    if 0 in d.strides and overlap.has_internal_overlap(d) and isinstance(d, np.ndarray):
        # An op allowed to write an expanded tensor (tril_, index_fill_ ...): PyTorch writes each
        # element it changes through the shared memory, so write only the changed ones (a full
        # copy would leave the last alias's value).
        s = np.asarray(result._data.real if d.dtype.kind != "c" and result._data.dtype.kind == "c" else result._data)
        s = s.astype(d.dtype, copy=False)
        np.copyto(d, s, where=s != d)
        return
    copy_into(dst, result)


def _empty_like_backend(dst, shape):
    from .._core.storage import MetaArray
    arr = dst._data
    if isinstance(arr, MetaArray):
        return MetaArray(tuple(shape), None, arr.dtype)
    if isinstance(arr, np.ndarray):
        return np.empty(tuple(shape), arr.dtype)
    import cupy
    return cupy.empty(tuple(shape), arr.dtype)


def copy_into(dst: Tensor, src: Tensor) -> None:
    """Write `src` into `dst` (same shape), casting; nothing to do on meta."""
    d = dst._data
    if isinstance(d, np.ndarray):
        s = src._data
        if not isinstance(s, np.ndarray):
            if hasattr(s, "get"):
                from .._core.storage import device_to_host
                s = device_to_host(s)
        if d.dtype.kind != "c" and s.dtype.kind == "c":
            s = s.real
        np.copyto(d, s, casting="unsafe")
    elif d.__class__.__module__.startswith("cupy"):
        import cupy
        cupy.copyto(d, cupy.asarray(src._data), casting="unsafe")


def _inplace_of(kernel, op, late_check=None):
    from .cpu.inplace import fast_path
    fast = fast_path(op) if getattr(kernel, "__module__", "").startswith("ember.ops.cpu") else (
        _cuda_fast_path(op) if getattr(kernel, "cuda_from_cpu", False) else None)

    def inplace(self, *args):
        if fast is not None and fast(self, *args) is not None:
            return self
        result = kernel(self, *args)
        if late_check is not None:  # memory overlap, once the kernel has validated the arguments
            late_check(self, *args)
        _copy_result(op, self, result, resize=False)
        return self
    inplace.__name__ = op
    return inplace


def _out_of(kernel, op, check_internal=False, late_check=None, dtype_policy=out_dtype.CAST, dtype_index=None,
            n_outs=1):
    """The out= kernel of a functional one: compute, check (out's dtype by the op's policy,
    memory overlap), then resize `out` if needed and write the result into it. With several
    results (max.dim, sort ...) each goes into its out tensor, which must have its exact dtype,
    and the out tensors are returned as the op's ``<name>_out`` named tuple."""
    compute_in_out_dtype = dtype_policy == out_dtype.COMPUTE and dtype_index is not None
    if n_outs > 1:
        def tuple_out_kernel(*args):
            inputs, outs = args[:-n_outs], args[-n_outs:]
            results = kernel(*inputs)
            if late_check is not None:
                late_check(*args)
            for o, r in zip(outs, results):
                out_dtype.check(op, out_dtype.EXPECTED, r.dtype, o, inputs)
            for o, r in zip(outs, results):
                _copy_result(op, o, r, resize=True, check_internal=check_internal, check_dtype=False)
            from .. import return_types
            return getattr(return_types, op + "_out", tuple)(outs)
        tuple_out_kernel.__name__ = op + "_out"
        return tuple_out_kernel

    def out_kernel(*args):
        *inputs, out = args
        if compute_in_out_dtype:  # sum(x, out=<int32>) sums in int32
            inputs[dtype_index] = out_dtype.compute_dtype(op, inputs[dtype_index], out, inputs)
        result = kernel(*inputs)
        if late_check is not None:
            late_check(*args)
        out_dtype.check(op, dtype_policy, result.dtype, out, inputs)
        _copy_result(op, out, result, resize=True, check_internal=check_internal, check_dtype=False)
        return out
    out_kernel.__name__ = op + "_out"
    return out_kernel


def binding_source(name: str) -> str:
    """The generated source of an operator's binding, e.g. ``binding_source('aten::add.Tensor')``.
    A direct binding's source has the fast-path line marked ``# direct binding``."""
    return OPERATORS[name].entry.__source__


def direct_ops() -> list:
    """Names of the operators whose bindings have the fast path (``direct_binding=True`` rows
    and their derived in-place / out= overloads), sorted."""
    return sorted(name for name, op in OPERATORS.items() if op.direct_binding)


def binding(name: str, *, direct: bool | None = None):
    """A freshly generated binding of operator `name` (same signature as ``op.entry``);
    `direct` overrides the table's choice: ``binding('aten::add.Tensor', direct=False)`` is
    ``ember.add`` without the fast path (for benchmarks and tests)."""
    handle = OPERATORS[name]
    entry = handle.row or ENTRIES[name]  # ember.library ops have an entry but no table row
    return _binding(handle, handle.schema.name, entry, direct=direct)


def bound_binding(name: str, backend, ignored: int = 0):
    """A binding of operator `name` bound to its `backend` kernel (a DispatchKey): the same argument
    conversions and errors as ``op.entry``, then, when the call's key set (TLS applied, the keys of
    the `ignored` mask removed) is that backend alone, its kernel from the op's table with no
    dispatcher in between; otherwise the dispatcher, as eager. The fuser's wrapper calls extern ops
    through these, ignoring Autocast: its graphs are traced below autocast (casts are nodes)."""
    handle = OPERATORS[name]
    entry = handle.row or ENTRIES[name]
    return _binding(handle, handle.schema.name, entry, bound=(int(backend), ignored))
