"""User-class instances created during capture, and ``super()``.

    obj = construct_user_object(tx, cls_var, [a, b], {})   # object.__new__ + cls.__init__ inlined
    obj.var_getattr(tx, "weight")                         # the tracker __init__ stored
    SuperVariable(cls, obj).var_getattr(tx, "apply")       # the next class's apply in type(obj).__mro__

A new object's attributes live in its tracker (``items``), never on a real object, so nothing about it is
baked into the compiled code; assignments go through the side-effects undo log so a graph break rolls
them back. If the object outlives the graph (returned, or live at a break) it is rebuilt by
``_new_object(cls, attrs)`` once per emitted code block, so every reference sees the same object.
"""
from __future__ import annotations

import types

from ..exc import unimplemented
from .base import VariableTracker
from .misc import UserDefinedObjectVariable


def _new_object(cls, attrs):
    """Run-time half of reconstruction: a bare instance of ``cls`` carrying ``attrs`` (no __init__ run,
    it already ran under capture)."""
    obj = object.__new__(cls)
    obj.__dict__.update(attrs)
    return obj


def is_plain_user_class(cls) -> bool:
    """Classes whose construction is modelled: plain user (not library) classes with object's __new__/
    __setattr__/__getattribute__, an instance __dict__, no __getattr__ (so attribute reads are fully
    known) and no __del__."""
    import sys
    import ember
    if type(cls) is not type:
        return False
    # library classes (ember's own, the standard library's) keep being called eagerly, as before
    top = (cls.__module__ or "").split(".")[0]
    if top in ("builtins", "ember") or top in sys.stdlib_module_names:
        return False
    if issubclass(cls, (ember.nn.Module, BaseException, ember.Tensor)):
        return False
    if cls.__new__ is not object.__new__ or cls.__setattr__ is not object.__setattr__ or \
            cls.__getattribute__ is not object.__getattribute__ or hasattr(cls, "__getattr__"):
        return False
    if hasattr(cls, "__del__"):   # the blank stand-in made at capture would be finalised: user code
        return False
    if cls.__init__ is not object.__init__ and not isinstance(cls.__init__, types.FunctionType):
        return False
    return all("__slots__" not in vars(k) for k in cls.__mro__[:-1])


def construct_user_object(tx, cls, args, kwargs):
    """``cls(*args, **kwargs)`` under capture: a NewUserObjectVariable with __init__ inlined on it."""
    obj = NewUserObjectVariable(cls)
    # its blank stand-in may show up as a bound method's __self__ (a break inside one of its methods):
    # codegen finds the tracker here and rebuilds the object instead of baking the stand-in
    tx.output.variable_cache[id(obj.value)] = (obj.value, obj)
    init = cls.__init__
    if init is object.__init__:
        if args or kwargs:
            unimplemented(f"TypeError: {cls.__name__}() takes no arguments")
        return obj
    from .functions import UserFunctionVariable
    UserFunctionVariable(init).call_function(tx, [obj, *args], kwargs)
    return obj


class NewUserObjectVariable(UserDefinedObjectVariable):
    """An instance of a plain user class made in the compiled frame; ``items`` holds its attributes."""

    rebuilds_itself = True   # codegen may reconstruct it although it has no source

    def __init__(self, cls):
        super().__init__(object.__new__(cls), None)   # a blank instance: only its type is ever consulted
        self.items: dict = {}

    def var_getattr(self, tx, name):
        if name in self.items:
            return self.items[name]
        if name == "__class__":
            from .misc import PythonValueVariable
            return PythonValueVariable(type(self.value))
        return super().var_getattr(tx, name)

    def store_attr_local(self, tx, name, value):
        """``obj.name = value``: recorded on the tracker (with an undo entry for graph-break rollback)."""
        tx.output.side_effects.mutation(tx, self)
        self.items[name] = value

    def reconstruct(self, cg):
        cached = cg.tempvars.get(id(self))
        if cached == "":
            unimplemented("rebuilding an object that refers to itself")
        if cached:
            return cg.load_fast(cached)
        cg.tempvars[id(self)] = ""
        cg.load_python_value(_new_object, push_null=True)
        cg.load_python_value(type(self.value))
        for name, vt in self.items.items():
            cg.load_const(name)
            cg.reconstruct(vt)
        cg.build("BUILD_MAP", len(self.items))
        cg.call(2, push_null=False)
        name = cg.new_temp("___new_obj")
        cg.dup_top()
        cg.store_fast(name)
        cg.tempvars[id(self)] = name

    def __repr__(self):
        return f"NewUserObjectVariable({type(self.value).__name__})"


class SuperVariable(VariableTracker):
    """``super()`` / ``super(cls, obj)``: attribute reads start after ``cls`` in type(obj).__mro__."""

    def __init__(self, cls, obj):
        super().__init__(None)
        self.cls = cls
        self.obj = obj

    def python_type(self):
        return super

    def var_getattr(self, tx, name):
        from .functions import UserFunctionVariable, UserMethodVariable
        from .misc import PythonValueVariable
        from .builder import wrap
        mro = self.obj.python_type().__mro__
        if self.cls not in mro:
            unimplemented("super(type, obj): obj must be an instance or subtype of type")
        for klass in mro[mro.index(self.cls) + 1:]:
            if name not in vars(klass):
                continue
            attr = vars(klass)[name]
            if isinstance(attr, staticmethod):
                return UserFunctionVariable(attr.__func__)
            if isinstance(attr, classmethod):
                return UserMethodVariable(attr.__func__, PythonValueVariable(self.obj.python_type()))
            if isinstance(attr, property):
                return UserFunctionVariable(attr.fget).call_function(tx, [self.obj], {})
            if isinstance(attr, types.FunctionType):
                return UserMethodVariable(attr, self.obj)
            if klass is object and name == "__init__":
                return _ObjectInit()
            return wrap(tx, attr, None, guard=False)
        unimplemented(f"AttributeError: 'super' object has no attribute {name!r}")

    def call_method(self, tx, name, args, kwargs):
        return self.var_getattr(tx, name).call_function(tx, args, kwargs)

    def __repr__(self):
        return f"SuperVariable({self.cls.__name__}, {self.obj})"


class _ObjectInit(VariableTracker):
    """``super().__init__()`` reaching object.__init__: does nothing (arguments would be a TypeError)."""

    def call_function(self, tx, args, kwargs):
        from .constant import ConstantVariable
        if args or kwargs:
            unimplemented("TypeError: object.__init__() takes exactly one argument")
        return ConstantVariable(None)


def make_super(tx, args):
    """The tracker for ``super(*args)``; zero arguments reads ``__class__`` and the first argument of the
    function being inlined, like the compiler-provided cell does."""
    if len(args) == 2:
        return SuperVariable(args[0].as_python_constant(), args[1])
    if args:
        unimplemented("super() with one argument")
    code = tx.code
    if "__class__" not in code.co_freevars or code.co_argcount == 0:
        unimplemented("RuntimeError: super(): no arguments")
    cls = tx.load_deref("__class__").as_python_constant()
    first = code.co_varnames[0]
    if first not in tx.symbolic_locals:
        unimplemented("super(): the first argument was deleted")
    return SuperVariable(cls, tx.symbolic_locals[first])
