"""Bytecode as a list of editable instructions, and back (seed 003: "MODIFIED BYTECODE").

Dynamo rewrites a function's bytecode: it reads the code object into a list of `Instruction`s
(`cleaned_instructions`: no CACHE entries, no EXTENDED_ARG prefixes, jumps point at their target
`Instruction`, every instruction knows the exception-table entry that covers it), lets a pass
insert, remove or edit instructions, then assembles a new code object (`transform_code_object`):
offsets with an EXTENDED_ARG fixpoint, relative jumps in the right direction, inline caches,
the 3.11+ location table and exception table (encoded by _code_tables.py), and the stack size.

    >>> def f(x):
    ...     return x + 1
    >>> def add_print(instructions, code_options):
    ...     body = [create_load_global("print", push_null=True), create_load_const("hi"),
    ...             *create_call_function(1, push_null=False), create_instruction("POP_TOP")]
    ...     at = next(i for i, inst in enumerate(instructions) if inst.opname == "RESUME") + 1
    ...     instructions[at:at] = body
    >>> g = types.FunctionType(transform_code_object(f.__code__, add_print), {"print": print})
    >>> g(1)
    hi
    2

Names, constants and local variable names are taken from `argval`: the assembler adds any that
`code_options` lacks, so a pass only sets `argval` (a name, a constant, a local's name).
Version differences (3.11, 3.12, 3.13) are handled here and nowhere else; opcode numbers always
come from the `dis`/`opcode` tables of the running interpreter.
"""
from __future__ import annotations

import dataclasses
import dis
import itertools
import math
import opcode as _opcode
import sys
import types
from typing import Callable

# the co_linetable / co_exceptiontable codecs live in _code_tables; re-exported here
from ._code_tables import assemble_exception_table, assemble_linetable, parse_exception_table

PY311 = sys.version_info[:2] == (3, 11)
PY312_PLUS = sys.version_info >= (3, 12)
PY313_PLUS = sys.version_info >= (3, 13)
if sys.version_info < (3, 11):
    raise ImportError("ember._dynamo needs CPython 3.11 or newer (the bytecode layer reads 3.11+ bytecode)")

_NOT_GIVEN = object()   # argval sentinel: "derive argval from arg"


@dataclasses.dataclass(eq=False)
class InstructionExnTabEntry:
    """One row of the 3.11+ exception table: instructions `start`..`end` (inclusive) jump to
    `target` on an exception, with the value stack cut to `depth` (+ the raising offset if `lasti`)."""
    start: "Instruction"
    end: "Instruction"
    target: "Instruction"
    depth: int
    lasti: bool

    def __repr__(self):
        return (f"InstructionExnTabEntry(start={self.start.short()}, end={self.end.short()}, "
                f"target={self.target.short()}, depth={self.depth}, lasti={self.lasti})")


@dataclasses.dataclass(eq=False)   # identity equality: instructions are graph nodes
class Instruction:
    """One bytecode instruction; `target` is the jump target, `exn_tab_entry` the handler row."""
    opcode: int
    opname: str
    arg: int | None
    argval: object
    offset: int | None = None
    starts_line: int | None = None
    is_jump_target: bool = False
    positions: "dis.Positions | None" = None
    target: "Instruction | None" = None
    exn_tab_entry: "InstructionExnTabEntry | None" = None

    def short(self) -> str:
        return f"{self.opname}@{self.offset}"

    def __repr__(self):   # written by hand: the dataclass repr would recurse through target/exn entries
        extra = f", target={self.target.short()}" if self.target is not None else ""
        return f"Instruction({self.opname}, arg={self.arg}, argval={self.argval!r}, offset={self.offset}{extra})"


