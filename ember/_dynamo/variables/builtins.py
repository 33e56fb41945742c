"""Python builtins, operator.*, math.* and itertools.* under capture: one handler per function in a table.

    BuiltinVariable(len).call_function(tx, [ListVariable([...])], {})      # ConstantVariable(n)
    BuiltinVariable(operator.add).call_function(tx, [tensor, const], {})   # records operator.add in the graph

Constants fold; tensors go into the graph with the operator itself as the target (seed 003's table:
``operator.add``, ``operator.truediv``, ``operator.lt``).
"""
from __future__ import annotations

import abc
import functools
import itertools
import math
import operator

from ..exc import unimplemented
from .base import VariableTracker
from .constant import ConstantVariable

_HANDLERS: dict = {}
_TYPE_INSTANCECHECK = type.__instancecheck__


def _handler(*fns):
    def register(handler):
        for fn in fns:
            _HANDLERS[fn] = handler
        return handler
    return register


_OPERATOR_FUNCTIONS = {v for k, v in vars(operator).items() if callable(v) and not k.startswith("_")}
_MATH_FUNCTIONS = {v for k, v in vars(math).items() if callable(v)}
_ITERTOOLS = {itertools.chain, itertools.product, itertools.combinations, itertools.permutations,
              itertools.zip_longest, itertools.repeat, itertools.islice, itertools.accumulate,
              itertools.chain.from_iterable}
_FOLDABLE_BUILTINS = {abs, bool, int, float, str, round, divmod, pow, ord, chr, repr, hash, bin, hex, oct, complex}


_supported_ids: dict = {}


def is_supported_builtin(value) -> bool:
    """True for the functions BuiltinVariable models. Looked up by identity: `value in a_set` would
    hash `value`, running a user object's __hash__ (and __eq__) during capture."""
    if not _supported_ids:
        for fn in (*_HANDLERS, *_OPERATOR_FUNCTIONS, *_MATH_FUNCTIONS, *_ITERTOOLS, *_FOLDABLE_BUILTINS):
            _supported_ids[id(fn)] = fn
    return _supported_ids.get(id(value)) is value


def _all_const(args, kwargs=None):
    return all(a.is_python_constant() for a in args) and all(v.is_python_constant() for v in (kwargs or {}).values())


def _consts(args):
    return [a.as_python_constant() for a in args]


def _has_tensor(args):
    from .tensor import TensorVariable
    return any(isinstance(a, TensorVariable) for a in args)


class BuiltinVariable(VariableTracker):
    def __init__(self, fn, source=None):
        super().__init__(source)
        self.fn = fn

    def python_type(self):
        return type(self.fn)

    def as_python_constant(self):
        return self.fn

    def call_function(self, tx, args, kwargs):
        fn = self.fn
        handler = _HANDLERS.get(fn)
        if handler is not None:
            return handler(tx, fn, list(args), dict(kwargs))
        if fn in _OPERATOR_FUNCTIONS:
            return _operator(tx, fn, list(args), dict(kwargs))
        if _all_const(args, kwargs) and (fn in _MATH_FUNCTIONS or fn in _FOLDABLE_BUILTINS):
            from .builder import wrap_new
            try:
                return wrap_new(tx, fn(*_consts(args), **{k: v.as_python_constant() for k, v in kwargs.items()}))
            except Exception as e:
                unimplemented(f"{type(e).__name__} from {getattr(fn, '__name__', fn)}: {e}")
        if fn in _ITERTOOLS:
            return _itertools(tx, fn, list(args), dict(kwargs))
        if fn is abs and _has_tensor(args):
            from .tensor import call_tensor_op
            return call_tensor_op(tx, "call_function", abs, list(args), {})
        if fn in (int, float, bool) and _has_tensor(args):
            unimplemented(f"{fn.__name__}() of a tensor needs its data")
        unimplemented(f"call to {getattr(fn, '__qualname__', fn)} with these arguments")

    def reconstruct(self, cg):
        if self.source is not None:
            return cg.load_source(self.source)
        cg.load_python_value(self.fn)

    @staticmethod
    def same_value(tx, a, b) -> bool:
        if a is b:
            return True
        if a.is_python_constant() and b.is_python_constant():
            return a.as_python_constant() == b.as_python_constant()
        return False

    @staticmethod
    def contains(tx, items, x):
        if not x.is_python_constant() and not any(i is x for i in items):
            if _has_tensor([x, *items]):
                unimplemented("`in` with tensors compares values")
        return ConstantVariable(any(BuiltinVariable.same_value(tx, i, x) for i in items))

    def __repr__(self):
        return f"BuiltinVariable({getattr(self.fn, '__name__', self.fn)})"


