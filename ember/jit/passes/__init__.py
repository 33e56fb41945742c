"""The jit's graph passes (TorchScript's graph executor passes), one file per pass.

Each pass is a function ``graph -> graph`` on the script IR (``ember.fx.Graph`` with nested
If/Loop blocks, see ``ember.jit.ir``); it may mutate the graph and returns it. Each logs the
graph after it runs when ``EMBER_JIT_LOG_LEVEL`` names it (``jit_log``; the name is the file's
stem, e.g. ``>>dead_code_elimination``).

    from ember.jit import passes
    g = passes.inline(g)
    g = passes.constant_propagation(g)
    g = passes.eliminate_dead_code(g)

The executor's pipeline: inline -> insert_profile_nodes -> (profiling runs) -> specialize_types ->
constant_propagation -> peephole_optimize -> lower_simple_tuples -> unroll_loops -> eliminate_common_subexpression ->
constant_pooling -> eliminate_dead_code -> remove_profile_nodes.
"""
from __future__ import annotations

from .common_subexpression_elimination import eliminate_common_subexpression
from .constant_pooling import constant_pooling
from .constant_propagation import constant_propagation
from .dead_code_elimination import eliminate_dead_code
from .inline import inline
from .jit_log import log_graph
from .loop_unrolling import unroll_loops
from .lower_tuples import lower_simple_tuples
from .peephole import peephole_optimize
from .profiling import (insert_profile_nodes, merge_profiled_types, record_profile, remove_profile_nodes,
                        specialize_types)
from .purity import has_side_effects, is_cse_safe, is_pure

__all__ = ["inline", "eliminate_dead_code", "constant_propagation", "eliminate_common_subexpression",
           "constant_pooling", "peephole_optimize", "lower_simple_tuples", "unroll_loops",
           "insert_profile_nodes", "remove_profile_nodes", "specialize_types", "record_profile",
           "merge_profiled_types",
           "log_graph", "has_side_effects", "is_pure", "is_cse_safe"]
