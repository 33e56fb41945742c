"""What script knows about the callables and methods it can call: resolution and type rules.

The frontend asks three questions here:
- ``classify(obj)``: what a Python object found by name is (an ember function, a math/operator/
  builtins function, a module, a constant, ...).
- ``*_type(...)``: the ScriptType of a call's result from the argument types (the rule table:
  Tensor by default for ember functions and Tensor methods; the exceptions are listed below).
- ``binary_type(op, a, b)``: the result type of an operator, None when the operands are invalid
  (``Tensor + str``), which the frontend reports as a compile error.

    binary_type(operator.truediv, IntType(), IntType())     # FloatType()
    tensor_method_type("size", [TensorType()], 0)           # ListType(IntType())
"""
from __future__ import annotations

import builtins
import functools
import inspect
import math
import operator
import types

from ember.jit.ir.types import (AnyType, BoolType, DeviceType, DictType, DTypeType, FloatType, IntType,
                                ListType, NoneType, NumberType, OptionalType, ScriptType, StrType,
                                TensorType, TupleType, _script_type, from_annotation)
from ember.jit.ir.types import py_type_str  # noqa: F401  (the frontend reads it as rules.py_type_str)

BottomType = _script_type("BottomType", "any", "", lambda t: "Uninitialized",
                          "The type of ``prim::Uninitialized`` before the frontend knows what it stands for (a "
                          "return value not yet assigned on this path); it unifies with anything and never "
                          "reaches a finished graph.")

T_ = TensorType()
INT, FLOAT, BOOL, STR, NONE, NUM = IntType(), FloatType(), BoolType(), StrType(), NoneType(), NumberType()
TT = TupleType((T_, T_))
LT = ListType(T_)


def unify(a: ScriptType, b: ScriptType) -> ScriptType | None:
    """The type a variable has after two paths gave it types `a` and `b` (None: incompatible).

        unify(NoneType(), TensorType())   # OptionalType(TensorType())
    """
    if isinstance(a, BottomType):
        return b
    if isinstance(b, BottomType) or a == b:
        return a
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return T_
    if isinstance(a, NoneType) or isinstance(b, NoneType):
        other = b if isinstance(a, NoneType) else a
        return other if isinstance(other, OptionalType) else OptionalType(other)
    if isinstance(a, OptionalType) or isinstance(b, OptionalType):
        opt, other = (a, b) if isinstance(a, OptionalType) else (b, a)
        inner = unify(opt.elem, other.elem if isinstance(other, OptionalType) else other)
        return None if inner is None else OptionalType(inner)
    if isinstance(a, NumberType) and _is_num(b) or isinstance(b, NumberType) and _is_num(a):
        return NUM
    if isinstance(a, ListType) and isinstance(b, ListType):
        inner = unify(a.elem, b.elem)
        return None if inner is None or isinstance(inner, OptionalType) != isinstance(a.elem, OptionalType) \
            else ListType(inner)
    if isinstance(a, TupleType) and isinstance(b, TupleType) and len(a.elems) == len(b.elems):
        elems = [unify(x, y) for x, y in zip(a.elems, b.elems)]
        return None if any(e is None for e in elems) else TupleType(tuple(elems))
    return None


# --------------------------------------------------------------------------------------------
# operators
# --------------------------------------------------------------------------------------------
ARITH = {operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
         operator.pow}
COMPARE = {operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne}
BITWISE = {operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift}
_NUMERIC = (IntType, FloatType, BoolType, NumberType)


def _is_num(t) -> bool:
    return isinstance(t, _NUMERIC)


