"""Generate the Python bindings of an operator from its schema.

For every operator overload we write the source of one Python function with the schema's exact
signature, and ``exec`` it once at import (measured in bench/import_time.py: generating all
bindings takes a few milliseconds; a build step that writes the same source to a file would
save only that). The function
  1. converts each non-tensor argument only when its ``__class__`` is not already right,
  2. computes the dispatch key set from the tensor arguments (and the ``device`` argument of
     factory functions: PyTorch's BackendSelect),
  3. calls the dispatcher, ``op.call(key_set, *args)``; or, for ops whose table row says
     ``direct_binding=True`` (a handful of hot ops, ``registry.direct_ops()`` lists them), first
     takes the fast path (``dispatch.fast_call_source``, inlined) — the CPU kernel straight from the
     op's table — when that set is just {CPU} and no thread-local key is included (nothing else needs to see the call: no autograd,
     profiler, tracer or Python mode), which saves the dispatcher's cost (bench/dispatch_overhead.py),
  4. bumps the version counter of every argument the schema marks as written (``Tensor(a!)``),
     whose memory overlap with the inputs is checked before step 3 (ops/overlap.py).

``print(binding_source(op))`` shows what was generated for an op.
"""
from __future__ import annotations

import keyword
import time

from .._core.dispatch import tls, fast_call_source, cuda_call_source, CPU_BIT, META_BIT, CUDA_BIT, BACKEND_MASK, default_factory_backend
from .._core import dtype as _dt
from .._core.schema import FunctionSchema
from .._core.tensor import Tensor
from . import argparse as ap

_CONVERTERS = {  # schema base type -> (fast class test, converter name)
    "int": ("{v}.__class__ is not int", "to_int"),
    "float": ("{v}.__class__ is not float", "to_float"),
    "bool": ("{v}.__class__ is not bool", "to_bool"),
    "Scalar": ("{v}.__class__ not in _NUMBER_TYPES", "to_number"),
    "ScalarType": ("{v}.__class__ is not _dtype", "to_dtype"),
    "Device": ("{v}.__class__ is not _device_cls", "to_device"),
    "str": ("{v}.__class__ is not str", "to_str"),
    "MemoryFormat": ("{v}.__class__ is not str", "to_memory_format"),
}
_LIST_CONVERTERS = {"int": "to_int_list", "float": "to_float_list"}
_SCALAR_TYPE_CODES = _dt.BY_SCALAR_TYPE_CODE
_NO_VA = type("NoVarargs", (), {"__repr__": lambda self: "<no size given>"})()  # f(size=...) not used


def _device_bit(device) -> int:
    t = device.type
    return CPU_BIT if t == "cpu" else META_BIT if t == "meta" else CUDA_BIT


def _default_src(arg) -> str:
    d = arg.default
    if arg.type == "ScalarType" and isinstance(d, int) and not isinstance(d, bool):
        return f"_SCALAR_TYPE_CODES[{d}]"  # c10's enum value in a schema default (dtype=4: long)
    if isinstance(d, list):
        return repr(tuple(d))
    return repr(d)


def _param_name(arg, index) -> str:
    if keyword.iskeyword(arg.name):  # uniform_(from=...): Python spells it from_
        return arg.name + "_"
    return "input" if index == 0 and arg.name == "self" else arg.name


