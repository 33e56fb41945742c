"""Graph passes over ember.fx GraphModules: pure functions ``gm -> PassResult(gm, modified)``.

    >>> from ember.fx.passes import PassManager, eliminate_common_subexpressions, fold_constants, eliminate_dead_code
    >>> PassManager([eliminate_common_subexpressions, fold_constants, eliminate_dead_code], log=print)(gm)

| pass                               | module        | what it does                                        |
|------------------------------------|---------------|-----------------------------------------------------|
| ShapeProp(gm).propagate(*inputs)   | shape_prop    | records meta["tensor_meta"] / meta["val"] per node  |
| eliminate_dead_code(gm)            | dead_code     | drops unused nodes without side effects             |
| eliminate_common_subexpressions(gm)| cse           | merges repeated pure computations                   |
| fold_constants(gm)                 | const_fold    | precomputes nodes that depend only on attributes    |
| PassManager(passes)(gm)            | pass_manager  | runs a list, logs each step, says what changed      |

Passes edit the GraphModule they are given (and recompile it) rather than copying it: a copy of
a module with large parameters is expensive, and callers that want the original can deepcopy.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "ShapeProp": ".shape_prop", "TensorMetadata": ".shape_prop", "extract_tensor_metadata": ".shape_prop",
    "eliminate_dead_code": ".dead_code",
    "eliminate_common_subexpressions": ".cse",
    "fold_constants": ".const_fold", "constant_nodes": ".const_fold",
    "PassManager": ".pass_manager", "PassResult": ".pass_manager", "PassManagerResult": ".pass_manager",
    "is_random": ".op_properties", "writes_memory": ".op_properties",
}
_SUBMODULES = ("shape_prop", "dead_code", "cse", "const_fold", "pass_manager", "op_properties")

__all__ = list(_EXPORTS)


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ember.fx.passes' has no attribute '{name}'")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
