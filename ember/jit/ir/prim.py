"""The ``prim::`` operators of the script IR: a table, one entry per operator.

Tensor work in a scripted graph calls ember's own functions, Tensor methods (``call_method``
nodes) and ``operator``/``math``/``builtins`` functions directly; the operators below are the
rest: constants, control flow, containers, module attributes and calls, profiling and checks.
Each entry says how to run it (``fn``; None where the executor handles it structurally: If,
Loop, CallFunction, profile, FusionGroup) and what the passes may do with it:

- ``pure``: no side effects, so an unused result may be deleted (DCE).
- ``cse``: deterministic with an immutable result, so two equal calls may be merged (CSE,
  constant propagation). Lists are mutable: ListConstruct is pure but not cse.

    node = graph.call_function(prim.Constant, (1.5,))     # %c : float = prim::Constant[value=1.5]()
    prim.Constant.name                                     # 'prim::Constant'
    prim.by_name("prim::If") is prim.If                    # True
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True, eq=False)
class PrimOp:
    """One row of the table. Calling it runs `fn` (so an fx Interpreter can run simple graphs)."""
    name: str
    fn: Callable | None
    pure: bool
    cse: bool
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
    # name                    fn                            pure   cse    meaning
    ("prim::Constant",        lambda value: value,          True,  True,  "args=(value,): a constant (int, float, bool, str, None, dtype, device, tuple of those, Tensor)"),
    ("prim::If",              None,                         True,  False, "args=(cond,), blocks=[then, else] with no params; value: tuple of the blocks' returns"),
    ("prim::Loop",            None,                         True,  False, "args=(max_trip_count, start_cond, *carried); body block params (i, *carried), returns (cond, *carried); value: tuple of final carried"),
    ("prim::ListConstruct",   lambda *xs: list(xs),         True,  False, "a new list of the args"),
    ("prim::TupleConstruct",  lambda *xs: tuple(xs),        True,  True,  "a tuple of the args"),
    ("prim::DictConstruct",   _dict_construct,              True,  False, "args=(k0, v0, k1, v1, ...)"),
    ("prim::TupleUnpack",     _tuple_unpack,                True,  True,  "args=(tuple,); outputs read by operator.getitem nodes"),
    ("prim::ListUnpack",      _list_unpack,                 True,  False, "args=(list, count); raises ValueError on a length mismatch"),
    ("prim::TupleIndex",      lambda t, i: t[i],            True,  True,  "args=(tuple, index)"),
    ("prim::RaiseException",  _raise,                       False, False, "args=(message, exception class name): raise RAISABLE[name](message), else RuntimeError"),
    ("prim::Uninitialized",   lambda: None,                 True,  True,  "a value on a path that always raises or returns"),
    ("prim::unchecked_cast",  lambda x: x,                  True,  True,  "Optional[T] refined to T (after `is not None`)"),
    ("prim::GetAttr",         getattr,                      True,  False, "args=(module, name): a parameter, buffer, submodule or attribute"),
    ("prim::SetAttr",         _set_attr,                    False, False, "args=(module, name, value)"),
    ("prim::CallMethod",      _call_method,                 False, False, "args=(module, method_name, *inputs); the Inline pass replaces scripted methods by their graph"),
    ("prim::CallFunction",    None,                         False, False, "args=inputs, meta['callee'] a ScriptFunction; the Inline pass replaces it by the callee's graph"),
    ("prim::Print",           _print,                       False, False, "print(*args)"),
    ("prim::IsGradEnabled",   _is_grad_enabled,             False, False, "the current grad mode (a bool); impure: it reads state that SetGradEnabled changes"),
    ("prim::SetGradEnabled",  _set_grad_enabled,            False, False, "args=(enabled,): set the grad mode (`with no_grad():` sets it, then restores the IsGradEnabled value)"),
    ("prim::profile",         None,                         False, False, "args=(value,): the profiling executor records its dtype/shape/requires_grad in meta['profiled_type']"),
    ("prim::TypeCheck",       None,                         True,  False, "args=(*tensors,), meta['types']: True if every tensor matches its observed type"),
    ("prim::FusionGroup",     None,                         True,  False, "args=inputs, meta['subgraph']: a fused region (the fuser plugs in here)"),
]

_TABLE: dict = {}
for _name, _fn, _pure, _cse, _doc in _ROWS:
    _op = PrimOp(_name, _fn, _pure, _cse, _doc)
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
