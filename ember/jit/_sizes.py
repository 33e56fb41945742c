"""Traced sizes: ``x.size(0)``, ``x.size()``, ``x.shape`` and ``x.numel()`` while a trace records.

PyTorch's tracer returns a size as a 0-dim tensor holding an ``aten::size`` node, so a program
like ``x.view(x.size(0), -1)`` generalises to other batch sizes. ember returns a `TracedInt`
instead: a real ``int`` (kernels, NumPy and Python code take it as one) that also remembers the
graph node computing it. The recorder puts that node, not the number, into the arguments of an
op it is passed to (slice bounds and select indices included: indexing keeps int subclasses),
and integer arithmetic on traced ints (``+ - * // % ** & | ^ << >>``, unary ``- ~ abs``,
divmod) is recorded too (as ``operator`` calls), so the replayed graph recomputes them from the
new input's shape; ``round``/``math.floor``/``math.ceil``/``math.trunc`` of an int are the int.

A traced int that becomes a plain Python value (``int(n)``, ``float(n)``, ``n / 2``,
``2 ** -n``, a comparison) is frozen into the trace; that warns like PyTorch (TracerWarning), from user code
only. ``range(n)`` and indexing use ``__index__``, which Python does not let an int subclass
override: those freeze silently.

Like the conversions of _tracing.py, ``Tensor.size`` and ``Tensor.shape`` are wrapped only while
a trace runs (jit/_trace.py's `_PATCHES`), so eager code pays nothing. A traced int is one of the tracer's
traced values (``tracer.values``, by identity), so make_fx's tracer passes its node to ops.
"""
from __future__ import annotations

import operator
import sys

from .._core.tensor import Size, Tensor
from .._functorch.make_fx import EMBER_DIR, MACHINERY_DIRS, current_tracer
from ._tracing import CONVERSIONS, is_recording, warn_at_user_frame

_INT_MSG, _FLOAT_MSG, _BOOL_MSG = (CONVERSIONS[m][0] for m in ("__int__", "__float__", "__bool__"))


def _from_user_code(depth: int = 2) -> bool:
    # `depth` frames up: the caller of the TracedInt method (ember's own code never warns)
    frame = sys._getframe(depth)
    return not frame.f_code.co_filename.startswith(EMBER_DIR)


def _live_recorder(value):
    """The recorder `value` belongs to, if that trace is recording now in user-level code."""
    recorder = value._recorder
    if recorder is not None and recorder is current_tracer() and is_recording():
        return recorder
    return None


def _binary(op, a, b):
    """Record ``op(a, b)`` where a or b is a TracedInt (the other an int or TracedInt)."""
    result = op(int.__int__(a) if isinstance(a, int) else a, int.__int__(b) if isinstance(b, int) else b)
    traced = a if isinstance(a, TracedInt) else b
    recorder = _live_recorder(traced)
    if recorder is None or isinstance(result, bool):
        return result
    if not isinstance(result, int):   # 2 ** -n: a float, which is frozen
        if _from_user_code(3):
            warn_at_user_frame(_FLOAT_MSG)
        return result
    return record_int(recorder, op, (a, b), result, sys._getframe(2))


def _unary(op):
    def method(self):
        recorder = _live_recorder(self)
        value = op(int.__int__(self))
        if recorder is None:
            return value
        return record_int(recorder, op, (self,), value, sys._getframe(1))
    method.__name__ = f"__{op.__name__.strip('_')}__"
    return method


def _identity(self, ndigits=None):
    # round(n), math.floor(n), ... of an int are n itself: it stays traced
    if ndigits is not None and ndigits < 0:   # round(n, -1) changes the value: frozen
        if _live_recorder(self) is not None and _from_user_code():
            warn_at_user_frame(_INT_MSG)
        return round(int.__int__(self), ndigits)
    return self


class TracedInt(int):
    """An int computed from a traced tensor's shape; ``_node`` is the graph node computing it."""

    def __new__(cls, value: int, node, recorder):
        self = int.__new__(cls, value)
        self._node = node
        self._recorder = recorder
        return self

    def __repr__(self):
        return int.__repr__(self)

    __str__ = __repr__
    __hash__ = int.__hash__

    def __reduce__(self):      # copies and pickles are plain ints
        return (int, (int.__int__(self),))

    def __divmod__(self, other):
        return self // other, self % other

    def __rdivmod__(self, other):
        return other // self, other % self

    __neg__, __abs__, __invert__ = _unary(operator.neg), _unary(operator.abs), _unary(operator.invert)
    __round__ = __floor__ = __ceil__ = __trunc__ = _identity

    def __pos__(self):
        return self

    # -- conversions that freeze the value: warn like PyTorch ------------------------------
    def _frozen(message, base):
        def method(self, *args):
            if _live_recorder(self) is not None and _from_user_code():
                warn_at_user_frame(message)
            return base(self, *args)
        method.__name__ = base.__name__
        return method

    __int__ = _frozen(_INT_MSG, int.__int__)
    __float__ = _frozen(_FLOAT_MSG, int.__float__)
    __truediv__ = _frozen(_FLOAT_MSG, int.__truediv__)
    __rtruediv__ = _frozen(_FLOAT_MSG, int.__rtruediv__)
    __bool__ = _frozen(_BOOL_MSG, int.__bool__)
    del _frozen


