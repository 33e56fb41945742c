"""ember._functorch: the tracing layer the compilers share (PyTorch's torch._functorch and proxy_tensor).

    from ember._functorch import make_fx
    gm = make_fx(fn)(x, y)        # the aten-level ops fn ran, as an fx GraphModule with meta["val"]
    gm = make_fx(fn, tracing_mode="fake")(x, y)      # the same, on fake tensors: no data computed

It holds make_fx (make_fx.py), on which ember.jit.trace is built, fake tensors (fake_tensor.py:
FakeTensorMode), the core op set (core_ops.py) and the decompositions into it
(decompositions/: ``core_decompositions()``), AOT autograd (aot_autograd.py: joint graph and compiled autograd.Function;
partitioners.py) and functionalisation (functionalize.py, functional_tensor.py), each imported on
use (``from ember._functorch.aot_autograd import aot_function``,
``from ember._functorch.functionalize import functionalize, trace_functional``), so that
``import ember`` does not register the Functionalize key's kernel.
"""
from .make_fx import make_fx

__all__ = ["make_fx", "FakeTensorMode", "FakeTensor", "DataDependentOutputException",
           "DynamicOutputShapeException"]
_FAKE_NAMES = frozenset(__all__[1:])


def __getattr__(name):
    """Fake tensors load on first use (``import ember`` does not load them)."""
    if name in _FAKE_NAMES:
        from . import fake_tensor
        return getattr(fake_tensor, name)
    raise AttributeError(f"module 'ember._functorch' has no attribute '{name}'")
