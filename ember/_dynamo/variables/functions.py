"""User functions, closures, methods of user classes and functools.partial: all inlined.

    UserFunctionVariable(helper).call_function(tx, [x], {})   # runs helper's bytecode in an inlining translator
"""
from __future__ import annotations

import inspect
import types

from ..exc import unimplemented
from .base import VariableTracker

CO_VARARGS, CO_VARKEYWORDS = inspect.CO_VARARGS, inspect.CO_VARKEYWORDS


def bind_arguments(code, args, kwargs, defaults, kwdefaults, name):
    """Map trackers to the parameter names of ``code`` like a Python call does (defaults are trackers)."""
    from .lists import TupleVariable
    from .dicts import ConstDictVariable
    npos = code.co_argcount
    nkw = code.co_kwonlyargcount
    names = code.co_varnames
    pos_names = names[:npos]
    kwonly_names = names[npos:npos + nkw]
    bound = {}
    extra = list(args[npos:])
    for pname, value in zip(pos_names, args):
        bound[pname] = value
    if extra and not code.co_flags & CO_VARARGS:
        unimplemented(f"TypeError: {name}() takes {npos} positional arguments but {len(args)} were given")
    rest_kwargs = {}
    for key, value in kwargs.items():
        if key in bound:
            unimplemented(f"TypeError: {name}() got multiple values for argument {key!r}")
        if key in pos_names[code.co_posonlyargcount:] or key in kwonly_names:
            bound[key] = value
        elif code.co_flags & CO_VARKEYWORDS:
            rest_kwargs[key] = value
        else:
            unimplemented(f"TypeError: {name}() got an unexpected keyword argument {key!r}")
    first_default = npos - len(defaults)
    for i, pname in enumerate(pos_names):
        if pname not in bound:
            if i >= first_default:
                bound[pname] = defaults[i - first_default]
            else:
                unimplemented(f"TypeError: {name}() missing required argument {pname!r}")
    for pname in kwonly_names:
        if pname not in bound:
            if pname in kwdefaults:
                bound[pname] = kwdefaults[pname]
            else:
                unimplemented(f"TypeError: {name}() missing required keyword-only argument {pname!r}")
    index = npos + nkw
    if code.co_flags & CO_VARARGS:
        bound[names[index]] = TupleVariable(extra)
        index += 1
    if code.co_flags & CO_VARKEYWORDS:
        bound[names[index]] = ConstDictVariable(rest_kwargs)
    return bound


_COMPILING_FLAGS = {("ember.compiler", "is_compiling"), ("ember.compiler", "is_dynamo_compiling"),
                    ("ember._dynamo.eval_frame", "is_compiling")}


def _is_compiling_flag(code) -> bool:
    """`code` is that of ember.compiler.is_compiling & co. (compared by code object: reading a
    tracker's ``fn`` would pin the function object itself)."""
    import sys
    for module, name in _COMPILING_FLAGS:
        fn = getattr(sys.modules.get(module), name, None)
        if fn is not None and fn.__code__ is code:
            return True
    return False


class BaseUserFunctionVariable(VariableTracker):
    def call_function(self, tx, args, kwargs):
        if not args and not kwargs and _is_compiling_flag(self.get_code()):
            from .constant import ConstantVariable
            return ConstantVariable(True)   # what the call answers while this frame is captured
        return tx.inline_user_function(self, list(args), dict(kwargs))

    def python_type(self):
        return types.FunctionType


