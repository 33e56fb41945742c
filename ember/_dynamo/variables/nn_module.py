"""ember.nn.Module instances under capture: forward is inlined; parameters and buffers become graph inputs.

    NNModuleVariable(model, LocalSource("self")).call_function(tx, [x], {})   # inlines type(model).forward

The module itself is guarded by NN_MODULE (identity and training flag); each parameter or buffer that is
read becomes a placeholder with TENSOR_MATCH on its source (``L['self'].linear.weight``).
"""
from __future__ import annotations

import types

from ..exc import unimplemented
from .base import VariableTracker
from .constant import ConstantVariable


def _src():
    from .. import source
    return source


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
        for klass in type(m).__mro__:
            if name in vars(klass):
                attr = vars(klass)[name]
                if isinstance(attr, property):
                    return UserFunctionVariable(attr.fget).call_function(tx, [self], {})
                if isinstance(attr, staticmethod):
                    return UserFunctionVariable(attr.__func__)
                if isinstance(attr, classmethod):
                    return UserMethodVariable(attr.__func__, PythonValueVariable(type(m)))
                if isinstance(attr, types.FunctionType):
                    return UserMethodVariable(attr, self)
                return wrap(tx, attr, None, guard=False)
        unimplemented(f"AttributeError: {type(m).__name__!r} object has no attribute {name!r}")

    def _children(self):
        src = _src()
        return [(key, NNModuleVariable(child, src.GetItemSource(self.source, i if not self._is_dict() else key)
                                       if self.source is not None else None))
                for i, (key, child) in enumerate(self.module._modules.items())]

    def _is_dict(self):
        import ember
        return isinstance(self.module, ember.nn.ModuleDict)

    def call_function(self, tx, args, kwargs):
        m = self.module
        if m._forward_pre_hooks or m._forward_hooks:
            unimplemented(f"{type(m).__name__} has forward hooks")
        forward = type(m).forward
        from .functions import UserFunctionVariable
        return UserFunctionVariable(forward).call_function(tx, [self, *args], kwargs)

    def unpack_var_sequence(self, tx):
        import ember
        if isinstance(self.module, ember.nn.ModuleDict):
            return [ConstantVariable(k) for k in self.module._modules]
        if isinstance(self.module, (ember.nn.Sequential, ember.nn.ModuleList)):
            return [child for _, child in self._children()]
        unimplemented(f"iteration over {type(self.module).__name__}")

    def call_method(self, tx, name, args, kwargs):
        import ember
        from .lists import ListIteratorVariable, TupleVariable
        from .builder import wrap
        m = self.module
        src = _src()
        if name == "forward":
            return self.var_getattr(tx, "forward").call_function(tx, args, kwargs)
        if name == "__len__":
            return ConstantVariable(len(m))
        if name == "__iter__":
            return ListIteratorVariable(self.unpack_var_sequence(tx))
        if name == "__getitem__":
            key = args[0].as_python_constant()
            if isinstance(m, ember.nn.ModuleDict):
                return NNModuleVariable(m[key], src.GetItemSource(self.source, key) if self.source else None)
            if isinstance(key, slice):
                unimplemented("slicing a module container")
            index = key if key >= 0 else len(m) + key
            return NNModuleVariable(m[index], src.GetItemSource(self.source, index) if self.source else None)
        if name in ("__contains__",) and isinstance(m, ember.nn.ModuleDict):
            return ConstantVariable(args[0].as_python_constant() in m._modules)
        if name in ("keys", "values", "items") and isinstance(m, ember.nn.ModuleDict):
            children = self._children()
            if name == "keys":
                return ListIteratorVariable([ConstantVariable(k) for k, _ in children])
            if name == "values":
                return ListIteratorVariable([c for _, c in children])
            return ListIteratorVariable([TupleVariable([ConstantVariable(k), c]) for k, c in children])
        if name in ("children", "named_children"):
            children = self._children()
            if name == "children":
                return ListIteratorVariable([c for _, c in children])
            return ListIteratorVariable([TupleVariable([ConstantVariable(k), c]) for k, c in children])
        if name in ("parameters", "named_parameters", "buffers", "named_buffers"):
            getter = getattr(m, "named_parameters" if "param" in name else "named_buffers")
            items = []
            for qual, value in getter():
                source = self.source
                for part in qual.split("."):
                    source = src.AttrSource(source, part) if source is not None else None
                vt = wrap(tx, value, source)
                items.append(TupleVariable([ConstantVariable(qual), vt]) if name.startswith("named") else vt)
            return ListIteratorVariable(items)
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def __repr__(self):
        return f"NNModuleVariable({type(self.module).__name__})"