def binary_type(op, a: ScriptType, b: ScriptType) -> ScriptType | None:
    """Result type of ``op(a, b)`` for an operator-module function (None: not valid in script)."""
    if isinstance(a, TensorType) or isinstance(b, TensorType):
        other = b if isinstance(a, TensorType) else a
        if op is operator.matmul:
            return T_ if isinstance(other, TensorType) else None
        if isinstance(other, TensorType) or _is_num(other):
            return T_
        return None
    if op is operator.matmul:
        return None
    if _is_num(a) and _is_num(b):
        if op in COMPARE:
            return BOOL
        if op is operator.truediv:
            return FLOAT
        if op in BITWISE:
            if isinstance(a, BoolType) and isinstance(b, BoolType):
                return BOOL
            return INT if isinstance(a, (IntType, BoolType)) and isinstance(b, (IntType, BoolType)) else None
        if isinstance(a, NumberType) or isinstance(b, NumberType):
            return NUM
        if isinstance(a, FloatType) or isinstance(b, FloatType):
            return FLOAT
        return INT
    if op in (operator.eq, operator.ne):
        return BOOL
    if isinstance(a, StrType) and isinstance(b, StrType):
        return STR if op is operator.add else (BOOL if op in COMPARE else None)
    if isinstance(a, (StrType, ListType)) and isinstance(b, IntType) and op is operator.mul:
        return a
    if isinstance(a, ListType) and isinstance(b, ListType) and op is operator.add:
        return unify(a, b)
    if isinstance(a, TupleType) and isinstance(b, TupleType) and op is operator.add:
        return TupleType(a.elems + b.elems)
    if isinstance(a, ListType) and isinstance(b, ListType) and op in COMPARE:
        return BOOL
    return None


def unary_type(op, a: ScriptType) -> ScriptType | None:
    """Result type of ``-a``, ``+a``, ``~a``."""
    if isinstance(a, TensorType):
        return T_
    if op is operator.invert:
        return INT if isinstance(a, (IntType, BoolType)) else None
    if isinstance(a, BoolType):
        return INT
    return a if _is_num(a) else None


# --------------------------------------------------------------------------------------------
# ember functions and Tensor methods
# --------------------------------------------------------------------------------------------
_TUPLE_RESULT = {"sort", "topk", "kthvalue", "var_mean", "std_mean", "aminmax", "frexp", "slogdet", "qr",
                 "lu_unpack", "cummax", "cummin", "unique_consecutive"}
_TUPLE_WITH_DIM = {"max", "min", "median", "mode", "nanmedian"}
_LIST_RESULT = {"split", "chunk", "unbind", "tensor_split", "meshgrid", "broadcast_tensors", "hsplit",
                "vsplit", "dsplit", "split_with_sizes", "unsafe_split", "atleast_1d_list"}
_INT_RESULT = {"dim", "numel", "ndimension", "element_size", "nelement", "get_device", "__len__"}
_BOOL_RESULT = {"is_contiguous", "is_floating_point", "is_complex", "equal", "allclose", "is_tensor",
                "is_nonzero", "is_same_size", "is_grad_enabled", "is_signed", "is_inference", "is_set_to",
                "is_storage", "is_pinned"}
_UNSUPPORTED_METHODS = {"numpy": "Tensor.numpy() is not supported in script (numpy arrays have no script type)",
                        "__array__": "numpy arrays have no script type"}


def _has_dim(args: list, kwargs: dict, first: int) -> bool:
    if "dim" in kwargs:
        return True
    return len(args) > first and isinstance(args[first], (IntType, BoolType))


def call_result_type(name: str, arg_types: list, kwarg_types: dict, dim_at: int = 1) -> ScriptType:
    """Result type of ember.<name>(...) / ember.nn.functional.<name>(...) or, `dim_at` 0 (where a
    positional dim stands: no tensor before it), of a Tensor method: Tensor unless listed above."""
    if name in _TUPLE_RESULT or (name in _TUPLE_WITH_DIM and _has_dim(arg_types, kwarg_types, dim_at)):
        return TT
    if name in _LIST_RESULT:
        return LT
    if name in _INT_RESULT:
        return INT
    if name in _BOOL_RESULT:
        return BOOL
    return T_