def _arith(op, swap=False):
    def method(self, other):
        if not isinstance(other, int) or isinstance(other, bool):
            if isinstance(other, float) and _live_recorder(self) is not None and _from_user_code():
                warn_at_user_frame(_FLOAT_MSG)
            return getattr(int, f"__{'r' if swap else ''}{op.__name__.strip('_')}__")(self, other)
        return _binary(op, other, self) if swap else _binary(op, self, other)
    return method


def _compare(op):
    # PyTorch records the comparison (a dead node, but it uses up value numbers) and
    # warns when its result becomes a Python bool
    base = getattr(int, f"__{op.__name__}__")

    def method(self, other):
        result = base(self, other)
        recorder = _live_recorder(self)
        if recorder is not None and _from_user_code() and result is not NotImplemented:
            warn_at_user_frame(_BOOL_MSG)
            if isinstance(other, int) and not isinstance(other, bool):
                record_int(recorder, op, (self, other), int(result), sys._getframe(1))
        return result
    method.__name__ = base.__name__
    return method


for _op in (operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod, operator.pow,
            operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift):
    setattr(TracedInt, f"__{_op.__name__.strip('_')}__", _arith(_op))
    setattr(TracedInt, f"__r{_op.__name__.strip('_')}__", _arith(_op, True))
for _op in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne):
    setattr(TracedInt, f"__{_op.__name__}__", _compare(_op))


# ---------------------------------------------------------------------------------------
# recording sizes into the tracer's graph
# ---------------------------------------------------------------------------------------
def _traced(tracer, node, value: int, frame) -> TracedInt:
    node.meta["val"] = int.__int__(value)
    tracer.locate(node, frame)
    traced = TracedInt(value, node, tracer)
    tracer.values[id(traced)] = (traced, node)
    return traced


def record_shape(tracer, t: Tensor, method: str, args: tuple, value: int, frame):
    """``t.size(dim)`` / ``t.numel()`` as a ``call_method`` node (PyTorch's ``aten::size`` /
    ``aten::numel``) and a TracedInt holding it (a plain int when `t` is no traced value: sizes of
    constants are constants)."""
    entry = tracer.values.get(id(t))
    if entry is None or entry[0] is not t:
        return value
    tracer.on_use(entry[1], t, frame)
    return _traced(tracer, tracer.graph.call_method(method, (entry[1], *args)), value, frame)


def record_int(tracer, op, operands: tuple, value: int, frame):
    """``op(*operands)`` on traced ints (an ``operator`` call node) and its TracedInt."""
    args = [tracer.graph_arg(v, frame) for v in operands]     # a traced int's node, else the int
    args = tuple(int.__int__(a) if isinstance(a, int) else a for a in args)
    return _traced(tracer, tracer.graph.call_function(op, args), value, frame)


# ---------------------------------------------------------------------------------------
# Tensor.size / Tensor.shape while tracing
# ---------------------------------------------------------------------------------------
def _shape_query(t: Tensor, method: str, dim, original):
    """What ``t.size(dim)`` / ``t.size()`` / ``t.numel()`` returns while a trace records."""
    frame = sys._getframe(2)
    if frame.f_code.co_filename.startswith(MACHINERY_DIRS + ("<ember",)):
        # shapes read by the dispatcher, the bindings or the jit itself (compiling a
        # script_if_tracing function) are its own business, not the traced program's
        return original(t) if dim is None else original(t, dim)
    tracer = current_tracer()
    if method == "numel":
        return record_shape(tracer, t, "numel", (), original(t), frame)
    if dim is not None:
        return record_shape(tracer, t, "size", (dim,), original(t, dim), frame)
    return Size(record_shape(tracer, t, "size", (d,), s, frame) for d, s in enumerate(original(t)))


def _keep_traced(original, is_list: bool):
    """An argument converter of ember.ops.argparse that hands TracedInts on as they are (the
    converters turn int subclasses into plain ints, which would freeze them)."""
    def convert(x, *args):
        out = original(x, *args)
        if not is_recording():
            return out
        if isinstance(x, TracedInt):
            return (x,) * len(out) if is_list else x
        if is_list and isinstance(x, (list, tuple)) and any(isinstance(v, TracedInt) for v in x):
            return tuple(v if isinstance(v, TracedInt) else o for v, o in zip(x, out))
        return out
    return convert


def patches() -> list:
    """(owner, name, wrapper) for Tensor.size, .shape, .numel / .nelement and the int argument
    converters (jit/_trace.py's `_PATCHES` installs them)."""
    from ..ops import argparse as ap
    original_size, original_shape = Tensor.__dict__["size"], Tensor.__dict__["shape"]
    original_numel = Tensor.__dict__["numel"]

    def size(self, dim=None):
        return _shape_query(self, "size", dim, original_size) if is_recording() else original_size(self, dim)
    size.__doc__ = original_size.__doc__

    def shape(self):
        return _shape_query(self, "size", None, original_size) if is_recording() else original_shape.fget(self)

    def numel(self):
        return _shape_query(self, "numel", None, original_numel) if is_recording() else original_numel(self)
    return [(ap, name, _keep_traced(ap.__dict__[name], is_list))
            for name, is_list in (("to_int", False), ("to_number", False), ("to_int_list", True))] + [
        (Tensor, "size", size), (Tensor, "shape", property(shape, doc=original_shape.__doc__)),
        (Tensor, "numel", numel), (Tensor, "nelement", numel)]