class UserFunctionVariable(BaseUserFunctionVariable):
    """A real Python function object (a global, an attribute, a closure passed in)."""

    def __init__(self, fn, source=None):
        super().__init__(source)
        self.fn = fn

    def as_python_constant(self):
        return self.fn

    def get_code(self):
        return self.fn.__code__

    def get_globals(self):
        return self.fn.__globals__

    def get_name(self):
        return self.fn.__name__

    def bind(self, tx, args, kwargs):
        from .. import source as src
        from .builder import wrap
        defaults = []
        for i, value in enumerate(self.fn.__defaults__ or ()):
            source = src.GetItemSource(src.AttrSource(self.source, "__defaults__"), i) if self.source else None
            defaults.append(wrap(tx, value, source, guard=source is not None))
        kwdefaults = {}
        for k, value in (self.fn.__kwdefaults__ or {}).items():   # may be changed in place after capture
            source = src.GetItemSource(src.AttrSource(self.source, "__kwdefaults__"), k) if self.source else None
            kwdefaults[k] = wrap(tx, value, source, guard=source is not None)
        return bind_arguments(self.get_code(), args, kwargs, defaults, kwdefaults, self.get_name())

    def closure_cell(self, tx, name):
        """The tracker of free variable ``name``, read from the real cell."""
        from .. import source as src
        from .builder import wrap
        index = self.fn.__code__.co_freevars.index(name)
        cell = self.fn.__closure__[index]
        try:
            value = cell.cell_contents
        except ValueError:
            unimplemented(f"free variable {name!r} referenced before assignment")
        source = None
        if self.source is not None:
            source = src.AttrSource(src.GetItemSource(src.AttrSource(self.source, "__closure__"), index),
                                    "cell_contents")
        return wrap(tx, value, source, guard=source is not None)

    def __repr__(self):
        return f"UserFunctionVariable({self.fn.__qualname__})"


class NestedUserFunctionVariable(BaseUserFunctionVariable):
    """A function made by MAKE_FUNCTION during capture (a closure, a lambda, a 3.11 comprehension)."""

    def __init__(self, code, f_globals, qualname, defaults, kwdefaults, closure):
        super().__init__(None)
        self.code = code
        self.f_globals = f_globals
        self.qualname = qualname
        self.defaults = defaults or []
        self.kwdefaults = kwdefaults or {}
        self.closure = closure or []     # CellVariable / tracker per co_freevars entry

    def get_code(self):
        return self.code

    def get_globals(self):
        return self.f_globals

    def get_name(self):
        return self.code.co_name

    def bind(self, tx, args, kwargs):
        return bind_arguments(self.code, args, kwargs, self.defaults, self.kwdefaults, self.code.co_name)

    def closure_cell(self, tx, name):
        cell = self.closure[self.code.co_freevars.index(name)]
        from .misc import CellVariable
        return cell.load() if isinstance(cell, CellVariable) else cell

    def store_closure_cell(self, name, value):
        cell = self.closure[self.code.co_freevars.index(name)]
        from .misc import CellVariable
        if not isinstance(cell, CellVariable):
            unimplemented(f"assignment to free variable {name!r} of an enclosing function")
        cell.store(value)

    def reconstruct(self, cg):
        unimplemented(f"rebuilding the function {self.qualname} made inside the compiled frame")

    def __repr__(self):
        return f"NestedUserFunctionVariable({self.qualname})"


class UserMethodVariable(VariableTracker):
    """``obj.method`` where method is a plain function of the class: calls inline it with self bound."""

    def __init__(self, fn, obj, source=None):
        super().__init__(source)
        self.fn = fn
        self.obj = obj

    def python_type(self):
        return types.MethodType

    def call_function(self, tx, args, kwargs):
        return UserFunctionVariable(self.fn).call_function(tx, [self.obj, *args], kwargs)

    def reconstruct(self, cg):
        cg.reconstruct(self.obj)
        cg.load_attr(self.fn.__name__)

    def __repr__(self):
        return f"UserMethodVariable({self.fn.__qualname__})"


class PartialVariable(VariableTracker):
    """functools.partial(fn, *args, **kwargs): calls prepend the bound arguments."""

    def __init__(self, func, args, kwargs, source=None):
        super().__init__(source)
        self.func = func
        self.args = list(args)
        self.kwargs = dict(kwargs)

    def python_type(self):
        import functools
        return functools.partial

    def call_function(self, tx, args, kwargs):
        return self.func.call_function(tx, [*self.args, *args], {**self.kwargs, **kwargs})

    def reconstruct(self, cg):
        if self.source is not None:
            return cg.load_source(self.source)
        import functools
        cg.load_python_value(functools.partial)
        cg.reconstruct(self.func)
        for a in self.args:
            cg.reconstruct(a)
        if self.kwargs:
            unimplemented("rebuilding functools.partial with keyword arguments")
        cg.call(1 + len(self.args))
