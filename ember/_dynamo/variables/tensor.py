"""Tensors under capture: an fx Node plus a meta tensor that carries shape, dtype, strides and requires_grad.

    y = call_tensor_op(tx, "call_function", ember.abs, [x_var], {})   # records abs_1 = ember.abs(a)
    y.example.shape        # ember.Size([10]), computed by running ember.abs on a meta tensor

Shapes are static: ``x.shape``, ``x.size()``, ``x.dim()``, ``x.dtype`` fold to constants.
Anything that needs a tensor's *data* (``.item()``, ``if x.sum() < 0:``) raises Unsupported: a graph break.
"""
from __future__ import annotations

import operator

from ..exc import Unsupported, unimplemented
from .base import VariableTracker
from .constant import ConstantVariable

# methods answered from metadata alone: they become constants, not graph nodes
_METADATA_METHODS = {"size", "dim", "ndimension", "numel", "nelement", "stride", "is_floating_point",
                     "is_complex", "is_contiguous", "element_size", "get_device", "__len__", "is_signed"}
# methods that need the values: a graph break (torch breaks on these too). storage_offset() too:
# TENSOR_MATCH does not guard the offset, so folding it would serve a later view a stale number.
_DATA_METHODS = {"storage_offset", "item", "tolist", "numpy", "backward", "__bool__", "__int__", "__float__", "__index__",
                 "data_ptr", "__array__", "__repr__", "__str__", "__format__", "register_hook", "untyped_storage",
                 "nonzero", "unique", "masked_select", "__iter__"}
_METADATA_ATTRS = {"shape", "ndim", "dtype", "requires_grad", "is_leaf", "layout", "is_sparse", "is_quantized",
                   "is_meta", "itemsize", "nbytes"}
_TENSOR_ATTRS = {"T", "mT", "H", "mH", "real", "imag", "data"}


class TensorVariable(VariableTracker):
    """A tensor in the graph: ``proxy`` is its fx Node, ``example`` a meta tensor, ``device`` the real device."""

    def __init__(self, proxy, example, device, source=None, python_type=None):
        super().__init__(source)
        self.proxy = proxy
        self.example = example
        self.device = device
        self._python_type = python_type

    def python_type(self):
        if self._python_type is not None:
            return self._python_type
        import ember
        return ember.Tensor

    def as_proxy(self):
        return self.proxy

    def truthy(self, tx):
        raise Unsupported("data-dependent branch: the condition depends on a tensor's value "
                          "(e.g. `if x.sum() < 0:`)")

    def var_getattr(self, tx, name):
        if name == "device":
            return ConstantVariable(self.device)
        if name == "is_cuda":
            return ConstantVariable(self.device.type == "cuda")
        if name == "is_cpu":
            return ConstantVariable(self.device.type == "cpu")
        if name == "is_leaf" and self.source is not None:
            # an input's example is always a leaf and TENSOR_MATCH does not see grad_fn: read the real
            # tensor and guard the answer
            real = next((v for _, s, v in tx.output.graph_inputs if s == self.source), None)
            if real is None:
                unimplemented("Tensor.is_leaf of an input read through an alias")
            from ..source import AttrSource
            tx.output.guard(AttrSource(self.source, "is_leaf"), "CONSTANT_MATCH", real.is_leaf)
            return ConstantVariable(real.is_leaf)
        if name in _METADATA_ATTRS:
            return ConstantVariable(getattr(self.example, name))
        if name in _TENSOR_ATTRS:
            return call_tensor_op(tx, "call_function", getattr, [self, ConstantVariable(name)], {})
        if name in ("grad", "grad_fn", "_version", "__class__"):
            if name == "__class__":
                from .misc import PythonValueVariable
                return PythonValueVariable(self.python_type())
            unimplemented(f"Tensor.{name} is only known at run time")
        from .misc import BoundMethodVariable
        if callable(getattr(self.example, name, None)):
            return BoundMethodVariable(self, name)
        unimplemented(f"Tensor attribute {name!r}")

    def call_method(self, tx, name, args, kwargs):
        if name in _METADATA_METHODS:
            consts = [a.as_python_constant() for a in args]
            kw = {k: v.as_python_constant() for k, v in kwargs.items()}
            return ConstantVariable(getattr(self.example, name)(*consts, **kw))
        if name in _DATA_METHODS:
            unimplemented(f"Tensor.{name}() needs the tensor's data")
        if name == "__getitem__":
            return call_tensor_op(tx, "call_function", operator.getitem, [self, *args], {})
        if name == "__setitem__":
            call_tensor_op(tx, "call_function", operator.setitem, [self, *args], {})
            return ConstantVariable(None)
        if name in ("type", "type_as") and not args and not kwargs:
            return ConstantVariable(self.example.type().replace("Meta", "CPU") if self.device.type == "cpu"
                                    else self.example.type())
        if name == "requires_grad_":
            unimplemented("Tensor.requires_grad_() inside a compiled region")
        if name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__add__", "__sub__", "__mul__",
                    "__truediv__", "__matmul__", "__neg__", "__pow__", "__and__", "__or__"):
            from .builtins import BuiltinVariable
            op = getattr(operator, name.strip("_").replace("truediv", "truediv"))
            return BuiltinVariable(op).call_function(tx, [self, *args], kwargs)
        return call_tensor_op(tx, "call_method", name, [self, *args], kwargs)

    def unpack_var_sequence(self, tx):
        n = self.example.shape[0] if self.example.dim() > 0 else unimplemented("iteration over a 0-d tensor")
        return [call_tensor_op(tx, "call_function", operator.getitem, [self, ConstantVariable(i)], {})
                for i in range(n)]

    def __repr__(self):
        return f"TensorVariable({self.proxy}, {tuple(self.example.shape)}, {self.example.dtype})"


