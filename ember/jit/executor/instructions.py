"""Compile a script graph (nested If/Loop blocks included) into a flat instruction list.

TorchScript's interpreter runs a linear list of instructions over a register file instead of
walking the graph (seed 001: ``InterpreterStateImpl::runImpl``). This is ember's reference
version of that state machine (the executor's fast path is Python generated from the graph,
``codegen.generate``; this list is what ``get_debug_state`` lists and what runs with
``config.use_codegen = False``): every value node gets a register, nested blocks are laid out
inline with jumps, and as much as possible is decided here, once, rather than on every run:

- constants (``prim::Constant``) are baked into the instructions that read them (no register);
- call targets are resolved to Python callables (a PrimOp's ``fn``, a profiling recorder, a
  nested plan for a callee graph or a fusion group's subgraph).

Opcodes (``Instr.op``):

    CALL  fn, args, kwargs -> out        out = fn(*args, **kwargs)
    METHOD name, args, kwargs -> out     out = getattr(args[0], name)(*args[1:], **kwargs)
    MOVE  srcs -> dsts                   parallel copy (block returns -> node outputs / loop-carried)
    JUMP  target
    JUMP_IF_FALSE cond, target           an If's condition
    LOOP_TEST trip, max, cond, target    leave the loop (jump to target) unless cond and trip < max
    INC   trip                           trip += 1 (end of a loop body)
    RET   value

Values of multi-output nodes (If, Loop) never exist as tuples: the ``operator.getitem`` nodes
reading their outputs are given the registers the blocks' MOVEs write, and compile to nothing
(a tuple is built only if something else reads the node itself).

    plan = compile_graph(graph)
    print(plan)             # numbered instruction listing
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ember.fx.graph import Graph
from ember.fx.node import Node

from ..ir import block_returns, prim

CALL, METHOD, MOVE, JUMP, JUMP_IF_FALSE, LOOP_TEST, INC, RET = range(8)
OP_NAMES = ["CALL", "METHOD", "MOVE", "JUMP", "JUMP_IF_FALSE", "LOOP_TEST", "INC", "RET"]


class Reg(NamedTuple):
    """An operand read from register `index` at run time."""
    index: int

    def __repr__(self):
        return f"r{self.index}"


class Const(NamedTuple):
    """An operand known when the plan is compiled (a prim::Constant or a literal argument)."""
    value: Any

    def __repr__(self):
        text = repr(self.value)
        return text if len(text) <= 40 else text[:37] + "..."


@dataclass
class Instr:
    """One instruction; which fields mean something depends on `op` (see the module docstring)."""
    op: int
    fn: Any = None                  # CALL: the callable; METHOD: the method name
    args: tuple = ()                # operands (Reg / Const)
    kwargs: dict = field(default_factory=dict)
    out: int | None = None          # destination register
    target: int | None = None       # JUMP*, LOOP_TEST: instruction index
    srcs: tuple = ()                # MOVE
    dsts: tuple = ()                # MOVE
    node: Node | None = None        # the node it came from (errors, printing)

    def __str__(self):
        name = OP_NAMES[self.op]
        if self.op == CALL:
            what = _fn_name(self.fn)
            if self.node is not None and isinstance(self.node.target, prim.PrimOp) and \
                    not hasattr(self.fn, "_plan_name"):
                what = self.node.target.name
            return f"{name:<14}r{self.out} = {what}({_args_text(self.args, self.kwargs)})"
        if self.op == METHOD:
            return f"{name:<14}r{self.out} = {self.args[0]!r}.{self.fn}({_args_text(self.args[1:], self.kwargs)})"
        dsts, srcs = ", ".join(f"r{d}" for d in self.dsts), ", ".join(repr(s) for s in self.srcs)
        return f"{name:<14}" + _LISTING[self.op].format(a=self.args, target=self.target, dsts=dsts, srcs=srcs)


# how the other opcodes list their operands (`a`: args)
_LISTING = {MOVE: "{dsts} <- {srcs}", JUMP: "-> {target}", JUMP_IF_FALSE: "{a[0]!r} -> {target}",
            LOOP_TEST: "{a[0]!r} < {a[1]!r} and {a[2]!r} else -> {target}", INC: "{a[0]!r} += 1",
            RET: "{a[0]!r}"}


def _fn_name(fn) -> str:
    from ember.ops.registry import public_name
    if isinstance(getattr(fn, "_plan_name", None), str):
        return fn._plan_name
    public = public_name(fn)       # ember.cat, ember.nn.functional.relu: where users find it
    if public is not None:
        return public
    if isinstance(fn, prim.PrimOp):
        return fn.name
    name = getattr(fn, "name", None) or getattr(fn, "__qualname__", None)
    module = getattr(fn, "__module__", None)
    if module and isinstance(name, str) and module not in ("builtins",) and "." not in name:
        return f"{module}.{name}"
    return str(name or fn)


def _args_text(args, kwargs) -> str:
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return ", ".join(parts)


class Plan:
    """A compiled graph: instructions over `num_registers` registers; inputs land in
    registers ``input_registers`` (one per placeholder, in order)."""

    def __init__(self, graph: Graph, instructions: list, num_registers: int, input_registers: list,
                 register_names: dict):
        self.graph = graph
        self.instructions = instructions
        self.num_registers = num_registers
        self.input_registers = input_registers
        self.register_names = register_names     # register -> node name (for printing/debugging)
        self.source = None                       # the Python the executor runs for this graph (GraphExecutor sets it)

    def __str__(self):
        width = len(str(len(self.instructions)))
        lines = [f"plan({', '.join(f'r{r}: %{self.register_names.get(r, r)}' for r in self.input_registers)}) "
                 f"{self.num_registers} registers"]
        for pc, ins in enumerate(self.instructions):
            note = f"   # %{ins.node.name}" if ins.node is not None and ins.op in (CALL, METHOD) else ""
            lines.append(f"  {pc:>{width}}  {ins}{note}")
        return "\n".join(lines)

    __repr__ = __str__


class _Compiler:
    def __init__(self, graph: Graph, resolve):
        self.graph = graph
        self.resolve = resolve            # node -> callable for special call_function targets
        self.regs: dict = {}              # node -> register index
        self.names: dict = {}
        self.code: list = []
        self.count = 0
        self._multi: set = set()          # If/Loop nodes whose getitem readers got registers
        self._tuple_after: dict = {}      # multi-output nodes read as a whole: their output registers

    def new_reg(self, node: Node | None = None) -> int:
        r = self.count
        self.count += 1
        if node is not None:
            self.regs[node] = r
            self.names[r] = node.name
        return r

    def operand(self, a):
        if isinstance(a, Node):
            if a.op == "call_function" and a.target is prim.Constant:
                return Const(a.args[0])
            if a not in self.regs:
                raise RuntimeError(f"executor: value %{a.name} is used before it is defined "
                                   f"(or comes from a block that does not enclose its use)")
            return Reg(self.regs[a])
        kind = next((k for k in _BUILDERS if isinstance(a, k)), None)
        if kind is None:
            return Const(a)
        flat = (a.start, a.stop, a.step) if kind is slice else [x for kv in a.items() for x in kv] \
            if kind is dict else a
        items = tuple(self.operand(x) for x in flat)
        if all(type(x) is Const for x in items):
            return Const(type(a)(x.value for x in items) if type(a) in (list, tuple) else a)
        # some items are registers: build the container into a register of its own right before
        # the instruction reading it
        out = self.new_reg()
        self.emit(Instr(CALL, _BUILDERS[kind], items, out=out))
        return Reg(out)

    def emit(self, ins: Instr) -> int:
        self.code.append(ins)
        return len(self.code) - 1

    # -- blocks -----------------------------------------------------------------------------
    def block(self, graph: Graph) -> list:
        """Compile a block's nodes; returns the operands of what its output node returns."""
        for node in graph.nodes:
            if node.op == "placeholder":
                if node not in self.regs:
                    self.new_reg(node)
                continue
            if node.op == "output":
                value = node.args[0] if node.args else None
                if graph.parent_node is None:
                    return [self.operand(value)]
                return [self.operand(v) for v in value]
            self.node(node)
        return []

    def node(self, node: Node) -> None:
        if node.op == "call_function":
            t = node.target
            if t is prim.Constant:
                return
            if t is prim.If:
                return self.if_node(node)
            if t is prim.Loop:
                return self.loop_node(node)
            if t is operator.getitem and isinstance(node.args[0], Node) and node.args[0] in self._multi \
                    and isinstance(node.args[1], int):
                return  # register already assigned by the If/Loop
            fn = self.resolve(node)
            self.emit(Instr(CALL, fn, tuple(self.operand(a) for a in node.args),
                            {k: self.operand(v) for k, v in node.kwargs.items()},
                            out=self.new_reg(node), node=node))
        elif node.op == "call_method":
            self.emit(Instr(METHOD, node.target, tuple(self.operand(a) for a in node.args),
                            {k: self.operand(v) for k, v in node.kwargs.items()},
                            out=self.new_reg(node), node=node))
        else:
            raise NotImplementedError(f"executor: {node.op} nodes are not part of the script IR (%{node.name})")

    def output_registers(self, node: Node, count: int) -> list:
        """Registers for a multi-output node's outputs: those of its getitem readers."""
        outs = [None] * count
        other_users = False
        for user in node.users:
            if user.op == "call_function" and user.target is operator.getitem and user.args[0] is node \
                    and isinstance(user.args[1], int) and 0 <= user.args[1] < count and not user.kwargs:
                if outs[user.args[1]] is None:
                    outs[user.args[1]] = self.new_reg(user)
                else:
                    self.regs[user] = outs[user.args[1]]
                    self.names.setdefault(outs[user.args[1]], user.name)
            else:
                other_users = True
        outs = [r if r is not None else self.new_reg() for r in outs]
        self._multi.add(node)
        if other_users:  # something reads the tuple itself: build it after the node
            self._tuple_after[node] = outs
        return outs

    def finish_multi(self, node: Node, outs: list) -> None:
        if node in self._tuple_after:
            self.emit(Instr(CALL, _make_tuple, tuple(Reg(r) for r in outs), out=self.new_reg(node), node=node))

    def if_node(self, node: Node) -> None:
        then_block, else_block = node.blocks
        count = len(block_returns(then_block))
        outs = self.output_registers(node, count)
        jif = self.emit(Instr(JUMP_IF_FALSE, args=(self.operand(node.args[0]),), node=node))
        rets = self.block(then_block)
        self.emit(Instr(MOVE, srcs=tuple(rets), dsts=tuple(outs), node=node))
        jmp = self.emit(Instr(JUMP, node=node))
        self.code[jif].target = len(self.code)
        rets = self.block(else_block)
        self.emit(Instr(MOVE, srcs=tuple(rets), dsts=tuple(outs), node=node))
        self.code[jmp].target = len(self.code)
        self.finish_multi(node, outs)

    def loop_node(self, node: Node) -> None:
        body = node.blocks[0]
        max_trips, start_cond, *init = node.args
        outs = self.output_registers(node, len(init))
        params = [n for n in body.nodes if n.op == "placeholder"]
        for p in params:
            self.new_reg(p)
        trip, cond = self.new_reg(), self.new_reg()
        self.names[trip], self.names[cond] = f"{node.name}.trip", f"{node.name}.cond"
        carried = [self.regs[p] for p in params[1:]]
        self.emit(Instr(MOVE, srcs=(Const(0), self.operand(start_cond), *[self.operand(a) for a in init]),
                        dsts=(trip, cond, *carried), node=node))
        test = self.emit(Instr(LOOP_TEST, args=(Reg(trip), self.operand(max_trips), Reg(cond)), node=node))
        self.emit(Instr(MOVE, srcs=(Reg(trip),), dsts=(self.regs[params[0]],), node=node))
        rets = self.block(body)
        self.emit(Instr(MOVE, srcs=tuple(rets), dsts=(cond, *carried), node=node))
        self.emit(Instr(INC, args=(Reg(trip),), node=node))
        self.emit(Instr(JUMP, target=test, node=node))
        self.code[test].target = len(self.code)
        self.emit(Instr(MOVE, srcs=tuple(Reg(r) for r in carried), dsts=tuple(outs), node=node))
        self.finish_multi(node, outs)


def _make_tuple(*xs):
    return xs


def _make_list(*xs):
    return list(xs)


def _make_dict(*keys_and_values):
    return dict(zip(keys_and_values[::2], keys_and_values[1::2]))


# a list/tuple/dict/slice argument holding registers (``ember.cat([a, b])``) runs as a call of these
_BUILDERS = {list: _make_list, tuple: _make_tuple, dict: _make_dict, slice: slice}


def compile_graph(graph: Graph, resolve=None) -> Plan:
    """Compile `graph` into a Plan. `resolve(node) -> callable` picks the function a
    call_function node runs (default: ``codegen.default_resolve``, what generated plans run)."""
    from .codegen import default_resolve
    c = _Compiler(graph, resolve or default_resolve)
    inputs = []
    for node in graph.nodes:
        if node.op == "placeholder":
            inputs.append(c.new_reg(node))
    rets = c.block(graph)
    c.emit(Instr(RET, args=(rets[0] if rets else Const(None),)))
    return Plan(graph, c.code, c.count, inputs, c.names)