# ---------------------------------------------------------------------------------------------
# opcode tables of the running interpreter
# ---------------------------------------------------------------------------------------------
OPMAP = dis.opmap
JUMP_OPCODES = set(dis.hasjrel) | set(dis.hasjabs) | set(getattr(dis, "hasjump", ()))
NAME_OPCODES = set(dis.hasname)
LOCAL_OPCODES = set(dis.haslocal)
FREE_OPCODES = set(dis.hasfree)
CONST_OPCODES = set(dis.hasconst)
EXTENDED_ARG = OPMAP["EXTENDED_ARG"]
CACHE = OPMAP.get("CACHE", 0)
HAVE_ARGUMENT = dis.HAVE_ARGUMENT
# name ops whose arg carries flag bits below the co_names index: (shift, mask of kept bits)
NAME_FLAG_BITS = {"LOAD_GLOBAL": 1}
if PY312_PLUS:
    NAME_FLAG_BITS.update({"LOAD_ATTR": 1, "LOAD_SUPER_ATTR": 2})
# COMPARE_OP: 3.11 arg = index into cmp_op; 3.12 (index << 4) | mask; 3.13 (index << 5) | to-bool bit | mask
COMPARE_SHIFT = 5 if PY313_PLUS else 4 if PY312_PLUS else 0
_COMPARE_MASKS = {"<": 2, "<=": 2 | 8, "==": 8, "!=": 1 | 2 | 4, ">": 4, ">=": 4 | 8}
UNCONDITIONAL_JUMPS = {"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP_ABSOLUTE", "JUMP",
                       "JUMP_NO_INTERRUPT"}
