"""ember._dynamo: Dynamo-style capture of CPython bytecode (seed 003).

    @ember._dynamo.optimize(my_compiler)
    def toy_example(a, b): ...

Names are loaded on first use; the table says from where.
"""
from __future__ import annotations

from ember.fx import _lazy_exports

_EXPORTS = {  # public name -> module (relative to ember._dynamo)
    "optimize": ".eval_frame", "reset": ".eval_frame", "disable": ".eval_frame", "OptimizedModule": ".eval_frame",
    "explain": "._explain", "list_backends": ".backends", "register_backend": ".backends",
}
_SUBMODULES = ("config", "testing", "backends", "eval_frame", "guards", "source", "bytecode_transformation",
               "bytecode_analysis", "resume_execution", "symbolic_convert", "output_graph", "convert_frame",
               "exc", "variables", "side_effects", "codegen")
__getattr__ = _lazy_exports(globals(), _EXPORTS, _SUBMODULES)
