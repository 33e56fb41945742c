"""Dicts with constant keys under capture.

    d = ConstDictVariable({"a": x})
    d.call_method(tx, "__getitem__", [ConstantVariable("a")], {})   # -> x
"""
from __future__ import annotations

from ..exc import unimplemented
from .base import VariableTracker
from .constant import ConstantVariable
from .builder import tracks, wrap, wrap_new
from .. import source as _src


class ConstDictVariable(VariableTracker):
    """``items`` maps Python constant keys to trackers; insertion order is kept like dict's."""
    is_mutable_object = True

    def __init__(self, items, source=None, user_cls=dict):
        super().__init__(source)
        self.items = dict(items)
        self.user_cls = user_cls

    def python_type(self):
        return self.user_cls

    def as_python_constant(self):
        return {k: v.as_python_constant() for k, v in self.items.items()}

    def truthy(self, tx):
        return len(self.items) > 0

    def unpack_var_sequence(self, tx):
        return [ConstantVariable(k) for k in self.items]

    @staticmethod
    def _key(vt):
        if vt.is_python_constant():
            return vt.as_python_constant()
        unimplemented(f"dict key {vt} is not a constant")

    def call_method(self, tx, name, args, kwargs):
        from .iterators import DictIterator
        from .lists import TupleVariable
        if name == "__getitem__":
            key = self._key(args[0])
            if key not in self.items:
                unimplemented(f"KeyError: {key!r}")
            return self.items[key]
        if name == "get":
            key = self._key(args[0])
            return self.items.get(key, args[1] if len(args) > 1 else ConstantVariable(None))
        if name == "__contains__":
            return ConstantVariable(self._key(args[0]) in self.items)
        if name == "__len__":
            return ConstantVariable(len(self.items))
        if name in ("keys", "values", "items"):
            return DictViewVariable(self, name)
        if name == "__iter__":
            return DictIterator(self, "keys")
        if name in ("__or__", "__ror__") and isinstance(args[0], ConstDictVariable):
            first, second = (self, args[0]) if name == "__or__" else (args[0], self)
            return ConstDictVariable({**first.items, **second.items}, user_cls=first.user_cls)
        if name == "copy":
            return ConstDictVariable(self.items, user_cls=self.user_cls)
        if name in ("__setitem__", "update", "pop", "setdefault", "clear", "__delitem__", "popitem", "__ior__"):
            if name == "__ior__" and not isinstance(args[0], ConstDictVariable):
                unimplemented("dict |= a non-dict")
            tx.output.side_effects.mutation(tx, self)
            if name == "__ior__":
                self.items.update(args[0].items)
                return self
            if name == "__setitem__":
                self.items[self._key(args[0])] = args[1]
            elif name == "update":
                if args:
                    other = args[0]
                    if isinstance(other, ConstDictVariable):
                        self.items.update(other.items)
                    else:
                        for pair in other.unpack_var_sequence(tx):
                            k, v = pair.unpack_var_sequence(tx)
                            self.items[self._key(k)] = v
                for k, v in kwargs.items():
                    self.items[k] = v
            elif name == "pop":
                key = self._key(args[0])
                if key in self.items:
                    return self.items.pop(key)
                if len(args) > 1:
                    return args[1]
                unimplemented(f"KeyError: {key!r}")
            elif name == "setdefault":
                key = self._key(args[0])
                if key not in self.items:
                    self.items[key] = args[1] if len(args) > 1 else ConstantVariable(None)
                return self.items[key]
            elif name == "clear":
                self.items.clear()
            elif name == "__delitem__":
                del self.items[self._key(args[0])]
            elif name == "popitem":
                k, v = self.items.popitem()
                return TupleVariable([ConstantVariable(k), v])
            return ConstantVariable(None)
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, cg):
        if self.source is not None:
            return cg.load_source(self.source)
        if self.user_cls is not dict:
            unimplemented(f"rebuilding a {self.user_cls.__name__}")
        for k, v in self.items.items():
            cg.load_const(k)
            cg.reconstruct(v)
        cg.build("BUILD_MAP", len(self.items))

    def __repr__(self):
        return f"ConstDictVariable({self.items!r})"


class DictViewVariable(VariableTracker):
    """``d.keys()`` / ``d.values()`` / ``d.items()``: a live view of the dict tracker, as in Python
    (a key added after the view was made shows in its len, membership and iteration)."""

    def __init__(self, dict_vt, kind):
        super().__init__(None)
        self.dict_vt = dict_vt
        self.kind = kind

    def python_type(self):
        return type(getattr({}, self.kind)())

    def _members(self) -> list:
        from .lists import TupleVariable
        items = self.dict_vt.items
        if self.kind == "keys":
            return [ConstantVariable(k) for k in items]
        if self.kind == "values":
            return list(items.values())
        return [TupleVariable([ConstantVariable(k), v]) for k, v in items.items()]

    def unpack_var_sequence(self, tx):
        return self._members()

    def call_method(self, tx, name, args, kwargs):
        if name == "__len__":
            return ConstantVariable(len(self.dict_vt.items))
        if name == "__contains__":
            if self.kind == "keys":
                return self.dict_vt.call_method(tx, "__contains__", args, kwargs)
            from .builtins import BuiltinVariable
            return BuiltinVariable.contains(tx, self._members(), args[0])
        if name == "__iter__":
            from .iterators import DictIterator
            return DictIterator(self.dict_vt, self.kind)
        return super().call_method(tx, name, args, kwargs)

    def reconstruct(self, cg):
        cg.reconstruct(self.dict_vt)
        cg.load_attr(self.kind)
        cg.call(0, push_null=True)


@tracks(dict)
def _wrap_dict(tx, value, source, guard):
    """A dict (or OrderedDict, defaultdict, Counter) read from the frame; other subclasses: user objects."""
    from ...nn.modules._common import is_tracked   # a module's state dicts: plain dicts that bump a version
    if type(value) is not dict and type(value).__module__ != "collections" and not is_tracked(value):
        return None
    if guard:
        tx.output.guard(source, "TYPE_MATCH", value)
        tx.output.guard(source, "DICT_KEYS", value)
    items = {k: wrap(tx, v, _src.GetItemSource(source, k), guard=guard) for k, v in value.items()}
    return tx.output.side_effects.track(ConstDictVariable(items, source, user_cls=type(value)))


@tracks(dict, made_in_capture=True)
def _new_dict(tx, value):
    return ConstDictVariable({k: wrap_new(tx, v) for k, v in value.items()})