TERMINATORS = UNCONDITIONAL_JUMPS | {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE"}
_NEGATED_CONDITION = {"FALSE": "TRUE", "TRUE": "FALSE", "NONE": "NOT_NONE", "NOT_NONE": "NONE"}


def inline_cache_entries(opname: str) -> int:
    """Number of CACHE code units following `opname` on this interpreter.

    >>> inline_cache_entries("NOP")
    0
    """
    table = getattr(_opcode, "_inline_cache_entries", None)
    if table is None:
        table = getattr(dis, "_inline_cache_entries")
    if isinstance(table, dict):          # 3.13: keyed by name
        return table.get(opname, 0)
    op = OPMAP.get(opname)
    return table[op] if op is not None and op < len(table) else 0


def is_backward_jump_name(opname: str) -> bool:
    return "BACKWARD" in opname


# Portable names a pass may use; mapped to the running interpreter's real opcodes.
# The direction of relative jumps is fixed during assembly, so FORWARD here is a placeholder.
_PORTABLE_NAMES = {"JUMP_ABSOLUTE": "JUMP_FORWARD", "JUMP": "JUMP_FORWARD", "JUMP_NO_INTERRUPT": "JUMP_FORWARD"}
if PY311:
    for _cond in ("FALSE", "TRUE", "NONE", "NOT_NONE"):
        _PORTABLE_NAMES[f"POP_JUMP_IF_{_cond}"] = f"POP_JUMP_FORWARD_IF_{_cond}"


def _real_opname(name: str) -> str:
    name = _PORTABLE_NAMES.get(name, name)
    if name not in OPMAP:
        raise ValueError(f"create_instruction: opcode {name!r} does not exist on Python "
                         f"{sys.version_info[0]}.{sys.version_info[1]}")
    return name


# ---------------------------------------------------------------------------------------------
# creating instructions
# ---------------------------------------------------------------------------------------------
def create_instruction(name: str, *, arg: int | None = None, argval=_NOT_GIVEN, target=None) -> Instruction:
    """A new instruction. For name/const/local/free ops give `argval` (the name or constant); the
    assembler turns it into an index. Jumps take `target`. Portable names JUMP_ABSOLUTE and (on 3.11)
    POP_JUMP_IF_FALSE/TRUE/NONE/NOT_NONE are accepted; jump direction is chosen when assembling.

    >>> create_instruction("LOAD_FAST", argval="x").argval
    'x'
    >>> create_instruction("BUILD_TUPLE", arg=2).arg
    2
    """
    real = _real_opname(name)
    op = OPMAP[real]
    if argval is _NOT_GIVEN:
        if op in NAME_OPCODES or op in LOCAL_OPCODES or op in FREE_OPCODES or op in CONST_OPCODES:
            raise ValueError(f"create_instruction: {name} needs argval (the name or constant it refers to)")
        argval = arg if target is None else None
    if real == "COMPARE_OP" and arg is None:
        arg = compare_op_arg(argval)
    if op in JUMP_OPCODES and target is None:
        raise ValueError(f"create_instruction: jump {name} needs target=<Instruction>")
    return Instruction(opcode=op, opname=real, arg=arg, argval=argval, target=target)


def compare_op_arg(symbol: str) -> int:
    """The COMPARE_OP arg for '<', '==', ... on this Python (3.12 shifts the index by 4 and adds a mask).

    >>> compare_op_arg("<") == (0 if sys.version_info < (3, 12) else compare_op_arg("<"))
    True
    """
    if symbol not in dis.cmp_op:
        raise ValueError(f"compare_op_arg: expected one of {dis.cmp_op}, got {symbol!r}")
    index = dis.cmp_op.index(symbol)
    if COMPARE_SHIFT == 0:
        return index
    return (index << COMPARE_SHIFT) | _COMPARE_MASKS[symbol]


def binary_op_arg(symbol: str) -> int:
    """The BINARY_OP arg for '+', '*=', ... (index into dis._nb_ops).

    >>> binary_op_arg("+")
    0
    """
    for index, (_, sym) in enumerate(dis._nb_ops):
        if sym == symbol:
            return index
    raise ValueError(f"binary_op_arg: unknown operator {symbol!r}")


def create_binary_op(symbol: str) -> Instruction:
    """BINARY_OP for `symbol` ('+', '-', '*=', ...)."""
    return create_instruction("BINARY_OP", arg=binary_op_arg(symbol), argval=binary_op_arg(symbol))


def create_load_const(value) -> Instruction:
    """LOAD_CONST of `value` (added to co_consts on assembly).

    >>> create_load_const(3).argval
    3
    """
    return create_instruction("LOAD_CONST", argval=value)


def create_load_global(name: str, push_null: bool) -> Instruction:
    """LOAD_GLOBAL `name`; with push_null the NULL that CALL expects is pushed first (3.11+ low bit).

    >>> create_load_global("print", push_null=True).arg
    1
    """
    return create_instruction("LOAD_GLOBAL", arg=int(bool(push_null)), argval=name)


def create_dup_top() -> Instruction:
    """Duplicate the top of the stack (COPY 1)."""
    return create_instruction("COPY", arg=1)


def create_swap(n: int) -> list[Instruction]:
    """Swap TOS with the n-th item (SWAP n), as a list like the other sequence helpers."""
    return [create_instruction("SWAP", arg=n)]


def create_rot_n(n: int) -> list[Instruction]:
    """Move TOS down to position n, lifting the n-1 items above it (the old ROT_N), as SWAPs.

    >>> [i.arg for i in create_rot_n(3)]
    [3, 2]
    """
    if n <= 1:
        return []
    return [create_instruction("SWAP", arg=i) for i in range(n, 1, -1)]


def create_jump_absolute(target: Instruction) -> Instruction:
    """An unconditional jump to `target` (JUMP_FORWARD or JUMP_BACKWARD, picked when assembling)."""
    return create_instruction("JUMP_FORWARD", target=target)


def create_call_function(nargs: int, push_null: bool) -> list[Instruction]:
    """Call the callable below `nargs` arguments on the stack.

    On 3.11/3.12 CALL wants [NULL, callable, args...]: push_null=True inserts that NULL under the
    callable (PUSH_NULL, then rotate it down); 3.11 also needs PRECALL. On 3.13 the NULL goes
    between the callable and the arguments.

    >>> [i.opname for i in create_call_function(0, push_null=False)][-1]
    'CALL'
    """
    out: list[Instruction] = []
    if push_null:
        out.append(create_instruction("PUSH_NULL"))
        out.extend(create_rot_n(nargs + 1 if PY313_PLUS else nargs + 2))
    if PY311:
        out.append(create_instruction("PRECALL", arg=nargs))
    out.append(create_instruction("CALL", arg=nargs))
    return out


def create_call_method(nargs: int) -> list[Instruction]:
    """Call after LOAD_METHOD (3.11) / LOAD_ATTR with the method bit (3.12+)."""
    if PY311:
        return [create_instruction("PRECALL", arg=nargs), create_instruction("CALL", arg=nargs)]
    return [create_instruction("CALL", arg=nargs)]


def create_load_method(name: str) -> Instruction:
    """Load a method for create_call_method: LOAD_METHOD on 3.11, LOAD_ATTR with the low bit on 3.12+."""
    if PY311:
        return create_instruction("LOAD_METHOD", argval=name)
    return create_instruction("LOAD_ATTR", arg=1, argval=name)


_unique_id_counter = itertools.count()


def unique_id(name: str) -> str:
    """A fresh name: one counter shared by all names, as in seed 003 (__compiled_fn_0, __resume_at_30_1).

    >>> unique_id("__compiled_fn").startswith("__compiled_fn_")
    True
    """
    return f"{name}_{next(_unique_id_counter)}"


# ---------------------------------------------------------------------------------------------
# reading a code object
# ---------------------------------------------------------------------------------------------
def _convert_dis_instruction(inst: dis.Instruction) -> Instruction:
    starts_line = inst.starts_line
    if isinstance(starts_line, bool):     # 3.13: starts_line is a flag, the number is line_number
        starts_line = inst.line_number if starts_line else None
    return Instruction(opcode=inst.opcode, opname=inst.opname, arg=inst.arg, argval=inst.argval,
                       offset=inst.offset, starts_line=starts_line, is_jump_target=inst.is_jump_target,
                       positions=getattr(inst, "positions", None))


def cleaned_instructions(code: types.CodeType) -> list[Instruction]:
    """The instructions of `code` without CACHE and EXTENDED_ARG; jumps resolved to `target`,
    exception-table rows attached as `exn_tab_entry`. Offsets are the original ones.

    >>> [i.opname for i in cleaned_instructions((lambda x: x).__code__)][-2:]
    ['LOAD_FAST', 'RETURN_VALUE']
    """
    raw = list(dis.get_instructions(code))
    instructions: list[Instruction] = []
    by_offset: dict[int, Instruction] = {}
    pending_prefix: list[dis.Instruction] = []      # EXTENDED_ARGs waiting for their instruction
    for dinst in raw:
        if dinst.opcode == EXTENDED_ARG:
            pending_prefix.append(dinst)
            continue
        inst = _convert_dis_instruction(dinst)
        for prefix in pending_prefix:               # a line start or jump target on the prefix is ours
            by_offset[prefix.offset] = inst
            converted = _convert_dis_instruction(prefix)
            if inst.starts_line is None and converted.starts_line is not None:
                inst.starts_line = converted.starts_line
            inst.is_jump_target = inst.is_jump_target or prefix.is_jump_target
        pending_prefix = []
        if inst.opcode in CONST_OPCODES:        # 3.11's dis shows KW_NAMES' tuple as <unknown>
            inst.argval = code.co_consts[inst.arg]
        by_offset[inst.offset] = inst
        instructions.append(inst)
    for inst in instructions:
        if inst.opcode in JUMP_OPCODES:
            inst.target = by_offset[inst.argval]
            inst.target.is_jump_target = True
    for start, end, target, depth, lasti in parse_exception_table(code):
        covered = [inst for inst in instructions if start <= inst.offset < end]
        if not covered:
            continue
        entry = InstructionExnTabEntry(covered[0], covered[-1], by_offset[target], depth, lasti)
        for inst in covered:
            inst.exn_tab_entry = entry
    return instructions


# ---------------------------------------------------------------------------------------------
# assembling
# ---------------------------------------------------------------------------------------------
CODE_FIELDS = ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_nlocals", "co_stacksize",
               "co_flags", "co_code", "co_consts", "co_names", "co_varnames", "co_filename", "co_name",
               "co_qualname", "co_firstlineno", "co_linetable", "co_exceptiontable", "co_freevars",
               "co_cellvars")


