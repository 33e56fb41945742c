"""The script IR's type system: what ``node.type`` holds for every value of a scripted graph.

    parse_type("List[Tensor]")        # ListType(TensorType())
    str(OptionalType(IntType()))      # 'int?'
    from_annotation(typing.Optional[int], {})  # OptionalType(IntType())

Types print as TorchScript prints them (``Tensor``, ``int``, ``float``, ``bool``, ``str``,
``NoneType``, ``Tensor[]``, ``(Tensor, int)``, ``int?``, ``Dict(str, Tensor)``); ``parse_type``
reads that form back (save/load stores types as these strings). A ``TensorType`` may carry what
the profiling executor observed (dtype, sizes, requires_grad): ``Float(2, 3, requires_grad=0)``.
"""
from __future__ import annotations

import typing
from dataclasses import dataclass

from ember._core.schema import NO_DEFAULT, Argument  # noqa: F401  (one Argument for ops and scripts)
from ember._core.schema import _split_top   # one splitter of type and schema text on top-level commas


class ScriptType:
    """Base of all script types (dataclasses below; compare with ==). ``kind`` names what a value
    of the type is ("tensor", "int", "list", ...): what the graph passes read (ember.fx.passes.purity)."""
    kind = "any"

    def __repr__(self) -> str:
        return str(self)

    def is_subtype_of(self, other: "ScriptType") -> bool:
        """self can be passed where `other` is expected (int -> float is NOT implicit, as in TorchScript).

            IntType().is_subtype_of(OptionalType(IntType()))   # True
        """
        if self == other or isinstance(other, AnyType):
            return True
        if isinstance(other, OptionalType):
            return isinstance(self, NoneType) or self.is_subtype_of(other.elem)
        if isinstance(self, TensorType) and isinstance(other, TensorType):
            return other.dtype is None and other.sizes is None
        if isinstance(other, NumberType):
            return isinstance(self, (IntType, FloatType, BoolType, NumberType))
        if isinstance(self, TupleType) and isinstance(other, TupleType):
            return len(self.elems) == len(other.elems) and all(
                a.is_subtype_of(b) for a, b in zip(self.elems, other.elems))
        if isinstance(self, ListType) and isinstance(other, ListType):
            return self.elem == other.elem or (isinstance(self.elem, TensorType) and isinstance(other.elem, TensorType))
        return False


@dataclass(frozen=True, repr=False)
class TensorType(ScriptType):
    """A tensor; dtype/sizes/requires_grad are None unless a profiling run observed them."""
    kind = "tensor"
    dtype: typing.Any = None
    sizes: tuple | None = None
    requires_grad: bool | None = None

    def __str__(self):
        if self.dtype is None and self.sizes is None:
            return "Tensor"
        parts = [str(s) for s in self.sizes or ()]
        if self.requires_grad is not None:
            parts.append(f"requires_grad={int(self.requires_grad)}")
        return f"{self.dtype.c10_name}({', '.join(parts)})"


def _script_type(name: str, kind: str, fields: str, text, doc: str | None = None) -> type:
    """One kind of script type: a frozen dataclass (compare with ==) whose parameters are `fields`
    ("elem", "key value"; "" for a type with none) and which prints as `text(t)`."""
    namespace = {"kind": kind, "__str__": text, "__doc__": doc, "__module__": __name__, "__qualname__": name,
                 "__annotations__": dict.fromkeys(fields.split(), typing.Any)}
    return dataclass(frozen=True, repr=False)(type(name, (ScriptType,), namespace))


IntType = _script_type("IntType", "int", "", lambda t: "int")
FloatType = _script_type("FloatType", "float", "", lambda t: "float")
BoolType = _script_type("BoolType", "bool", "", lambda t: "bool")
NumberType = _script_type("NumberType", "number", "", lambda t: "Scalar",
                          "int or float, unknown which (``Tensor.item()``, ``Scalar`` arguments).")
StrType = _script_type("StrType", "str", "", lambda t: "str")
NoneType = _script_type("NoneType", "none", "", lambda t: "NoneType")
DeviceType = _script_type("DeviceType", "device", "", lambda t: "Device")
DTypeType = _script_type("DTypeType", "dtype", "", lambda t: "ScalarType",
                         "An ember dtype value (TorchScript stores it as an int ScalarType; we keep the object).")
AnyType = _script_type("AnyType", "any", "", lambda t: "Any")
ListType = _script_type("ListType", "list", "elem", lambda t: f"{t.elem}[]")
TupleType = _script_type("TupleType", "tuple", "elems", lambda t: "(" + ", ".join(str(e) for e in t.elems) + ")")
OptionalType = _script_type("OptionalType", "optional", "elem", lambda t: f"{t.elem}?")
DictType = _script_type("DictType", "dict", "key value", lambda t: f"Dict({t.key}, {t.value})")
ModuleType = _script_type("ModuleType", "module", "qualified_name", lambda t: f"__torch__.{t.qualified_name}",
                          "A scripted module (``self``): ``__torch__.MyCell``. `qualified_name` is its class's name.")


_SIMPLE = {str(t()): t() for t in (TensorType, IntType, FloatType, BoolType, StrType, NoneType, DeviceType,
                                   DTypeType, AnyType, NumberType)} | {"None": NoneType(), "number": NumberType()}