# ----------------------------------------------------------------------------- operator.*
_SET_OPERATORS = {operator.or_: "__or__", operator.and_: "__and__", operator.sub: "__sub__",
                  operator.xor: "__xor__", operator.le: "__le__", operator.ge: "__ge__", operator.eq: "__eq__",
                  operator.ne: "__ne__", operator.ior: "__ior__", operator.iand: "__iand__",
                  operator.isub: "__isub__", operator.ixor: "__ixor__"}
_REFLECTED = {operator.add: "__add__", operator.mul: "__mul__", operator.iadd: "__iadd__"}


_COMPARISONS = {operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge}


def _has_identity(vt) -> bool:
    """Trackers whose as_python_constant() would be a copy: containers and iterators (a tracker per object)."""
    from .dicts import ConstDictVariable, DictViewVariable
    from .iterators import IteratorVariable
    from .lists import ListVariable
    from .sets import SetVariable
    return isinstance(vt, (ListVariable, ConstDictVariable, DictViewVariable, SetVariable, IteratorVariable))


def _immutable(vt) -> bool:
    """A tracker of a value with no identity to keep: a constant, or a tuple of such."""
    from .lists import TupleVariable
    if isinstance(vt, ConstantVariable):
        return True
    return isinstance(vt, TupleVariable) and all(_immutable(i) for i in vt.items)


