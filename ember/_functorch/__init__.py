"""ember._functorch: the tracing layer the compilers share (PyTorch's torch._functorch and proxy_tensor).

    from ember._functorch import make_fx
    gm = make_fx(fn)(x, y)        # the aten-level ops fn ran, as an fx GraphModule with meta["val"]

Today it holds make_fx (make_fx.py), on which ember.jit.trace is built, the core op set
(core_ops.py) and the decompositions into it (decompositions/: ``core_decompositions()``,
imported where used, not by ``import ember``). Fake tensors, functionalisation and AOT autograd
belong here next (see ARCHITECTURE.md).
"""
from .make_fx import make_fx

__all__ = ["make_fx"]
