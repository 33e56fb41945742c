"""Tuples, lists, slices and iterators under capture.

    ListVariable([ConstantVariable(1)]).call_method(tx, "append", [x], {})   # mutation; replayed if the list is an input
"""
from __future__ import annotations

from ..exc import unimplemented
from .base import VariableTracker
from .constant import ConstantVariable
from .iterators import IteratorVariable
from .builder import tracks, wrap, wrap_new
from .. import source as _src


class BaseListVariable(VariableTracker):
    """Shared behaviour of tuples and lists: ``items`` is a Python list of trackers."""

    def __init__(self, items, source=None):
        super().__init__(source)
        self.items = list(items)

    def as_python_constant(self):
        return self.python_type()(i.as_python_constant() for i in self.items)

    def truthy(self, tx):
        return len(self.items) > 0

    def unpack_var_sequence(self, tx):
        return list(self.items)

    def _getitem(self, tx, index):
        if isinstance(index, SliceVariable):
            index = index.as_python_constant()
        else:
            index = index.as_python_constant()
        if isinstance(index, slice):
            return self.rebuild(self.items[index])
        try:
            return self.items[index]
        except IndexError:
            unimplemented(f"IndexError: {self.python_type().__name__} index out of range")

    def rebuild(self, items):
        return type(self)(items)

    def call_method(self, tx, name, args, kwargs):
        from .builtins import BuiltinVariable
        if name == "__getitem__":
            return self._getitem(tx, args[0])
        if name == "__len__":
            return ConstantVariable(len(self.items))
        if name == "__contains__":
            return BuiltinVariable.contains(tx, self.items, args[0])
        if name == "index":
            target = args[0]
            for i, item in enumerate(self.items):
                if BuiltinVariable.same_value(tx, item, target):
                    return ConstantVariable(i)
            unimplemented("ValueError: item not in list")
        if name == "count":
            return ConstantVariable(sum(BuiltinVariable.same_value(tx, i, args[0]) for i in self.items))
        if name in ("__add__",) and isinstance(args[0], BaseListVariable):
            return self.rebuild(self.items + args[0].items)
        if name == "__mul__" and args[0].is_python_constant():
            return self.rebuild(self.items * args[0].as_python_constant())
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, cg):
        if self.source is not None and not cg.tx.output.side_effects.is_modified(self):
            return cg.load_source(self.source)
        if self.source is not None:   # the mutated original object: side effects rewrote it already
            return cg.load_source(self.source)
        for item in self.items:
            cg.reconstruct(item)
        cg.build(self.build_op(), len(self.items))

    def __repr__(self):
        return f"{type(self).__name__}({self.items!r})"


class TupleVariable(BaseListVariable):
    def __init__(self, items, source=None, tuple_cls=tuple):
        super().__init__(items, source)
        self.tuple_cls = tuple_cls   # a namedtuple class (e.g. ember.return_types.max) keeps its field names

    def python_type(self):
        return self.tuple_cls

    def as_python_constant(self):
        values = [i.as_python_constant() for i in self.items]
        return tuple(values) if self.tuple_cls is tuple else self.tuple_cls(*values)

    def rebuild(self, items):
        return TupleVariable(items)

    def build_op(self):
        return "BUILD_TUPLE"

    def var_getattr(self, tx, name):
        fields = getattr(self.tuple_cls, "_fields", ())
        if name in fields:
            return self.items[fields.index(name)]
        return super().var_getattr(tx, name)

    def reconstruct(self, cg):
        if self.tuple_cls is not tuple and self.source is None:
            cg.load_python_value(self.tuple_cls)
            for item in self.items:
                cg.reconstruct(item)
            cg.call(len(self.items))
            return
        super().reconstruct(cg)