def code_options_of(code: types.CodeType) -> dict:
    """The editable co_* fields of `code` (tuples stay tuples; lists are accepted back)."""
    return {name: getattr(code, name) for name in CODE_FIELDS}


def _same_const(a, b) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (a == b and math.copysign(1, a) == math.copysign(1, b)) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, complex):
        return _same_const(a.real, b.real) and _same_const(a.imag, b.imag)
    if isinstance(a, (tuple, frozenset)):
        return len(a) == len(b) and all(_same_const(x, y) for x, y in zip(a, b)) if isinstance(a, tuple) else a == b
    if isinstance(a, (int, str, bytes, bool, type(None), type(Ellipsis))):
        return a == b
    return False


def _index_of(items: list, value, same=lambda a, b: a == b) -> int:
    for i, item in enumerate(items):
        if same(item, value):
            return i
    items.append(value)
    return len(items) - 1


def localsplus_names(varnames, cellvars, freevars) -> list[str]:
    """The 3.11+ fast-locals layout: locals, then cells that are not also arguments/locals, then free vars."""
    return [*varnames, *[c for c in cellvars if c not in varnames], *freevars]


def _fix_args(instructions: list[Instruction], code_options: dict) -> None:
    """Turn argvals into args (indices into co_names / co_consts / fast locals), adding missing entries."""
    names = list(code_options["co_names"])
    consts = list(code_options["co_consts"])
    varnames = list(code_options["co_varnames"])
    freevars, cellvars = tuple(code_options["co_freevars"]), tuple(code_options["co_cellvars"])
    for inst in instructions:
        if inst.opcode in LOCAL_OPCODES:
            if isinstance(inst.argval, tuple):        # 3.13 LOAD_FAST_LOAD_FAST and friends
                a, b = (_index_of(varnames, n) for n in inst.argval)
                inst.arg = (a << 4) | b
            else:
                inst.arg = _index_of(varnames, inst.argval)
    # cells/free vars index the fast-locals array, which depends on the final co_varnames
    layout = localsplus_names(varnames, cellvars, freevars)
    for inst in instructions:
        op = inst.opcode
        if op in FREE_OPCODES:
            if inst.argval not in layout:
                raise ValueError(f"transform_code_object: {inst.opname} refers to {inst.argval!r}, which is "
                                 f"neither a cell nor a free variable of {code_options['co_name']}")
            inst.arg = layout.index(inst.argval)
        elif op in NAME_OPCODES:
            index = _index_of(names, inst.argval)
            bits = NAME_FLAG_BITS.get(inst.opname, 0)
            flags = (inst.arg or 0) & ((1 << bits) - 1)
            inst.arg = (index << bits) | flags
        elif op in CONST_OPCODES:
            inst.arg = _index_of(consts, inst.argval, _same_const)
        elif inst.opname == "COMPARE_OP":
            if inst.arg is None or (inst.arg >> COMPARE_SHIFT) % 16 >= len(dis.cmp_op) \
                    or (isinstance(inst.argval, str) and inst.argval in dis.cmp_op
                        and dis.cmp_op[(inst.arg >> COMPARE_SHIFT) % 16] != inst.argval):
                inst.arg = compare_op_arg(inst.argval)
        elif op >= HAVE_ARGUMENT and inst.arg is None and op not in JUMP_OPCODES:
            if isinstance(inst.argval, int):
                inst.arg = inst.argval
            else:
                raise ValueError(f"transform_code_object: {inst.opname} has no arg")
        elif op < HAVE_ARGUMENT:
            inst.arg = None
    code_options["co_names"] = tuple(names)
    code_options["co_consts"] = tuple(consts)
    code_options["co_varnames"] = tuple(varnames)
    code_options["co_nlocals"] = len(varnames)


