"""Resume functions: continue a function's original bytecode in a new frame after a graph break.

Seed 003: after a graph break the modified bytecode calls a generated `__resume_at_<offset>_<n>`
whose code is

    __resume_at_<offset>:
        ... the original prologue (MAKE_CELL / COPY_FREE_VARS / RESUME) ...
        ... restore the value stack from its first arguments ...
        JUMP <the copy of the instruction at offset>
        ... original bytecode of the function (what is reachable from there) ...

    >>> def f(a, b):
    ...     x = a + 1
    ...     return x * b
    >>> from ember._dynamo.bytecode_transformation import cleaned_instructions
    >>> offset = next(i.offset for i in cleaned_instructions(f.__code__) if i.opname == "STORE_FAST")
    >>> code = make_resume_code(f.__code__, offset, 1, ("b",), "__resume_at_demo")
    >>> types.FunctionType(code, {})(10, 3)       # x := 10 was on the stack; b = 3
    30

How the caller passes things:
- `__stack0 .. __stack<nstack-1>` are the values on the stack, bottom first. On 3.11/3.12 a pending
  call may have a NULL on the stack (LOAD_GLOBAL's low bit, PUSH_NULL): list its stack index in
  `null_positions`; the caller passes None for that argument and the resume code pushes NULL.
- `argnames` are the live locals (use `livevars_analysis`), cells included: a cell variable passed
  by value gets a fresh cell from the copied MAKE_CELL. Free variables come from the closure: build
  the function with the original closure (co_freevars is unchanged).

What is supported: resuming anywhere in normal control flow, including inside `for` loops (pass the
iterator), inside `try` bodies (3.11+ exception tables need no setup instruction) and inside `with`
bodies (pass the `__exit__` bound method the original frame had on its stack). Not supported
(NotImplementedError): an offset inside an exception handler (its `except`/`finally`-on-exception
code, which needs the interpreter's handled-exception state), coroutines and async generators.
By default a cell variable is passed by value, so a closure created before the break no longer shares
it with the resumed code; `cells_as_freevars=True` passes the cells themselves through the closure.

`ResumeCodeCache.lookup` (what the output graph uses) makes each resume code once per (original code,
offset, layout) and maps a break inside a resume function back to its original code, as torch's
ContinueExecutionCache does, so recompiles and loops reuse one continuation's compiled entries.
"""
from __future__ import annotations

import dataclasses
import dis
import inspect
import types
import weakref

from .bytecode_analysis import _successor_table, stack_depths
from .bytecode_transformation import (PY312_PLUS, InstructionExnTabEntry, Instruction, cleaned_instructions,
                                      create_instruction, create_jump_absolute, transform_code_object)

_PROLOGUE_OPNAMES = {"MAKE_CELL", "COPY_FREE_VARS", "RETURN_GENERATOR", "POP_TOP", "RESUME", "NOP"}
_UNSUPPORTED_FLAGS = {inspect.CO_COROUTINE: "coroutines", inspect.CO_ASYNC_GENERATOR: "async generators",
                      inspect.CO_ITERABLE_COROUTINE: "iterable coroutines"}


def _prologue_length(instructions: list[Instruction]) -> int:
    """Instructions up to and including the first RESUME (the function-entry setup)."""
    for i, inst in enumerate(instructions):
        if inst.opname == "RESUME":
            return i + 1
        if inst.opname not in _PROLOGUE_OPNAMES:
            return i
    return 0


def _reachable(succ: list, start: int, follow_exceptions: bool) -> set[int]:
    seen, work = set(), [start]
    while work:
        i = work.pop()
        if i in seen:
            continue
        seen.add(i)
        work.extend(j for j, exceptional in succ[i] if follow_exceptions or not exceptional)
    return seen


def _copy_instructions(instructions: list[Instruction]) -> dict[int, Instruction]:
    """Fresh copies with targets and exception-table rows pointing at the copies."""
    copies = {id(inst): dataclasses.replace(inst, target=None, exn_tab_entry=None) for inst in instructions}
    entries: dict[int, InstructionExnTabEntry] = {}
    for inst in instructions:
        new = copies[id(inst)]
        if inst.target is not None:
            new.target = copies[id(inst.target)]
        entry = inst.exn_tab_entry
        if entry is not None:
            if id(entry) not in entries:
                entries[id(entry)] = InstructionExnTabEntry(new, new, copies[id(entry.target)], entry.depth, entry.lasti)
            copied = entries[id(entry)]
            copied.end = new                   # rows cover consecutive instructions: the last one seen is the end
            new.exn_tab_entry = copied
    return copies


