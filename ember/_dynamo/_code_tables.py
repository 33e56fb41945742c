"""Encoders and decoder for the two position tables of a 3.11+ code object: co_linetable and co_exceptiontable.

Both tables are packed byte formats with their own varint schemes (CPython's Objects/locations.md and
Objects/exception_handling_notes.txt). They are kept apart from bytecode_transformation.py, which reads
instructions and assembles them, because they are pure byte-level encoding: they see instructions only
through ``positions``/``starts_line``/``exn_tab_entry`` and the byte offsets assembly has chosen, and
can be read and checked on their own. bytecode_transformation re-exports the public names.
"""
from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .bytecode_transformation import Instruction

PY312_PLUS = sys.version_info >= (3, 12)


# ---------------------------------------------------------------------------------------------
# exception table: reading
# ---------------------------------------------------------------------------------------------
def _read_exception_table_varint(data: bytes, pos: int) -> tuple[int, int]:
    # exception table varints: 6-bit chunks, most significant first, 0x40 = more follows
    byte = data[pos]
    value = byte & 63
    pos += 1
    while byte & 64:
        byte = data[pos]
        value = (value << 6) | (byte & 63)
        pos += 1
    return value, pos


def parse_exception_table(code: types.CodeType) -> list[tuple[int, int, int, int, bool]]:
    """The rows of co_exceptiontable as (start, end_exclusive, target, depth, lasti) byte offsets.

    >>> parse_exception_table((lambda: 0).__code__)
    []
    """
    data = code.co_exceptiontable
    rows, pos = [], 0
    while pos < len(data):
        start, pos = _read_exception_table_varint(data, pos)
        length, pos = _read_exception_table_varint(data, pos)
        target, pos = _read_exception_table_varint(data, pos)
        depth_lasti, pos = _read_exception_table_varint(data, pos)
        rows.append((start * 2, (start + length) * 2, target * 2, depth_lasti >> 1, bool(depth_lasti & 1)))
    return rows

# ---------------------------------------------------------------------------------------------
# location table: writing
# ---------------------------------------------------------------------------------------------
def _write_linetable_varint(out: bytearray, value: int) -> None:
    # location table varints: 6-bit chunks, least significant first, 0x40 = more follows
    while value >= 64:
        out.append(64 | (value & 63))
        value >>= 6
    out.append(value)


def _write_linetable_svarint(out: bytearray, value: int) -> None:
    _write_linetable_varint(out, (-value << 1) | 1 if value < 0 else value << 1)


def _positions_of(instructions: list[Instruction], firstlineno: int) -> list:
    """Each instruction's (line, end_line, col, end_col): its own, else its starts_line, else inherited."""
    out, current = [], (firstlineno, firstlineno, None, None)
    for inst in instructions:
        pos = inst.positions
        if pos is not None:
            current = (pos.lineno, pos.end_lineno, pos.col_offset, pos.end_col_offset)
        elif inst.starts_line is not None:
            current = (inst.starts_line, inst.starts_line, None, None)
        out.append(current)
    return out


def assemble_linetable(instructions: list[Instruction], starts: dict[int, int], code_end: int,
                       firstlineno: int) -> bytes:
    """The 3.11+ co_linetable (Objects/locations.md), choosing the same entry forms CPython does."""
    positions = _positions_of(instructions, firstlineno)
    out, prev_line = bytearray(), firstlineno
    ends = [starts[id(i)] for i in instructions[1:]] + [code_end]
    runs: list[list] = []          # [position, code units]
    for inst, pos, end in zip(instructions, positions, ends):
        units = (end - starts[id(inst)]) // 2
        if PY312_PLUS and runs and runs[-1][0] == pos:
            runs[-1][1] += units   # 3.12+ writes one entry per run of equal locations, 3.11 one per instruction
        else:
            runs.append([pos, units])
    for pos, units in runs:
        line, end_line, col, end_col = pos
        while units > 0:
            n = min(units, 8)
            units -= n
            if line is None:
                out.append(0x80 | (15 << 3) | (n - 1))
                continue
            delta = line - prev_line
            if col is None or end_col is None or end_line is None or end_line < line:
                out.append(0x80 | (13 << 3) | (n - 1))      # no-column form
                _write_linetable_svarint(out, delta)
            elif end_line == line and delta == 0 and col < 80 and 0 <= end_col - col < 16:
                out.append(0x80 | ((col // 8) << 3) | (n - 1))   # short form (codes 0-9)
                out.append(((col % 8) << 4) | (end_col - col))
            elif end_line == line and 0 <= delta < 3 and col < 128 and end_col < 128:
                out.append(0x80 | ((10 + delta) << 3) | (n - 1))  # one-line form (codes 10-12)
                out.extend((col, end_col))
            else:
                out.append(0x80 | (14 << 3) | (n - 1))
                _write_linetable_svarint(out, line - prev_line)
                _write_linetable_varint(out, end_line - line)
                _write_linetable_varint(out, col + 1)
                _write_linetable_varint(out, end_col + 1)
            prev_line = line
    return bytes(out)


# ---------------------------------------------------------------------------------------------
# exception table: writing
# ---------------------------------------------------------------------------------------------
def _write_exception_table_varint(out: bytearray, value: int, first: bool) -> None:
    chunks = [value & 63]
    value >>= 6
    while value:
        chunks.append(value & 63)
        value >>= 6
    chunks.reverse()
    for i, chunk in enumerate(chunks):
        byte = chunk | (64 if i < len(chunks) - 1 else 0)
        out.append(byte | (128 if first and i == 0 else 0))


def assemble_exception_table(instructions: list[Instruction], starts: dict[int, int], code_end: int) -> bytes:
    """co_exceptiontable from each instruction's exn_tab_entry: consecutive instructions with the same
    (target, depth, lasti) make one row."""
    rows, run_key, run_start, run_entry = [], None, 0, None
    boundaries = [starts[id(i)] for i in instructions] + [code_end]
    for i, inst in enumerate(instructions + [None]):
        entry = inst.exn_tab_entry if inst is not None else None
        key = (id(entry.target), entry.depth, bool(entry.lasti)) if entry is not None else None
        if key != run_key:
            if run_key is not None:
                rows.append((run_start, boundaries[i], run_entry))
            run_key, run_start, run_entry = key, boundaries[i], entry
    out = bytearray()
    for start, end, entry in rows:
        if id(entry.target) not in starts:
            raise ValueError(f"transform_code_object: exception handler {entry.target.short()} is not in the list")
        _write_exception_table_varint(out, start // 2, True)
        _write_exception_table_varint(out, (end - start) // 2, False)
        _write_exception_table_varint(out, starts[id(entry.target)] // 2, False)
        _write_exception_table_varint(out, (entry.depth << 1) | int(bool(entry.lasti)), False)
    return bytes(out)
