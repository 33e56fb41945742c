"""Function schemas in PyTorch's syntax, parsed once into dataclasses.

    >>> s = parse_schema("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
    >>> s.name, s.overload_name, [a.name for a in s.arguments]
    ('add', 'Tensor', ['self', 'other', 'alpha'])
    >>> s.arguments[2].kwarg_only, s.arguments[2].default
    (True, 1)

Types kept as their base name ("Tensor", "int", "float", "bool", "Scalar", "ScalarType",
"str", "Generator", "Device", "Layout", "MemoryFormat", "SymInt" -> "int") with flags for
lists (``int[2]``), optionals (``Tensor?``) and alias annotations (``Tensor(a!)``: written).
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

NO_DEFAULT = type("NoDefault", (), {"__repr__": lambda self: "NO_DEFAULT"})()

_SIMPLE_TYPES = {"Tensor", "int", "float", "bool", "Scalar", "ScalarType", "str", "Generator",
                 "Device", "Layout", "MemoryFormat", "Dimname", "Any", "SymBool", "SymFloat"}
_TYPE_RE = re.compile(r"^(?P<base>\w+)(?:\((?P<alias>[a-z]+)(?P<write>!?)\))?(?P<elem_opt>\?)?"
                      r"(?:\[(?P<size>\d*)\])?(?P<opt>\?)?$")


@dataclass(frozen=True)
class Argument:
    """One argument (or named return) of a schema: an operator's, whose `type` is the base type
    name with the flags below, or a scripted function's, whose `type` is a ScriptType
    (``ember.jit.ir.types``) that carries the list/optional structure itself.

        Argument("n", IntType(), 2)     # a scripted function's `n: int = 2`"""
    name: str
    type: object                   # str for operator schemas, a ScriptType for scripted functions
    default: object = NO_DEFAULT
    is_list: bool = False
    list_size: int | None = None
    optional: bool = False         # `T?`: None is accepted
    elem_optional: bool = False    # `Tensor?[]`: list elements may be None
    alias: str | None = None
    is_write: bool = False
    kwarg_only: bool = False
    spelling: str = field(default="", compare=False)       # the type as written ("SymInt[]")
    default_text: str = field(default="", compare=False)   # the default as written ("0.")

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT

    def type_str(self) -> str:
        if self.spelling or not isinstance(self.type, str):
            return self.spelling or str(self.type)
        s = self.type
        if self.alias:
            s += f"({self.alias}{'!' if self.is_write else ''})"
        if self.elem_optional:
            s += "?"
        if self.is_list:
            s += f"[{self.list_size or ''}]"
        if self.optional:
            s += "?"
        return s

    def __str__(self):
        s = self.type_str()
        if self.name:
            s += " " + self.name
        if self.has_default:
            s += "=" + (self.default_text or _default_str(self.default))
        return s


@dataclass(frozen=True)
class FunctionSchema:
    """A parsed operator schema; ``str(schema)`` prints it back in PyTorch's syntax."""
    name: str
    overload_name: str
    arguments: tuple
    returns: tuple
    names: tuple = field(default=())  # argument names in order, for quick binding
    _parenthesised_return: bool = field(default=False, compare=False)

    @property
    def qualified_name(self) -> str:
        return f"{self.name}.{self.overload_name}" if self.overload_name else self.name

    @property
    def is_inplace(self) -> bool:
        return bool(self.arguments) and self.arguments[0].is_write and self.name.endswith("_")

    @property
    def is_out(self) -> bool:
        return any(a.is_write and a.kwarg_only for a in self.arguments)

    @property
    def is_mutable(self) -> bool:
        return any(a.is_write for a in self.arguments)

    @property
    def positional(self) -> tuple:
        return tuple(a for a in self.arguments if not a.kwarg_only)

    @property
    def kwarg_only(self) -> tuple:
        return tuple(a for a in self.arguments if a.kwarg_only)

    def __str__(self):
        args, star = [], False
        for a in self.arguments:
            if a.kwarg_only and not star:
                args.append("*")
                star = True
            args.append(str(a))
        if len(self.returns) == 1 and not self._parenthesised_return:
            ret = str(self.returns[0])
        else:
            ret = "(" + ", ".join(str(r) for r in self.returns) + ")"
        return f"{self.qualified_name}({', '.join(args)}) -> {ret}"


def _default_str(v) -> str:
    if isinstance(v, str):
        return repr(v).replace("'", '"')
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_default_str(x) for x in v) + "]"
    return str(v)


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside brackets or quotes."""
    parts, depth, cur, quote = [], 0, [], None
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _parse_default(text: str):
    if text in ("None",):
        return None
    if text in ("True", "False"):
        return text == "True"
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return [] if not inner else [_parse_default(x) for x in _split_top(inner)]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text  # enum-like names: contiguous_format, long, "mean" without quotes...


def _parse_argument(text: str, kwarg_only: bool, schema_text: str) -> Argument:
    default, dtext = NO_DEFAULT, ""
    if "=" in text:
        text, _, dtext = text.partition("=")
        dtext = dtext.strip()
        default = _parse_default(dtext)
    pieces = text.strip().rsplit(" ", 1)
    type_text, name = (pieces[0], pieces[1]) if len(pieces) == 2 else (pieces[0], "")
    m = _TYPE_RE.match(type_text.replace(" ", ""))
    if not m:
        raise ValueError(f"schema {schema_text!r}: cannot parse type {type_text!r}")
    base = m["base"]
    base = {"SymInt": "int", "number": "Scalar", "SymBool": "bool", "SymFloat": "float"}.get(base, base)
    if base not in _SIMPLE_TYPES:
        raise ValueError(f"schema {schema_text!r}: unknown type {base!r}")
    is_list = m["size"] is not None
    return Argument(name=name, type=base, is_list=is_list,
                    list_size=int(m["size"]) if m["size"] else None,
                    optional=bool(m["opt"]) or (bool(m["elem_opt"]) and not is_list),
                    elem_optional=bool(m["elem_opt"]) and is_list,
                    alias=m["alias"], is_write=bool(m["write"]), default=default, kwarg_only=kwarg_only,
                    spelling=type_text.strip(), default_text=dtext)


_SCHEMA_RE = re.compile(r"^\s*(?P<name>[\w:]+)(?:\.(?P<overload>\w+))?\s*\((?P<args>.*)\)\s*->\s*(?P<ret>.+?)\s*$")


def parse_schema(text: str) -> FunctionSchema:
    """Parse ``name.overload(args) -> returns``; raises ValueError naming what is wrong."""
    m = _SCHEMA_RE.match(text)
    if not m:
        raise ValueError(f"cannot parse schema {text!r}: expected 'name.overload(args) -> returns'")
    name = m["name"].split("::")[-1]
    args, kwarg_only = [], False
    for piece in _split_top(m["args"]):
        if piece == "*":
            kwarg_only = True
            continue
        args.append(_parse_argument(piece, kwarg_only, text))
    ret = m["ret"].strip()
    if ret.startswith("(") and ret.endswith(")"):
        returns = tuple(_parse_argument(p, False, text) for p in _split_top(ret[1:-1]))
    else:
        returns = (_parse_argument(ret, False, text),)
    seen = set()
    for a in args:
        if a.name in seen:
            raise ValueError(f"schema {text!r}: argument {a.name!r} appears twice")
        seen.add(a.name)
    return FunctionSchema(name=name, overload_name=m["overload"] or "", arguments=tuple(args),
                          returns=returns, names=tuple(a.name for a in args),
                          _parenthesised_return=ret.startswith("("))
