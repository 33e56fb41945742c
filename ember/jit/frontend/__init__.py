"""The script frontend: Python source -> typed SSA graph (to_ir.compile_function).

Files: to_ir.py (entry and the statement/expression handler tables), state.py (what every handler
gets: FunctionState), statements.py, loops.py, withs.py, exprs.py, operators.py (and conditions),
calls.py, comprehensions.py (the handlers), exits.py (return/break/continue -> flags), builtins.py
(what is callable and the result-type rules), errors.py (compile errors with source carets),
modules.py / module_builtins.py (scripting nn.Modules).
"""
from .errors import FrontendError, NotSupportedError, UnsupportedNodeError  # noqa: F401


def compile_function(py_fn, *, self_info=None, name=None):
    """``(graph, Signature)`` for a Python function; see to_ir.compile_function."""
    from .to_ir import compile_function as _compile
    return _compile(py_fn, self_info=self_info, name=name)