def _operator(tx, fn, args, kwargs):
    from .tensor import TensorVariable, call_tensor_op
    from .lists import BaseListVariable, ListVariable
    if fn is operator.getitem:
        return args[0].call_method(tx, "__getitem__", args[1:], {})
    if fn is operator.setitem:
        return args[0].call_method(tx, "__setitem__", args[1:], {})
    if fn is operator.delitem:
        return args[0].call_method(tx, "__delitem__", args[1:], {})
    if fn is operator.contains:
        return args[0].call_method(tx, "__contains__", args[1:], {})
    if fn in (operator.is_, operator.is_not):
        a, b = args
        if a is b:
            same = True
        elif _has_identity(a) or _has_identity(b):
            same = False   # one tracker per mutable object (builder.wrap): another tracker is another object
        elif a.is_python_constant() and b.is_python_constant():
            same = a.as_python_constant() is b.as_python_constant()
        elif a.is_python_constant() or b.is_python_constant():
            same = False   # a tracked object is never a constant like None
        else:
            same = a is b or (isinstance(a, TensorVariable) and isinstance(b, TensorVariable) and a.proxy is b.proxy)
        return ConstantVariable(same if fn is operator.is_ else not same)
    if fn is operator.not_:
        return ConstantVariable(not args[0].truthy(tx))
    if fn is operator.truth:
        return ConstantVariable(args[0].truthy(tx))
    if _has_tensor(args):
        return call_tensor_op(tx, "call_function", fn, args, kwargs)
    if all(_immutable(a) for a in args) or (fn in _COMPARISONS and _all_const(args)):
        # folding works on copies: only for values without identity (numbers, strings, tuples of
        # them) -- `ys += [1]` on a list, `d |= e`, `[[0]] * 2` must act on (and share) the trackers
        from .builder import wrap_new
        try:
            return wrap_new(tx, fn(*_consts(args)))
        except Exception as e:
            unimplemented(f"{type(e).__name__} from operator.{fn.__name__}: {e}")
    from .dicts import ConstDictVariable
    from .sets import SetVariable
    if isinstance(args[0], ConstDictVariable) and fn in (operator.or_, operator.ior):
        return args[0].call_method(tx, "__or__" if fn is operator.or_ else "__ior__", [args[1]], {})
    if isinstance(args[0], SetVariable) and fn in _SET_OPERATORS:
        other = args[1]
        if not isinstance(other, SetVariable) and not (other.is_python_constant() and isinstance(
                other.as_python_constant(), (set, frozenset))):
            if fn in (operator.eq, operator.ne):
                return ConstantVariable(fn is operator.ne)
            unimplemented(f"TypeError: unsupported operand types for operator.{fn.__name__}: set and "
                          f"{other.python_type().__name__}")
        return args[0].call_method(tx, _SET_OPERATORS[fn], [other], {})
    if isinstance(args[0], BaseListVariable):
        if fn is operator.iadd and isinstance(args[0], ListVariable):   # list += any iterable, in place
            return args[0].call_method(tx, "__iadd__", [args[1]], {})
        if fn in (operator.add, operator.iadd) and isinstance(args[1], BaseListVariable):
            if (args[0].python_type() is list) != (args[1].python_type() is list):
                unimplemented(f"TypeError: can only concatenate {args[0].python_type().__name__} (not "
                              f"{args[1].python_type().__name__})")
            return args[0].call_method(tx, "__add__", [args[1]], {})
        if fn is operator.imul and isinstance(args[0], ListVariable):
            return args[0].call_method(tx, "__imul__", [args[1]], {})
        if fn in (operator.mul, operator.imul):
            return args[0].call_method(tx, "__mul__", [args[1]], {})
        if fn in (operator.eq, operator.ne) and isinstance(args[1], BaseListVariable):
            same = len(args[0].items) == len(args[1].items) and all(
                BuiltinVariable.same_value(tx, a, b) for a, b in zip(args[0].items, args[1].items))
            return ConstantVariable(same if fn is operator.eq else not same)
    if fn in (operator.eq, operator.ne):
        # identity answers only for types that compare by identity; a user __eq__ would be skipped
        for t in (a.python_type() for a in args):
            if getattr(t, "__eq__", None) is not object.__eq__ or getattr(t, "__ne__", None) is not object.__ne__:
                unimplemented(f"operator.{fn.__name__} on a {t.__name__} (compares by its own __eq__)")
        same = args[0] is args[1]
        return ConstantVariable(same if fn is operator.eq else not same)
    unimplemented(f"operator.{fn.__name__} on {args}")


# ----------------------------------------------------------------------------- builtins
def _wrap_items(items):
    from .lists import ListIteratorVariable
    return ListIteratorVariable(items)


@_handler(len)
def _len(tx, fn, args, kwargs):
    return args[0].call_method(tx, "__len__", [], {})


@_handler(isinstance)
def _isinstance(tx, fn, args, kwargs):
    from .misc import UserDefinedObjectVariable
    obj, classes = args
    if isinstance(obj, UserDefinedObjectVariable) and obj.source is not None:
        from .builder import runs_user_code_on_isinstance
        if runs_user_code_on_isinstance(obj.value):   # isinstance reads its __class__: user code
            unimplemented(f"isinstance() of a {type(obj.value).__name__}, whose __class__ is its own code")
    cls = classes.as_python_constant()
    for klass in cls if isinstance(cls, tuple) else (cls,):
        check = getattr(type(klass), "__instancecheck__", None)
        if check is not None and check is not _TYPE_INSTANCECHECK and check is not abc.ABCMeta.__instancecheck__:
            unimplemented(f"isinstance() with {klass!r}, whose metaclass defines its own __instancecheck__")
    try:
        return ConstantVariable(issubclass(obj.python_type(), cls))
    except TypeError as e:
        unimplemented(f"isinstance: {e}")


