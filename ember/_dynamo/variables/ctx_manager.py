"""Grad-mode context managers under capture: ``ember.no_grad()``, ``ember.enable_grad()``,
``ember.set_grad_enabled(b)`` and ``ember.inference_mode(b)`` (torch._dynamo.variables.ctx_manager's
GradModeVariable and InferenceModeVariable roles), as with blocks, plain calls and decorators.

    with ember.no_grad():        # BEFORE_WITH -> GradModeVariable.enter: records _set_grad_enabled(False)
        z = y @ w                #   z's meta tensor is computed with grad off: requires_grad=False
                                 # __exit__(None, None, None) -> records _set_grad_enabled(True)

A switch is a call node of ``ember.autograd.grad_mode._set_grad_enabled`` so that it happens when the
graph runs; a switch to the mode already in force records nothing (like torch's coalescing), and
output_graph drops a switch the next node undoes. The translator's own grad mode lives in
``OutputGraph.grad_enabled`` (checkpointed with the graph, so a graph break rolls it back); the
thread's real mode is never changed during capture, so guards read the mode at entry, and every
capture that makes one of these guards on it (the exit switch bakes in the mode at entry). A graph
break inside blocks resumes inside them (the section at the end). Other context managers are not
modelled: a with block of one makes the frame run eagerly, as before.
"""
from __future__ import annotations

import types

import contextlib

from ..exc import unimplemented
from .base import ValueVariable, VariableTracker
from .constant import ConstantVariable

_registered = []


def mode_functions():
    """(_set_grad_enabled, _enter_inference_mode, _exit_inference_mode): what the nodes of grad-mode
    switches call, registered as side-effecting so dead-code elimination keeps them."""
    from ember.autograd.grad_mode import _enter_inference_mode, _exit_inference_mode, _set_grad_enabled
    fns = (_set_grad_enabled, _enter_inference_mode, _exit_inference_mode)
    if not _registered:
        from ember.fx.node import has_side_effect
        for fn in fns:
            has_side_effect(fn)
        _registered.append(True)
    return fns


def grad_mode_classes() -> dict:
    """The grad-mode classes ember.compile models -> their kind."""
    import ember
    return {ember.no_grad: "no_grad", ember.enable_grad: "enable_grad",
            ember.set_grad_enabled: "set_grad_enabled", ember.inference_mode: "inference_mode"}


def is_grad_mode_class(value) -> bool:
    """True for ember.no_grad, ember.enable_grad, ember.set_grad_enabled and ember.inference_mode."""
    return any(value is cls for cls in grad_mode_classes())   # by identity: never a user __eq__/__hash__


def is_grad_mode_clone(value) -> bool:
    """True for the bound ``clone`` of a grad-mode object: what its decorator's wrapper calls to make
    a fresh context manager per call (``with make_ctx(): return fn(*args)``)."""
    from ember.autograd.grad_mode import _GradModeBase
    # a bound method's __self__/__func__ are plain slots; getattr on any other object could run its
    # __getattr__ during capture
    return isinstance(value, types.MethodType) and isinstance(value.__self__, _GradModeBase) and \
        getattr(value.__func__, "__name__", None) == "clone"


def is_enterable_grad_mode_object(value) -> bool:
    """A no_grad(), enable_grad() or inference_mode(b) object made outside the capture (not yet
    entered: entering happens in the captured code), e.g. the one a resume function re-enters."""
    import ember
    return type(value) in (ember.no_grad, ember.enable_grad, ember.inference_mode)


def variable_for_object(tx, obj):
    """The context manager tracker for a real grad-mode object (its kind and mode)."""
    kind = grad_mode_classes()[type(obj)]
    if kind == "inference_mode":
        return InferenceModeVariable.create(tx, obj.mode)
    return GradModeVariable.create(tx, kind, obj.enabled)


def switch_grad_mode(tx, value: bool) -> None:
    """Record a switch to `value` in the graph (nothing when already in force) and track it."""
    out = tx.output
    value = bool(value)
    if out.grad_enabled != value:
        node = out.create_node(tx, "call_function", mode_functions()[0], (value,), {})
        node.meta["val"] = None
        out.grad_enabled = value


