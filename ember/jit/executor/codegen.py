"""The fast path: a Plan's instruction list turned into one generated Python function.

The interpreter (`interpreter.run_plan`) pays for its dispatch on every instruction; here the
same instructions become straight-line Python, registers become local variables and the jumps
become the ``if``/``while`` they were compiled from (the compiler emits If and Loop in fixed
shapes, labelled on the instructions, so the structure is read back from the list):

    JUMP_IF_FALSE c -> E ; then... ; JUMP -> X ; E: else... ; X:     ->  if c: ... else: ...
    LOOP_TEST trip < max and cond else -> X ; body... ; INC ; JUMP    ->  while cond and trip < max:
    (with a constant-true condition on entry and after every trip)    ->  for trip in range(max):

`fast_resolve` is the resolver for optimised plans: where the node types say every argument is
a Tensor (or a number where the schema takes a Scalar / a wrapped number), a call of an ember
binding (``ember.tanh``, ``x.tanh()``, ``a + b``) becomes a `DirectOp`, which computes the
dispatch key set and calls the operator's kernel table itself — what the binding would do, minus
its argument parsing. The generated code inlines that (``_k = a._keys | b._keys; r = T[0](a, b)
if _k == 1 and not TLS.include else H.call(_k, a, b)``).

    fn = generate(plan); fn(x, y)
"""
from __future__ import annotations

import keyword
import math
import operator

from ..ir.types import FloatType, IntType, TensorType
from .instructions import (CALL, INC, JUMP, JUMP_IF_FALSE, LOOP_TEST, METHOD, MOVE, RET, Const, Reg,
                           default_resolve)

# ---------------------------------------------------------------------------------------------
# direct operator calls
# ---------------------------------------------------------------------------------------------
_OPERATOR_OPS = {operator.add: "add", operator.sub: "sub", operator.mul: "mul", operator.truediv: "div",
                 operator.matmul: "matmul", operator.neg: "neg"}


class DirectOp:
    """Call `handle` with positional kernel arguments; `tensor_positions` give the key set.

    Exactly what the generated binding does after parsing: ``keys == {CPU}`` and nothing in
    the TLS include set -> the CPU kernel; otherwise the dispatcher."""
    __slots__ = ("handle", "table", "tensor_positions", "defaults", "_plan_name", "tls")

    def __init__(self, handle, tensor_positions: tuple, defaults: tuple):
        from ember._core.dispatch import tls
        self.tls = tls
        self.handle = handle
        self.table = handle.table
        self.tensor_positions = tensor_positions
        self.defaults = defaults
        self._plan_name = handle.name

    def __call__(self, *args):
        keys = 0
        for p in self.tensor_positions:
            keys |= args[p]._keys
        args = args + self.defaults
        if keys == 1 and not self.tls.include:
            return self.table[0](*args)
        return self.handle.call(keys, *args)


def _is_number(a) -> bool:
    if hasattr(a, "op"):
        if a.op == "call_function" and getattr(a.target, "name", None) == "prim::Constant":
            a = a.args[0]
        else:
            return isinstance(a.type, (IntType, FloatType))
    return type(a) in (int, float) and not (type(a) is float and not math.isfinite(a))


def _is_tensor(a) -> bool:
    return hasattr(a, "op") and isinstance(a.type, TensorType)


def _match(schema, row, args):
    """(tensor positions, default tail) if `args` fit `schema` with simple types, else None."""
    if schema.is_mutable or len(schema.returns) != 1 or schema.returns[0].type != "Tensor" \
            or schema.returns[0].is_list:
        return None
    positional = [a for a in schema.arguments if not a.kwarg_only]
    if len(args) > len(positional):
        return None
    tensors = []
    for i, (s, a) in enumerate(zip(positional, args)):
        if s.is_list or s.optional:
            return None
        if s.type == "Tensor":
            if _is_tensor(a):
                tensors.append(i)
            elif not (i > 0 and row.numbers_as_tensors and _is_number(a)):
                return None
        elif s.type == "Scalar":
            if not _is_number(a):
                return None
        else:
            return None
    if not tensors:
        return None
    defaults = []
    for s in schema.arguments[len(args):]:
        d = s.default   # passed as the binding would after parsing it (int[] -> tuple, float -> float)
        if type(d) not in (int, float, bool, type(None)) or (s.is_list and d is not None):
            return None
        if s.type == "float" and d is not None:
            d = float(d)
        defaults.append(d)
    return tuple(tensors), tuple(defaults)


def _direct(ns: str, name: str, args):
    from ember.ops import registry
    for schema, binding in registry._OVERLOADS_BY_NAME.get((ns, name), ()):
        handle = registry.op_of(binding)
        if handle is None or handle.table[0] is None:
            continue
        found = _match(schema, handle.row, args)
        if found is not None:
            return DirectOp(handle, *found)
        if _match_types_loosely(schema, args):
            return None   # the binding's resolver would pick this overload: do not guess
    return None


def _match_types_loosely(schema, args) -> bool:
    positional = [a for a in schema.arguments if not a.kwarg_only]
    return len(args) <= len(positional)


