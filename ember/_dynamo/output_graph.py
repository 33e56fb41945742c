"""OutputGraph: the fx graph under construction, its inputs and guards, and the code that calls it.

    out = OutputGraph(code, f_globals, backend, wrap_resume)
    ...translator records nodes via out.create_node(...)...
    out.compile_and_return(tx, retval)     # graph -> backend -> `__compiled_fn_0`; bytecode that calls it
    out.compile_and_break(tx, inst, why)   # same, then run `inst` eagerly and continue in __resume_at_<off>_<n>

The emitted code for seed 003's toy_example is
    LOAD_GLOBAL __compiled_fn_0; LOAD_FAST a; LOAD_FAST b; CALL 2; UNPACK_SEQUENCE 2; STORE_FAST x;
    POP_JUMP_IF_FALSE ...; LOAD_GLOBAL __resume_at_30_1; LOAD_FAST b; LOAD_FAST x; CALL 2; RETURN_VALUE ...
"""
from __future__ import annotations

import contextlib
import io
import re
import sys
import types

from .bytecode_analysis import livevars_analysis
from .bytecode_transformation import (create_call_function, create_instruction, create_load_global,
                                      unique_id)
from .break_calls import RebuiltFunction, call_routed_callee, cells_written_after, route_callee
from .codegen import PyCodegen, load_local
from .exc import unimplemented
from .side_effects import SideEffects
from .._core.tensor_spec import meta_like
from .._logging import trace_log


