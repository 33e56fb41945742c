"""Immutable Python values known at capture time (ints, floats, strings, None, dtypes, devices, ranges, Size).

    ConstantVariable(3).call_method(tx, "__mul__", [ConstantVariable(2)], {}).as_python_constant()  # 6
"""
from __future__ import annotations

import enum
import types

from ..exc import unimplemented
from .base import ValueVariable

_ATOMIC_TYPES = (type(None), bool, int, float, complex, str, bytes, range, slice, type(Ellipsis),
                 type(NotImplemented), enum.Enum)


def _ember_constant_types():
    import ember
    return (ember.dtype, ember.device, ember.Size)


def is_constant_value(value) -> bool:
    """True for values the translator folds instead of tracing (checked recursively for tuples)."""
    if isinstance(value, enum.Enum):
        return _is_plain_enum(type(value))
    if isinstance(value, _ATOMIC_TYPES) or isinstance(value, _ember_constant_types()):
        return True
    if type(value) in (tuple, frozenset):
        return all(is_constant_value(v) for v in value)
    return False


_plain_enums: dict = {}


def _is_plain_enum(cls) -> bool:
    """An enum whose own classes define no functions, properties or descriptors: its members fold
    (methods, str(), f-strings of them run only the enum module's code). A member of any other enum
    is a user object, so its methods are inlined on every call instead of run once at capture."""
    plain = _plain_enums.get(cls)
    if plain is None:
        plain = not any(_user_code(v) for klass in cls.__mro__ if klass.__module__ not in ("enum", "builtins")
                        for v in vars(klass).values())
        _plain_enums[cls] = plain
    return plain


def _user_code(attr) -> bool:
    """A class attribute whose use runs code not from the enum module (EnumType copies some of its
    own functions, __new__ and _generate_next_value_, into every enum class)."""
    fn = attr.__func__ if isinstance(attr, (staticmethod, classmethod)) else attr
    if isinstance(fn, types.FunctionType):
        return fn.__module__ != "enum"
    if isinstance(attr, property):
        return True
    # a descriptor written in Python (property, a user class); C slots and methods of int/str are not
    return hasattr(type(attr), "__get__") and type(attr).__module__ not in ("builtins", "enum")


class ConstantVariable(ValueVariable):
    """A value folded at capture time; it is specialised on through a CONSTANT_MATCH guard when it has a source."""

    def truthy(self, tx):
        return bool(self.value)

    def var_getattr(self, tx, name):
        try:
            attr = getattr(self.value, name)
        except AttributeError:
            unimplemented(f"AttributeError: {type(self.value).__name__!r} object has no attribute {name!r}")
        if is_constant_value(attr):
            return ConstantVariable(attr)
        if callable(attr):
            from .misc import BoundMethodVariable
            return BoundMethodVariable(self, name)
        unimplemented(f"attribute {name!r} of constant {self.value!r}")

    def call_method(self, tx, name, args, kwargs):
        if all(a.is_python_constant() for a in args) and all(v.is_python_constant() for v in kwargs.values()):
            method = getattr(self.value, name, None)
            if method is None:
                unimplemented(f"method {name!r} of {type(self.value).__name__}")
            result = method(*[a.as_python_constant() for a in args],
                            **{k: v.as_python_constant() for k, v in kwargs.items()})
            from .builder import wrap_new
            return wrap_new(tx, result)
        # e.g. 2 * tensor arrives as int.__mul__(tensor): let the operator table handle it
        return super().call_method(tx, name, args, kwargs)

    def unpack_var_sequence(self, tx):
        if isinstance(self.value, (tuple, list, range, str, bytes, frozenset)):
            return [ConstantVariable(v) for v in self.value]
        if isinstance(self.value, _ember_constant_types()[2]):
            return [ConstantVariable(v) for v in self.value]
        unimplemented(f"iteration over {type(self.value).__name__}")

    def reconstruct(self, cg):
        cg.load_const(self.value)

    def __repr__(self):
        return f"ConstantVariable({self.value!r})"