class GradModeClassVariable(ValueVariable):
    """``ember.no_grad`` / ``enable_grad`` / ``set_grad_enabled`` / ``inference_mode`` (the class:
    calling it makes the context manager), or a grad-mode object's bound ``clone`` (``clone_of``:
    the object; calling it makes a context manager of the same kind and mode)."""

    def __init__(self, value, source=None, clone_of=None):
        super().__init__(value, source)
        self.clone_of = clone_of

    def call_function(self, tx, args, kwargs):
        if self.clone_of is not None:
            if args or kwargs:
                unimplemented(f"{self.value!r} called with arguments")
            obj = self.clone_of
            if type(obj).__name__ == "set_grad_enabled":   # its clone() switches when made, as here
                return GradModeVariable.create(tx, "set_grad_enabled", obj.enabled)
            return variable_for_object(tx, obj)
        kind = grad_mode_classes()[self.value]
        values = list(args) + list(kwargs.values())
        if kind in ("no_grad", "enable_grad"):
            if values:   # `ember.no_grad(fn)`: decorating inside the compiled region
                unimplemented(f"ember.{kind}(fn) as a decorator inside a compiled region")
            return GradModeVariable.create(tx, kind, kind == "enable_grad")
        if kind == "inference_mode" and not values:
            return InferenceModeVariable.create(tx, True)
        if len(values) != 1 or not values[0].is_python_constant() or \
                not isinstance(values[0].as_python_constant(), (bool, int)):
            unimplemented(f"ember.{kind} with a mode that is not a Python constant (or as a decorator)")
        if kind == "inference_mode":
            return InferenceModeVariable.create(tx, bool(values[0].as_python_constant()))
        return GradModeVariable.create(tx, kind, bool(values[0].as_python_constant()))

    def reconstruct(self, cg):
        if self.clone_of is None and self.source is not None:
            return cg.load_source(self.source)
        if self.clone_of is None:
            return cg.load_python_value(self.value)
        unimplemented("rebuilding a grad-mode object's clone method after a graph break")

    def __repr__(self):
        return f"GradModeClassVariable({self.value!r})"


class GradModeVariable(VariableTracker):
    """A grad-mode context manager made during capture: switches to ``target`` on enter (for
    set_grad_enabled already when made, as its constructor does) and back to ``initial`` on exit."""

    def __init__(self, kind, target, initial):
        super().__init__(None)
        self.kind, self.target, self.initial = kind, target, initial

    @classmethod
    def create(cls, tx, kind, target):
        # the exit switch restores the mode at entry to the region, a constant baked into the graph
        tx.output.guard(None, "GRAD_MODE", None)
        var = cls(kind, bool(target), tx.output.grad_enabled)
        if kind == "set_grad_enabled":
            switch_grad_mode(tx, var.target)
        return var

    def python_type(self):
        import ember
        return getattr(ember, self.kind)

    @property
    def grad_target(self) -> bool:
        """The grad mode inside the block."""
        return self.target

    def enter(self, tx):
        if self.kind != "set_grad_enabled":   # like __enter__: the mode to restore is the one met here
            self.initial = tx.output.grad_enabled
        switch_grad_mode(tx, self.target)
        return ConstantVariable(None)

    def exit(self, tx):
        switch_grad_mode(tx, self.initial)
        return ConstantVariable(None)

    def var_getattr(self, tx, name):
        from .misc import BoundMethodVariable
        if name in ("__enter__", "__exit__"):
            return BoundMethodVariable(self, name)
        unimplemented(f"attribute {name!r} of ember.{self.kind}() inside a compiled region")

    def call_method(self, tx, name, args, kwargs):
        if name == "__enter__" and not args and not kwargs:
            return self.enter(tx)
        if name == "__exit__":
            return self.exit(tx)
        return super().call_method(tx, name, args, kwargs)

    def call_function(self, tx, args, kwargs):
        unimplemented(f"ember.{self.kind}(...)(fn) as a decorator inside a compiled region")

    def load_fresh(self, cg):
        """Code making a new, not yet entered, context manager of this block's kind and mode (a
        set_grad_enabled block is made again as no_grad() / enable_grad(): its constructor switches)."""
        import ember
        cg.load_python_value(ember.enable_grad if self.grad_target else ember.no_grad, push_null=True)
        cg.call(0, push_null=False)

    def reconstruct(self, cg):
        # live across a graph break (e.g. kept in a local): a fresh object of the same kind; a
        # set_grad_enabled object cannot be rebuilt that way (its constructor switches the mode)
        if self.kind == "set_grad_enabled":
            unimplemented("a set_grad_enabled object live across a graph break")
        self.load_fresh(cg)

    def __repr__(self):
        return f"{type(self).__name__}({self.kind}, target={self.target}, initial={self.initial})"