def parse_type(text: str) -> ScriptType:
    """Read a type printed by ``str(type)`` (TorchScript's form) back into a ScriptType.

        parse_type("(Tensor, int[])")   # TupleType((TensorType(), ListType(IntType())))
    """
    text = text.strip()
    if text.endswith("?"):
        return OptionalType(parse_type(text[:-1]))
    if text.endswith("[]"):
        return ListType(parse_type(text[:-2]))
    if text.startswith("(") and text.endswith(")"):
        inner = text[1:-1].strip()
        return TupleType(tuple(parse_type(p) for p in _split_top(inner)) if inner else ())
    if text.startswith("Dict(") and text.endswith(")"):
        key, value = _split_top(text[5:-1])
        return DictType(parse_type(key), parse_type(value))
    if text.startswith("__torch__."):
        return ModuleType(text[len("__torch__."):])
    if text in _SIMPLE:
        return _SIMPLE[text]
    raise ValueError(f"parse_type: unknown type {text!r}")


def from_annotation(annotation, globals_: dict | None = None) -> ScriptType:
    """A Python annotation (object or string, e.g. ``Optional[List[int]]``) as a ScriptType.

    Raises ValueError naming the annotation when it has no script type.
        from_annotation(typing.Tuple[ember.Tensor, int])   # TupleType((TensorType(), IntType()))
    """
    import ember
    if isinstance(annotation, str):
        scope = {"Tensor": ember.Tensor, "torch": ember, "ember": ember, "List": typing.List,
                 "Tuple": typing.Tuple, "Optional": typing.Optional, "Dict": typing.Dict,
                 "Union": typing.Union, "Any": typing.Any, **(globals_ or {})}
        try:
            annotation = eval(annotation, scope)  # noqa: S307  (annotations are the user's own source)
        except Exception as exc:
            raise ValueError(f"unknown type annotation {annotation!r}") from exc
    if annotation is None or annotation is type(None):
        return NoneType()
    simple = {ember.Tensor: TensorType(), int: IntType(), float: FloatType(), bool: BoolType(),
              str: StrType(), typing.Any: AnyType()}
    if annotation in simple:
        return simple[annotation]
    if getattr(ember, "device", None) is annotation:
        return DeviceType()
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (list, typing.List) and len(args) == 1:
        return ListType(from_annotation(args[0], globals_))
    if origin in (tuple, typing.Tuple):
        return TupleType(tuple(from_annotation(a, globals_) for a in args if a is not Ellipsis))
    if origin in (dict, typing.Dict) and len(args) == 2:
        return DictType(from_annotation(args[0], globals_), from_annotation(args[1], globals_))
    if origin is typing.Union:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            return OptionalType(from_annotation(rest[0], globals_))
    raise ValueError(f"unknown type annotation {annotation!r}: script supports Tensor, int, float, bool, str, "
                     f"List[T], Tuple[...], Optional[T] and Dict[str, T]")


def type_of_value(value) -> ScriptType:
    """The script type of a Python value (constants, module attributes, example inputs).

        type_of_value([1, 2])   # ListType(IntType())
    """
    import ember
    for cls, typ in ((ember.Tensor, TensorType), (bool, BoolType), (int, IntType), (float, FloatType),
                     (str, StrType), (type(None), NoneType), (ember.dtype, DTypeType), (ember.device, DeviceType)):
        if isinstance(value, cls):   # bool before int: a bool is an int
            return typ()
    if isinstance(value, tuple):
        return TupleType(tuple(type_of_value(v) for v in value))
    if isinstance(value, list):
        if not value:
            raise ValueError("type_of_value: cannot infer the element type of an empty list; annotate it")
        first = type_of_value(value[0])
        if any(type_of_value(v) != first for v in value[1:]):
            raise ValueError(f"type_of_value: list elements have different types: {value!r}")
        return ListType(first)
    if isinstance(value, dict):
        if not value:
            raise ValueError("type_of_value: cannot infer the types of an empty dict; annotate it")
        k, v = next(iter(value.items()))
        return DictType(type_of_value(k), type_of_value(v))
    raise ValueError(f"type_of_value: {type(value).__name__} has no script type")


def py_type_str(t) -> str:
    """A type as Python spells it (``.code``'s annotations, TorchScript's error messages):
    ``Optional[Tensor]``, ``List[int]``, ``Tuple[Tensor, int]``; every tensor type is ``Tensor``."""
    if isinstance(t, OptionalType):
        return f"Optional[{py_type_str(t.elem)}]"
    if isinstance(t, ListType):
        return f"List[{py_type_str(t.elem)}]"
    if isinstance(t, TupleType):
        return f"Tuple[{', '.join(py_type_str(e) for e in t.elems)}]"
    if isinstance(t, DictType):
        return f"Dict[{py_type_str(t.key)}, {py_type_str(t.value)}]"
    return "Tensor" if t is None or isinstance(t, TensorType) else str(t)


def observed_tensor_type(t) -> TensorType:
    """What a profile node records for a tensor: dtype, sizes and requires_grad."""
    return TensorType(t.dtype, tuple(t.shape), bool(t.requires_grad))


@dataclass(frozen=True, repr=False)
class Signature:
    """A scripted function's schema: ``forward(x: Tensor, n: int = 2) -> Tensor``.

    Its arguments are ``ember._core.schema.Argument`` rows with ScriptTypes; for a module method,
    arguments[0] is ``self`` (ModuleType)."""
    name: str
    arguments: tuple
    return_type: ScriptType

    def __repr__(self):
        args = ", ".join(f"{a.name}: {a.type}" + ("" if a.default is NO_DEFAULT else f" = {a.default!r}")
                         for a in self.arguments)
        return f"{self.name}({args}) -> {self.return_type}"
