"""The script frontend: Python source -> typed SSA graph (to_ir.compile_function).

Files: errors.py (compile errors with source carets), exits.py (return/break/continue -> flags),
to_ir.py (statements, if), loops.py (for/while), exprs.py (expressions, conditions), calls.py
(calls), builtins.py (what is callable and the result-type rules).
"""
from .errors import FrontendError, NotSupportedError, UnsupportedNodeError  # noqa: F401


def compile_function(py_fn, *, self_info=None, name=None):
    """``(graph, Signature)`` for a Python function; see to_ir.compile_function."""
    from .to_ir import compile_function as _compile
    return _compile(py_fn, self_info=self_info, name=name)
