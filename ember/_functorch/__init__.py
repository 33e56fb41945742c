"""ember._functorch: the tracing layer the compilers share (PyTorch's torch._functorch and proxy_tensor).

    from ember._functorch import make_fx
    gm = make_fx(fn)(x, y)        # the aten-level ops fn ran, as an fx GraphModule with meta["val"]

It holds make_fx (make_fx.py), on which ember.jit.trace is built, and functionalisation
(``from ember._functorch.functionalize import functionalize, trace_functional``: not imported
here, so that ``import ember`` does not register the Functionalize key's kernel). Fake tensors,
decompositions to a core op set and AOT autograd belong here next (see ARCHITECTURE.md).
"""
from .make_fx import make_fx

__all__ = ["make_fx"]
