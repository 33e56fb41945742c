"""ember's public functions (ember.abs, ember.nn.functional.relu, ember.linalg.norm, ...) under capture.

    EmberFunctionVariable(ember.abs).call_function(tx, [a], {})   # records `abs_1 = ember.abs(a)`

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
