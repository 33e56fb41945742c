"""Sets made during capture: ``{a.shape[0], 3}``, set comprehensions, ``set(xs)``.

    s = SetVariable([ConstantVariable(1), ConstantVariable(1), x])   # two members: 1 and the tensor x
    s.call_method(tx, "__contains__", [ConstantVariable(1)], {})    # ConstantVariable(True)
    s.call_method(tx, "add", [ConstantVariable(2)], {})

Members are keyed like Python would key them: constants by value (so ``1`` and ``1.0`` are one member,
the first one kept), anything else (tensors, objects) by identity, as their ``__hash__`` is ``id``-based.
Only sets created in the compiled frame are modelled; they have no source, so mutating them needs no replay
(a set passed in stays an opaque object).
"""
from __future__ import annotations

from ..exc import unimplemented
from .base import VariableTracker
from .constant import ConstantVariable


class _IdKey:
    """The key of a member hashed by identity (a tensor keyed by its fx node, other trackers by themselves)."""

    def __init__(self, vt):
        from .tensor import TensorVariable
        self.obj = vt.proxy if isinstance(vt, TensorVariable) else vt

    def __eq__(self, other):
        return isinstance(other, _IdKey) and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)


def _key(vt):
    if vt.is_python_constant():
        value = vt.as_python_constant()
        try:
            hash(value)
        except TypeError:
            unimplemented(f"TypeError: unhashable type: {type(value).__name__!r}")
        return value
    from .tensor import TensorVariable
    from .misc import UserDefinedObjectVariable
    if isinstance(vt, (TensorVariable, UserDefinedObjectVariable)) and \
            (not isinstance(vt, UserDefinedObjectVariable) or type(vt.value).__hash__ is object.__hash__):
        return _IdKey(vt)
    unimplemented(f"set member {vt} has no hash known at capture time")


class SetVariable(VariableTracker):
    """A set (or frozenset) under capture; ``items`` maps each member's key to its tracker, in insertion order."""

    def __init__(self, members=(), source=None, frozen=False):
        super().__init__(source)
        self.items: dict = {}
        self.frozen = frozen
        for vt in members:
            self.items.setdefault(_key(vt), vt)

    def python_type(self):
        return frozenset if self.frozen else set

    def as_python_constant(self):
        values = [vt.as_python_constant() for vt in self.items.values()]
        return frozenset(values) if self.frozen else set(values)

    def truthy(self, tx):
        return len(self.items) > 0

    def _ordered(self):
        """Members in the order iterating the real set would give: for constants, the order of a set
        built from them in insertion order (CPython's hash-table order); otherwise insertion order."""
        keys = list(self.items)
        if all(not isinstance(k, _IdKey) for k in keys):
            return [self.items[k] for k in set(keys)]
        return list(self.items.values())

    def unpack_var_sequence(self, tx):
        return self._ordered()

    def _other_keys(self, tx, other):
        if isinstance(other, SetVariable):
            return dict(other.items)
        out = {}
        for vt in other.unpack_var_sequence(tx):
            out.setdefault(_key(vt), vt)
        return out

    def _new(self, items):
        result = SetVariable(frozen=self.frozen)
        result.items = items
        return result

    def _mutate(self, tx):
        if self.frozen:
            unimplemented("AttributeError: 'frozenset' object is not mutable")
        if self.source is not None:
            unimplemented("mutating a set passed into the compiled function")
        tx.output.side_effects.mutation(tx, self)   # undo log: a graph break rolls the change back

    def call_method(self, tx, name, args, kwargs):
        from .lists import ListIteratorVariable
        if name == "__len__":
            return ConstantVariable(len(self.items))
        if name == "__contains__":
            return ConstantVariable(_key(args[0]) in self.items)
        if name == "__iter__":
            return ListIteratorVariable(self._ordered())
        if name == "copy":
            return self._new(dict(self.items))
        if name in ("union", "__or__", "__ror__"):
            items = dict(self.items)
            for other in args:
                for k, vt in self._other_keys(tx, other).items():
                    items.setdefault(k, vt)
            return self._new(items)
        if name in ("intersection", "__and__", "__rand__"):
            items = dict(self.items)
            for other in args:
                keys = self._other_keys(tx, other)
                items = {k: vt for k, vt in items.items() if k in keys}
            return self._new(items)
        if name in ("difference", "__sub__"):
            items = dict(self.items)
            for other in args:
                keys = self._other_keys(tx, other)
                items = {k: vt for k, vt in items.items() if k not in keys}
            return self._new(items)
        if name in ("symmetric_difference", "__xor__"):
            other = self._other_keys(tx, args[0])
            items = {k: vt for k, vt in self.items.items() if k not in other}
            items.update({k: vt for k, vt in other.items() if k not in self.items})
            return self._new(items)
        if name in ("issubset", "__le__"):
            return ConstantVariable(all(k in self._other_keys(tx, args[0]) for k in self.items))
        if name in ("issuperset", "__ge__"):
            return ConstantVariable(all(k in self.items for k in self._other_keys(tx, args[0])))
        if name == "isdisjoint":
            return ConstantVariable(not any(k in self.items for k in self._other_keys(tx, args[0])))
        if name in ("__eq__", "__ne__"):
            if not isinstance(args[0], SetVariable) and not (args[0].is_python_constant() and isinstance(
                    args[0].as_python_constant(), (set, frozenset))):
                return ConstantVariable(name == "__ne__")
            same = set(self.items) == set(self._other_keys(tx, args[0]))
            return ConstantVariable(same if name == "__eq__" else not same)
        if name in ("add", "discard", "remove", "update", "clear", "pop", "difference_update",
                    "intersection_update", "__ior__", "__iand__", "__isub__"):
            return self._mutating_method(tx, name, args)
        return super().call_method(tx, name, args, kwargs)

    def _mutating_method(self, tx, name, args):
        self._mutate(tx)
        if name == "add":
            self.items.setdefault(_key(args[0]), args[0])
        elif name in ("discard", "remove"):
            key = _key(args[0])
            if key not in self.items and name == "remove":
                unimplemented(f"KeyError: {args[0]} not in set")
            self.items.pop(key, None)
        elif name in ("update", "__ior__"):
            for other in args:
                for k, vt in self._other_keys(tx, other).items():
                    self.items.setdefault(k, vt)
        elif name in ("intersection_update", "__iand__"):
            keys = self._other_keys(tx, args[0])
            for k in [k for k in self.items if k not in keys]:
                del self.items[k]
        elif name in ("difference_update", "__isub__"):
            for k in self._other_keys(tx, args[0]):
                self.items.pop(k, None)
        elif name == "clear":
            self.items.clear()
        elif name == "pop":
            if not self.items:
                unimplemented("KeyError: pop from an empty set")
            first = self._ordered()[0]
            self.items.pop(_key(first))
            return first
        return self if name.startswith("__i") else ConstantVariable(None)

    def reconstruct(self, cg):
        if self.source is not None:
            return cg.load_source(self.source)
        members = self._ordered()
        if self.frozen:
            cg.load_python_value(frozenset, push_null=True)
        for vt in members:
            cg.reconstruct(vt)
        cg.build("BUILD_SET", len(members))
        if self.frozen:
            cg.call(1, push_null=False)

    def __repr__(self):
        return f"SetVariable({list(self.items.values())!r})"