def make_resume_code(code: types.CodeType, resume_offset: int, nstack: int, argnames: tuple[str, ...],
                     name: str, *, null_positions: tuple[int, ...] = (), enter_positions: tuple[int, ...] = (),
                     cells_as_freevars: bool = False, _offset_map: dict | None = None) -> types.CodeType:
    """A code object `name(__stack0, ..., __stack<nstack-1>, *argnames)` that pushes the stack
    values (NULL at `null_positions`), then runs `code` from the instruction at `resume_offset`.

    enter_positions: stack indices inside `with` bodies where the caller passes the context manager
    itself rather than its `__exit__`: the stack restore enters it (BEFORE_WITH; POP_TOP), so the
    block is re-entered when the continuation starts (a grad-mode block left at a graph break).

    cells_as_freevars=True turns the original's cell variables into free variables of the resume code
    (co_freevars = original co_freevars + co_cellvars): build the function with closure = the original
    closure + the frame's own cells, so closures created before the break keep sharing them.

    Raises NotImplementedError when the offset is inside an exception handler, or `code` is a
    coroutine / async generator; ValueError when the offset is not an instruction boundary, nstack
    does not match the stack depth there, or an argname is a free variable.

    >>> def g(x):
    ...     return -x
    >>> make_resume_code(g.__code__, 0, 0, (), "r").co_name
    'r'
    """
    for flag, what in _UNSUPPORTED_FLAGS.items():
        if code.co_flags & flag:
            raise NotImplementedError(f"make_resume_code: resuming {what} is not supported ({code.co_name})")
    argnames = tuple(argnames)
    stack_names = tuple(f"__stack{i}" for i in range(nstack))
    bad = [n for n in argnames if n in code.co_freevars or (cells_as_freevars and n in code.co_cellvars)]
    if bad:
        raise ValueError(f"make_resume_code: argnames {bad} are free variables of {code.co_name}; "
                         f"they come from the closure")
    if len(set(argnames)) != len(argnames) or set(argnames) & set(stack_names):
        raise ValueError(f"make_resume_code: argnames must be unique and not named __stack<i>, got {argnames}")
    nulls, enters = set(null_positions), set(enter_positions)
    if any(not 0 <= i < nstack for i in nulls):
        raise ValueError(f"make_resume_code: null_positions {sorted(nulls)} must lie in range({nstack})")

    def rewrite(instructions: list[Instruction], code_options: dict) -> None:
        n_prologue = _prologue_length(instructions)
        index = next((i for i, inst in enumerate(instructions) if inst.offset == resume_offset), None)
        if index is None:
            raise ValueError(f"make_resume_code: offset {resume_offset} is not an instruction of {code.co_name}")
        if index < n_prologue:
            index = n_prologue          # resuming at the entry: the prologue is emitted anyway
        succ = _successor_table(instructions)
        if index not in _reachable(succ, 0, follow_exceptions=False):
            raise NotImplementedError(f"make_resume_code: offset {resume_offset} of {code.co_name} lies inside an "
                                      f"exception handler, whose handled-exception state cannot be rebuilt")
        depth = stack_depths(instructions)[index]
        if depth is not None and depth != nstack:
            raise ValueError(f"make_resume_code: {code.co_name} has {depth} values on the stack at offset "
                             f"{resume_offset}, but nstack={nstack}")
        keep = _reachable(succ, index, follow_exceptions=True)
        kept = [inst for i, inst in enumerate(instructions) if i < n_prologue or i in keep]
        copies = _copy_instructions(kept)
        prologue = [copies[id(inst)] for inst in instructions[:n_prologue]]
        body = [copies[id(inst)] for inst in instructions[n_prologue:] if id(inst) in copies]
        restore = []
        for i, n in enumerate(stack_names):
            restore.append(create_instruction("PUSH_NULL") if i in nulls else create_instruction("LOAD_FAST", argval=n))
            if i in enters:
                restore.extend([create_instruction("BEFORE_WITH"), create_instruction("POP_TOP")])
        restore.append(create_jump_absolute(copies[id(instructions[index])]))
        if PY312_PLUS:   # 3.12 LOAD_FAST assumes the compiler proved the local bound; our locals are new
            for inst in body:
                if inst.opname == "LOAD_FAST" and inst.argval not in argnames:
                    inst.opname, inst.opcode = "LOAD_FAST_CHECK", dis.opmap["LOAD_FAST_CHECK"]
        if cells_as_freevars and code.co_cellvars:
            freevars = tuple(code.co_freevars) + tuple(code.co_cellvars)
            prologue = [inst for inst in prologue if inst.opname not in ("MAKE_CELL", "COPY_FREE_VARS")]
            prologue.insert(0, create_instruction("COPY_FREE_VARS", arg=len(freevars)))
            code_options["co_freevars"], code_options["co_cellvars"] = freevars, ()
            code_options["co_varnames"] = tuple(v for v in code_options["co_varnames"] if v not in code.co_cellvars)
        instructions[:] = prologue + restore + body
        body_offsets.extend((inst.offset, _plain_opname(inst.opname)) for inst in body)   # original offsets

        params = stack_names + argnames
        code_options["co_varnames"] = params + tuple(v for v in code_options["co_varnames"] if v not in params)
        code_options["co_argcount"] = len(params)
        code_options["co_posonlyargcount"] = 0
        code_options["co_kwonlyargcount"] = 0
        code_options["co_flags"] = code_options["co_flags"] & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
        code_options["co_name"] = name
        code_options["co_qualname"] = name

    body_offsets: list[tuple[int, str]] = []
    new_code = transform_code_object(code, rewrite)
    if _offset_map is not None:   # the body is copied in order after the prologue and the stack restore
        new_insts = cleaned_instructions(new_code)
        tail = new_insts[len(new_insts) - len(body_offsets):] if len(new_insts) >= len(body_offsets) else []
        if [_plain_opname(inst.opname) for inst in tail] == [opname for _, opname in body_offsets]:
            _offset_map.update((inst.offset, old) for inst, (old, _) in zip(tail, body_offsets))
    return new_code


