"""Dataflow over `Instruction` lists: control-flow successors, live variables, stack depth.

Resume functions (seed 003) take the live locals as arguments: `livevars_analysis` says which
locals are read before being written from a given instruction on. The assembler needs the
maximum value-stack depth: `stacksize_analysis`.

    >>> from ember._dynamo.bytecode_transformation import cleaned_instructions
    >>> def f(a, b):
    ...     c = a + 1
    ...     return c * b
    >>> insts = cleaned_instructions(f.__code__)
    >>> store = next(i for i in insts if i.opname == "STORE_FAST")
    >>> sorted(livevars_analysis(insts, store))
    ['b']
"""
from __future__ import annotations

import dis

from .bytecode_transformation import (FREE_OPCODES, JUMP_OPCODES, LOCAL_OPCODES, TERMINATORS, Instruction)

# locals ops that write (the rest of haslocal read): STORE_FAST, DELETE_FAST clears but needs a value
_LOCAL_WRITES = {"STORE_FAST", "STORE_DEREF", "MAKE_CELL"}
_LOCAL_READ_AND_CLEAR = {"LOAD_FAST_AND_CLEAR", "DELETE_FAST", "DELETE_DEREF"}


def successors(instructions: list[Instruction], index: int) -> list[int]:
    """Indices of the instructions that may run after instructions[index] (normal flow and the
    exception handler that covers it).

    >>> successors([], 0)
    []
    """
    if index >= len(instructions):
        return []
    inst = instructions[index]
    out = []
    if inst.opname not in TERMINATORS and index + 1 < len(instructions):
        out.append(index + 1)
    if inst.opcode in JUMP_OPCODES and inst.target is not None:
        out.append(_index(instructions, inst.target))
    if inst.exn_tab_entry is not None:
        out.append(_index(instructions, inst.exn_tab_entry.target))
    return out


def _index(instructions: list[Instruction], inst: Instruction) -> int:
    for i, other in enumerate(instructions):
        if other is inst:
            return i
    raise ValueError(f"{inst.short()} is not in the instruction list")


def _successor_table(instructions: list[Instruction]) -> list[list[tuple[int, bool]]]:
    """For each instruction: (successor index, is_exception_edge)."""
    position = {id(inst): i for i, inst in enumerate(instructions)}
    table = []
    for i, inst in enumerate(instructions):
        succ = []
        if inst.opname not in TERMINATORS and i + 1 < len(instructions):
            succ.append((i + 1, False))
        if inst.opcode in JUMP_OPCODES and inst.target is not None:
            succ.append((position[id(inst.target)], False))
        if inst.exn_tab_entry is not None:
            succ.append((position[id(inst.exn_tab_entry.target)], True))
        table.append(succ)
    return table


def _reads_writes(inst: Instruction, freevars: frozenset) -> tuple[set, set]:
    if inst.opcode not in LOCAL_OPCODES and inst.opcode not in FREE_OPCODES:
        return set(), set()
    names = inst.argval if isinstance(inst.argval, tuple) else (inst.argval,)
    names = tuple(n for n in names if n not in freevars)   # free vars come from the closure, never live
    if inst.opname in ("STORE_FAST_STORE_FAST",):
        return set(), set(names)
    if inst.opname == "STORE_FAST_LOAD_FAST":               # 3.13: store first, then load
        stored, loaded = inst.argval
        return ({loaded} - {stored}) - freevars, {stored} - freevars
    if inst.opname in _LOCAL_WRITES:
        return set(), set(names) if inst.opname != "MAKE_CELL" else set()
    if inst.opname in _LOCAL_READ_AND_CLEAR:
        return set(names), set()
    return set(names), set()


def livevars_analysis(instructions: list[Instruction], instruction: Instruction, *,
                      freevars: tuple = ()) -> set[str]:
    """Local (and cell) variables that may be read before being written when execution continues
    at `instruction` (following jumps, fall-through and exception handlers).
    Free variables (`freevars`, read through the closure) are never reported.

    >>> from ember._dynamo.bytecode_transformation import cleaned_instructions
    >>> def g(x, y):
    ...     for i in range(x):
    ...         y = y + i
    ...     return y
    >>> insts = cleaned_instructions(g.__code__)
    >>> sorted(livevars_analysis(insts, insts[0]))
    ['x', 'y']
    """
    free = frozenset(freevars)
    succ = _successor_table(instructions)
    effects = [_reads_writes(inst, free) for inst in instructions]
    live_in: list[frozenset] = [frozenset()] * len(instructions)
    changed = True
    while changed:                        # backward dataflow to a fixpoint
        changed = False
        for i in range(len(instructions) - 1, -1, -1):
            reads, writes = effects[i]
            normal_out, exceptional_out = set(), set()
            for j, exceptional in succ[i]:
                (exceptional_out if exceptional else normal_out).update(live_in[j])
            # an exception may leave before the write happens, so handler liveness is not killed
            new = frozenset(reads | (normal_out - writes) | exceptional_out)
            if new != live_in[i]:
                live_in[i] = new
                changed = True
    return set(live_in[_index(instructions, instruction)])


def _stack_effect(inst: Instruction, jump: bool) -> int:
    if inst.opname == "RETURN_GENERATOR":
        # the prologue's RETURN_GENERATOR returns the generator; the frame resumes with the first
        # sent value pushed (the POP_TOP after it drops it). dis counts neither.
        return 1
    arg = inst.arg if inst.opcode >= dis.HAVE_ARGUMENT else None
    if inst.opcode >= dis.HAVE_ARGUMENT and arg is None:
        arg = 0
    return dis.stack_effect(inst.opcode, arg, jump=jump)


def stack_depths(instructions: list[Instruction]) -> list[int | None]:
    """The value-stack depth before each instruction (None where unreachable from the first one).

    >>> stack_depths([])
    []
    """
    depth: list[int | None] = [None] * len(instructions)
    if not instructions:
        return depth
    position = {id(inst): i for i, inst in enumerate(instructions)}
    work = [(0, 0)]
    while work:
        i, d = work.pop()
        if depth[i] is not None:      # valid bytecode reaches each instruction at one depth
            continue
        depth[i] = d
        inst = instructions[i]
        if inst.exn_tab_entry is not None:
            entry = inst.exn_tab_entry
            work.append((position[id(entry.target)], entry.depth + int(bool(entry.lasti)) + 1))
        if inst.opcode in JUMP_OPCODES and inst.target is not None:
            work.append((position[id(inst.target)], d + _stack_effect(inst, jump=True)))
        if inst.opname not in TERMINATORS and i + 1 < len(instructions):
            work.append((i + 1, d + _stack_effect(inst, jump=False)))
    return depth


def stacksize_analysis(instructions: list[Instruction]) -> int:
    """The maximum value-stack depth any path reaches (co_stacksize).

    >>> from ember._dynamo.bytecode_transformation import cleaned_instructions
    >>> stacksize_analysis(cleaned_instructions((lambda a, b: a + b).__code__))
    2
    """
    depths = stack_depths(instructions)
    best = 0
    for inst, d in zip(instructions, depths):
        if d is None:
            continue
        best = max(best, d, d + _stack_effect(inst, jump=False))
        if inst.opcode in JUMP_OPCODES:
            best = max(best, d + _stack_effect(inst, jump=True))
    return max(best, 1)
