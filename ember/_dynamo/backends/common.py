"""Backends built on AOT autograd, as ``torch._dynamo.backends.common``.

    my_backend = aot_autograd(fw_compiler=my_fw, bw_compiler=my_bw)      # (gm, example_inputs) -> callable
    ember.compile(model, backend=my_backend)

`aot_autograd` is imported lazily by ember.compile's backends, so ``import ember`` does not load
AOT autograd (ember/_functorch/aot_autograd.py).
"""
from __future__ import annotations


def nop(gm, example_inputs):
    """The compiler that compiles nothing: the graph module runs as it is."""
    return gm.forward


def aot_autograd(**kwargs):
    """A dynamo backend that hands each captured graph to AOT autograd with these arguments
    (fw_compiler=, bw_compiler=, partition_fn=, decompositions=; PyTorch's names)."""
    if "fw_compiler" not in kwargs:
        raise TypeError("aot_autograd: fw_compiler= is required")

    def backend(gm, example_inputs, **options):
        from ..._functorch.aot_autograd import aot_module_simplified
        from ..._functorch.partitioners import default_partition
        args = dict(kwargs)
        args.setdefault("partition_fn", default_partition)
        return aot_module_simplified(gm, example_inputs, **args)
    return backend