def fast_resolve(node):
    """The callable a call node of an optimised plan runs (a DirectOp where exact)."""
    import ember
    from ember.ops import registry
    if node.op == "call_function" and not node.kwargs:
        t = node.target
        name = _OPERATOR_OPS.get(t) if _hashable(t) else None
        if name is not None and _is_tensor(node.args[0]):
            method = getattr(ember.Tensor, name, None)
            dunder = getattr(ember.Tensor, "__" + ("truediv" if name == "div" else name) + "__", None)
            # `a + b` runs Tensor.__add__, which is the `add` method binding (and `a / b` the
            # rounding-mode switch of `div`): then the method's overloads decide the operator.
            if dunder is not None and (dunder is method or (name == "div" and _is_binding(dunder))):
                op = _direct("Tensor", name, node.args)
                if op is not None:
                    return op
        entry = registry.exported_as(t)
        if entry is not None and _is_binding(t):
            op = _direct(entry[0], entry[1], node.args)
            if op is not None:
                return op
    return default_resolve(node)


def _is_binding(fn) -> bool:
    """True for ember's generated bindings, their overload resolvers and div's rounding-mode
    switch: functions that parse arguments by the schema and call the operator, and nothing
    else (``registry.ops_of``). Hand-written Python functions (``F.relu(x, inplace=False)``, ...)
    are called as they are."""
    from ember.ops import registry
    return bool(registry.ops_of(fn))


def _hashable(t) -> bool:
    try:
        hash(t)
        return True
    except TypeError:
        return False


def resolve_method(node):
    """A DirectOp for a Tensor method call node, or None."""
    import ember
    from ember.ops import registry
    if node.kwargs or not node.args or not _is_tensor(node.args[0]):
        return None
    name = node.target
    method = registry.METHODS.get(name)
    if method is None or getattr(ember.Tensor, name, None) is not method or not _is_binding(method):
        return None
    return _direct("Tensor", name, node.args)


# ---------------------------------------------------------------------------------------------
# code generation
# ---------------------------------------------------------------------------------------------
_LITERALS = (int, bool, str, type(None))