_TENSOR_ATTRS = {"dtype": DTypeType(), "device": DeviceType(), "ndim": INT, "requires_grad": BOOL,
                 "is_cuda": BOOL, "is_leaf": BOOL, "is_sparse": BOOL, "is_quantized": BOOL, "is_meta": BOOL,
                 "T": T_, "mT": T_, "H": T_, "mH": T_, "data": T_, "real": T_, "imag": T_,
                 "grad": OptionalType(T_), "layout": AnyType(), "names": AnyType()}


def tensor_attribute_type(name: str) -> ScriptType | None:
    """Type of a Tensor attribute read (``x.dtype``); None if it is not a known attribute."""
    return _TENSOR_ATTRS.get(name)


def tensor_method_type(name: str, arg_types: list, kwarg_types: dict) -> ScriptType:
    """Result type of ``x.<name>(...)``; arg_types excludes the receiver. ValueError if unsupported."""
    if name in _UNSUPPORTED_METHODS:
        raise ValueError(_UNSUPPORTED_METHODS[name])
    if name in ("size", "stride"):
        return INT if (arg_types or "dim" in kwarg_types) else ListType(INT)
    if name == "item":
        return NUM
    return call_result_type(name, arg_types, kwarg_types, 0)


def list_method_type(name: str, list_type: ListType, arg_types: list) -> ScriptType | None:
    """Result type of a list method (None: not a list method script has)."""
    elem = list_type.elem
    table = {"append": NONE, "insert": NONE, "extend": NONE, "clear": NONE, "remove": NONE, "reverse": NONE,
             "sort": NONE, "pop": elem, "index": INT, "count": INT, "copy": list_type}
    return table.get(name)


def dict_method_type(name: str, d: DictType, arg_types: list) -> ScriptType | None:
    """Result type of a dict method (keys/values/items give lists, as in TorchScript)."""
    if name == "get":
        return d.value if len(arg_types) > 1 else OptionalType(d.value)
    table = {"keys": ListType(d.key), "values": ListType(d.value), "items": ListType(TupleType((d.key, d.value))),
             "pop": d.value, "update": NONE, "clear": NONE, "setdefault": d.value, "copy": d}
    return table.get(name)


_STR_BOOL = {"startswith", "endswith", "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper",
             "isnumeric", "isdecimal", "istitle", "isidentifier"}


def str_method_type(name: str, str_type: StrType, arg_types: list) -> ScriptType | None:
    """Result type of a str method."""
    if name in _STR_BOOL:
        return BOOL
    if name in ("find", "rfind", "index", "rindex", "count"):
        return INT
    if name in ("split", "rsplit", "splitlines"):
        return ListType(STR)
    if name in ("format", "lower", "upper", "strip", "lstrip", "rstrip", "replace", "join", "capitalize",
                "title", "swapcase", "zfill", "center", "ljust", "rjust", "casefold"):
        return STR
    return None


METHOD_TYPES = {ListType: list_method_type, DictType: dict_method_type, StrType: str_method_type}


# --------------------------------------------------------------------------------------------
# math and builtins
# --------------------------------------------------------------------------------------------
_MATH_INT = {"floor", "ceil", "trunc", "factorial", "gcd", "comb", "perm", "isqrt", "lcm"}
_MATH_BOOL = {"isnan", "isinf", "isfinite", "isclose"}


def math_result_type(name: str) -> ScriptType:
    """Result type of ``math.<name>(...)``."""
    if name in _MATH_INT:
        return INT
    if name in _MATH_BOOL:
        return BOOL
    return FLOAT


BUILTIN_FUNCTIONS = {len, int, float, bool, str, min, max, abs, round, print, isinstance, list, getattr,
                     hasattr, range, zip, enumerate, divmod, sum, any, all, tuple, ord, chr, hash, id, sorted}


_SIZED = (ListType, TupleType, StrType, DictType, TensorType)
_CONVERSIONS = {int: INT, float: FLOAT, bool: BOOL, str: STR}


