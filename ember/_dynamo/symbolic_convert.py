"""The symbolic instruction translator: runs a frame's bytecode on VariableTrackers instead of values.

    tx = InstructionTranslator(code, f_globals, f_locals, closure, output)
    tx.run()          # fills output.graph; ends at RETURN_VALUE or at a graph break

One handler per opcode, in the table ``HANDLERS`` (3.11 and 3.12 names both); the handlers themselves live in
the ``_opcodes_*`` modules by kind (load/store, operators, containers, control flow), so this file holds
only the translator state, its loop and the graph-break decision. Tensor operations become
fx nodes (variables/tensor.py); constants fold; user functions are inlined by InliningInstructionTranslator.
Whatever cannot be captured raises exc.Unsupported; the root translator turns that into a graph break at a
CALL or a conditional jump (compile what came before, run the instruction, resume in a new function) or
gives up on the frame.
"""
from __future__ import annotations

import inspect
import linecache
import sys
import types

from . import _opcodes_containers, _opcodes_control, _opcodes_load_store, _opcodes_operators, exc
from ._opcodes_control import _jump_kind, _Return, _Yield   # _jump_kind: output_graph imports it from here too
from .bytecode_transformation import cleaned_instructions
from .exc import Unsupported, unimplemented
from .variables import NestedUserFunctionVariable, TensorVariable, VariableTracker, wrap
from .variables.iterators import GeneratorVariable, all_iterators
from .variables.misc import CellVariable

PY311 = sys.version_info[:2] == (3, 11)
_MAX_INLINE_DEPTH = 32
# Standard-library modules whose functions are called for real (a graph break), never inlined: they
# read the call stack (logging's caller, warnings' stacklevel, inspect, traceback), touch the world
# (files, processes, threads, clocks) or draw random numbers, so their effects and what they
# observe must be those of an eager call, made from the right frame.
_NEVER_INLINED = frozenset({"logging", "warnings", "inspect", "traceback", "threading", "pdb", "faulthandler",
                            "tracemalloc", "gc", "atexit", "signal", "subprocess", "socket", "os", "io", "shutil",
                            "tempfile", "pathlib", "time", "datetime", "uuid", "secrets", "random", "asyncio"})


class InstructionTranslatorBase:
    """State and handlers shared by the root translator and the inlining one."""

    def __init__(self, code, f_globals, symbolic_locals, output, parent=None):
        self.code = code
        self.f_globals = f_globals
        self.f_builtins = f_globals.get("__builtins__", __builtins__)
        if isinstance(self.f_builtins, types.ModuleType):
            self.f_builtins = vars(self.f_builtins)
        self.symbolic_locals = symbolic_locals
        self.output = output
        self.parent = parent
        self.instructions = cleaned_instructions(code)
        self.index_of = {id(inst): i for i, inst in enumerate(self.instructions)}
        self.stack: list = []
        self.ip = 0
        self.kw_names = None
        self.current_inst = None
        self.lineno = code.co_firstlineno
        self.return_value = None

    # ---------------------------------------------------------------- stack helpers
    def push(self, vt):
        assert isinstance(vt, VariableTracker), vt
        self.stack.append(vt)

    def pop(self):
        return self.stack.pop()

    def popn(self, n):
        if n == 0:
            return []
        items = self.stack[-n:]
        del self.stack[-n:]
        return items

    def jump(self, inst):
        self.ip = self.index_of[id(inst.target)]

    # ---------------------------------------------------------------- where we are
    def source_line(self, lineno=None) -> str:
        return linecache.getline(self.code.co_filename, lineno or self.lineno).rstrip("\n")

    def frame_summary(self) -> str:
        outer = self.parent.frame_summary() if self.parent is not None else ""
        return outer + (f'  File "{self.code.co_filename}", line {self.lineno}, in {self.code.co_name}\n'
                        f"    {self.source_line().strip()}\n")

    # ---------------------------------------------------------------- the loop
    def step(self):
        inst = self.instructions[self.ip]
        self.ip += 1
        self.current_inst = inst
        if inst.starts_line is not None:
            self.lineno = inst.starts_line
        handler = HANDLERS.get(inst.opname)
        if handler is None:
            unimplemented(f"bytecode {inst.opname} is not supported")
        handler(self, inst)

    def run(self):
        try:
            while True:
                self.step()
        except _Return:
            return self.return_value

    # ---------------------------------------------------------------- shared operations
    def load_global(self, name):
        from . import source as src
        pending = self.output.side_effects.pending_global(self, name)
        if pending is not None:
            return pending
        if name in self.f_globals:
            if self.f_globals is self.output.root_globals:
                guard_source = src.GlobalSource(name)
            else:   # an inlined function from another module: its module's globals are guarded too
                guard_source = src.ModuleGlobalSource(id(self.f_globals), name, self.f_globals)
            return wrap(self, self.f_globals[name], guard_source)
        if name in self.f_builtins:
            self.output.guard(src.GlobalShadowsBuiltinSource(id(self.f_globals), name, self.f_globals),
                              "CONSTANT_MATCH", False)
            return wrap(self, self.f_builtins[name], None, guard=False)
        unimplemented(f"NameError: name {name!r} is not defined")

    def call_function(self, fn, args, kwargs):
        if isinstance(fn, (TensorVariable,)):
            unimplemented("calling a tensor")
        return fn.call_function(self, args, kwargs)

    def store_attr(self, obj, name, value):
        from .variables import NNModuleVariable, UserDefinedObjectVariable
        local_store = getattr(obj, "store_attr_local", None)   # an object made during capture
        if local_store is not None:
            local_store(self, name, value)
            return
        if isinstance(obj, (NNModuleVariable, UserDefinedObjectVariable)) and obj.source is not None:
            if isinstance(obj, NNModuleVariable) and isinstance(value, TensorVariable) and name in \
                    obj.module._parameters:
                unimplemented("assigning a parameter of a module")
            self.output.side_effects.store_attr(self, obj, name, value)
            return
        unimplemented(f"attribute assignment {name!r} on {obj}")

    def inline_user_function(self, fn_vt, args, kwargs):
        depth, tx = 0, self
        while tx is not None:
            depth, tx = depth + 1, tx.parent
        if depth > _MAX_INLINE_DEPTH:
            unimplemented("recursion too deep to inline")
        code = fn_vt.get_code()
        module = str(fn_vt.get_globals().get("__name__", "")).split(".")[0]
        if module in _NEVER_INLINED:
            unimplemented(f"a call into {module} (run as it is, never inlined)")
        from .markers import DISABLED_WRAPPER_CODE
        if code is DISABLED_WRAPPER_CODE:   # (by code: reading fn_vt.fn could add an identity guard)
            unimplemented("Skip calling a function wrapped by ember.compiler.disable()")
        if code.co_flags & (inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE):
            unimplemented("calling a coroutine")
        bound = fn_vt.bind(self, args, kwargs)
        child = InliningInstructionTranslator(fn_vt, code, fn_vt.get_globals(), bound, self.output, parent=self)
        if child.generator_mode:   # calling a generator function runs none of its body yet
            if child.has_handlers():
                unimplemented("a generator with try/with blocks (closing it early would run their code)")
            return GeneratorVariable(child)
        try:
            return child.run()
        except Unsupported as e:
            e.set_location(code.co_filename, child.lineno, child.source_line())
            e.inlined = True
            raise

    def truthy(self, vt):
        return vt.truthy(self)


