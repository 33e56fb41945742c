"""Sources: where a value the translator read lives, relative to the frame (interfaces D2).

A source has two faces:
  * ``name()``: the text PyTorch prints in guards and logs -- ``L['a']``, ``G['torch']``,
    ``L['self'].training``, ``L['xs'][0]``;
  * ``reconstruct(codegen)``: bytecode that loads the value again inside the transformed code.
Guards use a third, ``expr(names)``: a Python expression reading the value inside the generated
guard function, where locals are the function's own parameters and globals are ``G[...]``.

    >>> AttrSource(LocalSource("self"), "training").name()
    "L['self'].training"
    >>> GetItemSource(GlobalSource("cfg"), "k").name()
    "G['cfg']['k']"
"""
from __future__ import annotations

import dataclasses


def _record(cls):
    """What ``dataclasses.dataclass(frozen=True)`` gives a source (an __init__ over the annotated
    fields with their class defaults, field-wise __eq__/__hash__/__repr__, assignment refused),
    made without generating and exec-ing code per class: dataclass processing was most of this
    module's import, paid by a process's first ember.compile. Fields named in `_uncompared` take
    no part in equality, hash and repr."""
    names = [n for c in reversed(cls.__mro__) for n in c.__dict__.get("__annotations__", {})]
    defaults = {n: cls.__dict__[n] for n in names if n in cls.__dict__}
    compared = [n for n in names if n not in getattr(cls, "_uncompared", ())]

    def __init__(self, *args, **kwargs):
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__}() takes {len(names)} arguments, got {len(args)}")
        values = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in names or key in values:
                raise TypeError(f"{cls.__name__}() got an unexpected or repeated argument {key!r}")
            values[key] = value
        for n in names:
            if n not in values:
                if n not in defaults:
                    raise TypeError(f"{cls.__name__}() missing argument {n!r}")
                values[n] = defaults[n]
            object.__setattr__(self, n, values[n])

    def fields(self):
        return tuple(getattr(self, n) for n in compared)

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return fields(self) == fields(other)

    def __hash__(self):
        # computed once: a source is immutable, and guard building hashes nested chains
        # (L['self'].layers[0].weight) hundreds of times in a process's first capture
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash(fields(self))
            object.__setattr__(self, "_hash", h)
        return h

    def __repr__(self):
        return f"{cls.__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in compared)})"

    def __setattr__(self, name, value):
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def replace(self, **changes):
        """A copy with some fields changed (dataclasses.replace)."""
        return type(self)(**{n: changes.pop(n) if n in changes else getattr(self, n) for n in names}, **changes)
    for fn in (__init__, __eq__, __hash__, __repr__, __setattr__, __delattr__, replace):
        fn.__qualname__ = f"{cls.__qualname__}.{fn.__name__}"
        if fn.__name__ not in cls.__dict__:        # a method the class writes itself stays
            setattr(cls, fn.__name__, fn)
    return cls


class Source:
    """Base class; subclasses are frozen records (`_record`: hashable, so guards can live in sets)."""

    def name(self) -> str:
        raise NotImplementedError(f"{type(self).__name__}.name")

    def expr(self) -> str:
        """A Python expression for the value inside a generated guard function (see guards.py)."""
        raise NotImplementedError(f"{type(self).__name__}.expr")

    def short_name(self) -> str:
        """The name PyTorch 2.13 uses in recompile reasons: locals bare (``a``, ``m.training``)."""
        return self.expr()

    def reconstruct(self, codegen) -> None:
        """Emit bytecode that pushes the value (``codegen`` is a codegen.PyCodegen)."""
        raise NotImplementedError(f"{type(self).__name__}.reconstruct")

    def root(self) -> "Source":
        return self

    def is_local(self) -> bool:
        return isinstance(self.root(), LocalSource)

    def __str__(self) -> str:
        return self.name()


@_record
class LocalSource(Source):
    """A local variable (an argument) of the frame: ``L['a']``."""
    local_name: str

    def name(self) -> str:
        return f"L[{self.local_name!r}]"

    def expr(self) -> str:
        return self.local_name

    def reconstruct(self, codegen) -> None:
        codegen.load_fast(self.local_name)


