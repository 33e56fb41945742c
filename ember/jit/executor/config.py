"""Settings of the graph executor (module attributes; tests may patch them).

    ember.jit.executor.config.num_profiled_runs = 2
"""
num_profiled_runs = 1        # profiling runs per input signature before the optimised plan is built
unroll_max_trip = 8          # loops with a constant trip count up to this are unrolled
use_codegen = True           # run plans as generated Python functions (False: the reference interpreter)
specialize_ops = True        # optimised plans call the dispatcher operator directly where that is exact
max_plans = 8                # specialised plans per executor; further signatures share one unspecialised plan