# ==================================================================== opcode handlers
HANDLERS: dict = {}


def handles(*names):
    """Decorator: register the decorated function as the handler of the opcodes ``names``."""
    def register(fn):
        for name in names:
            HANDLERS[name] = fn
        return fn
    return register


for _opcodes in (_opcodes_load_store, _opcodes_operators, _opcodes_containers, _opcodes_control):
    _opcodes.register(HANDLERS)


# ==================================================================== translators
class InstructionTranslator(InstructionTranslatorBase):
    """The root frame: its locals come from the real frame, with LocalSource guards."""

    def __init__(self, code, f_globals, f_locals, closure, output, fullgraph=False):
        from . import source as src
        super().__init__(code, f_globals, {}, output)
        self.closure = closure
        self.fullgraph = fullgraph
        self.f_locals = f_locals
        nargs = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & inspect.CO_VARARGS) + \
            bool(code.co_flags & inspect.CO_VARKEYWORDS)
        for name in code.co_varnames[:nargs]:
            if name in f_locals:
                self.symbolic_locals[name] = wrap(self, f_locals[name], src.LocalSource(name))
        self.break_result = None   # set when the frame ends at a graph break

    def load_deref(self, name):
        from . import source as src
        if name in self.code.co_freevars:
            index = self.code.co_freevars.index(name)
            try:
                value = self.closure[index].cell_contents
            except ValueError:
                unimplemented(f"free variable {name!r} referenced before assignment")
            source = src.ClosureCellSource(name, index)
            # a function made by the enclosing call (new on each call): guarded on its code
            nested = self.output.nested_function(value, source)
            return nested if nested is not None else wrap(self, value, source)
        if name not in self.symbolic_locals:
            if name in self.f_locals:   # a cell argument
                self.symbolic_locals[name] = wrap(self, self.f_locals[name], src.LocalSource(name))
            else:
                unimplemented(f"free variable {name!r} referenced before assignment")
        return self.symbolic_locals[name]

    def store_deref(self, name, value):
        if name in self.code.co_freevars:
            unimplemented(f"assignment to the enclosing function's variable {name!r} (nonlocal)")
        self.symbolic_locals[name] = value

    def load_closure(self, name):
        if name in self.code.co_freevars:
            index = self.code.co_freevars.index(name)
            from . import source as src
            from .variables.misc import RealCellVariable
            return RealCellVariable(self.closure[index], src.ClosureCellSource(name, index))
        return CellVariable(self, name)

    def on_return(self, inst):
        self.output.compile_and_return(self, self.return_value)

    def run(self):
        while True:
            inst = self.instructions[self.ip]
            stack_before = list(self.stack)
            kw_before = self.kw_names
            # an inlined call may rebind this frame's cells (nonlocal) before it breaks
            locals_before = dict(self.symbolic_locals) if inst.opname in ("CALL", "CALL_FUNCTION_EX") else None
            # ... and advance an iterator it was passed (a comprehension's): rewound at a break, so the
            # call re-run for real sees every item
            iterators = [(vt, vt.state()) for vt in all_iterators([*stack_before, *self.symbolic_locals.values()])] \
                if locals_before is not None else ()
            checkpoint = self.output.checkpoint()
            try:
                self.step()
            except _Return:
                return
            except Unsupported as e:
                e.set_location(self.code.co_filename, self.lineno, self.source_line())
                reason = e.break_reason()
                if self.fullgraph:
                    raise
                if not self.can_break_at(inst, e):
                    why = e.reason
                    if self.in_grad_mode_block():   # torch resumes inside the block; ember runs it eagerly
                        why += " (inside a grad-mode with block: the frame runs eagerly)"
                    raise exc.SkipFrame(why, filename=reason.filename, lineno=reason.lineno,
                                        source_line=reason.source_line) from e
                self.output.restore(checkpoint)
                self.stack = stack_before
                self.kw_names = kw_before
                if locals_before is not None:
                    self.symbolic_locals = locals_before
                for vt, state in iterators:
                    vt.set_state(state)
                self.output.compile_and_break(self, inst, reason, inlined=getattr(e, "inlined", False))
                return

    def in_grad_mode_block(self) -> bool:
        """True inside a captured ``with ember.no_grad():`` block (its ``__exit__`` is on the stack)."""
        from .variables.ctx_manager import GradModeVariable
        from .variables.misc import BoundMethodVariable
        return any(isinstance(vt, BoundMethodVariable) and isinstance(vt.obj, GradModeVariable)
                   for vt in self.stack)

    def can_break_at(self, inst, e) -> bool:
        kind = _jump_kind(inst.opname)
        if inst.opname not in ("CALL", "CALL_FUNCTION_EX") and not kind.startswith("POP_JUMP_IF"):
            return False
        if inst.exn_tab_entry is not None:   # inside try/with: the handler could not be rebuilt,
            from .variables.ctx_manager import grad_blocks_at   # except grad-mode with blocks
            if grad_blocks_at(self, inst) is None:
                return False
        return not self.has_backedge(inst)

    def has_backedge(self, inst) -> bool:
        """A jump back to before ``inst`` after it: the break may be inside a loop (torch skips those).

        torch's heuristic, so the same frames are skipped: scan the instructions after ``inst`` up to
        the first return. A loop's own closing conditional jump is not counted (it is ``inst``
        itself): breaking there resumes at the loop body, a cached resume function."""
        here = self.index_of[id(inst)]
        for i in self.instructions[here + 1:]:
            if i.opname in ("RETURN_VALUE", "RETURN_CONST"):
                return False
            if i.target is not None and self.index_of.get(id(i.target), here) < here:
                return True
        return False


