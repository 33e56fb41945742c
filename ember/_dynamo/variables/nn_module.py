"""ember.nn.Module instances under capture: forward is inlined; parameters and buffers become graph inputs.

    NNModuleVariable(model, LocalSource("self")).call_function(tx, [x], {})   # inlines type(model).forward

The module itself is guarded by NN_MODULE (identity and training flag); each parameter or buffer that is
read becomes a placeholder with TENSOR_MATCH on its source (``L['self'].linear.weight``).
"""
from __future__ import annotations

import inspect
import types

from ..exc import unimplemented
from .base import VariableTracker
from .constant import ConstantVariable
from .builder import tracks
from ...nn import Module


_TREE_METHODS = ("parameters", "named_parameters", "buffers", "named_buffers", "children", "named_children",
                 "modules", "named_modules")


def _src():
    from .. import source
    return source


def _module_base():
    import ember
    return ember.nn.Module


class NNModuleVariable(VariableTracker):
    def __init__(self, module, source=None):
        super().__init__(source)
        self.module = module

    def python_type(self):
        return type(self.module)

    def as_python_constant(self):
        return self.module

    def _child_source(self, name):
        return _src().AttrSource(self.source, name) if self.source is not None else None

    def var_getattr(self, tx, name):
        from .builder import wrap
        from .functions import UserFunctionVariable, UserMethodVariable
        from .misc import PythonValueVariable
        pending = tx.output.side_effects.pending_attr(self, name)
        if pending is not None:
            return pending
        m = self.module
        d = m.__dict__
        if type(m).__getattribute__ is not _module_base().__getattribute__:
            unimplemented(f"{type(m).__name__} defines __getattribute__ (reading {name!r} runs its code)")
        if name == "training":
            return ConstantVariable(m.training)
        for table in ("_parameters", "_buffers", "_modules"):
            if name in d.get(table, {}):
                value = d[table][name]
                if value is None:
                    return ConstantVariable(None)
                return wrap(tx, value, self._child_source(name))
        if name in d:
            return wrap(tx, d[name], self._child_source(name))
        if name in _TREE_METHODS and getattr(type(m), name, None) is getattr(_module_base(), name):
            from .misc import BoundMethodVariable   # the walk is modelled in _iterate_tree, not inlined
            return BoundMethodVariable(self, name)
        for klass in type(m).__mro__:
            if name in vars(klass):
                attr = vars(klass)[name]
                if self.source is not None and klass is not _module_base():
                    # a user class's attribute or method: pinned like a plain object's (patching the
                    # class, or shadowing on the instance, recompiles)
                    from .misc import UserDefinedObjectVariable
                    member = _src().AttrSource(self.source, name)
                    if type(attr) is property:
                        member = _src().AttrSource(_src().AttrSource(self.source, "__class__"), name)
                        tx.output.guard(member, "ID_MATCH", attr)
                    else:
                        UserDefinedObjectVariable._guard_class_attr(tx, member, attr)
                if type(attr) is property and isinstance(attr.fget, types.FunctionType):
                    return UserFunctionVariable(attr.fget).call_function(tx, [self], {})
                if isinstance(attr, staticmethod):
                    return UserFunctionVariable(attr.__func__)
                if isinstance(attr, classmethod):
                    return UserMethodVariable(attr.__func__, PythonValueVariable(type(m)))
                if isinstance(attr, types.FunctionType):
                    return UserMethodVariable(attr, self)
                if hasattr(type(attr), "__get__"):   # another descriptor: its __get__ is user code
                    unimplemented(f"{type(m).__name__}.{name} is a {type(attr).__name__} descriptor (its "
                                  f"__get__ is not modelled)")
                if self.source is not None and klass is not _module_base():
                    return wrap(tx, attr, _src().AttrSource(self.source, name))   # contents guarded too
                return wrap(tx, attr, None, guard=False)
        if type(m).__getattr__ is not _module_base().__getattr__:   # the class's own fallback would answer
            unimplemented(f"{type(m).__name__} defines __getattr__ (reading {name!r} runs its code)")
        unimplemented(f"AttributeError: {type(m).__name__!r} object has no attribute {name!r}")

    def _pin_children(self, tx):
        """Iteration and len() see the children now: pin their names (appending one recompiles)."""
        if self.source is not None:
            tx.output.guard(_src().AttrSource(self.source, "_modules"), "DICT_KEYS", self.module._modules)

    def _children(self, tx):
        src = _src()
        return [(key, _child(tx, child, src.GetItemSource(self.source, i if not self._is_dict() else key)
                             if self.source is not None else None))
                for i, (key, child) in enumerate(self.module._modules.items())]

    def _is_dict(self):
        import ember
        return isinstance(self.module, ember.nn.ModuleDict)

    def call_function(self, tx, args, kwargs):
        from .functions import UserFunctionVariable
        m = self.module
        cls = type(m)
        # what m(...) runs is looked up on the class at every call: pinned, so replacing the class's
        # __call__ or forward after capture recompiles
        self._guard_class_function(tx, "__call__", cls.__call__)
        if cls.__call__ is not _module_base().__call__:    # the class's own __call__ is what Python runs
            if not isinstance(cls.__call__, types.FunctionType):
                unimplemented(f"{cls.__name__}.__call__ is not a Python function")
            return UserFunctionVariable(cls.__call__).call_function(tx, [self, *args], kwargs)
        if m._forward_pre_hooks or m._forward_hooks:
            unimplemented(f"{cls.__name__} has forward hooks")
        if "forward" in m.__dict__:   # an instance-level forward replaces the class's (NN_MODULE pins this)
            return self.var_getattr(tx, "forward").call_function(tx, args, kwargs)
        forward = cls.forward
        self._guard_class_function(tx, "forward", forward)
        if not isinstance(forward, types.FunctionType):
            unimplemented(f"{cls.__name__}.forward is not a Python function")
        return UserFunctionVariable(forward).call_function(tx, [self, *args], kwargs)

    def _guard_class_function(self, tx, name, fn):
        if self.source is not None:
            tx.output.guard(_src().AttrSource(_src().AttrSource(self.source, "__class__"), name), "ID_MATCH", fn)

    def unpack_var_sequence(self, tx):
        import ember
        self._pin_children(tx)
        if isinstance(self.module, ember.nn.ModuleDict):
            return [ConstantVariable(k) for k in self.module._modules]
        if isinstance(self.module, (ember.nn.Sequential, ember.nn.ModuleList)):
            return [child for _, child in self._children(tx)]
        unimplemented(f"iteration over {type(self.module).__name__}")

    def call_method(self, tx, name, args, kwargs):
        import ember
        from .lists import ListIteratorVariable, TupleVariable
        m = self.module
        src = _src()
        if name == "forward":
            return self.var_getattr(tx, "forward").call_function(tx, args, kwargs)
        if name == "__len__":
            self._pin_children(tx)
            return ConstantVariable(len(m))
        if name == "__iter__":
            return ListIteratorVariable(self.unpack_var_sequence(tx))
        if name == "__getitem__" and isinstance(m, (ember.nn.ModuleList, ember.nn.Sequential, ember.nn.ModuleDict)):
            key = args[0].as_python_constant()
            if isinstance(m, ember.nn.ModuleDict):
                return _child(tx, m[key], src.GetItemSource(self.source, key) if self.source else None)
            if isinstance(key, slice):
                unimplemented("slicing a module container")
            if key < 0:
                self._pin_children(tx)   # m[-1] depends on the length
            index = key if key >= 0 else len(m) + key
            return _child(tx, m[index], src.GetItemSource(self.source, index) if self.source else None)
        if name in ("__contains__",) and isinstance(m, ember.nn.ModuleDict):
            self._pin_children(tx)
            return ConstantVariable(args[0].as_python_constant() in m._modules)
        if name in ("keys", "values", "items") and isinstance(m, ember.nn.ModuleDict):
            self._pin_children(tx)
            children = self._children(tx)
            if name == "keys":
                return ListIteratorVariable([ConstantVariable(k) for k, _ in children])
            if name == "values":
                return ListIteratorVariable([c for _, c in children])
            return ListIteratorVariable([TupleVariable([ConstantVariable(k), c]) for k, c in children])
        if name in ("children", "named_children"):
            self._pin_children(tx)
            children = self._children(tx)
            if name == "children":
                return ListIteratorVariable([c for _, c in children])
            return ListIteratorVariable([TupleVariable([ConstantVariable(k), c]) for k, c in children])
        if name in _TREE_METHODS:
            return self._iterate_tree(tx, name, args, kwargs)
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def _member_source(self, qual, table):
        """``L['m']._modules['fc1']._parameters['weight']`` for qual ``fc1.weight`` (table _parameters):
        item reads, so children named ``0`` (Sequential) make valid guard expressions too."""
        src = _src()
        source = self.source
        parts = qual.split(".") if qual else []
        for i, part in enumerate(parts):
            if source is None:
                return None
            owner = table if i == len(parts) - 1 else "_modules"
            source = src.GetItemSource(src.AttrSource(source, owner), part)
        return source

    def _iterate_tree(self, tx, name, args, kwargs):
        """parameters()/named_parameters()/buffers()/named_buffers()/children()/named_children()/
        modules()/named_modules(): the real method runs on the real module now (its arguments must be
        constants); the walk's shape is pinned by DICT_KEYS guards on the ``_parameters``/``_buffers``/
        ``_modules`` dicts of every module it visited, so adding or removing a member recompiles, and
        each yielded value is read again from its own source (tensors become graph inputs)."""
        from .builder import wrap
        from .lists import ListIteratorVariable, TupleVariable
        if not all(a.is_python_constant() for a in [*args, *kwargs.values()]):
            unimplemented(f"Module.{name} with non-constant arguments")
        const_args = [a.as_python_constant() for a in args]
        const_kwargs = {k: v.as_python_constant() for k, v in kwargs.items()}
        m = self.module
        base = name[len("named_"):] if name.startswith("named_") else name
        named = "named_" + base
        try:
            bound = inspect.signature(getattr(m, name)).bind(*const_args, **const_kwargs).arguments
        except TypeError as e:
            unimplemented(f"TypeError: Module.{name}: {e}")
        pairs = list(getattr(m, named)(**bound))
        table = {"parameters": "_parameters", "buffers": "_buffers"}.get(base, "_modules")
        prefix = bound.get("prefix", "")
        if self.source is not None:   # pin the structure the walk saw
            src = _src()
            recurse = bound.get("recurse", True)
            visited = m.named_modules() if base == "modules" or (base != "children" and recurse) else [("", m)]
            for qual, mod in visited:
                msrc = self._member_source(qual, "_modules")
                for t in ("_parameters", "_buffers", "_modules"):
                    tx.output.guard(src.AttrSource(msrc, t), "DICT_KEYS", getattr(mod, t))
                # every member, yielded or skipped as a duplicate, gets its own guard (TENSOR_MATCH adds
                # aliasing checks, NN_MODULE identity), so untying a shared one recompiles
                for key, value in getattr(mod, table).items():
                    if value is not None:
                        wrap(tx, value, src.GetItemSource(src.AttrSource(msrc, table), key))
        items = []
        for qual, value in pairs:
            rel = qual[len(prefix) + 1:] if prefix and qual.startswith(prefix + ".") else \
                ("" if qual == prefix else qual)
            source = self._member_source(rel, table)
            vt = wrap(tx, value, source) if source is not None else wrap(tx, value, None, guard=False)
            items.append(TupleVariable([ConstantVariable(qual), vt]) if name.startswith("named_") else vt)
        return ListIteratorVariable(items)

    def __repr__(self):
        return f"NNModuleVariable({type(self.module).__name__})"


def _child(tx, module, source):
    """A container's child: pinned like any module read from the frame (identity, training flag,
    hooks), so swapping it or flipping its training flag recompiles."""
    if source is not None:
        tx.output.guard(source, "NN_MODULE", module)
    return NNModuleVariable(module, source)


@tracks(Module)
def _wrap_module(tx, value, source, guard):
    if guard:
        tx.output.guard(source, "NN_MODULE", value)
    return NNModuleVariable(value, source)
