"""The graph passes: one set, used by fx users, the jit's graph executor and (next) AOT/inductor.

    >>> from ember.fx.passes import PassManager, eliminate_common_subexpressions, fold_constants, eliminate_dead_code
    >>> PassManager([eliminate_common_subexpressions, fold_constants, eliminate_dead_code], log=print)(gm)

| pass                                  | module                           | what it does                                  |
|---------------------------------------|----------------------------------|-----------------------------------------------|
| ShapeProp(gm).propagate(*inputs)      | shape_prop                       | records meta["val"] / meta["tensor_meta"]     |
| eliminate_dead_code(gm)               | dead_code_elimination            | drops unused nodes without side effects       |
| eliminate_common_subexpressions(gm)   | common_subexpression_elimination | merges repeated pure computations             |
| fold_constants(gm)                    | constant_propagation             | precomputes what does not depend on the inputs|
| PassManager(passes)(gm)               | pass_manager                     | runs a list, logs each step, says what changed|

The contract every pass here keeps:
- It takes a GraphModule or a bare Graph (a script graph: nodes may hold blocks, the nested graphs
  of ``prim::If`` / ``prim::Loop``, see ``ember.fx.blocks``), edits it **in place**, blocks
  included, recompiles a GraphModule it changed, and returns ``PassResult(<what it was given>,
  modified)``. In place, because copying a module with large parameters is expensive; callers
  that want the original deepcopy it first.
- What an op may do is asked of one oracle, ``purity`` (over the op-properties table
  ``ember.ops.properties``): nothing random, in place, mutating or side-effecting is ever folded
  or merged, and only dead pure nodes are deleted.
- A grad-mode switch (``with no_grad():``) is a barrier: nothing computed before it stands in for
  a computation after it.
- A value that leaves the graph (returned, stored, compared by identity) is never made an alias
  of another one: the caller would see a write to one change the other.
- Each pass logs the graph after it under its TorchScript name (the module's stem) when
  ``EMBER_JIT_LOG_LEVEL`` names it (``>>dead_code_elimination``; ``jit_log``).
"""
from __future__ import annotations

from ember.fx import _lazy_exports

_EXPORTS = {
    "ShapeProp": ".shape_prop", "TensorMetadata": ".shape_prop", "extract_tensor_metadata": ".shape_prop",
    "eliminate_dead_code": ".dead_code_elimination",
    "eliminate_common_subexpressions": ".common_subexpression_elimination",
    "fold_constants": ".constant_propagation", "constant_nodes": ".constant_propagation",
    "PassManager": ".pass_manager", "PassResult": ".pass_manager", "PassManagerResult": ".pass_manager",
    "is_random": ".purity", "has_side_effects": ".purity", "is_cse_safe": ".purity", "mutated_inputs": ".purity",
}
_SUBMODULES = ("shape_prop", "dead_code_elimination", "common_subexpression_elimination", "constant_propagation",
               "pass_manager", "purity", "jit_log")

__all__ = list(_EXPORTS)
__getattr__ = _lazy_exports(globals(), _EXPORTS, _SUBMODULES)
