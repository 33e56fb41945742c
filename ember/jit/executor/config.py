"""Settings of the graph executor (module attributes; tests may patch them).

    ember.jit.executor.config.num_profiled_runs = 2
"""
num_profiled_runs = 1        # profiling runs per input signature before the optimised plan is built
unroll_max_trip = 8          # loops with a constant trip count up to this are unrolled
use_codegen = True           # run plans as generated Python functions (False: the reference interpreter)
specialize_ops = True        # optimised plans call the dispatcher operator directly where that is exact
max_plans = 8                # specialised plans per executor; further signatures share one unspecialised plan
fusion_enabled = True        # optimised plans compile fusion groups with ember._inductor (ember.jit.fuser)
min_group_size = 2           # fewer ops than this in a fusible region: not worth a kernel

# torch.jit.fuser names: those that turn CPU fusion on in PyTorch (legacy, NNC, oneDNN) turn on
# ember's one fuser; nvFuser (CUDA only) and "none" turn it off.
_FUSER_NAMES = {"fuser0": True, "fuser1": True, "fuser3": True, "fuser2": False, "none": False}


class fuser:
    """``with ember.jit.fuser("none"):`` plans optimised inside are built without fusion groups
    ("fuser1": with them, the default on CPU); plans built earlier are kept as they are."""

    def __init__(self, name: str):
        if name not in _FUSER_NAMES:
            raise Exception(f"unrecognized fuser option (name: {name})")  # noqa: TRY002 - torch's type
        self.enable = _FUSER_NAMES[name]

    def __enter__(self):
        global fusion_enabled
        self.saved, fusion_enabled = fusion_enabled, self.enable
        return self

    def __exit__(self, *exc):
        global fusion_enabled
        fusion_enabled = self.saved
        return False
