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


class Source:
    """Base class; subclasses are frozen dataclasses (hashable, so guards can live in sets)."""

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


@dataclasses.dataclass(frozen=True)
class LocalSource(Source):
    """A local variable (an argument) of the frame: ``L['a']``."""
    local_name: str

    def name(self) -> str:
        return f"L[{self.local_name!r}]"

    def expr(self) -> str:
        return self.local_name

    def reconstruct(self, codegen) -> None:
        codegen.load_fast(self.local_name)


@dataclasses.dataclass(frozen=True)
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


@dataclasses.dataclass(frozen=True)
class ModuleGlobalSource(Source):
    """A global of another module, read by a function inlined from there: ``G_othermod['SCALE']``.
    The module's globals dict is held by the source; guard functions see it as ``___G<id>``."""
    globals_id: int
    global_name: str
    f_globals: dict = dataclasses.field(compare=False, hash=False, repr=False)

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


@dataclasses.dataclass(frozen=True)
class GlobalShadowsBuiltinSource(Source):
    """Whether a module global now shadows builtin `builtin_name` (a bool): guarded False when the
    captured code read the builtin, so ``len = my_len`` in the module later recompiles."""
    globals_id: int
    builtin_name: str
    f_globals: dict = dataclasses.field(compare=False, hash=False, repr=False)

    def env_name(self) -> str:
        return f"___G{self.globals_id}"

    def name(self) -> str:
        return f"({self.builtin_name!r} in G)"

    def expr(self) -> str:
        return f"({self.builtin_name!r} in {self.env_name()})"

    def reconstruct(self, codegen) -> None:
        raise NotImplementedError("GlobalShadowsBuiltinSource.reconstruct")


@dataclasses.dataclass(frozen=True)
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


@dataclasses.dataclass(frozen=True)
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


@dataclasses.dataclass(frozen=True)
class BuiltinImportSource(Source):
    """``builtins.__import__`` (guard functions: ``___builtins.__import__``): import statements were
    resolved at capture without calling it, so replacing it recompiles."""

    def name(self) -> str:
        return "builtins.__import__"

    def expr(self) -> str:
        return "___builtins.__import__"

    def reconstruct(self, codegen) -> None:
        raise NotImplementedError("BuiltinImportSource.reconstruct")


@dataclasses.dataclass(frozen=True)
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


@dataclasses.dataclass(frozen=True)
class AttrSource(Source):
    """An attribute of another source: ``L['self'].training``."""
    base: Source
    member: str

    def name(self) -> str:
        return f"{self.base.name()}.{self.member}"

    def expr(self) -> str:
        return f"{self.base.expr()}.{self.member}"

    def short_name(self) -> str:
        return f"{self.base.short_name()}.{self.member}"

    def root(self) -> Source:
        return self.base.root()

    def reconstruct(self, codegen) -> None:
        self.base.reconstruct(codegen)
        codegen.load_attr(self.member)


@dataclasses.dataclass(frozen=True)
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


@dataclasses.dataclass(frozen=True)
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


@dataclasses.dataclass(frozen=True)
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
