"""Iterators under capture, as lazy as Python's: each ``next`` does the work Python would do then.

    it = iterator_over(tx, list_var)         # a list iterator that sees the list grow while iterating
    it.next_item(tx)                          # the next item's tracker, or None once exhausted
    MapIterator(fn, [it]).next_item(tx)       # calls fn on the next item now, not when map() was made

Iterating a list reads the list as it is at each step (appending in the loop body is seen); a dict,
set or dict view that changes size (or keys) while iterated is Python's RuntimeError, which capture
never approximates: it stops (a graph break, so the frame runs eagerly and raises). map, filter,
zip, enumerate and generator functions advance their sources one item at a time, so side effects of
the mapped function or the generator body interleave with the loop body's exactly as in Python.
``state()``/``set_state()`` let a graph break rewind iterators a failed instruction advanced;
``reconstruct`` rebuilds the real iterator at the same position (never for a suspended generator).
"""
from __future__ import annotations

from ..exc import unimplemented
from .base import VariableTracker
from .constant import ConstantVariable


class IteratorVariable(VariableTracker):
    """Base of iterator trackers: ``next_item(tx)`` returns the next tracker or None (exhausted)."""

    def next_item(self, tx):
        raise NotImplementedError

    def state(self):
        """What a graph break needs to rewind this iterator (None: it cannot be rewound)."""
        return None

    def set_state(self, state) -> None:
        pass

    def sources(self) -> list:
        """Iterators this one draws from (rewound together with it)."""
        return []

    def has_unpack_var_sequence(self, tx) -> bool:
        return True          # (the base class would find out by draining the iterator)

    def unpack_var_sequence(self, tx):
        out = []
        while True:
            item = self.next_item(tx)
            if item is None:
                return out
            out.append(item)

    def call_method(self, tx, name, args, kwargs):
        if name == "__next__":
            item = self.next_item(tx)
            if item is None:
                unimplemented("StopIteration from next()")
            return item
        if name == "__iter__":
            return self
        return super().call_method(tx, name, args, kwargs)


def iterator_over(tx, vt):
    """``iter(vt)``: a live iterator over a list, dict (view) or set tracker, the iterator itself,
    else a snapshot of vt's items (tuples, ranges, strings: they cannot change)."""
    from .dicts import ConstDictVariable, DictViewVariable
    from .lists import ListIteratorVariable, ListVariable
    from .sets import SetVariable
    if isinstance(vt, IteratorVariable):
        return vt
    if isinstance(vt, ListVariable):
        return LiveListIterator(vt)
    if isinstance(vt, ConstDictVariable):
        return DictIterator(vt, "keys")
    if isinstance(vt, DictViewVariable):
        return DictIterator(vt.dict_vt, vt.kind)
    if isinstance(vt, SetVariable):
        return vt.iterator()
    return ListIteratorVariable(vt.unpack_var_sequence(tx))


def iterate(tx, vt):
    """Items of `vt` one at a time (a generator over trackers): short-circuiting consumers (any, all,
    next) then stop pulling where Python stops."""
    it = iterator_over(tx, vt)
    while True:
        item = it.next_item(tx)
        if item is None:
            return
        yield item


# ------------------------------------------------------------------------------------------------
# lists

def _list_iterator_at(lst, index, exhausted):
    """Run time: an iterator over `lst` that will yield lst[index] next (an exhausted one stays so)."""
    if exhausted:
        it = iter([])
        next(it, None)
        return it
    it = iter(lst)
    it.__setstate__(index)
    return it


def _reversed_list_iterator_at(lst, index):
    it = reversed(lst)
    it.__setstate__(index)
    return it