@_record
class GlobalSource(Source):
    """A global of the frame's module: ``G['torch']``."""
    global_name: str

    def name(self) -> str:
        return f"G[{self.global_name!r}]"

    def expr(self) -> str:
        return f"G[{self.global_name!r}]"

    def short_name(self) -> str:
        return self.name()

    def reconstruct(self, codegen) -> None:
        codegen.load_global(self.global_name)


@_record
class ModuleGlobalSource(Source):
    """A global of another module, read by a function inlined from there: ``G_othermod['SCALE']``.
    The module's globals dict is held by the source; guard functions see it as ``___G<id>``."""
    globals_id: int
    global_name: str
    f_globals: dict
    _uncompared = ("f_globals",)

    def env_name(self) -> str:
        return f"___G{self.globals_id}"

    def name(self) -> str:
        return f"G_{self.f_globals.get('__name__', '?')}[{self.global_name!r}]"

    def expr(self) -> str:
        return f"{self.env_name()}[{self.global_name!r}]"

    def short_name(self) -> str:
        return self.name()

    def reconstruct(self, codegen) -> None:
        codegen.load_python_value(self.f_globals)
        codegen.load_const(self.global_name)
        codegen.subscr()


@_record
class GlobalShadowsBuiltinSource(Source):
    """Whether a module global now shadows builtin `builtin_name` (a bool): guarded False when the
    captured code read the builtin, so ``len = my_len`` in the module later recompiles."""
    globals_id: int
    builtin_name: str
    f_globals: dict
    _uncompared = ("f_globals",)

    def env_name(self) -> str:
        return f"___G{self.globals_id}"

    def name(self) -> str:
        return f"({self.builtin_name!r} in G)"

    def expr(self) -> str:
        return f"({self.builtin_name!r} in {self.env_name()})"

    def reconstruct(self, codegen) -> None:
        raise NotImplementedError("GlobalShadowsBuiltinSource.reconstruct")


@_record
class GlobalStateSource(Source):
    """Part of torch's GLOBAL_STATE guard that graphs fold in: ``GlobalStateSource("default_dtype")``
    reads ember.get_default_dtype(), ``GlobalStateSource("grad_enabled")`` ember.is_grad_enabled()
    (guard functions call them as ``___default_dtype()`` / ``___grad_enabled()``)."""
    what: str

    def name(self) -> str:
        return f"___{self.what}()"

    def expr(self) -> str:
        if self.what == "default_dtype":
            return "___dtype_box.value"   # what get_default_dtype() returns, without the call
        return f"___{self.what}()"

    def reconstruct(self, codegen) -> None:
        raise NotImplementedError("GlobalStateSource.reconstruct")


@_record
class ImportedModuleSource(Source):
    """An already-imported module read from ``sys.modules`` by an import statement in captured code
    (guard functions see sys.modules as ``___sys_modules``): ``sys.modules['ember.nn']``."""
    module_name: str

    def name(self) -> str:
        return f"sys.modules[{self.module_name!r}]"

    def expr(self) -> str:
        return f"___sys_modules[{self.module_name!r}]"

    def short_name(self) -> str:
        return self.name()

    def reconstruct(self, codegen) -> None:
        import sys
        codegen.load_python_value(sys.modules)
        codegen.load_const(self.module_name)
        codegen.subscr()


@_record
class BuiltinImportSource(Source):
    """``builtins.__import__`` (guard functions: ``___builtins.__import__``): import statements were
    resolved at capture without calling it, so replacing it recompiles."""

    def name(self) -> str:
        return "builtins.__import__"

    def expr(self) -> str:
        return "___builtins.__import__"

    def reconstruct(self, codegen) -> None:
        raise NotImplementedError("BuiltinImportSource.reconstruct")


@_record
class ClosureCellSource(Source):
    """A free variable of the function, read through its closure cell: printed ``L['k']`` like torch."""
    cell_name: str
    index: int

    def name(self) -> str:
        return f"L[{self.cell_name!r}]"

    def expr(self) -> str:
        # `___closure` is the calling function's __closure__ (a keyword of the guard function)
        return f"___closure[{self.index}].cell_contents"

    def short_name(self) -> str:
        return self.cell_name

    def reconstruct(self, codegen) -> None:
        codegen.load_deref(self.cell_name)


