"""Overload resolution for Python names that stand for several operators (``ember.max``,
``Tensor.sum``): `_resolver(name, overloads)` picks the first overload whose signature and argument
types fit a call, with one-argument type tests precomputed per schema so the choice stays cheap."""
from __future__ import annotations

import dataclasses
import numbers

import numpy as np

from .._core import dtype as _dt
from .._core.schema import Argument, FunctionSchema
from .._core.tensor import Tensor


def _type_ok(arg: Argument, v) -> bool:
    if v is None:
        return arg.optional or arg.default is None
    t = arg.type
    if arg.is_list:
        if t == "int" and isinstance(v, int) and not isinstance(v, bool) and arg.list_size:
            return True
        return isinstance(v, (list, tuple)) and all(x is None or _type_ok(dataclasses.replace(arg, is_list=False), x) for x in v)
    if t == "Tensor":
        return isinstance(v, Tensor)
    if t == "int":  # NumPy integers too (the binding converts them)
        return isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) or (
            isinstance(v, Tensor) and v.ndim == 0 and not v.is_floating_point())
    if t == "float":
        return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))
    if t == "bool":
        return isinstance(v, bool)
    if t == "Scalar":
        return isinstance(v, (int, float, complex, bool)) or isinstance(v, numbers.Number)  # NumPy scalars
    if t == "ScalarType":  # float / int / bool / complex stand for dtypes too
        return isinstance(v, _dt.dtype) or v in (float, int, bool, complex)
    if t == "str":
        return isinstance(v, str)
    return True


_NUMBERS = frozenset((int, float, bool, complex))


def _checker(arg: Argument, index: int, numbers=True):
    """A fast one-argument type test for overload resolution, built once per schema."""
    simple = not arg.is_list and not (arg.optional or arg.default is None)
    if simple and arg.type == "Tensor":
        if index > 0 and numbers:  # a Python number stands for a wrapped-number tensor
            return lambda v: v.__class__ in _NUMBERS or isinstance(v, Tensor)
        return lambda v: isinstance(v, Tensor)
    if simple and arg.type == "bool":
        return lambda v: v.__class__ is bool or _type_ok(arg, v)
    if simple and arg.type == "int":
        return lambda v: v.__class__ is int or _type_ok(arg, v)
    if arg.is_list and arg.type == "int":  # dims and sizes: a list or tuple of plain ints passes at once
        return lambda v: ((v.__class__ is list or v.__class__ is tuple) and all(x.__class__ is int for x in v)
                          or _type_ok(arg, v))
    number_ok = arg.type == "Tensor" and not arg.is_list and index > 0 and numbers
    return lambda v: (number_ok and v.__class__ in _NUMBERS) or _type_ok(arg, v)


def _matcher(schema: FunctionSchema, tensors_only=frozenset()):
    """A function (args, kwargs) -> bool: does a call fit `schema`? Precomputed so that
    choosing among overloads stays cheap. At positions in `tensors_only` a Tensor parameter
    takes tensors only (a number goes to the int overload tried after this one)."""
    params = [a for a in schema.arguments if not (a.name == "out" and a.kwarg_only)]
    n_positional = sum(1 for a in params if not a.kwarg_only)
    checks = [_checker(a, i, i not in tensors_only) for i, a in enumerate(params)]
    by_name = {("input" if i == 0 and a.name == "self" else a.name): i for i, a in enumerate(params)}
    required = frozenset(i for i, a in enumerate(params) if not a.has_default)
    min_positional = max(required, default=-1) + 1

    def matches(args, kwargs) -> bool:
        n = len(args)
        if n > n_positional:
            return False
        for i in range(n):
            if not checks[i](args[i]):
                return False
        if not kwargs:
            return n >= min_positional
        given = set(range(n))
        for k, v in kwargs.items():
            if k == "out":
                continue
            i = by_name.get(k)
            if i is None or i in given or not checks[i](v):
                return False
            given.add(i)
        return required <= given
    return matches


def _stands_in(values) -> bool:
    return any(hasattr(type(v), "__ember_dispatch__") or (isinstance(v, (list, tuple)) and _stands_in(v))
               for v in values)


def _as_tensor_shape(v):
    """`v` with stand-ins replaced by a meta tensor, for overload matching only."""
    if hasattr(type(v), "__ember_dispatch__"):
        from .._core.tensor import wrap_meta
        return wrap_meta((), _dt.float32)
    if isinstance(v, (list, tuple)):
        return type(v)(_as_tensor_shape(x) for x in v)
    return v


def _tensor_first(overloads):
    """[(schema, fn, positions)]: `overloads` with each one that takes a Tensor where another of the
    same arity takes an int tried before that other, at those positions taking tensors only. A 0-d
    integer tensor fits an int too, and PyTorch's parser picks the Tensor overload for it
    (``x.repeat_interleave(torch.tensor(2))`` is ``self_Tensor``); a number still picks the int one."""
    def positional(schema):
        return [(a.type, a.is_list) for a in schema.arguments if not a.kwarg_only]

    def tensor_where_int(a, b):
        pa, pb = positional(a), positional(b)
        differ = [i for i, (x, y) in enumerate(zip(pa, pb)) if x != y]
        if len(pa) != len(pb) or not all(pa[i] == ("Tensor", False) and pb[i] == ("int", False) for i in differ):
            return frozenset()
        return frozenset(differ)
    ordered = []
    for schema, fn in overloads:
        at, positions = len(ordered), set()
        for i, (other, _, _) in enumerate(ordered):
            where = tensor_where_int(schema, other)
            if where:
                at, positions = min(at, i), positions | where
        ordered.insert(at, (schema, fn, frozenset(positions)))
    return ordered


def _resolver(name, overloads, key=None):
    matchers = [(_matcher(schema, positions), fn) for schema, fn, positions in _tensor_first(overloads)]
    # Without keywords, an arity that only one overload accepts needs no type matching: that
    # overload's own binding checks the types (x.sum(), x.max()).
    only = {}
    for n in range(8):
        fits = [fn for (schema, fn) in overloads
                if sum(1 for a in schema.arguments if not a.kwarg_only) >= n
                >= sum(1 for a in schema.arguments if not a.kwarg_only and not a.has_default)]
        if len(fits) == 1:
            only[n] = fits[0]

    def resolve(*args, **kwargs):
        if not kwargs:
            fn = only.get(len(args))
            if fn is not None:
                return fn(*args)
        for matches, fn in matchers:
            if matches(args, kwargs):
                return fn(*args, **kwargs)
        # (the failure path only) a stand-in that dispatches like a tensor (an fx Proxy) picks the
        # overload a tensor in its place would pick
        if _stands_in(args) or _stands_in(kwargs.values()):
            as_tensors = [_as_tensor_shape(a) for a in args]
            as_kwargs = {k: _as_tensor_shape(v) for k, v in kwargs.items()}
            for matches, fn in matchers:
                if matches(as_tensors, as_kwargs):
                    return fn(*args, **kwargs)
        got = ", ".join(type(a).__name__ for a in args)
        expected = "\n".join(f" * ({', '.join(str(a) for a in s.arguments)})" for s, _ in overloads)
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), but expected "
                        f"one of:\n{expected}")
    resolve.__name__ = name
    resolve.overloads = overloads
    resolve.__ember_overloads__ = key     # ops_of(resolve): the operators it chooses between
    return resolve