class LiveListIterator(IteratorVariable):
    """``iter(a_list)``: reads the list tracker's items at each step, as CPython's list iterator does
    (an item appended in the loop is reached; once exhausted it stays exhausted)."""

    def __init__(self, list_vt, reverse=False):
        super().__init__(None)
        self.list_vt = list_vt
        self.reverse = reverse
        self.index = len(list_vt.items) - 1 if reverse else 0
        self.exhausted = False

    def python_type(self):
        return type(reversed([])) if self.reverse else type(iter([]))

    def next_item(self, tx):
        items = self.list_vt.items
        if self.exhausted or not 0 <= self.index < len(items):
            self.exhausted = True
            return None
        item = items[self.index]
        self.index += -1 if self.reverse else 1
        return item

    def state(self):
        return self.index, self.exhausted

    def set_state(self, state):
        self.index, self.exhausted = state

    def reconstruct(self, cg):
        if self.reverse:
            cg.load_python_value(_reversed_list_iterator_at, push_null=True)
            cg.reconstruct(self.list_vt)
            cg.load_const(self.index if not self.exhausted else -1)
            cg.call(2, push_null=False)
            return
        cg.load_python_value(_list_iterator_at, push_null=True)
        cg.reconstruct(self.list_vt)
        cg.load_const(self.index)
        cg.load_const(self.exhausted)
        cg.call(3, push_null=False)


# ------------------------------------------------------------------------------------------------
# dicts and sets: a size (or key) change while iterating is Python's RuntimeError

def _dict_iterator_at(d, kind, position):
    it = iter(getattr(d, kind)())
    for _ in range(position):
        next(it)
    return it


class DictIterator(IteratorVariable):
    """``iter(d)``, ``iter(d.keys()/values()/items())``: values are read live; changing the keys
    while iterating stops capture (Python raises RuntimeError at the next step)."""

    def __init__(self, dict_vt, kind):
        super().__init__(None)
        self.dict_vt = dict_vt
        self.kind = kind
        self.keys = tuple(dict_vt.items)
        self.position = 0
        self.exhausted = False

    def python_type(self):
        return type(iter(getattr({}, self.kind)()))

    def next_item(self, tx):
        from .lists import TupleVariable
        if self.exhausted:     # CPython's exhausted iterator has let go of the dict
            return None
        keys = tuple(self.dict_vt.items)
        if len(keys) != len(self.keys):
            unimplemented("RuntimeError: dictionary changed size during iteration")
        if keys != self.keys:
            unimplemented("RuntimeError: dictionary keys changed during iteration")
        if self.position == len(keys):
            self.exhausted = True
            return None
        key = keys[self.position]
        self.position += 1
        value = self.dict_vt.items[key]
        if self.kind == "keys":
            return ConstantVariable(key)
        if self.kind == "values":
            return value
        return TupleVariable([ConstantVariable(key), value])

    def state(self):
        return self.position, self.exhausted

    def set_state(self, state):
        self.position, self.exhausted = state

    def reconstruct(self, cg):
        if self.exhausted:
            unimplemented("rebuilding an exhausted dict iterator")
        cg.load_python_value(_dict_iterator_at, push_null=True)
        cg.reconstruct(self.dict_vt)
        cg.load_const(self.kind)
        cg.load_const(self.position)
        cg.call(3, push_null=False)


class SetIterator(IteratorVariable):
    """``iter(a_set)`` in the real set's order (see SetVariable.ordered); changing the set while
    iterating stops capture (Python raises RuntimeError)."""

    def __init__(self, set_vt, members):
        super().__init__(None)
        self.set_vt = set_vt
        self.members = members          # the set's members in iteration order, when iteration began
        self.keys = set_vt.key_list()
        self.position = 0

    def python_type(self):
        return type(iter(set()))

    def next_item(self, tx):
        keys = self.set_vt.key_list()
        if len(keys) != len(self.keys):
            unimplemented("RuntimeError: Set changed size during iteration")
        if keys != self.keys:
            unimplemented("RuntimeError: set changed during iteration")
        if self.position >= len(self.members):
            return None
        self.position += 1
        return self.members[self.position - 1]

    def state(self):
        return self.position

    def set_state(self, state):
        self.position = state

    def reconstruct(self, cg):
        unimplemented("rebuilding a set iterator after a graph break")


# ------------------------------------------------------------------------------------------------
# lazy builtins: map, filter, zip, enumerate

class _Derived(IteratorVariable):
    """An iterator drawing from others; rebuilt as ``kind(*parts)`` when every part can be."""

    def __init__(self, iterators):
        super().__init__(None)
        self.iterators = list(iterators)
        self.done = False

    def sources(self):
        return list(self.iterators)

    def state(self):
        return self.done

    def set_state(self, state):
        self.done = state