def _lower(tx, vt, state):
    """Turn an argument tracker into (node-side value, meta-side value); note the first tensor's device."""
    from .lists import BaseListVariable, SliceVariable
    from .dicts import ConstDictVariable
    if isinstance(vt, TensorVariable):
        if state["device"] is None:
            state["device"] = vt.device
        return vt.proxy, vt.example
    if isinstance(vt, SliceVariable):
        parts = [_lower(tx, p, state) for p in vt.items]
        return slice(*[p[0] for p in parts]), slice(*[p[1] for p in parts])
    if isinstance(vt, BaseListVariable):
        parts = [_lower(tx, p, state) for p in vt.items]
        kind = tuple if vt.python_type() is not list else list
        return kind(p[0] for p in parts), kind(p[1] for p in parts)
    if isinstance(vt, ConstDictVariable):
        parts = {k: _lower(tx, v, state) for k, v in vt.items.items()}
        return {k: p[0] for k, p in parts.items()}, {k: p[1] for k, p in parts.items()}
    if vt.is_python_constant():
        value = vt.as_python_constant()
        return value, value
    from .misc import PythonValueVariable
    if isinstance(vt, PythonValueVariable):   # e.g. a dtype class or a function passed through
        return vt.value, vt.value
    unimplemented(f"argument {vt} cannot be passed to a tensor operation")


def _meta_device_call(fn, args, kwargs, state, method_name):
    """Run the op on meta tensors; factories and device moves are redirected to 'meta' (their real device is noted)."""
    import ember
    if method_name in ("to", "cuda", "cpu"):
        self_meta, rest = args[0], list(args[1:])
        dtype = kwargs.get("dtype")
        for a in rest:
            if isinstance(a, ember.dtype):
                dtype = a
            elif isinstance(a, (str, ember.device)):
                state["device"] = ember.device(a)
            elif isinstance(a, ember.Tensor):
                dtype = a.dtype
        if "device" in kwargs and kwargs["device"] is not None:
            state["device"] = ember.device(kwargs["device"])
        if method_name == "cuda":
            state["device"] = ember.device("cuda")
        if method_name == "cpu":
            state["device"] = ember.device("cpu")
        return self_meta.to(dtype) if dtype is not None else self_meta.clone() if kwargs.get("copy") else self_meta
    if state["device"] is None:   # no tensor argument: a factory like ember.zeros(3)
        state["device"] = ember.device(kwargs.get("device") or "cpu")
        kwargs = {**kwargs, "device": "meta"}
    return fn(*args, **kwargs)


def call_tensor_op(tx, kind: str, target, args: list, kwargs: dict) -> VariableTracker:
    """Record ``target(*args, **kwargs)`` in the graph and return trackers for its result.

    kind is "call_function" (target: a callable such as ember.abs or operator.add) or "call_method"
    (target: a Tensor method name such as "sum").  Example: ``call_tensor_op(tx, "call_method", "sum", [b], {})``.
    """
    import ember
    state = {"device": None}
    lowered = [_lower(tx, a, state) for a in args]
    lowered_kw = {k: _lower(tx, v, state) for k, v in kwargs.items()}
    node_args = tuple(p[0] for p in lowered)
    node_kwargs = {k: p[0] for k, p in lowered_kw.items()}
    meta_args = [p[1] for p in lowered]
    meta_kwargs = {k: p[1] for k, p in lowered_kw.items()}
    from ember.autograd.grad_mode import _set_grad_enabled
    entry_mode = ember.is_grad_enabled()
    if tx.output.grad_enabled != entry_mode:   # inside a captured grad-mode region (ctx_manager.py)
        _set_grad_enabled(tx.output.grad_enabled)
    try:
        if kind == "call_method":
            fn = getattr(meta_args[0], target)
            if target in ("to", "cuda", "cpu"):
                example = _meta_device_call(fn, meta_args, meta_kwargs, state, target)
            else:
                example = fn(*meta_args[1:], **meta_kwargs)
        else:
            example = _meta_device_call(target, meta_args, meta_kwargs, state, None)
    except Unsupported:
        raise
    except NotImplementedError as e:
        unimplemented(f"{_target_name(target)} has no meta implementation: {e}")
    except Exception as e:   # the op itself fails (bad shapes etc.): eager will raise the real error
        unimplemented(f"{_target_name(target)} failed on example inputs: {type(e).__name__}: {e}")
    finally:
        _set_grad_enabled(entry_mode)
    node = tx.output.create_node(tx, kind, target, node_args, node_kwargs)
    return wrap_example(tx, node, example, state["device"] or ember.device("cpu"))


def _target_name(target):
    return target if isinstance(target, str) else getattr(target, "__name__", repr(target))


def wrap_example(tx, node, example, device):
    """Trackers for an op's result: a tensor, a tuple of tensors (getitem nodes), or a constant."""
    import ember
    node.meta["val"] = example
    if isinstance(example, ember.Tensor):
        return TensorVariable(node, example, device)
    if isinstance(example, (tuple, list)) and any(isinstance(e, ember.Tensor) for e in example):
        from .lists import TupleVariable, ListVariable
        items = []
        for i, e in enumerate(example):
            if isinstance(e, ember.Tensor):
                item_node = tx.output.create_node(tx, "call_function", operator.getitem, (node, i), {})
                item_node.meta["val"] = e
                items.append(TensorVariable(item_node, e, device))
            else:
                items.append(ConstantVariable(e))
        if isinstance(example, list):
            return ListVariable(items)
        return TupleVariable(items, tuple_cls=type(example))
    if example is None:
        return ConstantVariable(None)
    unimplemented(f"{_target_name(node.target)} returns a {type(example).__name__}, not a tensor")
