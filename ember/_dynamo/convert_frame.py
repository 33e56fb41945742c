"""compile_frame: capture one frame's bytecode into a graph and return the code that runs it (interfaces D3).

    result = compile_frame(fn.__code__, fn.__globals__, {"a": a, "b": b}, fn.__closure__, backend,
                           fullgraph=False, wrap_resume=lambda f: f)
    result.code          # LOAD_GLOBAL __compiled_fn_0 ... (seed 003's MODIFIED BYTECODE)
    result.new_globals   # {"__compiled_fn_0": <callable>, "__resume_at_30_1": <callable>, ...}

Returns None when there is nothing worth compiling (no tensor operations, no side effects) or when the
frame must run eagerly (a break inside a loop or a try block, an unsupported construct): the reason is
logged under "graph_breaks".
"""
from __future__ import annotations

import dataclasses
import inspect
import types

from .bytecode_transformation import transform_code_object
from .exc import Unsupported
from .._logging import trace_log


@dataclasses.dataclass
class CompileResult:
    code: types.CodeType
    guards: list
    new_globals: dict
    graphs: list
    break_reasons: list


def compile_frame(code, f_globals, f_locals: dict, closure, backend, *, fullgraph: bool,
                  wrap_resume) -> CompileResult | None:
    """Symbolically run ``code`` with the argument values ``f_locals``; see the module docstring.

    When ``wrap_resume`` is a compile options' bound method, their ``route`` (a callable that runs a
    function made at run time, e.g. a closure rebuilt at a graph break, through the compile entry)
    is used for such functions; otherwise they run eagerly."""
    from .output_graph import OutputGraph
    from .symbolic_convert import InstructionTranslator
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        if fullgraph:
            raise Unsupported(f"generator or coroutine function {code.co_name}")
        trace_log("graph_breaks", lambda: f"skipping {code.co_name}: generator functions run eagerly")
        return None
    route_call = getattr(getattr(wrap_resume, "__self__", None), "route", None)
    from .. import is_grad_enabled
    from .._core.dtype import get_default_dtype
    from .guards import GuardKind, install_guard
    from .source import GlobalStateSource
    entry_grad, entry_dtype = is_grad_enabled(), get_default_dtype()
    output = OutputGraph(code, f_globals, backend, wrap_resume, closure, route_call=route_call)
    tx = InstructionTranslator(code, f_globals, f_locals, closure, output, fullgraph=fullgraph)
    import ember
    rng = ember.get_rng_state()     # the symbolic run computes example values with real random ops;
    try:                            # the compiled code must draw what eager would, from the same state
        tx.run()
    except Unsupported as e:   # SkipFrame, or a break that could not be turned into bytecode
        if fullgraph:
            raise
        trace_log("graph_breaks", lambda e=e: f"skipping frame {code.co_name} ({code.co_filename}:"
                   f"{code.co_firstlineno}): {e.reason}, at {e.filename}:{e.lineno}\n    {e.source_line.strip()}")
        output.break_reasons.append(e.break_reason())
        return None
    finally:
        ember.set_rng_state(rng)
    if output.instructions is None:
        return None
    new_instructions = output.instructions

    def transform(instructions, code_options):
        prologue = []
        for inst in instructions:   # keep MAKE_CELL / COPY_FREE_VARS / RESUME (and 3.11 generator setup)
            if inst.opname in ("RESUME", "MAKE_CELL", "COPY_FREE_VARS", "NOP") and not prologue_done(prologue):
                prologue.append(inst)
                if inst.opname == "RESUME":
                    break
            else:
                break
        instructions[:] = [*prologue, *new_instructions]
        for inst in instructions:
            inst.exn_tab_entry = None
        # starts_line / positions of new instructions: the function's first line (like seed 003: "9  0 LOAD_GLOBAL")
        first = new_instructions[0] if new_instructions else None
        if first is not None and first.starts_line is None:
            first.starts_line = code.co_firstlineno

    new_code = transform_code_object(code, transform)
    trace_log("bytecode", lambda: _format_bytecodes(code, new_code))
    if output.graphs:
        # graphs fold the grad mode (requires_grad of results) and the default dtype (factories)
        # even when no tensor input brings TENSOR_MATCH's dispatch-state check: torch's GLOBAL_STATE
        install_guard(output.guards, GlobalStateSource("grad_enabled"), GuardKind.CONSTANT_MATCH, entry_grad)
        install_guard(output.guards, GlobalStateSource("default_dtype"), GuardKind.ID_MATCH, entry_dtype)
    if len(output.mutable_sources) > 1:   # distinct containers/objects read from the frame stay distinct
        install_guard(output.guards, output.mutable_sources[0], GuardKind.NO_TENSOR_ALIASING, output.mutable_sources)
    result = CompileResult(new_code, sorted(output.guards, key=_guard_sort_key), dict(output.new_globals),
                           list(output.graphs), list(output.break_reasons))
    return result


def prologue_done(prologue) -> bool:
    return bool(prologue) and prologue[-1].opname == "RESUME"


def _guard_sort_key(guard):
    source = getattr(guard, "source", None)
    name = source.name() if source is not None and hasattr(source, "name") else ""
    return (name, str(getattr(guard, "kind", "")))


def _format_bytecodes(code, new_code) -> str:
    from .resume_execution import format_bytecode
    return (format_bytecode("ORIGINAL BYTECODE", code)
            + "\n" + format_bytecode("MODIFIED BYTECODE", new_code))
