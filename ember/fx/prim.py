"""The ``prim::`` operators of the script IR: a table, one row per operator.

Tensor work in a scripted graph calls ember's own functions, Tensor methods (``call_method``
nodes) and ``operator``/``math``/``builtins`` functions directly; the operators below are the
rest: constants, control flow, containers, module attributes and calls, profiling and checks.
Each row says how to run it (``fn``; None where the executor handles it structurally: If,
Loop, CallFunction, profile, FusionGroup) and what the passes may assume about it, in the
columns of the op-properties table (``ember.ops.properties.OpProperties``): ``PURE`` may be
deleted when unused and merged with an equal call; ``NO_CSE`` may be deleted but not merged
(a fresh list, a value that depends on state, a structural node); ``EFFECT`` stays;
``OPAQUE`` may write anything it reaches. If and Loop are as pure as their blocks.

    node = graph.call_function(prim.Constant, (1.5,))     # %c : float = prim::Constant[value=1.5]()
    prim.Constant.name                                     # 'prim::Constant'
    prim.by_name("prim::If") is prim.If                    # True
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ember.ops.properties import OpProperties


@dataclass(frozen=True, eq=False)
class PrimOp:
    """One row of the table. Calling it runs `fn` (so an fx Interpreter can run simple graphs)."""
    name: str
    fn: Callable | None
    properties: OpProperties
    doc: str = ""

    def __call__(self, *args, **kwargs):
        if self.fn is None:
            raise NotImplementedError(f"{self.name} is run by the graph executor, not called directly")
        return self.fn(*args, **kwargs)

    @property
    def __name__(self) -> str:  # how fx names nodes: prim::TupleConstruct -> TupleConstruct
        return self.name.split("::", 1)[1]

    def __repr__(self) -> str:
        return self.name


PURE = OpProperties(aliases_args=True)             # may hold or return its arguments
NO_CSE = OpProperties(aliases_args=True, cse_safe=False)
STATE = OpProperties(nondeterministic=True)         # reads state that changes while a graph runs
EFFECT = OpProperties(side_effects=True)
OPAQUE = OpProperties(mutates=("*",), side_effects=True)
GRAD_SWITCH = OpProperties(side_effects=True, grad_mode_switch=True)


# The exception classes prim::RaiseException raises by name: the errors of ordinary computations.
# Any other name raises RuntimeError (a user's own exception class, which a graph cannot hold), and
# a saved file naming one is refused by ember.jit.load. Left out on purpose: SystemExit,
# KeyboardInterrupt and GeneratorExit (process and generator control; TorchScript cannot raise
# them either), StopIteration and StopAsyncIteration (they would silently end the loop of whoever
# called the program), and OS/system errors (a graph does no I/O).
RAISABLE = {cls.__name__: cls for cls in (
    Exception, RuntimeError, ValueError, TypeError, IndexError, KeyError, LookupError, AssertionError,
    ArithmeticError, ZeroDivisionError, OverflowError, FloatingPointError, NotImplementedError, AttributeError)}


def _raise(message: str, exception_name: str = "Exception"):
    raise RAISABLE.get(exception_name, RuntimeError)(message)


def _list_unpack(values, count: int):
    if len(values) != count:
        raise ValueError(f"prim::ListUnpack: expected {count} elements in a list, got {len(values)}")
    return tuple(values)


def _tuple_unpack(values):
    return tuple(values)


def _dict_construct(*keys_and_values):
    return dict(zip(keys_and_values[0::2], keys_and_values[1::2]))


def _call_method(obj, name: str, *args):
    return getattr(obj, name)(*args)


def _set_attr(obj, name: str, value):
    setattr(obj, name, value)


def _print(*values):
    print(*values)


def _is_grad_enabled() -> bool:
    from ember.autograd.grad_mode import is_grad_enabled
    return is_grad_enabled()


def _set_grad_enabled(enabled: bool) -> None:
    # ember's grad mode is thread-local state; the frontend pairs every set with a restore
    # of the value read by IsGradEnabled, and the executor restores it when a run raises.
    from ember.autograd.grad_mode import _set_enabled
    _set_enabled(bool(enabled))


_ROWS = [
    # name                    fn                            properties  meaning
    ("prim::Constant",        lambda value: value,          PURE,    "args=(value,): a constant (int, float, bool, str, None, dtype, device, tuple of those, Tensor)"),
    ("prim::If",              None,                         NO_CSE,  "args=(cond,), blocks=[then, else] with no params; value: tuple of the blocks' returns"),
    ("prim::Loop",            None,                         NO_CSE,  "args=(max_trip_count, start_cond, *carried); body block params (i, *carried), returns (cond, *carried); value: tuple of final carried"),
    ("prim::ListConstruct",   lambda *xs: list(xs),         NO_CSE,  "a new list of the args"),
    ("prim::TupleConstruct",  lambda *xs: tuple(xs),        PURE,    "a tuple of the args"),
    ("prim::DictConstruct",   _dict_construct,              NO_CSE,  "args=(k0, v0, k1, v1, ...)"),
    ("prim::TupleUnpack",     _tuple_unpack,                PURE,    "args=(tuple,); outputs read by operator.getitem nodes"),
    ("prim::ListUnpack",      _list_unpack,                 NO_CSE,  "args=(list, count); raises ValueError on a length mismatch"),
    ("prim::TupleIndex",      lambda t, i: t[i],            PURE,    "args=(tuple, index)"),
    ("prim::RaiseException",  _raise,                       EFFECT,  "args=(message, exception class name): raise RAISABLE[name](message), else RuntimeError"),
    ("prim::Uninitialized",   lambda: None,                 PURE,    "a value on a path that always raises or returns"),
    ("prim::unchecked_cast",  lambda x: x,                  PURE,    "Optional[T] refined to T (after `is not None`)"),
    ("prim::GetAttr",         getattr,                      STATE,   "args=(module, name): a parameter, buffer, submodule or attribute"),
    ("prim::SetAttr",         _set_attr,                    OPAQUE,  "args=(module, name, value)"),
    ("prim::CallMethod",      _call_method,                 OPAQUE,  "args=(module, method_name, *inputs); the Inline pass replaces scripted methods by their graph"),
    ("prim::CallFunction",    None,                         OPAQUE,  "args=inputs, meta['callee'] a ScriptFunction; the Inline pass replaces it by the callee's graph"),
    ("prim::Print",           _print,                       EFFECT,  "print(*args)"),
    ("prim::IsGradEnabled",   _is_grad_enabled,             STATE,   "the current grad mode (a bool), which SetGradEnabled changes"),
    ("prim::SetGradEnabled",  _set_grad_enabled,            GRAD_SWITCH, "args=(enabled,): set the grad mode (`with no_grad():` sets it, then restores the IsGradEnabled value)"),
    ("prim::profile",         None,                         NO_CSE,  "args=(value,): the profiling executor records its dtype/shape/requires_grad in meta['profiled_type']"),
    ("prim::TypeCheck",       None,                         STATE,   "args=(*tensors,), meta['types']: True if every tensor matches its observed type"),
    ("prim::FusionGroup",     None,                         NO_CSE,  "args=inputs, meta['subgraph']: a fused region (the fuser plugs in here)"),
]

_TABLE: dict = {}
for _name, _fn, _properties, _doc in _ROWS:
    _op = PrimOp(_name, _fn, _properties, _doc)
    _TABLE[_name] = _op
    globals()[_name.split("::", 1)[1]] = _op

profile = _TABLE["prim::profile"]


def by_name(name: str) -> PrimOp:
    """The PrimOp called `name` ("prim::If"); KeyError naming it otherwise."""
    try:
        return _TABLE[name]
    except KeyError:
        raise KeyError(f"unknown prim operator {name!r}") from None


def all_ops() -> list:
    """Every PrimOp, in table order."""
    return list(_TABLE.values())


def is_prim(target) -> bool:
    """True if `target` is one of this table's operators."""
    return isinstance(target, PrimOp)