def generate(schema: FunctionSchema, *, func_name: str, op_label: str, numbers_as_tensors=False,
             varargs=False, out_target=None, extra_kwargs=(), direct=False, overlap_check=False,
             bound=None) -> str:
    """The source of a binding for `schema` (see the module docstring).

    direct: True adds the fast path (CPU kernel called straight when the key set is just {CPU},
    the CUDA kernel when it is just {CUDA}); None (a row without the fast path) only the CUDA
    line; False (`registry.binding(name, direct=False)`): the dispatcher alone.
    bound: (backend key, ignored key mask) for a *bound* binding (registry.bound_binding): when the
    key set, TLS applied and the ignored keys removed, is that backend alone, its kernel straight
    from the op's table; any other set (another device, autograd recording, a mode) the dispatcher.
    overlap_check: call ``_overlap_check(*args)`` before dispatching (ops that write; ops/overlap.py).
    varargs: the one int-list positional parameter also accepts ``f(2, 3)``.
    out_target: name of the out= overload's entry to call when ``out`` is given.
    extra_kwargs: Python-only keyword arguments (``requires_grad`` of factory functions).
    """
    args = schema.arguments
    names = [_param_name(a, i) for i, a in enumerate(args)]
    pos_params, kw_params = [], []
    for a, n in zip(args, names):
        p = n if not a.has_default else f"{n}={_default_src(a)}"
        (kw_params if a.kwarg_only else pos_params).append(p)
    vararg_name = None
    if varargs:
        vararg_name = next(n for a, n in zip(args, names) if a.type == "int" and a.is_list and not a.kwarg_only)
        # f(2, 3) fills `*_va`; f(size=(2, 3)) still works through the keyword of the same name.
        pos_params = [p if not p.split("=")[0] == vararg_name else "*_va" for p in pos_params]
        kw_params.insert(0, f"{vararg_name}=_NO_VA")
    if out_target:
        kw_params.append("out=None")
    kw_params += [f"{k}={v!r}" for k, v in extra_kwargs]
    params = ", ".join(pos_params + ((["*"] if kw_params and not vararg_name else []) + kw_params))

    body = []
    if vararg_name:
        body.append(f"if _va:\n        if {vararg_name} is not _NO_VA: raise TypeError(\"{op_label}() got multiple "
                    f"values for argument '{vararg_name}'\")\n        "
                    f"{vararg_name} = _va[0] if len(_va) == 1 and _va[0].__class__ is not int else _va\n    "
                    f"elif {vararg_name} is _NO_VA: {vararg_name} = ()")
    if out_target:
        call = ", ".join(n if not a.kwarg_only else f"{n}={n}" for a, n in zip(args, names))
        if len(schema.returns) > 1:  # out=(values, indices): one written tensor per result
            outs = ", ".join(f"{r.name}=_o[{i}]" for i, r in enumerate(schema.returns))
            body.append(f"if out is not None:\n        _o = _ap.to_out_tensors(out, {len(schema.returns)}, "
                        f"{op_label!r}, {len(args) + 1})\n        return {out_target}({call}, {outs})")
        else:
            body.append(f"if out is not None: return {out_target}({call}, out=out)")

    first_tensor = True
    ks_init = "_ks = 0"
    for i, (a, n) in enumerate(zip(args, names)):
        label = f"{op_label!r}, {a.name!r}, {i if not a.kwarg_only else -1}"
        if a.type == "Tensor" and not a.is_list:
            number_ok = numbers_as_tensors and (i > 0 or numbers_as_tensors == "all")
            guard = f"if {n} is not None:\n        " if a.optional else ""
            if number_ok:
                # the last branch (not a number, not a tensor: NumPy scalars, fx Proxies) is off the hot
                # path; a stand-in that dispatches like a tensor keeps its keys
                convert = f"else:\n        {n} = _ap.to_tensor_or_number({n}, {label}); _ks |= getattr({n}, '_keys', 0)"
                line = (f"if {n}.__class__ in _NUMBER_TYPES: pass\n    "
                        f"elif {n}.__class__ is _Tensor or isinstance({n}, _Tensor): _ks |= {n}._keys\n    " + convert)
                if a.optional:
                    line = (f"if {n} is None or {n}.__class__ in _NUMBER_TYPES: pass\n    "
                            f"elif {n}.__class__ is _Tensor or isinstance({n}, _Tensor): _ks |= {n}._keys\n    "
                            + convert)
                body.append(line)
            elif first_tensor and not a.optional:
                body.append(f"try: _ks = {n}._keys\n    except AttributeError: _ap.to_tensor_arg({n}, {label})")
                ks_init = None
            else:
                body.append(f"{guard}try: _ks |= {n}._keys\n    {'    ' if guard else ''}"
                            f"except AttributeError: _ap.to_tensor_arg({n}, {label})")
            first_tensor = False
        elif a.type == "Tensor":  # Tensor[] / Tensor?[]
            conv = f"{n} = _ap.to_tensor_list({n}, {label})" if not a.elem_optional else ""
            loop = (f"for _t in {n}:\n        if _t is not None: _ks |= _t._keys" if a.elem_optional
                    else f"for _t in {n}: _ks |= _t._keys")
            prefix = f"if {n} is not None:\n        " if a.optional else ""
            if conv:
                body.append(prefix + conv)
            body.append(loop if not a.optional else f"if {n} is not None:\n        " + loop.replace("\n", "\n    "))
            first_tensor = False
        elif a.is_list and a.type in _LIST_CONVERTERS:
            conv = f"{n} = _ap.{_LIST_CONVERTERS[a.type]}({n}, {label}, {a.list_size})"
            body.append(f"if {n} is not None: {conv}" if a.optional or a.default is None else conv)
        elif a.type in _CONVERTERS:
            test, conv = _CONVERTERS[a.type]
            test = test.format(v=n)
            if a.optional or a.default is None:
                test = f"{n} is not None and {test}"
            body.append(f"if {test}: {n} = _ap.{conv}({n}, {label})")
        # Generator, Layout, Any: passed through unchanged
    if ks_init:
        body.insert(0, ks_init)
    if "device" in names:
        body.append("if device is not None: _ks = (_ks & ~_BACKEND_MASK) | _device_bit(device)")
        body.append("elif not _ks & _BACKEND_MASK: _ks, device = _ks | _DEFAULT_BACKEND[0], _DEFAULT_BACKEND[1]"
                    "  # ember.set_default_device")
    elif not any(a.type == "Tensor" for a in args):
        body.append("_ks |= _CPU_BIT")
    call_args = ", ".join(names)
    if overlap_check:
        body.append(f"_overlap_check({call_args})  # memory overlap of the written tensors")
    if bound is not None:
        key, ignored = bound
        body += [f"if (_ks | _tls.include) & ~_tls.exclude & {~ignored} == {1 << key} and _table[{key}] is not None:"
                 f" _r = _table[{key}]({call_args})  # bound to the backend kernel",
                 f"else: _r = _op.call(_ks, {call_args})"]
    elif direct:  # the fast path; any other key, or any key included in TLS, goes to the dispatcher
        first, *rest = fast_call_source("_ks", call_args).splitlines()
        body += [first + "  # direct binding", *rest]
    elif direct is None:
        first, second = cuda_call_source("_ks", call_args).splitlines()
        body += [first + "  # a CUDA-only call: its kernel", second + "  # through the dispatcher"]
    else:
        body.append(f"_r = _op.call(_ks, {call_args})  # through the dispatcher")
    for a, n in zip(args, names):
        if a.is_write and a.type == "Tensor":
            body.append(f"{n}._bump_version()" if not a.optional else f"if {n} is not None: {n}._bump_version()")
    if extra_kwargs and any(k == "requires_grad" for k, _ in extra_kwargs):
        body.append("if requires_grad: _r.requires_grad_(True)")
    body.append("return _r")
    return f"def {func_name}({params}):\n    " + "\n    ".join(body) + "\n"


