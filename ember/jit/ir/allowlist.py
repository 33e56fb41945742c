"""What a saved program may name: the closed language of ``ember.jit.save`` / ``ember.jit.load``.

A file is data written by anyone. Its graphs are run by the executor, so everything a graph names
-- the functions it calls, the methods it calls on its values, the attributes it reads, the
exceptions it raises -- is looked up here and nowhere else. `ember.jit.save` checks a program
against the same lists (so it never writes a file that load refuses) and `ember.jit.load` refuses
a file naming anything else, before building anything from it.

    function_by_name("aten::add.Tensor")      # the operator
    function_by_name("builtins.eval")          # None: not part of the language
    is_method_name("numpy")                    # False

The language, and why it cannot reach code outside it:

- call_function targets: the prim ops a saved graph holds (`SAVED_PRIMS`); the operators of the
  op table (``aten::*``); the op table's Python API (``ember.tanh``, ``ember.nn.functional.relu``:
  its generated bindings and the argument parsers written in ``ember/ops/table``, never the
  generator, printing or NumPy-bridge functions, which live elsewhere); a few pure queries
  (`_QUERY_FUNCTIONS`); and fixed subsets of ``operator``, ``math`` and ``builtins`` with no
  side effects.
- Every value a program can build is then a tensor, a number, a string, None, a dtype, a device,
  or a list/tuple/dict/slice of those: no function above returns a callable, a module, a type or
  a NumPy array. That is what keeps ``sorted(key=...)``, ``max(key=...)`` and ``list.sort(key=...)``
  harmless, and why `METHOD_NAMES` can be one list for every receiver.
- call_method names: Tensor methods that map to the op table plus a few queries (``size``,
  ``dim``, ``tolist``...), and the list/dict/str methods the script frontend emits.
- ``builtins.getattr`` reads only the Tensor attributes script knows (``dtype``, ``shape``...);
  module members are read by ``prim::GetAttr`` from the module tree only (see _payload_check).
- ``str.format`` may only be called on a constant format string whose fields are plain positions
  or names (``"{0.__class__...}"`` walks attributes of its arguments).
"""
from __future__ import annotations

import builtins
import functools
import math
import operator
import string

from ember.fx import prim

# prim ops a saved graph may hold. Left out: CallMethod/CallFunction (save inlines every call; a
# file cannot hold a Python callee), profile/TypeCheck/FusionGroup (the executor builds them from
# meta a file does not hold).
SAVED_PRIMS = frozenset({
    "prim::Constant", "prim::If", "prim::Loop", "prim::ListConstruct", "prim::TupleConstruct",
    "prim::DictConstruct", "prim::TupleUnpack", "prim::ListUnpack", "prim::TupleIndex", "prim::RaiseException",
    "prim::Uninitialized", "prim::unchecked_cast", "prim::GetAttr", "prim::SetAttr", "prim::Print",
    "prim::IsGradEnabled", "prim::SetGradEnabled"})

OPERATOR_FUNCTIONS = frozenset({
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "neg", "pos", "not_", "lt", "le", "gt", "ge", "eq",
    "ne", "and_", "or_", "xor", "invert", "getitem", "setitem", "contains", "is_", "is_not", "matmul", "lshift",
    "rshift", "abs", "iadd", "isub", "imul", "itruediv", "truth"})
BUILTIN_FUNCTIONS = frozenset({
    "len", "int", "float", "bool", "str", "min", "max", "abs", "getattr", "print", "round", "divmod", "sum", "any",
    "all", "list", "tuple", "isinstance", "range", "enumerate", "zip", "hash", "ord", "chr", "sorted", "reversed",
    "slice"})

# ember functions outside the op table that only answer questions about their arguments
_QUERY_FUNCTIONS = frozenset({
    "ember.is_tensor", "ember.numel", "ember.is_complex", "ember.is_floating_point", "ember.can_cast",
    "ember.promote_types", "ember.result_type", "ember.get_default_dtype", "ember.is_grad_enabled",
    "ember.is_inference_mode_enabled"})

# Tensor methods written by hand in ember/_core/tensor.py that only read the tensor (or set its
# requires_grad flag); the other hand-written ones (numpy, register_hook, backward, data_ptr,
# retain_grad...) are not part of the language.
_TENSOR_QUERY_METHODS = frozenset({
    "size", "dim", "numel", "nelement", "ndimension", "element_size", "item", "tolist", "stride",
    "storage_offset", "is_contiguous", "is_floating_point", "is_complex", "is_signed", "get_device",
    "requires_grad_", "detach_"})

# Constructors over foreign memory (NumPy arrays, DLPack capsules, buffers): a saved program holds
# no such objects, so these have no meaning in the language and are left out even where the op
# table defines them.
_FOREIGN_MEMORY = frozenset({"ember.from_numpy", "ember.from_dlpack", "ember.frombuffer", "ember.asarray"})