def builtin_result_type(fn, types: list) -> ScriptType | None:
    """Result type of a builtin called on values of `types` (``len``, ``int``, ``min``, ``list``...):
    ValueError with the message when script rejects these arguments, None when script has no such
    use of the builtin."""
    n, first = len(types), (types[0] if types else None)
    if fn is len:
        if n != 1 or not isinstance(first, _SIZED):
            raise ValueError(f"len() is not defined for '{py_type_str(first) if types else ''}'")
        return INT
    if fn in _CONVERSIONS:
        if n != 1:
            raise ValueError(f"{fn.__name__}() takes one argument in script")
        if fn is not str and not isinstance(first, (TensorType, StrType)) and not _is_num(first):
            raise ValueError(f"{fn.__name__}() is not defined for '{py_type_str(first)}'")
        return _CONVERSIONS[fn]
    if fn in (min, max):
        if n == 1 and isinstance(first, ListType):
            return first.elem
        if n >= 2 and all(_is_num(t) for t in types):
            return functools.reduce(lambda a, b: binary_type(operator.add, a, b), types)
        raise ValueError(f"{fn.__name__}() in script takes numbers or one list")
    if fn is abs:
        if not (n == 1 and (isinstance(first, TensorType) or _is_num(first))):
            raise ValueError("abs() takes one number or Tensor in script")
        return INT if isinstance(first, BoolType) else first
    if fn is list:
        if n != 1 or not isinstance(first, (ListType, StrType, DictType)):
            raise ValueError("list() in script copies a list, a str or a dict's keys")
        return first if isinstance(first, ListType) else ListType(STR if isinstance(first, StrType) else first.key)
    one_list = n == 1 and isinstance(first, ListType)
    if fn is sorted and one_list:
        return first
    if fn is sum and one_list:
        return first.elem
    if fn in (any, all) and one_list:
        return BOOL
    if fn is divmod and n == 2 and all(_is_num(t) for t in types):
        t = binary_type(operator.floordiv, *types)
        return TupleType((t, t))
    return {round: INT if n == 1 else FLOAT, ord: INT, chr: STR}.get(fn)


def annotated_type(annotation, fn) -> ScriptType:
    """The type an annotation of function `fn` names; Tensor where there is none (script's default)."""
    if annotation is inspect.Parameter.empty:
        return T_
    return from_annotation(annotation, getattr(fn, "__globals__", None))


def classify(obj) -> str:
    """What a Python object reached by name is, for the frontend's call/attribute dispatch:
    'module', 'ember_function', 'math_function', 'operator_function', 'builtin', 'exception',
    'constant', 'type', 'python_function', 'other'."""
    from ember.ops.registry import public_name
    if isinstance(obj, types.ModuleType):
        return "module"
    if any(obj is b for b in BUILTIN_FUNCTIONS):
        return "builtin"
    if callable(obj) and not isinstance(obj, type) and getattr(builtins, getattr(obj, "__name__", "") or "",
                                                               None) is obj:
        return "unsupported_builtin"
    if isinstance(obj, type) and issubclass(obj, BaseException):
        return "exception"
    if isinstance(obj, type):
        return "type"
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return "constant"
    public = public_name(obj)
    if public is not None and not public.rsplit(".", 1)[1].startswith("_"):
        return "ember_function"
    if getattr(obj, "__module__", None) == "math" or (callable(obj) and getattr(math, getattr(obj, "__name__", ""),
                                                                               None) is obj):
        return "math_function"
    if callable(obj) and getattr(operator, getattr(obj, "__name__", "") or "", None) is obj:
        return "operator_function"
    if isinstance(obj, types.FunctionType):
        return "python_function"
    import ember
    if isinstance(obj, (ember.dtype, ember.device)) or (isinstance(obj, tuple) and _constant_tuple(obj)):
        return "constant"
    if getattr(obj, "__module__", None) == "builtins" and callable(obj):
        return "unsupported_builtin"
    return "other"


def _constant_tuple(value) -> bool:
    return all(v is None or isinstance(v, (bool, int, float, str)) or (isinstance(v, tuple) and _constant_tuple(v))
               for v in value)