@_handler(issubclass)
def _issubclass(tx, fn, args, kwargs):
    return ConstantVariable(issubclass(*_consts(args)))


@_handler(callable)
def _callable(tx, fn, args, kwargs):
    from .tensor import TensorVariable
    from .functions import BaseUserFunctionVariable, UserMethodVariable, PartialVariable
    obj = args[0]
    if isinstance(obj, (BaseUserFunctionVariable, UserMethodVariable, PartialVariable, BuiltinVariable)):
        return ConstantVariable(True)
    if isinstance(obj, TensorVariable):
        return ConstantVariable(False)
    return ConstantVariable(callable(obj.as_python_constant()))


@_handler(range)
def _range(tx, fn, args, kwargs):
    return ConstantVariable(range(*_consts(args)))


@_handler(slice)
def _slice(tx, fn, args, kwargs):
    from .lists import SliceVariable
    if _all_const(args):
        return ConstantVariable(slice(*_consts(args)))
    return SliceVariable(args)


# enumerate, zip, map and filter are lazy, as in Python: each next() pulls from their sources and
# calls the function then, so its side effects interleave with the loop body's (iterators.py)
@_handler(enumerate)
def _enumerate(tx, fn, args, kwargs):
    from .iterators import EnumerateIterator, iterator_over
    start = (args[1] if len(args) > 1 else kwargs.get("start", ConstantVariable(0))).as_python_constant()
    return EnumerateIterator(iterator_over(tx, args[0]), start)


@_handler(zip)
def _zip(tx, fn, args, kwargs):
    from .iterators import ZipIterator, iterator_over
    strict = kwargs["strict"].as_python_constant() if "strict" in kwargs else False
    return ZipIterator([iterator_over(tx, a) for a in args], strict=bool(strict))


@_handler(map)
def _map(tx, fn, args, kwargs):
    from .iterators import MapIterator, iterator_over
    return MapIterator(args[0], [iterator_over(tx, a) for a in args[1:]])


@_handler(filter)
def _filter(tx, fn, args, kwargs):
    from .iterators import FilterIterator, iterator_over
    predicate = None if args[0].is_python_constant() and args[0].as_python_constant() is None else args[0]
    return FilterIterator(predicate, iterator_over(tx, args[1]))


@_handler(iter)
def _iter(tx, fn, args, kwargs):
    from .iterators import iterator_over
    if len(args) != 1 or kwargs:
        unimplemented("iter() with a sentinel")
    return iterator_over(tx, args[0])


@_handler(next)
def _next(tx, fn, args, kwargs):
    from .iterators import IteratorVariable
    it = args[0]
    if not isinstance(it, IteratorVariable):
        unimplemented(f"next() on {it}")
    item = it.next_item(tx)
    if item is None:
        if len(args) > 1:
            return args[1]
        unimplemented("StopIteration from next()")
    return item


@_handler(list, tuple)
def _list_tuple(tx, fn, args, kwargs):
    from .lists import ListVariable, TupleVariable
    items = args[0].unpack_var_sequence(tx) if args else []
    return ListVariable(items) if fn is list else TupleVariable(items)


@_handler(dict)
def _dict(tx, fn, args, kwargs):
    from .dicts import ConstDictVariable
    result = ConstDictVariable({})
    if args:
        src = args[0]
        if isinstance(src, ConstDictVariable):
            result.items.update(src.items)
        else:
            for pair in src.unpack_var_sequence(tx):
                k, v = pair.unpack_var_sequence(tx)
                result.items[k.as_python_constant()] = v
    result.items.update(kwargs)
    return result


@_handler(set, frozenset)
def _set(tx, fn, args, kwargs):
    from .sets import SetVariable
    if args and isinstance(args[0], SetVariable):
        return args[0].copy(frozen=fn is frozenset)
    if args and isinstance(args[0], ConstantVariable) and type(args[0].value) in (set, frozenset):
        if fn is frozenset:
            return ConstantVariable(frozenset(args[0].value))   # a real frozenset, made as Python makes it
        result = SetVariable()     # set(s) merges s's table: that update is what the set replays
        result.call_method(tx, "update", [args[0]], {})
        return result
    items = args[0].unpack_var_sequence(tx) if args else []
    if fn is frozenset and all(i.is_python_constant() for i in items):
        return ConstantVariable(frozenset(i.as_python_constant() for i in items))
    return SetVariable(items, frozen=fn is frozenset)