STATS = {"bindings": 0, "seconds": 0.0}  # read by bench/import_time.py


def compile_function(source: str, func_name: str, filename: str, namespace: dict):
    """exec generated `source` (one function `func_name`) in `namespace`; the function keeps its
    source in ``__source__`` so it can be printed. The one exec of generated op code: bindings
    here, overlap checks (ops/overlap.py), recording kernels (autograd/kernel_codegen.py)."""
    exec(compile(source, filename, "exec"), namespace)
    fn = namespace[func_name]
    fn.__source__ = source
    return fn


def compile_binding(source: str, func_name: str, op, extra_globals=None):
    """exec the generated source with the names it uses; returns the function."""
    start = time.perf_counter()
    namespace = {
        "_ap": ap, "_tls": tls, "_Tensor": Tensor, "_NUMBER_TYPES": ap.NUMBER_TYPES,
        "_dtype": __import__("ember._core.dtype", fromlist=["dtype"]).dtype,
        "_device_cls": __import__("ember._core.device", fromlist=["device"]).device,
        "_device_bit": _device_bit, "_BACKEND_MASK": BACKEND_MASK, "_CPU_BIT": CPU_BIT,
        "_DEFAULT_BACKEND": default_factory_backend,
        "_op": op, "_table": op.table, "_NO_VA": _NO_VA, "_SCALAR_TYPE_CODES": _SCALAR_TYPE_CODES,
    }
    if extra_globals:
        namespace.update(extra_globals)
    fn = compile_function(source, func_name, f"<ember binding {op.name}>", namespace)
    fn.__ember_op__ = op        # registry.op_of(fn)
    STATS["bindings"] += 1
    STATS["seconds"] += time.perf_counter() - start
    return fn
