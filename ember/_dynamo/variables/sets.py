"""Sets made during capture: ``{a.shape[0], 3}``, set comprehensions, ``set(xs)``.

    s = SetVariable([ConstantVariable(1), ConstantVariable(1), x])   # two members: 1 and the tensor x
    s.call_method(tx, "__contains__", [ConstantVariable(1)], {})    # ConstantVariable(True)
    s.call_method(tx, "add", [ConstantVariable(2)], {})

Members are keyed like Python would key them: constants by value (so ``1`` and ``1.0`` are one member,
the first one kept), anything else (tensors, objects) by identity, as their ``__hash__`` is ``id``-based.
Only sets created in the compiled frame are modelled; they have no source, so mutating them needs no replay
(a set passed in stays an opaque object).

Iteration order is the real set's: every operation is also recorded in ``history``, and replaying it
on real Python sets of the member keys (``shadow()``) reproduces CPython's table -- and so the order
of iteration and the member ``pop`` takes. Members hashed by identity have no order known at capture
(it depends on run-time ids): iterating such a set stops capture (a graph break).
"""
from __future__ import annotations

from ..exc import unimplemented
from .base import VariableTracker
from .constant import ConstantVariable
from .builder import tracks, wrap_new


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


# ------------------------------------------------------------------------------------------------
# history: the operations that made a set, replayed on real sets of its keys

def _replay(history) -> set:
    """The real set of keys `history` makes (see the module docstring). Entries:
    ("from", (method, history, operand)) -- the result of a real set method on another set;
    (method, operand) -- an in-place method (add, discard, pop, clear, update, ...)."""
    s = set()
    for op, arg in history:
        if op == "from":
            method, base, operand = arg
            s = getattr(_replay(base), method)(*_operands(operand))
        else:
            getattr(s, op)(*_operands(arg))
    return s


def _replay_frozen(history) -> frozenset:
    return frozenset(_replay(history))


def _operands(operand) -> tuple:
    if operand is None:
        return ()
    kind, value = operand
    if kind in ("key", "real"):       # a member's key / a real set or frozenset constant
        return (value,)
    if kind == "set":
        return (_replay(value),)
    return (list(value),)      # "seq": the other operand's keys in its iteration order


_ADDING = {"add", "update"}