class OutputGraph:
    def __init__(self, code, f_globals, backend, wrap_resume, closure=None, route_call=None):
        import ember.fx
        self.code = code
        # route_call(fn) -> a callable running fn through the compile entry (for functions made at
        # run time); None: such functions run eagerly
        self.route_call = route_call
        self.root_globals = f_globals
        self.closure = closure
        self.backend = backend
        self.wrap_resume = wrap_resume
        self.graph = ember.fx.Graph()
        self.graph_inputs: list = []          # (placeholder node, source, real value)
        self.input_by_id: dict = {}           # id(real tensor) -> TensorVariable
        self.variable_cache: dict = {}        # id(real object) -> (object, tracker): lists, dicts, modules, ...
        self.guards: set = set()
        self.mutable_sources: list = []       # sources of distinct lists/dicts/sets/objects read (aliasing guard)
        self.side_effects = SideEffects()
        self.new_globals: dict = {}
        self._global_names: dict = {}         # id(value) -> name in new_globals
        self.graphs: list = []
        self.break_reasons: list = []
        self.created_nodes: list = []
        self.instructions = None              # the final instruction list for the transformed code
        self.compiled = False
        # the grad mode as the captured code stands at the current instruction (a with block of
        # ember.no_grad() switches it; variables/ctx_manager.py): meta tensors are computed under it
        self.grad_enabled = ember.is_grad_enabled()

    # ------------------------------------------------------------------ guards
    def guard(self, source, kind_name, value):
        from . import guards
        guards.install_guard(self.guards, source, kind_name, value)   # an unknown kind is a KeyError

    # ------------------------------------------------------------------ graph construction
    def create_node(self, tx, op, target, args, kwargs):
        node = self.graph.create_node(op, target, args, kwargs)
        node.meta["stack_trace"] = tx.frame_summary()
        self.created_nodes.append(node)
        return node

    def add_graph_input(self, tx, value, source):
        """A tensor read from the frame becomes a placeholder (once per tensor object) with TENSOR_MATCH."""
        import ember
        from .variables import TensorVariable
        self.guard(source, "TENSOR_MATCH", value)
        existing = self.input_by_id.get(id(value))
        if existing is not None:
            return existing
        name = _placeholder_name(source)
        last_placeholder = None
        for node in self.graph.nodes:
            if node.op != "placeholder":
                break
            last_placeholder = node
        if last_placeholder is None:
            first = next(iter(self.graph.nodes), None)
            ctx = self.graph.inserting_before(first) if first is not None else contextlib.nullcontext()
        else:
            ctx = self.graph.inserting_after(last_placeholder)
        with ctx:
            node = self.graph.placeholder(name)
        example = meta_like(value)
        node.meta["val"] = example
        node.meta["grapharg_source"] = source
        self.created_nodes.append(node)
        self.graph_inputs.append((node, source, value))
        vt = TensorVariable(node, example, value.device, source=source, python_type=type(value))
        self.input_by_id[id(value)] = vt
        return vt

    def nested_function(self, value, source):
        """The tracker of a function defined inside another one, read at `source` (a closure cell),
        or None for other values. Such a function is a new object on every call of its parent, so,
        like torch's CLOSURE_MATCH, it is guarded on what inlining it reads -- code and globals
        (free variables are guarded where they are read) -- until its identity is used (`is`,
        a dict key: anything that asks for it as a Python constant), which adds FUNCTION_MATCH."""
        if not _is_nested_function(value):
            return None
        from . import guards
        from .source import AttrSource
        guards.install_guard(self.guards, source, guards.GuardKind.TYPE_MATCH, value)
        guards.install_guard(self.guards, AttrSource(source, "__code__"), guards.GuardKind.ID_MATCH, value.__code__)
        guards.install_guard(self.guards, AttrSource(source, "__globals__"), guards.GuardKind.ID_MATCH,
                             value.__globals__)
        for attr in ("__defaults__", "__kwdefaults__"):
            guards.install_guard(self.guards, AttrSource(source, attr), guards.GuardKind.ID_MATCH, None)
        return _code_guarded_function_class()(value, source, self)

    def global_name_for(self, value):
        name = self._global_names.get(id(value))
        if name is None:
            name = unique_id("___ember_value")
            self._global_names[id(value)] = name
            self.new_globals[name] = value
        return name

    # ------------------------------------------------------------------ checkpoints (graph breaks roll back)
    def checkpoint(self):
        return len(self.created_nodes), self.side_effects.checkpoint(), len(self.graph_inputs), self.grad_enabled

    def restore(self, mark):
        nodes, effects, inputs, self.grad_enabled = mark
        for node in reversed(self.created_nodes[nodes:]):   # users were created after their inputs
            self.graph.erase_node(node)
        del self.created_nodes[nodes:]
        for node, _, value in self.graph_inputs[inputs:]:
            self.input_by_id.pop(id(value), None)
        del self.graph_inputs[inputs:]
        self.side_effects.restore(effects)

    # ------------------------------------------------------------------ compiling
    def count_calls(self) -> int:
        return sum(1 for n in self.graph.nodes if n.op not in ("placeholder", "output"))

    def _compile_graph(self, tx, output_nodes):
        """Hand the graph to the backend; returns the global name of the compiled function."""
        import ember.fx
        self.graph.output(tuple(output_nodes))
        for node, source, value in list(self.graph_inputs):     # drop inputs the graph never reads
            if not node.users:
                self.graph.erase_node(node)
                self.graph_inputs.remove((node, source, value))
        gm = ember.fx.GraphModule({}, self.graph, lazy_recompile=True)     # code made if it runs
        name = unique_id("__compiled_fn")
        trace_log("graph_code", lambda: f"TRACED GRAPH\n ===== {name} =====\n" + gm.print_readable(False))
        trace_log("graph", lambda: f"TRACED GRAPH\n {name} {self.code.co_filename} line "
                   f"{self.code.co_firstlineno}\n" + _tabular(gm))
        example_inputs = [value for _, _, value in self.graph_inputs]
        compiled = self.backend(gm, example_inputs)
        if compiled is None:
            compiled = gm.forward
        if any(n.op == "call_function" and getattr(n.target, "__name__", "") in
               ("_set_grad_enabled", "_enter_inference_mode") for n in self.graph.nodes):
            from .variables.ctx_manager import restoring_grad_mode
            compiled = restoring_grad_mode(compiled)
        self.graphs.append(gm)
        self.new_globals[name] = compiled
        return name

    def _emit_prefix(self, tx, stack, live_locals):
        """Instructions that run the graph, replay side effects and leave `stack` on the value stack and
        `live_locals` stored in the frame. Returns the instruction list."""
        from .variables import TensorVariable
        restore_locals = {name: vt for name, vt in live_locals.items() if not _is_unchanged_local(name, vt)}
        has_graph = self.count_calls() > 0
        if not has_graph:
            # nothing to compile: just rebuild what is needed (the graph's nodes are all placeholders)
            cg = PyCodegen(tx)
            self._replay_and_rebuild(cg, stack, restore_locals)
            return cg.instructions
        computed = [vt for vt in [*stack, *restore_locals.values()]]
        simple = self.side_effects.is_empty() and all(
            isinstance(vt, TensorVariable) and vt.source is None for vt in computed)
        if simple:
            # seed 003's shape: UNPACK_SEQUENCE, then STORE_FAST the locals; the rest stays on the stack
            ordered = [*restore_locals.values(), *reversed(stack)]
            name = self._compile_graph(tx, [vt.proxy for vt in ordered])
            cg = PyCodegen(tx)
            self._emit_call(cg, name)
            cg.build("UNPACK_SEQUENCE", len(ordered))
            for local_name in restore_locals:
                cg.store_fast(local_name)
            return cg.instructions
        nodes = []
        for vt in [*stack, *restore_locals.values(), *self.side_effects.values()]:
            _collect_tensors(vt, nodes)
        index = {}
        for node in nodes:
            index.setdefault(node, len(index))
        name = self._compile_graph(tx, list(index))
        tmp = "___graph_out"
        cg = PyCodegen(tx, index, tmp)
        self._emit_call(cg, name)
        cg.store_fast(tmp)
        self._replay_and_rebuild(cg, stack, restore_locals)
        cg.load_const(None)
        cg.store_fast(tmp)
        return cg.instructions

    def _replay_and_rebuild(self, cg, stack, restore_locals):
        """Replay the side effects, push `stack` and store `restore_locals` into the frame's locals."""
        self.side_effects.codegen(cg)
        for vt in stack:
            cg.reconstruct(vt)
        for name, vt in restore_locals.items():
            cg.reconstruct(vt)
            cg.store_fast(name)

    def _emit_call(self, cg, name):
        from .guards import GuardKind
        from .module_guards import graph_call_through_cache
        sources = [source for _, source, _ in self.graph_inputs]
        # inputs read through pinned modules' state come from a tuple kept while no module changed
        cached = graph_call_through_cache(self.new_globals[name], sources, self.guards, GuardKind)
        if cached is not None:
            caller, sources = cached
            name = unique_id("__call_graph")
            self.new_globals[name] = caller
        cg.load_global(name, push_null=True)
        for source in sources:
            cg.load_source(source)
        cg.extend_output(create_call_function(len(sources), False))

    def compile_and_return(self, tx, retval):
        """RETURN_VALUE reached in the root frame."""
        from .variables.ctx_manager import drop_cancelling_grad_switches
        drop_cancelling_grad_switches(self)   # before deciding whether there is a graph, as torch
        if self.count_calls() == 0 and self.side_effects.is_empty() and not self.break_reasons:
            self.instructions = None     # nothing worth compiling: run the original
            return
        prefix = self._emit_prefix(tx, [retval], {})
        self.instructions = [*prefix, create_instruction("RETURN_VALUE")]
        self.compiled = True

    def _load_resume_function(self, code, offset) -> list:
        """Instructions that push the resume function for `code` (routed through the compile entry).

        Without free variables it is one global. With them it is made at run time from the running
        frame's own closure (LOAD_CLOSURE ...; MAKE_FUNCTION): the compiled entry serves every
        function object of the original code, and a resume function baked with the closure seen at
        capture would read another call's cells."""
        if not code.co_freevars:
            name = unique_id(f"__resume_at_{offset}")
            self.new_globals[name] = self.wrap_resume(types.FunctionType(code, self.root_globals, name))
            return [create_load_global(name, False)]
        # each of the resume code's free variables is a free variable or a cell of this frame
        router = self.route_call if self.route_call is not None else self.wrap_resume
        return [create_load_global(self.global_name_for(router), True),
                *[create_instruction("LOAD_CLOSURE", argval=v) for v in code.co_freevars],
                create_instruction("BUILD_TUPLE", arg=len(code.co_freevars)),
                create_instruction("LOAD_CONST", argval=code),
                create_instruction("MAKE_FUNCTION", arg=0x08),
                *create_call_function(1, False)]

    def compile_and_break(self, tx, inst, reason, inlined=False):
        """Graph break at ``inst``: compile what came before, run ``inst`` eagerly, then resume."""
        from .resume_execution import ResumeCodeCache
        from .variables import ConstantVariable, NullVariable
        self.break_reasons.append(reason)
        trace_log("graph_breaks", lambda: f"Graph break: {reason.reason} at {reason.filename}:{reason.lineno}\n"
                   f"    {reason.source_line.strip()}")
        stack = list(tx.stack)
        routed = False
        if inst.opname in ("CALL", "CALL_FUNCTION_EX") and inlined:
            routed_stack = route_callee(self, tx, inst, stack)
            routed, stack = routed_stack is not stack, routed_stack
        n_operands = {"CALL": (inst.arg or 0) + 2, "CALL_FUNCTION_EX": 3 + ((inst.arg or 0) & 1)}.get(inst.opname, 1)
        # inside grad-mode with blocks: leave them in the graph, re-enter them in the resume function
        from .variables.ctx_manager import drop_cancelling_grad_switches, prepare_break_in_blocks
        stack, enter_positions = prepare_break_in_blocks(tx, inst, stack, n_operands)
        drop_cancelling_grad_switches(self)
        null_positions = tuple(i for i, vt in enumerate(stack[:len(stack) - n_operands])
                               if isinstance(vt, NullVariable))
        # a NULL of a pending call below the break's operands is only read back by the resume
        # function (which pushes NULL there again): carry None in its place through the tuple
        stack = [ConstantVariable(None) if i in null_positions else vt for i, vt in enumerate(stack)]
        live_names = livevars_analysis(tx.instructions, inst, freevars=tuple(self.code.co_freevars))
        live_locals = {n: tx.symbolic_locals[n] for n in self.code.co_varnames if n in live_names
                       and n in tx.symbolic_locals}
        # a cell the frame still reads after the break (captured by an inner function that may run
        # meanwhile, e.g. the callee run at this break) is shared: the frame's real cells get the
        # tracked values and reach the resume function through its closure
        # A cell only written after the break (k = 7, read by an inner function made before it) is
        # shared too: the inner function must see the write.
        written = cells_written_after(tx, inst)
        shared_cells = any((n in live_names or n in written) and n not in self.code.co_varnames
                           for n in self.code.co_cellvars)
        if shared_cells:
            live_locals.update((n, tx.symbolic_locals[n]) for n in self.code.co_cellvars if n in tx.symbolic_locals)
        from .variables import NestedUserFunctionVariable
        live_locals = {n: RebuiltFunction(tx, vt) if isinstance(vt, NestedUserFunctionVariable) else vt
                       for n, vt in live_locals.items()}
        prefix = self._emit_prefix(tx, stack, live_locals)
        # the instruction itself, run by the interpreter
        # [NULL, callable, args...] as 3.11/3.12 lay a call out (3.13 puts the NULL above the callable)
        null_layout = isinstance(tx.stack[len(tx.stack) - n_operands], NullVariable) and sys.version_info < (3, 13)
        if inst.opname in ("CALL", "CALL_FUNCTION_EX") and routed and null_layout:
            body = call_routed_callee(self, inst, tx.kw_names)   # the callee's frame right above this one
            n_pop, n_push = n_operands, 1
        elif inst.opname == "CALL":
            body = []
            if tx.kw_names:
                body.append(create_instruction("KW_NAMES", argval=tx.kw_names))
            body.extend(create_call_function(inst.arg, False))
            n_pop, n_push = inst.arg + 2, 1
        elif inst.opname == "CALL_FUNCTION_EX":
            body = [create_instruction("CALL_FUNCTION_EX", arg=inst.arg)]
            n_pop, n_push = 3 + (inst.arg & 1), 1
        else:
            body = None
            n_pop, n_push = 1, 0
        assert n_pop == n_operands, (inst.opname, n_pop, n_operands)
        after_stack = stack[:len(stack) - n_pop]
        nstack = len(after_stack) + n_push

        def resume_call(target_inst):
            live = livevars_analysis(tx.instructions, target_inst, freevars=tuple(self.code.co_freevars))
            # in the original code's order, so a break in a resume function asks for the same layout
            order = ResumeCodeCache.original(self.code).co_varnames
            argnames = tuple(n for n in order if n in live and n in tx.symbolic_locals and n in self.code.co_varnames
                             and not (shared_cells and n in self.code.co_cellvars))
            # shared per (code, offset, layout): a recompile or another break that continues here
            # reuses the continuation's compiled entries instead of capturing it again
            code = ResumeCodeCache.lookup(self.code, target_inst.offset, nstack, argnames,
                                          null_positions=null_positions, enter_positions=enter_positions,
                                          cells_as_freevars=shared_cells)
            load_fn = self._load_resume_function(code, target_inst.offset)
            out = []
            if nstack == 0:
                out.append(create_instruction("PUSH_NULL"))
                out.extend(load_fn)
                out.extend(load_local(self.code, n) for n in argnames)
                out.extend(create_call_function(len(argnames), False))
            else:
                # stack values (NULLs became None) and locals, packed into one tuple: fn(*tuple)
                out.extend(load_local(self.code, n) for n in argnames)
                out.append(create_instruction("BUILD_TUPLE", arg=nstack + len(argnames)))
                out.extend(load_fn)
                out.append(create_instruction("PUSH_NULL"))
                out.append(create_instruction("SWAP", arg=3))
                out.append(create_instruction("CALL_FUNCTION_EX", arg=0))
            out.append(create_instruction("RETURN_VALUE"))
            return out

        next_inst = tx.instructions[tx.index_of[id(inst)] + 1]
        if body is not None:
            # the call runs on its own source line (what a warning, a traceback or a frame inspected
            # during it reports; warnings' "default" filter dedups by that line)
            body[0].starts_line = tx.lineno
            self.instructions = [*prefix, *body, *resume_call(next_inst)]
        else:
            from .symbolic_convert import _jump_kind
            kind = _jump_kind(inst.opname)
            fall_block = resume_call(next_inst)
            jump_block = resume_call(inst.target)
            jump = create_instruction(kind, target=jump_block[0])
            jump.starts_line = tx.lineno
            self.instructions = [*prefix, jump, *fall_block, *jump_block]
        self.compiled = True


