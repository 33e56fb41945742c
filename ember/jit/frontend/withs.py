"""``with`` statements: the grad-mode context managers.

Script understands ``with ember.no_grad():``, ``with ember.enable_grad():`` and
``with ember.set_grad_enabled(flag):`` (flag a bool value), as torch.jit.script does; several
items in one ``with`` nest left to right. TorchScript keeps a context object (prim::Enter /
prim::Exit); the IR here is the simpler equivalent lowering:

    %prev : bool = prim::IsGradEnabled()
    %1 : NoneType = prim::SetGradEnabled(%false)
    ...body...
    %2 : NoneType = prim::SetGradEnabled(%prev)

Both prim ops are impure, so the passes neither drop, merge nor fold them, and CSE does not merge
values across a SetGradEnabled (passes/common_subexpression_elimination.py). ``return``,
``break`` and ``continue`` inside the body were turned into flags by exits.py, so control always
reaches the restore; when the body raises, the executor restores the mode it had when the run
started (executor/graph_executor.py), which is the mode the outermost ``with`` saved.
Any other context manager (and ``as`` targets) keeps the "with statements aren't supported" error.
"""
from __future__ import annotations

import ast

from ember.jit.ir import prim
from ember.jit.ir.types import BoolType

from . import builtins as rules
from .errors import UnsupportedNodeError, keyword_span
from .state import PyObj


def _grad_mode_classes() -> dict:
    from ember.autograd import grad_mode
    return {grad_mode.no_grad: False, grad_mode.enable_grad: True, grad_mode.set_grad_enabled: None}


def compile_with(st, s):
    flags = [_grad_mode_flag(st, item, s) for item in s.items]
    saved = []
    for item, flag in zip(s.items, flags):
        prev = st.emit(prim.IsGradEnabled, (), item.context_expr, rules.BOOL)
        prev.meta["jit_name"] = "grad_enabled"
        saved.append(prev)
        st.emit(prim.SetGradEnabled, (flag,), item.context_expr, rules.NONE)
    if st.block(s.body):
        return True   # every path raises: the executor restores the mode
    for prev in reversed(saved):
        st.emit(prim.SetGradEnabled, (prev,), s, rules.NONE)
    return False


def _grad_mode_flag(st, item, s):
    """The bool value a grad-mode ``with`` item sets; UnsupportedNodeError for anything else."""
    e = item.context_expr
    func = st.expr(e.func) if isinstance(e, ast.Call) else None
    classes = _grad_mode_classes()
    if item.optional_vars is not None or not isinstance(func, PyObj) or func.obj not in classes:
        raise UnsupportedNodeError(st.ctx, s, keyword_span(s))
    fixed = classes[func.obj]
    if fixed is not None:
        if e.args or e.keywords:
            raise st.error(e, f"{func.obj.__name__}() takes no arguments in script")
        return st.const(fixed, e)
    args = list(e.args) + [k.value for k in e.keywords if k.arg == "mode"]
    if len(args) != 1 or len(e.args) + len(e.keywords) != 1:
        raise st.error(e, "set_grad_enabled() takes exactly one argument (mode: bool)")
    flag = st.value(args[0])
    if not isinstance(flag.type, BoolType):
        raise st.error(args[0], f"set_grad_enabled() expected a bool, got '{rules.py_type_str(flag.type)}'")
    return flag