def _set_jump_directions(instructions: list[Instruction]) -> list[Instruction]:
    """Pick FORWARD/BACKWARD variants from the instruction order. 3.12+ has no backward conditional
    jump: `POP_JUMP_IF_X back` becomes `POP_JUMP_IF_not-X skip; JUMP_BACKWARD back; skip:`."""
    index = {id(inst): i for i, inst in enumerate(instructions)}
    out: list[Instruction] = []
    for i, inst in enumerate(instructions):
        if inst.opcode not in JUMP_OPCODES:
            out.append(inst)
            continue
        if id(inst.target) not in index:
            raise ValueError(f"transform_code_object: {inst.short()} jumps to an instruction that is not in the list")
        backward = index[id(inst.target)] <= i
        name = inst.opname
        if name in ("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"):
            if backward and name == "JUMP_FORWARD":
                name = "JUMP_BACKWARD"
            elif not backward and name != "JUMP_FORWARD":
                name = "JUMP_FORWARD"
        elif name.startswith("POP_JUMP_"):
            cond = name.split("_IF_")[1]
            if PY311:
                name = f"POP_JUMP_{'BACKWARD' if backward else 'FORWARD'}_IF_{cond}"
            elif backward:
                skip = create_instruction("NOP")
                negated = create_instruction(f"POP_JUMP_IF_{_NEGATED_CONDITION[cond]}", target=skip)
                back = create_instruction("JUMP_BACKWARD", target=inst.target)
                for new in (negated, back, skip):
                    new.positions, new.exn_tab_entry = inst.positions, inst.exn_tab_entry
                negated.starts_line = inst.starts_line
                # keep `inst` itself (others may jump to it): it becomes the negated jump
                inst.opname, inst.opcode, inst.target, inst.arg = negated.opname, negated.opcode, skip, None
                out.extend([inst, back, skip])
                continue
        elif backward and not is_backward_jump_name(name):
            raise ValueError(f"transform_code_object: {name} can only jump forward on this Python")
        if name != inst.opname:
            inst.opname, inst.opcode = name, OPMAP[name]
        out.append(inst)
    return out