class InliningInstructionTranslator(InstructionTranslatorBase):
    """Runs a user function's bytecode inside the caller's graph; its result is the return tracker."""

    def __init__(self, fn_vt, code, f_globals, symbolic_locals, output, parent):
        super().__init__(code, f_globals, symbolic_locals, output, parent)
        self.fn_vt = fn_vt
        self.generator_mode = bool(code.co_flags & inspect.CO_GENERATOR)

    def load_deref(self, name):
        if name in self.code.co_freevars:
            return self.fn_vt.closure_cell(self, name)
        if name not in self.symbolic_locals:
            unimplemented(f"free variable {name!r} referenced before assignment")
        return self.symbolic_locals[name]

    def store_deref(self, name, value):
        if name in self.code.co_freevars:
            if not isinstance(self.fn_vt, NestedUserFunctionVariable):
                unimplemented(f"assignment to the enclosing function's variable {name!r} (nonlocal)")
            self.fn_vt.store_closure_cell(name, value)
            return
        self.symbolic_locals[name] = value

    def load_closure(self, name):
        if name in self.code.co_freevars:
            return self.fn_vt.closure[self.code.co_freevars.index(name)] \
                if isinstance(self.fn_vt, NestedUserFunctionVariable) else unimplemented("re-closing a free cell")
        return CellVariable(self, name)

    def on_return(self, inst):
        pass

    def has_handlers(self) -> bool:
        """True when the code has try/except/finally or with blocks (not counting 3.12's implicit
        handler of a generator's whole body, which turns a StopIteration into RuntimeError)."""
        return any(inst.exn_tab_entry is not None and not _is_stop_iteration_guard(inst.exn_tab_entry.target)
                   for inst in self.instructions)

    def resume(self):
        """Run a generator's body to its next ``yield``: the yielded tracker, or None when it returns."""
        try:
            while True:
                self.step()
        except _Yield as y:
            return y.value
        except _Return:
            return None
        except Unsupported as e:
            e.set_location(self.code.co_filename, self.lineno, self.source_line())
            e.inlined = True
            raise


def _is_stop_iteration_guard(inst) -> bool:
    return inst.opname == "CALL_INTRINSIC_1" and inst.arg == 3