def attr_expr(base: str, member: str) -> str:
    """`base.member`; getattr where the member is no identifier (ParameterList items: "0", "1", ...)."""
    return f"{base}.{member}" if member.isidentifier() else f"getattr({base}, {member!r})"


@_record
class AttrSource(Source):
    """An attribute of another source: ``L['self'].training``."""
    base: Source
    member: str

    def name(self) -> str:
        return f"{self.base.name()}.{self.member}"

    def expr(self) -> str:
        return attr_expr(self.base.expr(), self.member)

    def short_name(self) -> str:
        return f"{self.base.short_name()}.{self.member}"

    def root(self) -> Source:
        return self.base.root()

    def reconstruct(self, codegen) -> None:
        self.base.reconstruct(codegen)
        codegen.load_attr(self.member)


@_record
class HasAttrSource(Source):
    """``hasattr(base, member)`` (a bool): guarded where capture found the attribute missing."""
    base: Source
    member: str

    def name(self) -> str:
        return f"hasattr({self.base.name()}, {self.member!r})"

    def expr(self) -> str:
        return f"hasattr({self.base.expr()}, {self.member!r})"

    def short_name(self) -> str:
        return f"hasattr({self.base.short_name()}, {self.member!r})"

    def root(self) -> Source:
        return self.base.root()

    def reconstruct(self, codegen) -> None:
        raise NotImplementedError("HasAttrSource.reconstruct")


@_record
class InInstanceDictSource(Source):
    """``member in vars(base)`` (a bool): guarded where capture called a class's ``__getattr__``
    for `member` (hasattr would call that __getattr__ again, running user code in the guard)."""
    base: Source
    member: str

    def name(self) -> str:
        return f"{self.member!r} in vars({self.base.name()})"

    def expr(self) -> str:
        return f"({self.member!r} in ___object_getattribute({self.base.expr()}, '__dict__'))"

    def short_name(self) -> str:
        return f"{self.member!r} in vars({self.base.short_name()})"

    def root(self) -> Source:
        return self.base.root()

    def reconstruct(self, codegen) -> None:
        raise NotImplementedError("InInstanceDictSource.reconstruct")


@_record
class GetItemSource(Source):
    """An item of another source (list index or dict key): ``L['xs'][0]``, ``L['d']['k']``."""
    base: Source
    index: object

    def name(self) -> str:
        return f"{self.base.name()}[{self.index!r}]"

    def expr(self) -> str:
        return f"{self.base.expr()}[{key_expr(self.index)}]"

    def short_name(self) -> str:
        return f"{self.base.short_name()}[{self.index!r}]"

    def root(self) -> Source:
        return self.base.root()

    def reconstruct(self, codegen) -> None:
        self.base.reconstruct(codegen)
        if _is_literal_key(self.index):
            codegen.load_const(self.index)
        else:
            codegen.load_python_value(self.index)
        codegen.subscr()


# Keys a guard expression cannot spell as a literal (a class keying a dispatch table, a float nan):
# guards read them from this table (the guard function's ``___keys``) by id.
KEYS: dict = {}


def _is_literal_key(key) -> bool:
    if type(key) in (int, str, bool, bytes) or key is None:
        return True
    return type(key) is tuple and all(_is_literal_key(k) for k in key)


def key_expr(key) -> str:
    """A Python expression for dict key `key` inside a guard function."""
    if _is_literal_key(key):
        return repr(key)
    KEYS[id(key)] = key
    return f"___keys[{id(key)}]"


def source_sort_key(source: Source | None, argnames: tuple = ()) -> tuple:
    """Order for printing guards: locals in argument order, then globals, then the rest, by name."""
    if source is None:
        return (3, 0, "")
    root = source.root()
    if isinstance(root, (LocalSource, ClosureCellSource)):
        local = root.local_name if isinstance(root, LocalSource) else root.cell_name
        position = argnames.index(local) if local in argnames else len(argnames)
        return (0, position, source.name())
    if isinstance(root, GlobalSource):
        return (1, 0, source.name())
    return (2, 0, source.name())
