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
class GetItemSource(Source):
    """An item of another source (list index or dict key): ``L['xs'][0]``, ``L['d']['k']``."""
    base: Source
    index: object

    def name(self) -> str:
        return f"{self.base.name()}[{self.index!r}]"

    def expr(self) -> str:
        return f"{self.base.expr()}[{self.index!r}]"

    def short_name(self) -> str:
        return f"{self.base.short_name()}[{self.index!r}]"

    def root(self) -> Source:
        return self.base.root()

    def reconstruct(self, codegen) -> None:
        self.base.reconstruct(codegen)
        codegen.load_const(self.index)
        codegen.subscr()


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
