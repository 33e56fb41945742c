"""ember's public functions (ember.abs, ember.nn.functional.relu, ember.linalg.norm, ...) under capture.

    EmberFunctionVariable(ember.abs).call_function(tx, [a], {})   # records `abs_1 = ember.abs(a)`

Operators called as objects (``ember.ops.mylib.op(x)``, ``ember.ops.aten.add.Tensor(a, b)``: an
``ember.library`` op, a C++ extension registered as one) are recorded as they are, with the op's
Meta/fake kernel giving the example value (`EmberOperatorVariable`).

Functions answered from metadata (ember.is_tensor, ember.numel, ...) fold to constants; functions
without tensors and without a place in a graph (ember.manual_seed, ember.save) are graph breaks.
"""
from __future__ import annotations

from ..exc import unimplemented
from .base import ValueVariable
from .constant import ConstantVariable
from .tensor import TensorVariable, call_tensor_op

_NOT_GRAPHABLE = {"manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "set_printoptions",
                  "get_printoptions", "save", "load", "set_default_dtype", "is_inference_mode_enabled"}
_FOLD_ON_METADATA = {"is_tensor", "is_floating_point", "is_complex", "numel"}
_CONSTANT_FUNCTIONS = {"promote_types", "result_type", "can_cast", "get_default_dtype"}


def is_ember_function(value) -> bool:
    """True for the public callables of ember, ember.nn.functional, ember.linalg and ember.special."""
    from ember.ops.registry import public_name
    return public_name(value) is not None


def _contains_tensor(vt) -> bool:
    if isinstance(vt, TensorVariable):
        return True
    items = getattr(vt, "items", None)
    if isinstance(items, list):
        return any(_contains_tensor(i) for i in items)
    if isinstance(items, dict):
        return any(_contains_tensor(i) for i in items.values())
    return False


class EmberFunctionVariable(ValueVariable):
    def __init__(self, value, source=None):
        super().__init__(value, source)
        from ember.ops.registry import public_name
        self.name = public_name(value).rsplit(".", 1)[1]

    def call_function(self, tx, args, kwargs):
        import ember
        name = self.name
        if name in _NOT_GRAPHABLE:
            unimplemented(f"call to ember.{name}")
        if name == "is_grad_enabled":
            tx.output.guard(None, "GRAD_MODE", ember.is_grad_enabled())
            return ConstantVariable(tx.output.grad_enabled)   # inside a captured no_grad block: False
        if name in _FOLD_ON_METADATA and args:
            if name == "is_tensor":
                return ConstantVariable(isinstance(args[0], TensorVariable))
            if isinstance(args[0], TensorVariable):
                return ConstantVariable(getattr(args[0].example, name)())
        if name in _CONSTANT_FUNCTIONS and not any(_contains_tensor(a) for a in args):
            return ConstantVariable(self.value(*[a.as_python_constant() for a in args],
                                               **{k: v.as_python_constant() for k, v in kwargs.items()}))
        return call_tensor_op(tx, "call_function", self.value, list(args), dict(kwargs))

    def reconstruct(self, cg):
        if self.source is not None:
            return cg.load_source(self.source)
        cg.load_python_value(self.value)

    def __repr__(self):
        return f"EmberFunctionVariable({self.name})"


def is_ember_operator(value) -> bool:
    """An OperatorHandle (``ember.ops.ns.op.overload``) or an overload packet (``ember.ops.ns.op``)."""
    from ember._core.dispatch import OperatorHandle
    from ember.ops.registry import _Packet
    return isinstance(value, (OperatorHandle, _Packet))


class EmberOperatorVariable(ValueVariable):
    def call_function(self, tx, args, kwargs):
        from ember._core.dispatch import OperatorHandle
        op = self.value
        if not isinstance(op, OperatorHandle):      # a packet runs its first overload (_Packet.__call__)
            op = next(iter(op._overloads.values()))
        return call_tensor_op(tx, "call_function", op, list(args), dict(kwargs))

    def var_getattr(self, tx, name):
        """``packet.default`` / ``packet.Tensor``: one overload (guarded by identity like the packet)."""
        from ember.ops.registry import _Packet
        overload = self.value._overloads.get(name) if isinstance(self.value, _Packet) else None
        if overload is None:
            unimplemented(f"attribute {name!r} of operator {self.value!r}")
        from .. import source as src
        from .builder import wrap
        return wrap(tx, overload, src.AttrSource(self.source, name) if self.source is not None else None)

    def call_method(self, tx, name, args, kwargs):
        from ember.ops.registry import _Packet
        if isinstance(self.value, _Packet) and name in self.value._overloads:     # packet.default(x)
            return self.var_getattr(tx, name).call_function(tx, args, kwargs)
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, cg):
        if self.source is not None:
            return cg.load_source(self.source)
        cg.load_python_value(self.value)

    def __repr__(self):
        return f"EmberOperatorVariable({getattr(self.value, 'name', None) or self.value.__name__})"
