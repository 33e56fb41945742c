"""Other values under capture: bound methods, opaque Python objects (modules, classes), user objects,
the NULL that 3.11+ CALL expects, and closure cells.

    BoundMethodVariable(tensor_var, "sum").call_function(tx, [], {})   # == tensor_var.call_method(tx, "sum", ...)
"""
from __future__ import annotations

import enum
import operator
import types

from ..exc import unimplemented
from .base import ValueVariable, VariableTracker
from .constant import ConstantVariable


class BoundMethodVariable(VariableTracker):
    """``obj.name`` not called yet: calling it is obj.call_method(name)."""

    def __init__(self, obj, name, source=None):
        super().__init__(source)
        self.obj = obj
        self.name = name

    def call_function(self, tx, args, kwargs):
        return self.obj.call_method(tx, self.name, args, kwargs)

    def python_type(self):
        return types.MethodType

    def reconstruct(self, cg):
        cg.reconstruct(self.obj)
        cg.load_attr(self.name)

    def __repr__(self):
        return f"BoundMethodVariable({self.obj}, {self.name})"


class NullVariable(VariableTracker):
    """The NULL below a callable on the 3.11+ value stack."""

    def reconstruct(self, cg):
        cg.push_null()

    def __repr__(self):
        return "NULL"


class PythonValueVariable(ValueVariable):
    """A Python object used as is: a module (ember, math), a class, a builtin we do not model."""

    def var_getattr(self, tx, name):
        from .. import source as src
        from .builder import wrap
        try:
            attr = getattr(self.value, name)
        except AttributeError:
            unimplemented(f"AttributeError: {self.value!r} has no attribute {name!r}")
        # attributes of modules and classes are stable enough: the root object's guard covers them,
        # except values that can change by assignment (tensors, numbers) which get their own guards
        import ember
        guard = not isinstance(attr, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type)) \
            and not callable(attr) or isinstance(attr, ember.nn.Module)
        if isinstance(attr, (types.FunctionType, type)) and not isinstance(self.value, types.ModuleType) or \
                isinstance(attr, types.FunctionType) and not (getattr(attr, "__module__", None) or "").startswith("ember"):
            # user functions and a class's functions/classes can be rebound (mod.helper = other,
            # Cls.method = other): guarded; ember's own library functions stay unguarded
            guard = True
        return wrap(tx, attr, src.AttrSource(self.source, name) if self.source is not None else None, guard=guard)

    def call_function(self, tx, args, kwargs):
        value = self.value
        if isinstance(value, type) and issubclass(value, tuple) and hasattr(value, "_fields"):
            from .lists import TupleVariable
            fields = list(value._fields)
            items = list(args) + [kwargs[f] for f in fields[len(args):] if f in kwargs]
            return TupleVariable(items, tuple_cls=value)
        if isinstance(value, (operator.itemgetter, operator.attrgetter)) and len(args) == 1 and not kwargs:
            return _call_getter(tx, value, args[0])
        if isinstance(value, type):
            from .user_objects import construct_user_object, is_plain_user_class
            if is_plain_user_class(value):
                return construct_user_object(tx, value, args, kwargs)
        if folds_at_capture(value):
            if all(a.is_python_constant() for a in args) and all(v.is_python_constant() for v in kwargs.values()):
                from .builder import wrap_new
                return wrap_new(tx, value(*[a.as_python_constant() for a in args],
                                          **{k: v.as_python_constant() for k, v in kwargs.items()}))
        name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None) or repr(value)
        unimplemented(f"call to {name}")

    def reconstruct(self, cg):
        if self.source is not None:
            return cg.load_source(self.source)
        cg.load_python_value(self.value)

    def __repr__(self):
        return f"PythonValueVariable({self.value!r})"


# C functions whose result depends only on their arguments, so a call with constant arguments may
# be made once at capture time. Anything else written in C (random.random, time.time, os.urandom,
# id, a bound method of a C object...) may answer differently on every call, or act on the world:
# it is called for real on every run (a graph break), never baked in.
_PURE_C_MODULES = frozenset({"math", "cmath"})
_PURE_BUILTINS = frozenset({"format", "ascii", "bin", "hex", "oct", "ord", "chr", "divmod", "pow", "round", "abs"})


def folds_at_capture(fn) -> bool:
    """True for the builtin functions a capture may evaluate once (see _PURE_C_MODULES)."""
    if not isinstance(fn, types.BuiltinFunctionType):
        return False
    owner = fn.__self__     # the module of a module-level C function; the object of a bound C method
    if not isinstance(owner, types.ModuleType):
        return False
    return owner.__name__ in _PURE_C_MODULES or (owner.__name__ == "builtins" and fn.__name__ in _PURE_BUILTINS)