class InferenceModeVariable(GradModeVariable):
    """``ember.inference_mode(mode)``: entering and leaving are graph nodes (torch's
    ``_enter_inference_mode(mode)`` / ``_exit_inference_mode(token)``); grad is off inside when mode."""

    def __init__(self, kind, target, initial):
        super().__init__("inference_mode", target, initial)
        self.enter_node = None

    @classmethod
    def create(cls, tx, target):
        return super().create(tx, "inference_mode", target)

    @property
    def grad_target(self) -> bool:
        return not self.target

    def enter(self, tx):
        out = tx.output
        self.initial = out.grad_enabled
        self.enter_node = out.create_node(tx, "call_function", mode_functions()[1], (self.target,), {})
        self.enter_node.meta["val"] = None
        self.enter_node.meta["grad_before"] = self.initial   # for drop_cancelling_grad_switches
        out.grad_enabled = self.grad_target
        return ConstantVariable(None)

    def exit(self, tx):
        out = tx.output
        node = out.create_node(tx, "call_function", mode_functions()[2], (self.enter_node,), {})
        node.meta["val"] = None
        out.grad_enabled = self.initial
        return ConstantVariable(None)

    def load_fresh(self, cg):
        import ember
        cg.load_python_value(ember.inference_mode, push_null=True)
        cg.load_const(self.target)
        cg.call(1, push_null=False)

    def reconstruct(self, cg):
        self.load_fresh(cg)


def before_with(tx, inst):
    """BEFORE_WITH: the context manager on the stack is replaced by its bound ``__exit__`` (called with
    three Nones at the normal end of the block) and the result of ``__enter__()``. The exceptional exit
    lives in the exception table, which capture never takes (a graph that raises puts the modes back:
    restoring_grad_mode)."""
    from .misc import BoundMethodVariable
    ctx = tx.pop()
    if not isinstance(ctx, GradModeVariable):
        unimplemented(f"with block of a context manager other than a grad mode ({ctx})")
    tx.push(BoundMethodVariable(ctx, "__exit__"))
    tx.push(ctx.enter(tx))


# ---- graph breaks inside grad-mode with blocks -----------------------------------------------------
# As torch does: the graph ends by leaving the open blocks (their exit switches), the instruction at
# the break runs inside fresh copies of the blocks (call_in_blocks, which leaves them even when it
# raises), and the resume function re-enters each block in its stack restore (a fresh no_grad() /
# enable_grad() object passed where the frame had the block's __exit__; make_resume_code's
# enter_positions), so its own graph starts with the switch into the block.

def call_in_blocks(contexts, fn):
    """`fn`, to be called inside the (fresh, not yet entered) context managers `contexts`, outermost
    first: how the instruction at a graph break inside grad-mode blocks runs (the graph has left
    them), so it sees the blocks' modes, and leaves none behind even when it raises."""
    def call(*args, **kwargs):
        with contextlib.ExitStack() as blocks:
            for ctx in contexts:
                blocks.enter_context(ctx)
            return fn(*args, **kwargs)
    return call


def grad_blocks_at(tx, inst):
    """The stack indices of the ``__exit__`` slots of the with blocks open at `inst` when every block
    open there (by the exception table) is a captured grad-mode block; None when a try block or
    another kind of block is open too."""
    from .misc import BoundMethodVariable
    slots = [i for i, vt in enumerate(tx.stack)
             if isinstance(vt, BoundMethodVariable) and isinstance(vt.obj, GradModeVariable) and vt.name == "__exit__"]
    n_blocks, entry = 0, inst.exn_tab_entry
    while entry is not None:
        handler = entry.target
        here = tx.index_of.get(id(handler))
        after = tx.instructions[here + 1] if here is not None and here + 1 < len(tx.instructions) else None
        if handler.opname != "PUSH_EXC_INFO" or after is None or after.opname != "WITH_EXCEPT_START":
            return None   # a try block's handler
        n_blocks += 1
        if handler.exn_tab_entry is None:
            return None
        # the with handler's own row leads to its cleanup; the cleanup's row, if any, is the handler
        # of the block around this one
        entry = handler.exn_tab_entry.target.exn_tab_entry
        if n_blocks > len(slots):
            return None
    return slots if n_blocks == len(slots) else None


