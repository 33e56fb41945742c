"""Running the instruction at a graph break for real: its callee, and the functions it needs rebuilt.

    stack = route_callee(out, tx, inst, stack)     # a break inside an inlined call: call the callee itself
    body = call_routed_callee(out, inst, kw_names)  # ...from the compiled frame, via pick_target
    RebuiltFunction(tx, nested_fn_vt)               # a function made in the frame, remade by MAKE_FUNCTION

A callee routed through the compile entry is compiled on its first call; the code emitted here asks
eval_frame.pick_target for the function to run (the compiled entry or the original) and calls it
from the compiled frame, so the callee's caller is the frame eager Python would show.
"""
from __future__ import annotations

import types

from .bytecode_transformation import create_call_function, create_instruction, create_load_global, unique_id
from .exc import unimplemented


def call_routed_callee(out, inst, kw_names) -> list:
    """Instructions for a break's call of a callee routed through the compile entry, on the
    stack as [NULL, routed, args...]: ``target = pick_target(routed, args, kwargs)`` (the
    compiled entry or the function itself), then ``target(*args, **kwargs)`` -- called from this
    frame, so the callee's caller is the frame eager Python would show."""
    from .eval_frame import pick_target
    names = [unique_id("___break_args"), unique_id("___break_kwargs"), unique_id("___break_fn")]
    args_name, kwargs_name, fn_name = names
    code = []
    if inst.opname == "CALL":
        kw = tuple(kw_names or ())
        if kw:
            code += [create_instruction("LOAD_CONST", argval=kw),
                     create_instruction("BUILD_CONST_KEY_MAP", arg=len(kw))]
        else:
            code.append(create_instruction("BUILD_MAP", arg=0))
        code += [create_instruction("STORE_FAST", argval=kwargs_name),
                 create_instruction("BUILD_TUPLE", arg=inst.arg - len(kw))]
    else:   # CALL_FUNCTION_EX: [NULL, fn, args(, kwargs)]
        if not inst.arg & 1:
            code.append(create_instruction("BUILD_MAP", arg=0))
        code.append(create_instruction("STORE_FAST", argval=kwargs_name))
    code += [create_instruction("STORE_FAST", argval=args_name),
             create_instruction("STORE_FAST", argval=fn_name),           # the NULL stays below
             create_load_global(out.global_name_for(pick_target), True),
             create_instruction("LOAD_FAST", argval=fn_name),
             create_instruction("LOAD_FAST", argval=args_name),
             create_instruction("LOAD_FAST", argval=kwargs_name),
             *create_call_function(3, False),
             create_instruction("LOAD_FAST", argval=args_name),
             create_instruction("LOAD_FAST", argval=kwargs_name),
             create_instruction("CALL_FUNCTION_EX", arg=1)]
    for name in names:   # release the temporaries (the frame lives on in the resume function)
        code += [create_instruction("LOAD_CONST", argval=None), create_instruction("STORE_FAST", argval=name)]
    return code


def cells_written_after(tx, inst) -> set:
    """Names STORE_DEREF/DELETE_DEREF may write once the frame goes on from `inst` (a jump back
    from after it makes the jump target's code reachable again)."""
    insts = tx.instructions
    start = tx.index_of[id(inst)]
    moved = True
    while moved:
        moved = False
        for later in insts[start:]:
            target = getattr(later, "target", None)
            if target is not None and id(target) in tx.index_of and tx.index_of[id(target)] < start:
                start, moved = tx.index_of[id(target)], True
    return {i.argval for i in insts[start:] if i.opname in ("STORE_DEREF", "DELETE_DEREF")}