class ListVariable(BaseListVariable):
    is_mutable_object = True

    def python_type(self):
        return list

    def build_op(self):
        return "BUILD_LIST"

    def call_method(self, tx, name, args, kwargs):
        mutations = {"append", "extend", "insert", "pop", "remove", "clear", "reverse", "sort", "__setitem__",
                     "__delitem__", "__iadd__", "__imul__"}
        if name not in mutations:
            if name == "copy":
                return ListVariable(list(self.items))
            return super().call_method(tx, name, args, kwargs)
        tx.output.side_effects.mutation(tx, self)
        if name == "append":
            self.items.append(args[0])
        elif name in ("extend", "__iadd__"):
            self.items.extend(args[0].unpack_var_sequence(tx))
            if name == "__iadd__":
                return self
        elif name == "__imul__":
            self.items *= args[0].as_python_constant()
            return self
        elif name == "insert":
            self.items.insert(args[0].as_python_constant(), args[1])
        elif name == "pop":
            index = args[0].as_python_constant() if args else -1
            return self.items.pop(index)
        elif name == "remove":
            from .builtins import BuiltinVariable
            for i, item in enumerate(self.items):
                if BuiltinVariable.same_value(tx, item, args[0]):
                    del self.items[i]
                    break
            else:
                unimplemented("ValueError: list.remove(x): x not in list")
        elif name == "clear":
            self.items.clear()
        elif name == "reverse":
            self.items.reverse()
        elif name == "sort":
            if kwargs.get("key") is not None:
                unimplemented("list.sort with a key function")
            values = sorted((i.as_python_constant() for i in self.items),
                            reverse=bool(kwargs["reverse"].as_python_constant()) if "reverse" in kwargs else False)
            self.items[:] = [ConstantVariable(v) for v in values]
        elif name == "__setitem__":
            index = args[0].as_python_constant()
            if isinstance(index, slice):
                self.items[index] = args[1].unpack_var_sequence(tx)
            else:
                self.items[index] = args[1]
        elif name == "__delitem__":
            del self.items[args[0].as_python_constant()]
        return ConstantVariable(None)


class SliceVariable(BaseListVariable):
    """``a[1:n]`` where a bound is not a constant tracker yet; ``items`` are start, stop, step."""

    def python_type(self):
        return slice

    def as_python_constant(self):
        return slice(*[i.as_python_constant() for i in self.items])

    def build_op(self):
        return "BUILD_SLICE"


class ListIteratorVariable(IteratorVariable):
    """An iterator over items fixed when it was made: tuples, ranges, strings, module children,
    snapshots that cannot change (a list's own iterator is iterators.LiveListIterator)."""

    def __init__(self, items, index=0):
        super().__init__(None)
        self.items = list(items)
        self.index = index

    def python_type(self):
        return type(iter(()))

    def next_item(self, tx=None):
        if self.index >= len(self.items):
            return None
        item = self.items[self.index]
        self.index += 1
        return item

    def state(self):
        return self.index

    def set_state(self, state):
        self.index = state

    def unpack_var_sequence(self, tx):
        rest = self.items[self.index:]
        self.index = len(self.items)
        return rest

    def reconstruct(self, cg):
        cg.load_python_value(iter)
        for item in self.items[self.index:]:
            cg.reconstruct(item)
        cg.build("BUILD_TUPLE", len(self.items) - self.index)
        cg.call(1)


@tracks(list, tuple)
def _wrap_sequence(tx, value, source, guard):
    """A list, tuple or namedtuple read from the frame (other subclasses: user objects)."""
    if type(value) not in (list, tuple) and not hasattr(type(value), "_fields"):
        return None
    if guard:
        tx.output.guard(source, "TYPE_MATCH", value)
        tx.output.guard(source, "LENGTH_CHECK", value)
    items = [wrap(tx, v, _src.GetItemSource(source, i), guard=guard) for i, v in enumerate(value)]
    if isinstance(value, list):
        return tx.output.side_effects.track(ListVariable(items, source))
    return TupleVariable(items, source, tuple_cls=type(value))


@tracks(list, tuple, made_in_capture=True)
def _new_sequence(tx, value):
    items = [wrap_new(tx, v) for v in value]
    return ListVariable(items) if isinstance(value, list) else TupleVariable(items, tuple_cls=type(value))