@_handler(sorted)
def _sorted(tx, fn, args, kwargs):
    from .lists import ListVariable
    if "key" in kwargs:
        unimplemented("sorted with a key function")
    values = sorted(_consts(args[0].unpack_var_sequence(tx)),
                    reverse=kwargs["reverse"].as_python_constant() if "reverse" in kwargs else False)
    return ListVariable([ConstantVariable(v) for v in values])


@_handler(reversed)
def _reversed(tx, fn, args, kwargs):
    from .iterators import IteratorVariable, LiveListIterator
    from .lists import ListVariable
    if isinstance(args[0], ListVariable):   # reads the list at each step, as list_reverseiterator does
        return LiveListIterator(args[0], reverse=True)
    if isinstance(args[0], IteratorVariable):
        unimplemented("TypeError: an iterator is not reversible")
    return _wrap_items(list(reversed(args[0].unpack_var_sequence(tx))))


@_handler(sum)
def _sum(tx, fn, args, kwargs):
    from .iterators import iterate
    total = args[1] if len(args) > 1 else kwargs.get("start", ConstantVariable(0))
    for item in iterate(tx, args[0]):    # one item at a time: a generator's next step comes after the add
        total = BuiltinVariable(operator.add).call_function(tx, [total, item], {})
    return total


@_handler(min, max)
def _min_max(tx, fn, args, kwargs):
    items = args[0].unpack_var_sequence(tx) if len(args) == 1 else args
    if _has_tensor(items):
        if len(items) == 2 and not kwargs:   # torch records max(a, b) of tensors via comparisons; use the op
            import ember
            from .tensor import call_tensor_op
            return call_tensor_op(tx, "call_function", ember.maximum if fn is max else ember.minimum, items, {})
        unimplemented(f"{fn.__name__}() over tensors compares their values")
    if "key" in kwargs:
        unimplemented(f"{fn.__name__} with a key function")
    return ConstantVariable(fn(_consts(items)))


@_handler(any, all)
def _any_all(tx, fn, args, kwargs):
    from .iterators import iterate
    # short-circuits like Python: items after the deciding one are never pulled
    return ConstantVariable(fn(i.truthy(tx) for i in iterate(tx, args[0])))


@_handler(getattr)
def _getattr(tx, fn, args, kwargs):
    from ..exc import Unsupported
    name = args[1].as_python_constant()
    if len(args) > 2:
        try:
            return args[0].var_getattr(tx, name)
        except Unsupported as e:
            if "AttributeError" in e.reason or "has no attribute" in e.reason:
                _guard_missing(tx, args[0], name)
                return args[2]
            raise
    return args[0].var_getattr(tx, name)


def _guard_missing(tx, obj, name):
    """Capture found `obj.name` missing: setting it on the object later must recompile."""
    if obj.source is not None:
        from ..source import HasAttrSource
        tx.output.guard(HasAttrSource(obj.source, name), "CONSTANT_MATCH", False)


@_handler(hasattr)
def _hasattr(tx, fn, args, kwargs):
    from ..exc import Unsupported
    name = args[1].as_python_constant()
    from .tensor import TensorVariable
    if isinstance(args[0], TensorVariable) and not hasattr(args[0].example, name) \
            and not hasattr(args[0].python_type(), name):
        # Tensor attributes come from the class, so a name missing there is missing at run time
        # too -- unless set on the instance (x.flag = 1): read the input itself, guard the absence
        if args[0].source is not None:
            real = next((v for _, s, v in tx.output.graph_inputs if s == args[0].source), None)
            if real is None or name in getattr(real, "__dict__", {}):
                unimplemented(f"hasattr on a tensor input's own attribute {name!r}")
            _guard_missing(tx, args[0], name)
        return ConstantVariable(False)
    try:
        args[0].var_getattr(tx, name)
        return ConstantVariable(True)
    except Unsupported as e:
        if "AttributeError" in e.reason or "has no attribute" in e.reason:
            _guard_missing(tx, args[0], name)
            return ConstantVariable(False)
        raise