_PYTHON_API_MODULES = ("ember.nn.functional", "ember.nn.functional_loss",  # the op table's Python wrappers
                       "ember.ops.tensor_indexing")


def _is_table_api(fn) -> bool:
    """True for the op table's own Python API: a generated binding, an overload resolver, or an
    argument parser defined in an ``ember.ops.table`` module or in ``ember.nn.functional``'s files."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return False
    if code.co_filename.startswith("<ember binding"):
        return True
    module = getattr(fn, "__module__", None) or ""
    return (module.startswith("ember.ops.table.") or module in _PYTHON_API_MODULES
            or (module == "ember.ops.overloads" and hasattr(fn, "overloads")))


@functools.cache
def _ember_functions() -> dict:
    """Public dotted name -> function, for the ember functions a saved graph may call."""
    from ember.ops import registry
    table = {id(fn) for fns in registry.FUNCTIONS.values() for fn in fns.values()}
    return {name: fn for name, fn in registry.public_functions().items()
            if ((id(fn) in table and _is_table_api(fn)) or name in _QUERY_FUNCTIONS) and name not in _FOREIGN_MEMORY}


def function_by_name(name):
    """The callable a saved call_function target stands for, or None if the language has no such
    function. Never imports or evaluates anything: every name is looked up in a fixed table."""
    if not isinstance(name, str):
        return None
    if name.startswith("prim::"):
        return prim.by_name(name) if name in SAVED_PRIMS else None
    if "::" in name:
        from ember.ops.registry import OPERATORS
        return OPERATORS.get(name)
    head, _, attr = name.rpartition(".")
    if head == "operator":
        return getattr(operator, attr) if attr in OPERATOR_FUNCTIONS else None
    if head == "builtins":
        return getattr(builtins, attr) if attr in BUILTIN_FUNCTIONS else None
    if head == "math":
        fn = getattr(math, attr, None) if attr.isidentifier() and not attr.startswith("_") else None
        return fn if callable(fn) and not isinstance(fn, type) else None
    return _ember_functions().get(name)


def saved_name(target) -> str | None:
    """The name under which a call_function target is saved, or None if it is outside the language."""
    from ember._core.dispatch import OperatorHandle
    from ember.ops.registry import public_name
    if prim.is_prim(target) or isinstance(target, OperatorHandle):
        name = target.name
    elif getattr(target, "__module__", None) in ("_operator", "operator", "builtins", "math"):
        name = f"{target.__module__.lstrip('_')}.{getattr(target, '__name__', None)}"
    else:
        name = public_name(target)
    return name if name is not None and function_by_name(name) is target else None


@functools.cache
def method_names() -> frozenset:
    """Every method name a call_method node may use (see the module docstring)."""
    from ember.ops import registry
    from ..frontend import builtins as rules
    from .types import AnyType, DictType, ListType, StrType
    names = {n for n, fn in registry.METHODS.items() if not n.startswith("_") and callable(fn)}
    names |= {n for n in dir(list) if not n.startswith("_")
              and rules.list_method_type(n, ListType(AnyType()), []) is not None}
    names |= {n for n in dir(dict) if not n.startswith("_")
              and rules.dict_method_type(n, DictType(AnyType(), AnyType()), []) is not None}
    names |= {n for n in dir(str) if not n.startswith("_") and rules.str_method_type(n, StrType(), []) is not None}
    return frozenset(names | _TENSOR_QUERY_METHODS)


def is_method_name(name) -> bool:
    return isinstance(name, str) and name in method_names()


def is_getattr_name(name) -> bool:
    """Whether ``builtins.getattr(value, name)`` may read `name` (Tensor attributes script knows)."""
    from ..frontend.builtins import tensor_attribute_type
    return isinstance(name, str) and name.isidentifier() and not name.startswith("_") and \
        tensor_attribute_type(name) is not None


def format_string_problem(text) -> str | None:
    """Why `text` may not be the receiver of ``str.format`` in a saved graph, or None if it may:
    its replacement fields (nested ones in format specs included) must be empty, a position or a
    name -- never ``{0.attr}`` or ``{0[key]}``, which read attributes and items of the arguments."""
    if not isinstance(text, str):
        return "the format string is not a constant string"
    try:
        fields = list(string.Formatter().parse(text))
    except ValueError as exc:
        return f"malformed format string ({exc})"
    for _, field, spec, _ in fields:
        if field is None:
            continue
        if field and not (field.isdigit() or (field.isidentifier() and field.isascii())):
            return f"format field {{{field}}} reads an attribute or item of an argument"
        if spec:
            problem = format_string_problem(spec)
            if problem is not None:
                return problem
    return None
