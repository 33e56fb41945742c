"""ShapeProp: run a GraphModule on example inputs and record each node's shape, dtype and strides.

    >>> ShapeProp(gm).propagate(ember.randn(4, 3))
    >>> gm.graph.nodes[1].meta["val"]                   # a meta tensor: shape, dtype, strides, requires_grad
    >>> gm.graph.nodes[1].meta["tensor_meta"].shape    # ember.Size([4, 5]): torch.fx's view of the same fact

``meta["val"]`` is the one tensor fact of a node (what make_fx, jit.trace and dynamo record too);
``meta["tensor_meta"]`` is torch.fx's TensorMetadata, derived from it for programs that read it
(ember itself never does).

Inputs may be real tensors or meta tensors (``ember.empty(4, 3, device="meta")``): with meta
inputs no data is computed at all; the module's parameters, buffers and submodules are then
read as meta copies (the module itself is left untouched).
"""
from __future__ import annotations

import copy
from typing import Any, NamedTuple

from ember._core.tensor_spec import meta_like

from ..interpreter import Interpreter
from ..node import map_aggregate

__all__ = ["TensorMetadata", "ShapeProp", "extract_tensor_metadata"]


class TensorMetadata(NamedTuple):
    """What ShapeProp records about one tensor (torch.fx's TensorMetadata fields).

    memory_format is the name of the layout the strides are dense in ("contiguous_format",
    "channels_last", "channels_last_3d"), or None; ember has no quantized tensors.
    """
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: str | None
    is_quantized: bool
    qparams: dict


def _is_tensor(value) -> bool:
    from ember._core.tensor import Tensor
    return isinstance(value, Tensor)


def _dense_strides(shape, order) -> tuple:
    """Strides of a dense tensor of `shape` whose dims are laid out innermost-last in `order`."""
    strides = [0] * len(shape)
    step = 1
    for d in reversed(order):
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def _memory_format(shape, stride) -> str | None:
    """The memory format whose dense strides equal `stride` (size-1 dims match any stride)."""
    def same(expected):
        return all(s == e or n == 1 for s, e, n in zip(stride, expected, shape))
    n = len(shape)
    if same(_dense_strides(shape, list(range(n)))):
        return "contiguous_format"
    if n == 4 and same(_dense_strides(shape, [0, 2, 3, 1])):
        return "channels_last"
    if n == 5 and same(_dense_strides(shape, [0, 2, 3, 4, 1])):
        return "channels_last_3d"
    return None


def extract_tensor_metadata(t) -> TensorMetadata:
    """TensorMetadata of tensor `t`.

    >>> extract_tensor_metadata(ember.ones(2, 3)).stride    # (3, 1)
    """
    shape, stride = t.shape, tuple(t.stride())
    return TensorMetadata(shape, t.dtype, bool(t.requires_grad), stride,
                          _memory_format(tuple(shape), stride), False, {})


def _to_meta(value):
    if _is_tensor(value):
        return value if value.device.type == "meta" else value.detach().to("meta")
    return value


class ShapeProp(Interpreter):
    """An Interpreter that records ``meta["val"]``, ``meta["tensor_meta"]`` and ``meta["type"]``.

    >>> ShapeProp(gm).propagate(x)     # returns what gm(x) returns; annotates every node

    ``val`` is the value with every tensor replaced by a meta tensor of the same shape, dtype,
    strides and requires_grad (for any node); ``tensor_meta`` is the TensorMetadata of each of
    those meta tensors (mirroring the value) for nodes producing tensors.
    """

    def __init__(self, gm, fake_mode=None):
        if fake_mode is not None:
            raise NotImplementedError("ShapeProp: fake_mode is not supported; pass meta tensors as inputs")
        super().__init__(gm)
        self._meta_mode = False
        self._meta_module = None

    def propagate(self, *args):
        """Run the graph on `args` (real or meta tensors) and annotate every node.

        >>> ShapeProp(gm).propagate(ember.empty(2, 3, device="meta"))
        """
        self._meta_mode = any(_is_tensor(a) and a.device.type == "meta" for a in args)
        try:
            return self.run(*args)
        finally:
            self._meta_module = None

    def _module_for_reads(self):
        """The module get_attr/call_module read: a meta copy of it in meta mode."""
        if not self._meta_mode:
            return self.module
        if self._meta_module is None:
            self._meta_module = copy.deepcopy(self.module).to("meta")
        return self._meta_module

    def fetch_attr(self, target: str):
        """Follow `target` from the module (from its meta copy when the inputs are meta)."""
        value = self._module_for_reads()
        atoms = target.split(".")
        for i, atom in enumerate(atoms):
            if not hasattr(value, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(atoms[:i + 1])}")
            value = getattr(value, atom)
        return _to_meta(value) if self._meta_mode else value

    def run_node(self, n):
        """Run `n` like Interpreter.run_node, then store its metadata on ``n.meta``."""
        try:
            result = super().run_node(n)
        except Exception as e:
            raise RuntimeError(f"ShapeProp error for: node={n.format_node()} with meta={n.meta}") from e
        found_tensor = False

        def to_val(value):
            nonlocal found_tensor
            if _is_tensor(value):
                found_tensor = True
                return meta_like(value)
            return value

        val = map_aggregate(result, to_val)
        if n.op != "output":
            n.meta["val"] = val
        if found_tensor:
            n.meta["tensor_meta"] = map_aggregate(
                val, lambda v: extract_tensor_metadata(v) if _is_tensor(v) else v)
        n.meta["type"] = type(result)
        return result