class SetVariable(VariableTracker):
    """A set (or frozenset) under capture; ``items`` maps each member's key to its tracker."""

    def __init__(self, members=(), source=None, frozen=False):
        super().__init__(source)
        self.items: dict = {}
        self.frozen = frozen
        self.history: list = []
        self._shadow = set()   # _replay(self.history), kept up to date (None: replay when needed)
        for vt in members:     # BUILD_SET / set(iterable): one add per member, in order
            key = _key(vt)
            self.items.setdefault(key, vt)
            self.history.append(("add", ("key", key)))
            self._shadow.add(key)

    def python_type(self):
        return frozenset if self.frozen else set

    def as_python_constant(self):
        values = [vt.as_python_constant() for vt in self.items.values()]
        return frozenset(values) if self.frozen else set(values)

    def truthy(self, tx):
        return len(self.items) > 0

    # -------------------------------------------------------------- order
    def shadow(self) -> set:
        """The real set of member keys this set's history makes (do not mutate it)."""
        if self._shadow is None:
            self._shadow = _replay(self.history)
        return self._shadow

    def key_list(self) -> list:
        return list(self.shadow())

    def ordered(self) -> list:
        """Members in the order iterating the real set gives."""
        if any(isinstance(k, _IdKey) for k in self.items):
            unimplemented("iterating a set of tensors or objects: its order depends on their ids")
        return [self._member(k) for k in self.shadow()]

    def _member(self, key):
        return self.items[key]

    def iterator(self):
        from .iterators import SetIterator
        return SetIterator(self, self.ordered())

    def unpack_var_sequence(self, tx):
        return self.ordered()

    # -------------------------------------------------------------- undo log (side_effects.py)
    def snapshot(self):
        return dict(self.items), list(self.history)

    def restore_snapshot(self, snapshot):
        items, history = snapshot
        self.items = dict(items)
        self.history = list(history)
        self._shadow = None

    # -------------------------------------------------------------- operands
    def _operand(self, tx, other):
        """(the other operand in history form, its key -> tracker map)."""
        if isinstance(other, SetVariable):
            return ("set", tuple(other.history)), dict(other.items)
        if isinstance(other, ConstantVariable) and type(other.value) in (set, frozenset):
            return ("real", other.value), {k: ConstantVariable(k) for k in other.value}
        pairs = {}
        keys = []
        for vt in other.unpack_var_sequence(tx):
            key = _key(vt)
            pairs.setdefault(key, vt)
            keys.append(key)
        return ("seq", tuple(keys)), pairs

    @property
    def is_mutable_object(self):
        return not self.frozen

    def copy(self, frozen):
        """``set(s)`` / ``frozenset(s)`` / ``s.copy()``: CPython merges s's table (not one add per member)."""
        result = self._result("copy", [], None)
        result.frozen = frozen
        return result

    def _result(self, method, others_maps, operand):
        """A new set: the real `method` of this set applied to `operand`."""
        result = SetVariable(frozen=self.frozen)
        result.history = [("from", (method, tuple(self.history), operand))]
        result._shadow = None
        result._sync([self.items, *others_maps])
        return result

    def _sync(self, pools) -> None:
        """Members = the shadow's keys, each with the tracker of that very key object (CPython keeps
        either operand's equal key, 1 or 1.0, depending on the method)."""
        by_id = {id(k): vt for items in pools for k, vt in items.items()}
        by_key = {}
        for items in reversed(pools):
            by_key.update(items)
        self.items = {k: by_id[id(k)] if id(k) in by_id else by_key[k] for k in self.shadow()}

    def _mutate(self, tx):
        if self.frozen:
            unimplemented("AttributeError: 'frozenset' object is not mutable")
        if self.source is not None:
            unimplemented("mutating a set passed into the compiled function")
        tx.output.side_effects.mutation(tx, self)   # undo log: a graph break rolls the change back

    # -------------------------------------------------------------- methods
    def call_method(self, tx, name, args, kwargs):
        if name == "__len__":
            return ConstantVariable(len(self.items))
        if name == "__contains__":
            return ConstantVariable(_key(args[0]) in self.items)
        if name == "__iter__":
            return self.iterator()
        if name == "copy":
            return self.copy(self.frozen)
        binary = {"__or__": "union", "__and__": "intersection", "__sub__": "difference",
                  "__xor__": "symmetric_difference"}
        if name in binary or name in ("union", "intersection", "difference", "symmetric_difference"):
            method = binary.get(name, name)
            result = self
            for other in args or [None]:
                if other is None:
                    return result._result("copy", [], None)
                operand, pairs = self._operand(tx, other)
                result = result._result(method, [pairs], operand)
            return result
        if name in ("__ror__", "__rand__"):   # other | self: the other set is copied first
            if not isinstance(args[0], SetVariable):
                unimplemented(f"set.{name} with a non-set")
            operand = ("set", tuple(self.history))
            return args[0]._result(binary[name.replace("__r", "__")], [self.items], operand)
        if name in ("issubset", "__le__"):
            return ConstantVariable(all(k in self._operand(tx, args[0])[1] for k in self.items))
        if name in ("issuperset", "__ge__"):
            return ConstantVariable(all(k in self.items for k in self._operand(tx, args[0])[1]))
        if name == "isdisjoint":
            return ConstantVariable(not any(k in self.items for k in self._operand(tx, args[0])[1]))
        if name in ("__eq__", "__ne__"):
            if not isinstance(args[0], SetVariable) and not (args[0].is_python_constant() and isinstance(
                    args[0].as_python_constant(), (set, frozenset))):
                return ConstantVariable(name == "__ne__")
            same = set(self.items) == set(self._operand(tx, args[0])[1])
            return ConstantVariable(same if name == "__eq__" else not same)
        if name in _IN_PLACE:
            return self._mutating_method(tx, name, args)
        return super().call_method(tx, name, args, kwargs)

    def _mutating_method(self, tx, name, args):
        self._mutate(tx)
        method = _IN_PLACE[name]
        if method in ("add", "discard", "remove"):
            key = _key(args[0])
            if method == "remove" and key not in self.items:
                unimplemented(f"KeyError: {args[0]} not in set")
            if method == "add":
                self.items.setdefault(key, args[0])
            else:
                self.items.pop(key, None)
            self.history.append(("add" if method == "add" else "discard", ("key", key)))
            getattr(self.shadow(), "add" if method == "add" else "discard")(key)
            return ConstantVariable(None)
        if method == "clear":
            self.items.clear()
            self.history.append(("clear", None))
            self.shadow().clear()
            return ConstantVariable(None)
        if method == "pop":
            if not self.items:
                unimplemented("KeyError: pop from an empty set")
            if any(isinstance(k, _IdKey) for k in self.items):
                unimplemented("set.pop() of a set of tensors or objects: which one depends on their ids")
            key = self.shadow().pop()          # the member CPython's pop takes (the shadow pops it too)
            self.history.append(("pop", None))
            return self.items.pop(key)
        pools = [self.items]
        for other in args:
            operand, pairs = self._operand(tx, other)
            pools.append(pairs)
            self.history.append((method, operand))
            getattr(self.shadow(), method)(*_operands(operand))
            if method == "update":   # members kept in the order first added (see _rebuild_order)
                for k, vt in pairs.items():
                    self.items.setdefault(k, vt)
        if method != "update":
            self._sync(pools)
        return self if name.startswith("__i") else ConstantVariable(None)

    # -------------------------------------------------------------- rebuilding
    def reconstruct(self, cg):
        if self.source is not None:
            return cg.load_source(self.source)
        if not any(isinstance(k, _IdKey) for k in self.items):
            # constant members: replay the history at run time, which makes the very table the
            # program made (so the set iterates alike from here on, whatever was added or removed)
            cg.load_python_value(_replay_frozen if self.frozen else _replay, push_null=True)
            cg.load_python_value(tuple(self.history))
            cg.call(1, push_null=False)
            return
        members = self._rebuild_order()
        if self.frozen:
            cg.load_python_value(frozenset, push_null=True)
        for vt in members:
            cg.reconstruct(vt)
        cg.build("BUILD_SET", len(members))
        if self.frozen:
            cg.call(1, push_null=False)

    def _rebuild_order(self) -> list:
        """Members (some hashed by their run-time id) in an order for BUILD_SET that makes the very
        table the program made: a history of adds alone is replayed by adding the members in the
        order they were first added. Any other history (removals, merges) has no such order."""
        if not all(op in _ADDING and arg[0] in ("key", "seq") for op, arg in self.history):
            unimplemented("rebuilding a set of tensors or objects that was not built by adding members only")
        return list(self.items.values())

    def __repr__(self):
        return f"SetVariable({list(self.items.values())!r})"


_IN_PLACE = {"add": "add", "discard": "discard", "remove": "remove", "update": "update", "clear": "clear",
             "pop": "pop", "difference_update": "difference_update", "intersection_update": "intersection_update",
             "symmetric_difference_update": "symmetric_difference_update", "__ior__": "update",
             "__iand__": "intersection_update", "__isub__": "difference_update",
             "__ixor__": "symmetric_difference_update"}


@tracks(set, frozenset, made_in_capture=True)
def _new_set(tx, value):
    if type(value) not in (set, frozenset):
        return None
    return SetVariable([wrap_new(tx, v) for v in value], frozen=type(value) is frozenset)