def _extended_args_needed(arg: int | None) -> int:
    if arg is None or arg <= 0xFF:
        return 0
    return 1 if arg <= 0xFFFF else 2 if arg <= 0xFFFFFF else 3


def _assign_offsets(instructions: list[Instruction]) -> dict[int, int]:
    """EXTENDED_ARG fixpoint: jump args depend on offsets, offsets on the size of jump args.
    Returns id(inst) -> start offset of its bytes (EXTENDED_ARG prefix included)."""
    prefix = {id(inst): _extended_args_needed(inst.arg) for inst in instructions}
    while True:
        starts, offset = {}, 0
        for inst in instructions:
            starts[id(inst)] = offset
            inst.offset = offset + 2 * prefix[id(inst)]
            offset = inst.offset + 2 + 2 * inline_cache_entries(inst.opname)
        changed = False
        for inst in instructions:
            if inst.opcode in JUMP_OPCODES:
                after = inst.offset + 2 + (2 * inline_cache_entries(inst.opname) if PY312_PLUS else 0)
                target = starts[id(inst.target)]
                if inst.opcode in dis.hasjabs:
                    inst.arg = target // 2
                elif is_backward_jump_name(inst.opname):
                    inst.arg = (after - target) // 2
                else:
                    inst.arg = (target - after) // 2
                if inst.arg < 0:
                    raise ValueError(f"transform_code_object: {inst.short()} cannot reach its target")
                inst.argval = target
            need = _extended_args_needed(inst.arg)
            if need > prefix[id(inst)]:          # only grow: guarantees termination
                prefix[id(inst)] = need
                changed = True
        if not changed:
            return starts