class _Gen:
    def __init__(self, plan, direct_methods: bool):
        self.plan = plan
        self.code = plan.instructions
        self.ns = {"slice": slice}
        self.lines: list = []
        self.line_pc: dict = {}         # generated line number -> instruction index
        self.direct_methods = direct_methods

    def name(self, value, prefix: str) -> str:
        n = f"{prefix}{len(self.ns)}"
        self.ns[n] = value
        return n

    def operand(self, op) -> str:
        if type(op) is Reg:
            return f"r{op.index}"
        if type(op) is Const:
            v = op.value
            if type(v) in _LITERALS or (type(v) is float and math.isfinite(v)):
                return repr(v)
            return self.name(v, "k")
        items = op.items
        if op.kind is dict:
            return "{" + ", ".join(f"{self.operand(k)}: {self.operand(v)}" for k, v in items) + "}"
        inner = ", ".join(self.operand(x) for x in items)
        if op.kind is list:
            return f"[{inner}]"
        if op.kind is slice:
            return f"slice({inner})"
        return f"({inner},)"

    def args(self, args, kwargs) -> str:
        parts = [self.operand(a) for a in args]
        parts += [f"{k}={self.operand(v)}" if k.isidentifier() and not keyword.iskeyword(k)
                  else f"**{{{k!r}: {self.operand(v)}}}" for k, v in kwargs.items()]
        return ", ".join(parts)

    def emit(self, indent: int, text: str, pc: int | None = None) -> None:
        self.lines.append("    " * indent + text)
        if pc is not None:
            self.line_pc[len(self.lines)] = pc

    def block(self, start: int, end: int, indent: int) -> None:
        pc = start
        emitted = len(self.lines)
        while pc < end:
            ins = self.code[pc]
            op = ins.op
            if op == CALL:
                self.call(ins, pc, indent)
            elif op == METHOD:
                self.method(ins, pc, indent)
            elif op == MOVE:
                if ins.dsts:
                    self.emit(indent, f"{', '.join(f'r{d}' for d in ins.dsts)} = "
                                      f"{', '.join(self.operand(s) for s in ins.srcs)}", pc)
            elif op == INC:
                self.emit(indent, f"{self.operand(ins.args[0])} += 1", pc)
            elif op == JUMP_IF_FALSE:
                else_start = ins.target
                jump = self.code[else_start - 1]
                assert jump.op == JUMP and jump.label == "else", "executor codegen: unexpected If layout"
                self.emit(indent, f"if {self.operand(ins.args[0])}:", pc)
                self.block(pc + 1, else_start - 1, indent + 1)
                self.emit(indent, "else:")
                self.block(else_start, jump.target, indent + 1)
                pc = jump.target
                continue
            elif op == LOOP_TEST:
                pc = self.loop(ins, pc, indent)
                continue
            elif op == RET:
                self.emit(indent, f"return {self.operand(ins.args[0])}", pc)
            elif op == JUMP:
                raise AssertionError(f"executor codegen: stray JUMP at {pc}")
            pc += 1
        if len(self.lines) == emitted:
            self.emit(indent, "pass")

    def loop(self, ins, pc: int, indent: int) -> int:
        trip, max_trips, cond = ins.args
        end = ins.target                       # first instruction after the loop
        back, inc, last_move = self.code[end - 1], self.code[end - 2], self.code[end - 3]
        init = self.code[pc - 1]
        assert back.op == JUMP and inc.op == INC and last_move.op == MOVE and init.op == MOVE
        always = (_is_true(init.srcs[1]) and last_move.srcs and _is_true(last_move.srcs[0]))
        if always:   # for-range: the body's trip parameter is the loop variable; no INC, no condition
            first = self.code[pc + 1]       # MOVE trip -> the body's `i` parameter
            moves_trip = first.op == MOVE and len(first.dsts) == 1 and type(first.srcs[0]) is Reg \
                and first.srcs[0].index == trip.index
            var = f"r{first.dsts[0]}" if moves_trip else self.operand(trip)
            start = pc + 2 if var != self.operand(trip) else pc + 1
            self.emit(indent, f"for {var} in range({self.operand(max_trips)}):", pc)
            self.block(start, end - 3, indent + 1)
            move = last_move
            if len(move.dsts) > 1:
                self.emit(indent + 1, f"{', '.join(f'r{d}' for d in move.dsts[1:])} = "
                                      f"{', '.join(self.operand(s) for s in move.srcs[1:])}", end - 3)
        else:
            self.emit(indent, f"while {self.operand(cond)} and {self.operand(trip)} < "
                              f"{self.operand(max_trips)}:", pc)
            self.block(pc + 1, end - 1, indent + 1)
        return end

    def call(self, ins, pc: int, indent: int) -> None:
        fn = ins.fn
        out = f"r{ins.out}"
        if isinstance(fn, DirectOp):
            self.direct(fn, ins.args, out, pc, indent)
            return
        self.emit(indent, f"{out} = {self.name(fn, 'f')}({self.args(ins.args, ins.kwargs)})", pc)

    def direct(self, fn: DirectOp, args, out: str, pc: int, indent: int) -> None:
        ops = [self.operand(a) for a in args] + [repr(d) for d in fn.defaults]
        keys = " | ".join(f"{ops[p]}._keys" for p in fn.tensor_positions)
        table, handle = self.name(fn.table, "T"), self.name(fn.handle, "H")
        self.emit(indent, f"_k = {keys}", pc)
        self.emit(indent, f"{out} = {table}[0]({', '.join(ops)}) if _k == 1 and not TLS.include "
                          f"else {handle}.call(_k, {', '.join(ops)})", pc)

    def method(self, ins, pc: int, indent: int) -> None:
        if self.direct_methods and ins.node is not None:
            fn = resolve_method(ins.node)
            if fn is not None:
                self.direct(fn, ins.args, f"r{ins.out}", pc, indent)
                return
        name = ins.fn
        recv = self.operand(ins.args[0])
        if type(ins.args[0]) is not Reg:
            recv = f"({recv})"
        rest = self.args(ins.args[1:], ins.kwargs)
        if name.isidentifier() and not keyword.iskeyword(name):
            self.emit(indent, f"r{ins.out} = {recv}.{name}({rest})", pc)
        else:
            self.emit(indent, f"r{ins.out} = getattr({recv}, {name!r})({rest})", pc)


def _is_true(op) -> bool:
    return type(op) is Const and op.value is True


def generate(plan, *, direct_methods: bool | None = None):
    """A Python function running `plan` (inputs positionally, one per graph placeholder).

    `direct_methods`: let Tensor method calls become direct operator calls (default: when the
    plan was compiled with `fast_resolve`)."""
    from ember._core.dispatch import tls
    if direct_methods is None:
        direct_methods = any(isinstance(i.fn, DirectOp) for i in plan.instructions) or \
            getattr(plan, "optimized", False)
    g = _Gen(plan, direct_methods)
    g.ns["TLS"] = tls
    g.ns["_annotate"] = _annotate_from_traceback
    g.emit(0, f"def ember_jit_plan({', '.join(f'r{r}' for r in plan.input_registers)}):")
    g.emit(1, "try:")
    body_start = len(g.lines)
    g.block(0, len(plan.instructions), 2)
    if len(g.lines) == body_start:
        g.emit(2, "return None")
    g.emit(1, "except BaseException as _e:")
    g.emit(2, "_annotate(_e, _LINES, _CODE)")
    g.emit(2, "raise")
    source = "\n".join(g.lines) + "\n"
    g.ns["_LINES"] = g.line_pc
    g.ns["_CODE"] = plan.instructions
    filename = f"<ember.jit plan {id(plan):x}>"
    exec(compile(source, filename, "exec"), g.ns)
    fn = g.ns["ember_jit_plan"]
    fn.__source__ = source
    plan.source = source
    return fn


def _annotate_from_traceback(exc, line_pc, code) -> None:
    from .interpreter import _annotate
    tb = exc.__traceback__
    if tb is None:
        return
    pc = line_pc.get(tb.tb_lineno)
    if pc is not None:
        _annotate(exc, code[pc])
