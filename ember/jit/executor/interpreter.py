"""Run a Plan's instructions over a register file (seed 001: ``InterpreterStateImpl::runImpl``).

`run_plan` is the readable reference loop: one ``while pc < n`` over the instructions, the
opcode picked by ``if`` chains ordered by frequency (CALL first). The fast path is
`codegen.generate`, Python written from the graph itself by ember.fx's code generator; both are
tested against ``ember.jit.ir.evaluate.evaluate``.

    plan = compile_graph(graph)
    run_plan(plan, [x, y])
"""
from __future__ import annotations

from .instructions import CALL, INC, JUMP, JUMP_IF_FALSE, LOOP_TEST, METHOD, MOVE, Reg


def _value(op, regs):
    """An operand's value (a register or a constant)."""
    return regs[op.index] if type(op) is Reg else op.value


def run_plan(plan, inputs) -> object:
    """Run `plan` on `inputs` (one per graph placeholder); returns the graph's output value."""
    if len(inputs) != len(plan.input_registers):
        raise TypeError(f"executor: the graph takes {len(plan.input_registers)} inputs, got {len(inputs)}")
    regs = [None] * plan.num_registers
    for r, v in zip(plan.input_registers, inputs):
        regs[r] = v
    code = plan.instructions
    n = len(code)
    pc = 0
    while pc < n:
        ins = code[pc]
        op = ins.op
        if op == CALL or op == METHOD:
            args = [_value(a, regs) for a in ins.args]
            kwargs = {k: _value(v, regs) for k, v in ins.kwargs.items()} if ins.kwargs else None
            try:
                if op == CALL:
                    regs[ins.out] = ins.fn(*args, **kwargs) if kwargs else ins.fn(*args)
                else:
                    method = getattr(args[0], ins.fn)
                    regs[ins.out] = method(*args[1:], **kwargs) if kwargs else method(*args[1:])
            except Exception as e:
                annotate(e, ins.node)
                raise
            pc += 1
        elif op == MOVE:
            values = [_value(s, regs) for s in ins.srcs]
            for d, v in zip(ins.dsts, values):
                regs[d] = v
            pc += 1
        elif op == JUMP:
            pc = ins.target
        elif op == JUMP_IF_FALSE:
            pc = pc + 1 if _value(ins.args[0], regs) else ins.target
        elif op == LOOP_TEST:
            trip, max_trips, cond = ins.args
            if regs[cond.index] and regs[trip.index] < _value(max_trips, regs):
                pc += 1
            else:
                pc = ins.target
        elif op == INC:
            regs[ins.args[0].index] += 1
            pc += 1
        else:  # RET
            return _value(ins.args[0], regs)
    return None


def annotate(exc: BaseException, node) -> None:
    """Add the failing node (and its source line) to the exception, once, like TorchScript's
    "The following operation failed in the TorchScript interpreter" trace."""
    if node is None or getattr(exc, "_ember_jit_annotated", False):
        return
    try:
        exc._ember_jit_annotated = True
        loc = node.meta.get("loc")
        where = f" at {loc[0]}:{loc[1]}:{loc[2]}" if loc else ""
        if hasattr(exc, "add_note"):
            what = node.target if isinstance(node.target, str) else getattr(node.target, "name", None) or \
                getattr(node.target, "__name__", node.target)
            exc.add_note(f"The following operation failed in the ember.jit interpreter: %{node.name} = "
                         f"{what}(...){where}")
    except Exception:  # noqa: BLE001 - exceptions with __slots__ or frozen attributes
        pass