_MISSING = object()


def class_lookup(cls, name):
    """The attribute `name` of `cls` as type lookup finds it (the MRO's class dicts, no descriptor
    called), or _MISSING."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    return _MISSING


def instance_dict_of(obj) -> dict:
    """obj.__dict__ without running the class's code (a slotted object has none: {})."""
    try:
        return object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return {}


def _descriptor_kind(attr) -> str:
    """"data" (its __get__ wins over the instance dict), "other" (a descriptor the instance dict
    shadows), or "" (no descriptor, or not found)."""
    if attr is _MISSING:
        return ""
    kind = type(attr)
    if not hasattr(kind, "__get__"):
        return ""
    return "data" if hasattr(kind, "__set__") or hasattr(kind, "__delete__") else "other"


class UserDefinedObjectVariable(VariableTracker):
    """An instance of a user class: attributes are read from the real object (guarded); methods are inlined."""
    is_mutable_object = True

    def __init__(self, value, source=None):
        super().__init__(source)
        self.value = value

    def python_type(self):
        return type(self.value)

    def var_getattr(self, tx, name):
        """``obj.name`` as object.__getattribute__ finds it (data descriptors, the instance dict,
        other class attributes, then ``__getattr__``), without running any of the class's code on
        the real object: properties and ``__getattr__`` are inlined, other user descriptors and a
        custom ``__getattribute__`` are unsupported (a graph break), so their side effects happen
        on every call, as in eager Python."""
        from .. import source as src
        from .builder import wrap
        from .functions import UserFunctionVariable, UserMethodVariable
        pending = tx.output.side_effects.pending_attr(self, name)
        if pending is not None:
            return pending
        cls = type(self.value)
        if class_lookup(cls, "__getattribute__") is not object.__getattribute__:
            unimplemented(f"{cls.__name__} defines __getattribute__ (reading {name!r} runs its code)")
        class_attr = class_lookup(cls, name)
        kind = _descriptor_kind(class_attr)
        if kind == "data":
            return self._data_descriptor(tx, name, class_attr)
        instance_dict = instance_dict_of(self.value)
        if name in instance_dict:
            source = src.AttrSource(self.source, name) if self.source is not None else None
            return wrap(tx, instance_dict[name], source)
        if class_attr is not _MISSING:
            if self.source is not None:
                # read from the class: guard that the instance still does not shadow it and that the
                # class (or a base) was not patched after capture
                self._guard_class_attr(tx, src.AttrSource(self.source, name), class_attr)
            if isinstance(class_attr, staticmethod):
                return UserFunctionVariable(class_attr.__func__)
            if isinstance(class_attr, classmethod):   # cls.K read in it is guarded through obj.__class__
                cls_source = src.AttrSource(self.source, "__class__") if self.source is not None else None
                return UserMethodVariable(class_attr.__func__, PythonValueVariable(cls, cls_source))
            if isinstance(class_attr, types.FunctionType):
                return UserMethodVariable(class_attr, self)
            if kind == "other":
                unimplemented(f"{cls.__name__}.{name} is a {type(class_attr).__name__} descriptor (its __get__ "
                              f"is not modelled)")
            if self.source is not None:
                # a class-level list/dict/tensor: read through the object, so its contents are guarded
                return wrap(tx, class_attr, src.AttrSource(self.source, name))
            return wrap(tx, class_attr, None, guard=False)
        hook = class_lookup(cls, "__getattr__")
        if hook is not _MISSING:
            return self._call_getattr_hook(tx, name, hook)
        unimplemented(f"AttributeError: {cls.__name__!r} object has no attribute {name!r}")

    def _data_descriptor(self, tx, name, attr):
        from .. import source as src
        from .builder import wrap
        from .functions import UserFunctionVariable
        cls = type(self.value)
        if isinstance(self.value, enum.Enum) and name in ("name", "value") and attr is class_lookup(enum.Enum, name):
            return self.var_getattr(tx, f"_{name}_")    # enum's own property: the member's _name_/_value_
        if type(attr) is property and isinstance(attr.fget, types.FunctionType):
            if self.source is not None:   # the class's property may be replaced after capture
                tx.output.guard(src.AttrSource(src.AttrSource(self.source, "__class__"), name), "ID_MATCH", attr)
            return UserFunctionVariable(attr.fget).call_function(tx, [self], {})
        if type(attr) is types.MemberDescriptorType and class_lookup(cls, "__getattr__") is _MISSING:
            # a __slots__ member: reading it runs no user code (an empty slot raises AttributeError)
            try:
                value = attr.__get__(self.value, cls)
            except AttributeError:
                unimplemented(f"AttributeError: {cls.__name__!r} object has no attribute {name!r}")
            return wrap(tx, value, src.AttrSource(self.source, name) if self.source is not None else None)
        unimplemented(f"{cls.__name__}.{name} is a {type(attr).__name__} data descriptor (its __get__ is not "
                      f"modelled)")

    def _call_getattr_hook(self, tx, name, hook):
        """``obj.name`` answered by the class's ``__getattr__``: inlined, so whatever it does happens
        in the captured program once per call, as in eager Python (never at capture time)."""
        from .. import source as src
        from .functions import UserFunctionVariable
        cls = type(self.value)
        if not isinstance(hook, types.FunctionType):
            unimplemented(f"{cls.__name__}.__getattr__ is not a Python function")
        if self.source is not None:
            # the same lookup must still end in the same __getattr__: nothing named `name` appears on
            # the instance or the class, and __getattr__ itself is not replaced
            cls_source = src.AttrSource(self.source, "__class__")
            tx.output.guard(src.InInstanceDictSource(self.source, name), "CONSTANT_MATCH", False)
            tx.output.guard(src.HasAttrSource(cls_source, name), "CONSTANT_MATCH", False)
            tx.output.guard(src.AttrSource(cls_source, "__getattr__"), "ID_MATCH", hook)
        return UserFunctionVariable(hook).call_function(tx, [self, ConstantVariable(name)], {})

    @staticmethod
    def _guard_class_attr(tx, source, class_attr):
        from .. import source as src
        if isinstance(class_attr, staticmethod):
            tx.output.guard(source, "ID_MATCH", class_attr.__func__)
        elif isinstance(class_attr, (classmethod, types.FunctionType)):   # obj.name is a new bound method
            tx.output.guard(src.AttrSource(source, "__func__"), "ID_MATCH", class_attr.__func__
                            if isinstance(class_attr, classmethod) else class_attr)
        elif type(class_attr) in (int, float, bool, str, type(None)):
            tx.output.guard(source, "CONSTANT_MATCH", class_attr)
        elif not hasattr(type(class_attr), "__get__"):
            tx.output.guard(source, "ID_MATCH", class_attr)

    def call_method(self, tx, name, args, kwargs):
        method = self.var_getattr(tx, name)
        return method.call_function(tx, args, kwargs)

    def call_function(self, tx, args, kwargs):
        call = class_lookup(type(self.value), "__call__")
        if isinstance(call, types.FunctionType):
            from .. import source as src
            from .functions import UserMethodVariable
            if self.source is not None:   # obj(...) looks __call__ up on the class at every call
                tx.output.guard(src.AttrSource(src.AttrSource(self.source, "__class__"), "__call__"), "ID_MATCH", call)
            return UserMethodVariable(call, self).call_function(tx, args, kwargs)
        return super().call_function(tx, args, kwargs)

    def __repr__(self):
        return f"UserDefinedObjectVariable({type(self.value).__name__})"


