"""The jit's own graph passes (TorchScript's graph executor passes), one file per pass.

Dead-code elimination, common-subexpression elimination and constant propagation are the shared
pass set of ``ember.fx.passes`` (block-aware, one contract); the passes here are the rewrites only
the script IR needs. Each is a function ``graph -> graph`` on the script IR (``ember.fx.Graph``
with nested If/Loop blocks, see ``ember.jit.ir``) that edits the graph in place and returns it,
and logs the graph after it when ``EMBER_JIT_LOG_LEVEL`` names it (the file's stem, e.g.
``>>peephole``; ``ember.fx.passes.jit_log``).

    from ember.jit import passes
    passes.inline(g)
    passes.peephole_optimize(g)

The executor's pipeline: inline -> insert_profile_nodes -> (profiling runs) -> specialize_types ->
remove_profile_nodes -> keep_guaranteed_types -> PIPELINE (below) -> registered fusion passes.
"""
from __future__ import annotations

from ember.fx.passes.common_subexpression_elimination import eliminate_common_subexpressions
from ember.fx.passes.constant_propagation import fold_constants
from ember.fx.passes.dead_code_elimination import eliminate_dead_code

from .constant_pooling import constant_pooling
from .inline import inline
from .loop_unrolling import unroll_loops
from .lower_tuples import lower_simple_tuples
from .peephole import peephole_optimize
from .profiling import (insert_profile_nodes, keep_guaranteed_types, merge_observed, record_profile,
                        remove_profile_nodes, specialize_types)


def unroll_small_loops(graph):
    """unroll_loops up to the executor's ``config.unroll_max_trip`` trips (read at each run)."""
    from ember.jit.executor import config
    return unroll_loops(graph, config.unroll_max_trip)


# The optimisation pipeline of the graph executor, in order; each edits the graph in place.
PIPELINE = (fold_constants, peephole_optimize, lower_simple_tuples, unroll_small_loops,
            eliminate_common_subexpressions, constant_pooling, eliminate_dead_code)

__all__ = ["inline", "constant_pooling", "peephole_optimize", "lower_simple_tuples", "unroll_loops",
           "unroll_small_loops", "insert_profile_nodes", "remove_profile_nodes", "specialize_types",
           "keep_guaranteed_types", "record_profile", "merge_observed", "PIPELINE"]