_CODE_GUARDED = []


def _code_guarded_function_class():
    """UserFunctionVariable whose identity, once used, is guarded (made on first use: import order)."""
    if _CODE_GUARDED:
        return _CODE_GUARDED[0]
    from .variables.functions import UserFunctionVariable

    class CodeGuardedFunctionVariable(UserFunctionVariable):
        def __init__(self, fn, source, output):
            self._output, self._quiet = output, True
            super().__init__(fn, source)
            self._quiet = False

        @property
        def fn(self):
            if not self._quiet:      # anything but inlining reads the object itself
                self._output.guard(self.source, "FUNCTION_MATCH", self._fn)
            return self._fn

        @fn.setter
        def fn(self, value):
            self._fn = value

        def _inlining(self, method, *args):
            quiet, self._quiet = self._quiet, True
            try:
                return method(*args)
            finally:
                self._quiet = quiet

        def is_python_constant(self):
            return True

        def get_code(self):
            return self._fn.__code__

        def get_globals(self):
            return self._fn.__globals__

        def get_name(self):
            return self._fn.__name__

        def bind(self, tx, args, kwargs):
            return self._inlining(super().bind, tx, args, kwargs)

        def closure_cell(self, tx, name):
            return self._inlining(super().closure_cell, tx, name)

        def __repr__(self):
            return f"UserFunctionVariable({self._fn.__qualname__})"

    _CODE_GUARDED.append(CodeGuardedFunctionVariable)
    return CodeGuardedFunctionVariable