def _emit_code(instructions: list[Instruction]) -> bytes:
    out = bytearray()
    for inst in instructions:
        arg = inst.arg or 0
        for shift in range(8 * _extended_args_needed(inst.arg), 0, -8):
            out += bytes((EXTENDED_ARG, (arg >> shift) & 0xFF))
        out += bytes((inst.opcode, arg & 0xFF))
        out += bytes((CACHE, 0)) * inline_cache_entries(inst.opname)
    return bytes(out)


def assemble(instructions: list[Instruction], code_options: dict) -> tuple[list[Instruction], dict]:
    """Instructions + co_* fields -> (final instruction list, co_* fields with co_code, co_linetable,
    co_exceptiontable, co_stacksize filled in). Instruction offsets are updated in place."""
    from .bytecode_analysis import stacksize_analysis
    instructions = _set_jump_directions(list(instructions))
    if PY312_PLUS:   # an exhausted FOR_ITER jumps past its target, assuming it is the loop's END_FOR
        for inst in instructions:
            if inst.opname == "FOR_ITER" and inst.target.opname != "END_FOR":
                raise ValueError("transform_code_object: on 3.12+ FOR_ITER must jump to an END_FOR")
    if PY311:   # specialised PRECALLs skip the next instruction, assuming it is their CALL
        for inst, nxt in zip(instructions, instructions[1:] + [None]):
            if inst.opname == "PRECALL" and (nxt is None or nxt.opname != "CALL"):
                raise ValueError("transform_code_object: on 3.11 PRECALL must be directly followed by CALL")
    _fix_args(instructions, code_options)
    starts = _assign_offsets(instructions)
    code = _emit_code(instructions)
    code_options["co_code"] = code
    code_options["co_linetable"] = assemble_linetable(instructions, starts, len(code), code_options["co_firstlineno"])
    code_options["co_exceptiontable"] = assemble_exception_table(instructions, starts, len(code))
    code_options["co_stacksize"] = stacksize_analysis(instructions)
    for name in ("co_names", "co_consts", "co_varnames", "co_freevars", "co_cellvars"):
        code_options[name] = tuple(code_options[name])
    return instructions, code_options


def transform_code_object(code: types.CodeType, transform: Callable[[list, dict], None],
                          safe: bool = False) -> types.CodeType:
    """Run `transform(instructions, code_options)` on `code`'s cleaned instructions and assemble the
    result into a new code object. `code_options` holds the co_* fields; the transform may edit them
    (e.g. co_name, co_varnames, co_argcount) and insert/remove instructions in place.
    With safe=True the new code is read back and checked against what was assembled.

    >>> def f(a, b):
    ...     return a * b
    >>> g = types.FunctionType(transform_code_object(f.__code__, lambda insts, opts: None), {})
    >>> g(3, 4)
    12
    """
    instructions = cleaned_instructions(code)
    code_options = code_options_of(code)
    transform(instructions, code_options)
    final, code_options = assemble(instructions, code_options)
    valid = set(CODE_FIELDS)
    unknown = set(code_options) - valid
    if unknown:
        raise ValueError(f"transform_code_object: unknown code option(s) {sorted(unknown)}")
    new_code = code.replace(**{k: v for k, v in code_options.items()})
    if safe:
        _check_round_trip(new_code, final)
    return new_code


def _check_round_trip(code: types.CodeType, assembled: list[Instruction]) -> None:
    again = cleaned_instructions(code)
    if [(i.opname, i.argval if i.target is None else None) for i in again] != \
            [(i.opname, i.argval if i.target is None else None) for i in assembled]:
        raise AssertionError(f"transform_code_object: {code.co_name} did not read back as assembled")