class CellVariable(VariableTracker):
    """A closure cell made by this frame (LOAD_CLOSURE): reads and writes go to the owner's symbolic locals."""

    def __init__(self, owner, name):
        super().__init__(None)
        self.owner = owner
        self.name = name

    def load(self):
        if self.name not in self.owner.symbolic_locals:
            unimplemented(f"free variable {self.name!r} referenced before assignment")
        return self.owner.symbolic_locals[self.name]

    def store(self, value):
        self.owner.symbolic_locals[self.name] = value


class RealCellVariable(VariableTracker):
    """A real closure cell (the compiled function's own free variable): read through the cell."""

    def __init__(self, cell, source):
        super().__init__(source)
        self.cell = cell


def const(value):
    return ConstantVariable(value)


def _call_getter(tx, getter, obj):
    """Apply an operator.itemgetter/attrgetter to a traced value, e.g. itemgetter(1)(t) -> t[1]."""
    from .builtins import BuiltinVariable
    from .constant import ConstantVariable
    from .lists import TupleVariable
    keys = getter.__reduce__()[1]
    results = []
    for key in keys:
        if isinstance(getter, operator.itemgetter):
            results.append(BuiltinVariable(operator.getitem).call_function(tx, [obj, ConstantVariable(key)], {}))
        else:
            value = obj
            for part in key.split("."):
                value = value.var_getattr(tx, part)
            results.append(value)
    return results[0] if len(keys) == 1 else TupleVariable(results)