def _plain_opname(opname: str) -> str:
    """Opnames as the assembler may rewrite them (jump direction, 3.12 LOAD_FAST_CHECK)."""
    return opname.replace("FORWARD_", "").replace("BACKWARD_", "").replace("LOAD_FAST_CHECK", "LOAD_FAST")


class ResumeCodeCache:
    """Resume code shared per (original code, offset, stack and argument layout).

    A frame that is compiled again (a recompile, another branch of the same break, a break in a
    resume function that lands where an earlier resume started) asks for the same continuation;
    handing back the same code object means the continuation shares one compile cache entry list
    (eval_frame keys its caches by code), so it is captured once, like torch's
    ContinueExecutionCache. A break inside a resume function is first mapped back to its original
    code and offset, so `while` loops resumed at their body keep reusing one resume function.

        code = ResumeCodeCache.lookup(f.__code__, offset, nstack, argnames)
        code is ResumeCodeCache.lookup(f.__code__, offset, nstack, argnames)    # True
    """
    # id(original code) -> (weakref to it, {layout key: resume code}); ids, not ==, since equal
    # code objects from different files compare equal but must not share co_filename
    _by_code: dict = {}
    # id(resume code) -> (weakref to it, original code, {offset in resume code: offset in original})
    _origin: dict = {}

    @classmethod
    def lookup(cls, code: types.CodeType, offset: int, nstack: int, argnames: tuple[str, ...], *,
               null_positions: tuple[int, ...] = (), enter_positions: tuple[int, ...] = (),
               cells_as_freevars: bool = False) -> types.CodeType:
        """The resume code for continuing `code` at `offset` (make_resume_code's arguments), made
        once per original code and layout."""
        origin = cls._origin.get(id(code))
        if origin is not None and origin[0]() is code and offset in origin[2]:
            code, offset = origin[1], origin[2][offset]
        key = (offset, nstack, tuple(argnames), tuple(null_positions), cells_as_freevars, tuple(enter_positions))
        entry = cls._by_code.get(id(code))
        if entry is None or entry[0]() is not code:
            ref = weakref.ref(code, lambda _, k=id(code): cls._by_code.pop(k, None))
            entry = cls._by_code[id(code)] = (ref, {})
        table = entry[1]
        if key not in table:
            name = f"__resume_at_{offset}_{len(table) + 1}_{code.co_name}"
            if not name.isidentifier():   # <lambda>, <genexpr>: keep co_name a valid identifier
                name = f"__resume_at_{offset}_{len(table) + 1}"
            mapping: dict[int, int] = {}
            table[key] = new = make_resume_code(code, offset, nstack, argnames, name, null_positions=null_positions,
                                                enter_positions=enter_positions,
                                                cells_as_freevars=cells_as_freevars, _offset_map=mapping)
            cls._origin[id(new)] = (weakref.ref(new, lambda _, k=id(new): cls._origin.pop(k, None)), code, mapping)
        return table[key]

    @classmethod
    def original(cls, code: types.CodeType) -> types.CodeType:
        """The code a resume code was made from (`code` itself when it is not a resume code)."""
        origin = cls._origin.get(id(code))
        return origin[1] if origin is not None and origin[0]() is code else code

    @classmethod
    def clear(cls) -> None:
        """Forget every resume code (ember._dynamo.reset)."""
        cls._by_code.clear()
        cls._origin.clear()


def format_bytecode(header: str, code: types.CodeType) -> str:
    """`header` (e.g. "ORIGINAL BYTECODE", "MODIFIED BYTECODE"), the code's name, file and first
    line, then its dis listing (seed 003's log format).

    >>> format_bytecode("ORIGINAL BYTECODE", (lambda: 0).__code__).splitlines()[0].split()[:3]
    ['ORIGINAL', 'BYTECODE', '<lambda>']
    """
    return (f"{header} {code.co_name} {code.co_filename} line {code.co_firstlineno} \n"
            f"{dis.Bytecode(code).dis()}\n")
