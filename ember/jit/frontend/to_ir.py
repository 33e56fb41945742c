"""A Python function's source -> a typed SSA graph (ember.fx Graph with blocks).

    graph, signature = compile_function(fn)

The source is read with inspect, dedented and parsed (file name and line numbers kept for
``meta["loc"]`` and error messages). exits.py first rewrites return/break/continue into flags
(TorchScript's exit transform). Then each statement and expression is compiled by the plain
function the tables below name for its ast class, ``handler(st, node)``, where ``st`` is the
function's FunctionState (state.py: variables, the block being filled, the function), as
ember/_dynamo runs one handler per opcode. Every construct script accepts has a row here; any
other is a NotSupportedError naming it.

Choices where the spec left room: a Tensor ``x += y`` is ``x.add_(y)`` (in place, as eager) and
rebinds x to its result; unannotated empty ``[]``/``{}`` are List[Tensor]/Dict[str, Tensor]; the
loop variable and loop-local variables are not visible after a loop.
"""
from __future__ import annotations

import ast
import inspect
import textwrap

from ember.jit.ir import prim
from ember.jit.ir.types import NO_DEFAULT, Argument, ModuleType, Signature

from . import builtins as rules
from . import calls, comprehensions, exprs, loops, operators, statements, withs
from .errors import NotSupportedError, SourceContext
from .exits import ExitLowering
from .state import COMPILING, FunctionState

STMT_HANDLERS = {
    ast.Expr: statements.compile_expr_statement, ast.Pass: statements.compile_pass,
    ast.Assign: statements.compile_assign, ast.AnnAssign: statements.compile_ann_assign,
    ast.AugAssign: statements.compile_aug_assign, ast.Delete: statements.compile_delete,
    ast.Return: statements.compile_return, ast.Raise: statements.compile_raise, ast.Assert: statements.compile_assert,
    ast.If: statements.compile_if, ast.With: withs.compile_with,
    ast.For: loops.compile_for, ast.While: loops.compile_while,
    ast.Break: loops.compile_break, ast.Continue: loops.compile_break,
    # synthetic statements the frontend builds itself
    loops.BindValue: loops.compile_bind_value, comprehensions.DictCompStore: comprehensions.compile_dict_store,
}

EXPR_HANDLERS = {
    ast.Constant: exprs.compile_constant, ast.Name: exprs.compile_name, ast.Attribute: exprs.compile_attribute,
    ast.Subscript: exprs.compile_subscript, ast.List: exprs.compile_list, ast.Tuple: exprs.compile_tuple,
    ast.Dict: exprs.compile_dict, ast.JoinedStr: exprs.compile_fstring,
    ast.BinOp: operators.compile_binop, ast.UnaryOp: operators.compile_unaryop,
    ast.Compare: operators.compile_compare, ast.BoolOp: operators.compile_boolop,
    ast.IfExp: operators.compile_ifexp,
    ast.Call: calls.compile_call,
    ast.ListComp: comprehensions.compile_listcomp, ast.GeneratorExp: comprehensions.compile_listcomp,
    ast.DictComp: comprehensions.compile_dictcomp,
}


def compile_function(py_fn, *, self_info=None, name=None):
    """Compile a Python function to ``(graph, Signature)``; FrontendError on unsupported code."""
    fn, fdef, ctx = _parse(py_fn)
    st = FunctionState(fn, ctx, self_info, STMT_HANDLERS, EXPR_HANDLERS)
    COMPILING.append(py_fn)
    try:
        return _compile(st, fdef, name or fn.__name__)
    finally:
        COMPILING.pop()


def _parse(py_fn):
    fn = inspect.unwrap(py_fn)
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as err:
        raise RuntimeError(f"Can't get source for {py_fn!r}: script compiles Python source, so the "
                           f"function must be defined in a file") from err
    filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    raw = "".join(lines)
    dedented = textwrap.dedent(raw)
    removed = len(lines[0]) - len(lines[0].lstrip()) - (len(dedented.splitlines()[0]) -
                                                          len(dedented.splitlines()[0].lstrip()))
    tree = ast.parse(dedented)
    fdef = tree.body[0]
    if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise RuntimeError(f"script expects a function, got {type(fdef).__name__} source")
    ctx = SourceContext(filename, dedented.splitlines(), first, removed)
    return fn, fdef, ctx


def _compile(st: FunctionState, fdef, name: str):
    if isinstance(fdef, ast.AsyncFunctionDef):
        raise NotSupportedError(st.ctx, fdef, "async functions aren't supported")
    a = fdef.args
    if a.vararg is not None or a.kwarg is not None:
        raise NotSupportedError(st.ctx, a.vararg or a.kwarg,
                                "Compiled functions can't take variable number of arguments or use "
                                "keyword-only arguments with defaults")
    graph = st.graph
    sig_defaults = inspect.signature(st.fn).parameters
    hints = getattr(st.fn, "__annotations__", {})
    arguments = []
    for i, p in enumerate(a.posonlyargs + a.args + a.kwonlyargs):
        if i == 0 and st.self_info is not None:
            t = ModuleType(st.self_info.qualified_name)
        elif p.arg in hints:
            t = st.annotation_type(hints[p.arg], p.annotation or p)
        else:
            t = rules.T_
        default = sig_defaults[p.arg].default if p.arg in sig_defaults else inspect.Parameter.empty
        node = graph.placeholder(p.arg, type_expr=t)
        node.meta["loc"] = st.ctx.loc(p)
        node.meta["jit_name"] = p.arg
        st.env[p.arg] = node
        arguments.append(Argument(p.arg, t, NO_DEFAULT if default is inspect.Parameter.empty else default))
    if st.block(ExitLowering().function(fdef.body, fdef)):   # every path raises: no result is produced
        st.return_value = st.emit(prim.Uninitialized, (), fdef, rules.BottomType())
    result = st.return_value
    ret_ann = hints.get("return", inspect.Signature.empty)
    if ret_ann is not inspect.Signature.empty:
        ret_type = st.annotation_type(ret_ann, fdef.returns or fdef)
        if isinstance(result.type, rules.BottomType):
            result.type = ret_type
        elif not result.type.is_subtype_of(ret_type):
            raise st.error(st.return_site or fdef,
                           f"Return value was annotated as having type {rules.py_type_str(ret_type)} but "
                           f"is actually of type {rules.py_type_str(result.type)}")
    else:
        if isinstance(result.type, rules.BottomType):
            result.type = rules.NONE
        ret_type = result.type
    graph.output(result).type = ret_type
    _drop_unused_prims(graph)
    return graph, Signature(name, tuple(arguments), ret_type)


def _drop_unused_prims(graph) -> None:
    """Remove constants / Uninitialized values nobody reads (left by the exit flags)."""
    for node in reversed(list(graph.nodes)):
        for block in node.blocks:
            _drop_unused_prims(block)
        if node.op == "call_function" and node.target in (prim.Constant, prim.Uninitialized) and not node.users:
            graph.erase_node(node)