class MapIterator(_Derived):
    def __init__(self, fn, iterators):
        super().__init__(iterators)
        self.fn = fn

    def python_type(self):
        return map

    def next_item(self, tx):
        if self.done:
            return None
        args = []
        for it in self.iterators:
            item = it.next_item(tx)
            if item is None:
                self.done = True
                return None
            args.append(item)
        return self.fn.call_function(tx, args, {})

    def reconstruct(self, cg):
        cg.load_python_value(map, push_null=True)
        cg.reconstruct(self.fn)
        for it in self.iterators:
            cg.reconstruct(it)
        cg.call(1 + len(self.iterators), push_null=False)


class FilterIterator(_Derived):
    def __init__(self, fn, iterator):
        super().__init__([iterator])
        self.fn = fn          # None: keep truthy items

    def python_type(self):
        return filter

    def next_item(self, tx):
        while not self.done:
            item = self.iterators[0].next_item(tx)
            if item is None:
                self.done = True
                return None
            test = item if self.fn is None else self.fn.call_function(tx, [item], {})
            if test.truthy(tx):
                return item
        return None

    def reconstruct(self, cg):
        cg.load_python_value(filter, push_null=True)
        if self.fn is None:
            cg.load_const(None)
        else:
            cg.reconstruct(self.fn)
        cg.reconstruct(self.iterators[0])
        cg.call(2, push_null=False)


class ZipIterator(_Derived):
    def __init__(self, iterators, strict=False):
        super().__init__(iterators)
        self.strict = strict

    def python_type(self):
        return zip

    def next_item(self, tx):
        from .lists import TupleVariable
        if self.done:
            return None
        items = []
        for i, it in enumerate(self.iterators):
            item = it.next_item(tx)
            if item is None:
                self.done = True
                if self.strict and (i > 0 or any(o.next_item(tx) is not None for o in self.iterators[1:])):
                    unimplemented("ValueError: zip() arguments have different lengths")
                return None
            items.append(item)
        return TupleVariable(items)

    def reconstruct(self, cg):
        if self.strict:
            unimplemented("rebuilding zip(strict=True)")
        cg.load_python_value(zip, push_null=True)
        for it in self.iterators:
            cg.reconstruct(it)
        cg.call(len(self.iterators), push_null=False)


class EnumerateIterator(_Derived):
    def __init__(self, iterator, start):
        super().__init__([iterator])
        self.count = start

    def python_type(self):
        return enumerate

    def next_item(self, tx):
        from .lists import TupleVariable
        if self.done:
            return None
        item = self.iterators[0].next_item(tx)
        if item is None:
            self.done = True
            return None
        self.count += 1
        return TupleVariable([ConstantVariable(self.count - 1), item])

    def state(self):
        return self.done, self.count

    def set_state(self, state):
        self.done, self.count = state

    def reconstruct(self, cg):
        cg.load_python_value(enumerate, push_null=True)
        cg.reconstruct(self.iterators[0])
        cg.load_const(self.count)
        cg.call(2, push_null=False)


# ------------------------------------------------------------------------------------------------
# generators

class GeneratorVariable(IteratorVariable):
    """A generator made by calling an inlined generator function: its body runs in its own
    translator, one ``yield`` per ``next``, interleaved with the consumer as in Python."""

    def __init__(self, translator):
        super().__init__(None)
        self.translator = translator
        self.finished = False

    def python_type(self):
        import types
        return types.GeneratorType

    def next_item(self, tx):
        if self.finished:
            return None
        value = self.translator.resume()
        if value is None:
            self.finished = True
        return value

    def reconstruct(self, cg):
        unimplemented("rebuilding a suspended generator after a graph break")


def runs_code_when_advanced(vt) -> bool:
    """True for iterators whose next() runs user code (a generator body, a mapped function)."""
    return any(isinstance(it, (GeneratorVariable, MapIterator, FilterIterator)) for it in all_iterators([vt]))


def all_iterators(values) -> list:
    """Every iterator tracker among `values` and the iterators they draw from."""
    out, todo, seen = [], list(values), set()
    while todo:
        vt = todo.pop()
        if isinstance(vt, IteratorVariable) and id(vt) not in seen:
            seen.add(id(vt))
            out.append(vt)
            todo.extend(vt.sources())
    return out