def route_callee(out, tx, inst, stack):
    """A break inside an inlined call: run the callee for real, routed through the compile entry."""
    from .variables import NNModuleVariable, PythonValueVariable
    from .variables.functions import UserFunctionVariable, UserMethodVariable
    argc = inst.arg if inst.opname == "CALL" else 0
    index = len(stack) - argc - 1 if inst.opname == "CALL" else len(stack) - 2 - (inst.arg & 1)
    fn = stack[index]
    below = stack[index - 1]
    from .variables import NullVariable
    if inst.opname == "CALL" and not isinstance(below, NullVariable):   # [callable, self, args] layout
        index, fn = index - 1, below
    from .variables import NestedUserFunctionVariable
    replacement = None
    if isinstance(fn, NestedUserFunctionVariable):
        # made in this frame: rebuilt at run time (MAKE_FUNCTION) and called through the compile
        # entry, so it is captured in its own frame like any callee at a break
        stack = list(stack)
        stack[index] = RebuiltFunction(tx, fn, route=out.route_call)
        return stack
    if isinstance(fn, UserFunctionVariable) and fn.source is not None and out.route_call is not None:
        # read from the frame on every call (guards may admit another function object of its code)
        stack = list(stack)
        stack[index] = _RoutedSource(fn.source, out.route_call)
        return stack
    if isinstance(fn, UserFunctionVariable):
        replacement = out.wrap_resume(fn.fn)
    elif isinstance(fn, UserMethodVariable):
        obj = getattr(fn.obj, "module", None) or getattr(fn.obj, "value", None)
        if obj is not None:
            replacement = types.MethodType(out.wrap_resume(fn.fn), obj)
    elif isinstance(fn, NNModuleVariable):
        m = fn.module
        import ember
        if type(m).__call__ is ember.nn.Module.__call__ and not (m._forward_hooks or m._forward_pre_hooks) \
                and "forward" not in m.__dict__:   # otherwise m(...) itself runs, as eagerly
            replacement = types.MethodType(out.wrap_resume(type(m).forward), m)
    if replacement is None:
        return stack
    stack = list(stack)
    stack[index] = PythonValueVariable(replacement)
    return stack


class _RoutedSource:
    """Stands for a function read from `source` in the code emitted at a break: route_call(<it>)."""

    def __init__(self, source, route):
        self.source, self.route, self.items = source, route, []

    def reconstruct(self, cg):
        cg.load_global(cg.tx.output.global_name_for(self.route), push_null=True)
        cg.load_source(self.source)
        cg.call(1, push_null=False)


class RebuiltFunction:
    """Stands for a NestedUserFunctionVariable in the code emitted at a break: rebuilds the function
    from its code constant, defaults and closure (MAKE_FUNCTION), optionally passed to `route`.

    A cell the frame made (LOAD_CLOSURE) is its real cell in the frame, first given the value the
    capture tracked for it; `items` lists the trackers that rebuild reads, so the tensors among
    them become graph outputs."""

    def __init__(self, root_tx, fn_vt, route=None):
        from .variables import NestedUserFunctionVariable
        from .variables.misc import CellVariable, RealCellVariable
        self.fn_vt, self.route, self.source = fn_vt, route, None
        if fn_vt.kwdefaults:
            unimplemented(f"rebuilding {fn_vt.qualname} with keyword-only defaults after a graph break")

        def rebuilt(vt):
            return RebuiltFunction(root_tx, vt) if isinstance(vt, NestedUserFunctionVariable) else vt
        self.defaults = [rebuilt(vt) for vt in fn_vt.defaults]
        self.cells = []          # (name, tracker of its value or None)
        for cell in fn_vt.closure:
            if isinstance(cell, CellVariable) and cell.owner is root_tx:
                value = root_tx.symbolic_locals.get(cell.name)
                self.cells.append((cell.name, None if value is None else rebuilt(value)))
            elif isinstance(cell, RealCellVariable) and type(cell.source).__name__ == "ClosureCellSource":
                self.cells.append((cell.source.cell_name, None))   # the frame's own free variable
            else:
                unimplemented(f"rebuilding {fn_vt.qualname} after a graph break: a closure cell of an "
                               f"inlined function")
        self.items = [*self.defaults, *(vt for _, vt in self.cells if vt is not None)]

    def reconstruct(self, cg):
        if self.route is not None:   # the compile options' own router: the same for every call
            cg.load_global(cg.tx.output.global_name_for(self.route), push_null=True)
        flags = 0
        if self.defaults:
            for vt in self.defaults:
                cg.reconstruct(vt)
            cg.build("BUILD_TUPLE", len(self.defaults))
            flags |= 0x01
        if self.cells:
            for name, vt in self.cells:   # the frame's cell gets the value the capture tracked for it
                if vt is not None:
                    cg.reconstruct(vt)
                    cg.append_output(create_instruction("STORE_DEREF", argval=name))
            for name, _ in self.cells:
                cg.append_output(create_instruction("LOAD_CLOSURE", argval=name))
            cg.build("BUILD_TUPLE", len(self.cells))
            flags |= 0x08
        cg.load_const(self.fn_vt.code)
        cg.build("MAKE_FUNCTION", flags)
        if self.route is not None:
            cg.call(1, push_null=False)