def _is_nested_function(value) -> bool:
    """A plain function defined inside another function, without defaults (made anew per call)."""
    import inspect
    return (type(value) is types.FunctionType and bool(value.__code__.co_flags & inspect.CO_NESTED)
            and value.__defaults__ is None and value.__kwdefaults__ is None)


def _is_unchanged_local(name, vt) -> bool:
    source = getattr(vt, "source", None)
    return type(source).__name__ == "LocalSource" and getattr(source, "local_name", None) == name


def _collect_tensors(vt, nodes):
    from .variables import TensorVariable
    if isinstance(vt, TensorVariable):
        if vt.source is None:
            nodes.append(vt.proxy)
        return
    items = getattr(vt, "items", None)
    if isinstance(items, list):
        for item in items:
            _collect_tensors(item, nodes)
    elif isinstance(items, dict):
        for item in items.values():
            _collect_tensors(item, nodes)
    for attr in ("obj", "func", "fn", "list_vt", "dict_vt"):   # (iterators and views hold their container)
        inner = getattr(vt, attr, None)
        if inner is not None and hasattr(inner, "reconstruct"):
            _collect_tensors(inner, nodes)
    for attr in ("args", "iterators"):
        inner = getattr(vt, attr, None)
        if isinstance(inner, list):
            for item in inner:
                _collect_tensors(item, nodes)


def _placeholder_name(source) -> str:
    if type(source).__name__ == "LocalSource":
        return source.local_name
    name = re.sub(r"[^0-9a-zA-Z_]+", "_", source.name()).strip("_")
    return name or "input"


def _tabular(gm) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        gm.graph.print_tabular()
    return buf.getvalue()