class _ReenterBlock:
    """Stands for an open block's ``__exit__`` slot in the code emitted at a break: a fresh context
    manager of the block's kind and mode, entered by the resume function's stack restore."""

    def __init__(self, block):
        self.block, self.source, self.items = block, None, []

    def reconstruct(self, cg):
        self.block.load_fresh(cg)


class _InBlocks:
    """Stands for the callable of the call at a break inside grad-mode blocks:
    call_in_blocks((fresh context managers of the blocks), callable)."""

    def __init__(self, blocks, obj):
        self.blocks, self.obj, self.source, self.items = blocks, obj, None, []

    def reconstruct(self, cg):
        cg.load_python_value(call_in_blocks, push_null=True)
        for block in self.blocks:
            block.load_fresh(cg)
        cg.build("BUILD_TUPLE", len(self.blocks))
        cg.reconstruct(self.obj)
        cg.call(2, push_null=False)


def prepare_break_in_blocks(tx, inst, stack, n_operands):
    """At a graph break inside grad-mode with blocks (grad_blocks_at): record the blocks' exits in the
    graph and rewrite `stack` for the code emitted at the break. Returns (stack, enter_positions)."""
    from .misc import NullVariable
    slots = grad_blocks_at(tx, inst) if inst.exn_tab_entry is not None else None
    if not slots:
        return stack, ()
    blocks = [stack[i].obj for i in slots]   # outermost first
    stack = list(stack)
    for i in reversed(slots):   # the graph leaves the blocks, innermost first
        stack[i].obj.exit(tx)
        stack[i] = _ReenterBlock(stack[i].obj)
    if inst.opname == "CALL":
        index = len(stack) - n_operands + 1          # [NULL, callable, args] or [callable, self, args]
        if not isinstance(stack[index - 1], NullVariable):
            index -= 1
        stack[index] = _InBlocks(blocks, stack[index])
    elif inst.opname == "CALL_FUNCTION_EX":
        index = len(stack) - n_operands + 1          # [NULL, callable, args(, kwargs)]
        stack[index] = _InBlocks(blocks, stack[index])
    return stack, tuple(slots)


# ---- the compiled graph --------------------------------------------------------------------------
def drop_cancelling_grad_switches(out):
    """Erase a grad-mode switch immediately undone by the next node (e.g. leaving one with block and
    entering another: ``set(True); set(False)``), as torch's OutputGraph.cleanup_graph does, so the
    graphs (and their op counts) match."""
    from ember.autograd.grad_mode import _enter_inference_mode, _exit_inference_mode, _set_grad_enabled
    from ember.autograd.grad_mode import is_grad_enabled
    mode = is_grad_enabled()   # the thread's mode is not touched during capture: the mode at entry
    nodes = list(out.graph.nodes)
    i = 0
    while i < len(nodes):
        node = nodes[i]
        following = nodes[i + 1] if i + 1 < len(nodes) else None
        if node.target is _set_grad_enabled and node.args != (mode,) and following is not None and \
                following.target is _set_grad_enabled and following.args == (mode,):
            for n in (node, following):
                out.graph.erase_node(n)
                out.created_nodes.remove(n)
            i += 2
            continue
        if node.target is _set_grad_enabled:
            mode = node.args[0]
        elif node.target is _enter_inference_mode:
            mode = not node.args[0]
        elif node.target is _exit_inference_mode:
            mode = node.args[0].meta["grad_before"]
        i += 1


def restoring_grad_mode(compiled):
    """`compiled` (a graph that switches grad mode), putting back the grad and inference modes at
    entry when it raises: the with blocks it came from would have restored them on the way out
    (their exceptional exit is not in the graph)."""
    from ember.autograd import grad_mode

    def run(*args):
        entry = grad_mode.is_grad_enabled(), grad_mode.is_inference_mode_enabled()
        try:
            return compiled(*args)
        except BaseException:
            grad_mode._set_grad_enabled(entry[0])
            grad_mode._set_inference_mode_enabled(entry[1])
            raise
    run.__wrapped__ = compiled
    return run