@_handler(setattr)
def _setattr(tx, fn, args, kwargs):
    tx.store_attr(args[0], args[1].as_python_constant(), args[2])
    return ConstantVariable(None)


@_handler(type)
def _type(tx, fn, args, kwargs):
    from .misc import PythonValueVariable
    if len(args) != 1:
        unimplemented("type() with three arguments")
    return PythonValueVariable(args[0].python_type())


@_handler(print)
def _print(tx, fn, args, kwargs):
    unimplemented("call to print")


@_handler(super)
def _super(tx, fn, args, kwargs):
    from .user_objects import make_super
    return make_super(tx, args)


@_handler(functools.partial)
def _partial(tx, fn, args, kwargs):
    from .functions import PartialVariable
    return PartialVariable(args[0], args[1:], kwargs)


@_handler(operator.itemgetter, operator.attrgetter)
def _getter(tx, fn, args, kwargs):
    # Build the real getter from constant keys; calling it is modelled in PythonValueVariable.
    from .misc import PythonValueVariable
    return PythonValueVariable(fn(*_consts(args)))


@_handler(functools.reduce)
def _reduce(tx, fn, args, kwargs):
    from .iterators import iterate
    items = iterate(tx, args[1])
    acc = args[2] if len(args) > 2 else next(items, None)
    if acc is None:
        unimplemented("TypeError: reduce() of empty iterable with no initial value")
    for item in items:
        acc = args[0].call_function(tx, [acc, item], {})
    return acc


def _itertools(tx, fn, args, kwargs):
    from .iterators import runs_code_when_advanced
    from .lists import TupleVariable
    if any(runs_code_when_advanced(a) for a in args):
        # itertools are lazy; these would be drained here, running a generator's (or a map's) code
        # ahead of the loop that consumes them
        unimplemented(f"itertools.{fn.__name__} over a generator, map or filter")
    if fn is itertools.repeat:
        return _wrap_items([args[0]] * args[1].as_python_constant())
    seqs = [a.unpack_var_sequence(tx) for a in args if not a.is_python_constant() or
            isinstance(a.as_python_constant(), (tuple, list, range, str))] if fn is not itertools.islice else None
    if fn is itertools.chain:
        return _wrap_items([i for s in seqs for i in s])
    if fn is itertools.chain.from_iterable:
        return _wrap_items([i for s in args[0].unpack_var_sequence(tx) for i in s.unpack_var_sequence(tx)])
    if fn is itertools.islice:
        return _wrap_items(list(itertools.islice(args[0].unpack_var_sequence(tx), *_consts(args[1:]))))
    if fn is itertools.accumulate:
        items = args[0].unpack_var_sequence(tx)
        out, acc = [], None
        for item in items:
            acc = item if acc is None else BuiltinVariable(operator.add).call_function(tx, [acc, item], {})
            out.append(acc)
        return _wrap_items(out)
    if fn is itertools.zip_longest:
        fill = kwargs.get("fillvalue", ConstantVariable(None))
        return _wrap_items([TupleVariable([fill if v is None else v for v in group])
                            for group in itertools.zip_longest(*seqs)])
    extra = [a.as_python_constant() for a in args[1:]] if fn in (itertools.combinations,
                                                                 itertools.permutations) else []
    if kwargs.get("repeat") is not None:
        seqs = seqs * kwargs["repeat"].as_python_constant()
    groups = fn(seqs[0], *extra) if extra else fn(*seqs)
    return _wrap_items([TupleVariable(list(g)) for g in groups])
