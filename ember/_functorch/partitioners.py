"""Partitioners: split a joint graph ``(primals, tangents) -> (forward outputs, gradients)`` in two.

    fw_gm, bw_gm = default_partition(joint_gm, joint_inputs, num_fwd_outputs=1)
    fw_gm(*primals)               -> (*forward outputs, *saved values)
    bw_gm(*saved, *tangents)      -> (*gradients, one per primal; None where none)

The joint graph comes from ember/_functorch/aot_autograd.py: its placeholders are named
``primals_<i>`` and ``tangents_<i>``, and every node carries ``meta["aot_stage"]``: "forward"
for the ops the program ran, "backward" for the ops ember's autograd ran for ``autograd.grad``.
A partitioner chooses the *saved values*: what the forward hands to the backward.

* `default_partition` (PyTorch's of the same name): the forward computes what its outputs need
  and nothing more; every forward value the backward reads is saved, except that a widening cast
  (autocast's float32 copy of bf16 logits) is saved as its narrower source and redone in the
  backward, where PyTorch's saves the cast (its min-cut, which the fuser does not use, avoids it).
* `min_cut_rematerialization_partition`: a minimum cut (``networkx.minimum_cut``) of the
  graph between the primals and what the backward must compute (every op autograd ran: what eager
  runs in the backward stays there), each node an edge weighted by
  the bytes of its value (``meta["val"]``), so the saved set is as small as possible; nodes
  cut off from the forward side are recomputed in the backward. Only cheap ops are recomputed
  (pointwise, views, getitem, small reductions); random ops (the op-properties table's
  ``is_random``) and compute-heavy ops (``COMPUTE_HEAVY``) of the forward never are, and views
  are never saved (their base is: a view is free to regenerate).

Both keep every forward op that acts by side effect (random ops advance the generator, in-place
ops write a tensor that may be read through another name) in the forward, in program order, and
every such backward op in the backward, so random numbers are drawn as eagerly and exactly once.
When the forward mutates anything, min-cut falls back to the default partition (a recomputed value
could read a tensor after its mutation).
"""
from __future__ import annotations

import math
import operator

from .._core.dispatch import OperatorHandle

# Ops never recomputed in the backward: recomputing them costs real time (PyTorch bans the same
# family: mm/bmm/addmm/convolution). By operator name, any overload.
COMPUTE_HEAVY = frozenset({
    "aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::addbmm", "aten::matmul", "aten::linear",
    "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution", "aten::_convolution",
    "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d",
    "aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention", "aten::einsum",
    "aten::tensordot", "aten::mv", "aten::dot"})
# A reduction is recomputed only when its input is at most this many times its output (PyTorch's rule).
REDUCTION_RECOMPUTE_RATIO = 4


def _props(node):
    from ..ops import properties
    return properties.of(node.target)


def _op_name(node) -> str:
    return node.target.name.split(".", 1)[0] if isinstance(node.target, OperatorHandle) else ""


def acts_by_effect(node) -> bool:
    """Random, or writes one of its arguments (ember.fx.passes.purity decides)."""
    from ..fx.passes import purity
    return node.op == "call_function" and (purity.is_random(node) or bool(purity.mutated_inputs(node)))


def is_view(node) -> bool:
    return node.op == "call_function" and _props(node).is_view


def _nbytes(val) -> float:
    """Bytes of a node's value; inf for what cannot be saved (tuples of tensors, unknown)."""
    from .._core.tensor import Tensor
    if isinstance(val, Tensor):
        return float(val.numel() * val.dtype.itemsize)
    if isinstance(val, (int, float, bool)) or val is None:
        return 0.0
    return math.inf


def _recomputable(node) -> bool:
    """Cheap enough to compute twice (once in the forward, once in the backward)."""
    if node.op == "get_attr":
        return True
    if node.op != "call_function":
        return False
    if node.target is operator.getitem:
        return True
    if _op_name(node) in COMPUTE_HEAVY:
        return False
    props = _props(node)
    if props.is_random or props.mutates or props.side_effects:
        return False
    if props.is_pointwise or props.is_view:
        return True
    if props.is_reduction:
        inputs = sum(_nbytes(a.meta.get("val")) for a in node.all_input_nodes)
        return inputs <= REDUCTION_RECOMPUTE_RATIO * max(_nbytes(node.meta.get("val")), 1.0)
    return False


# ---------------------------------------------------------------------------------------------
# the joint graph's parts
# ---------------------------------------------------------------------------------------------
class _Joint:
    """The joint graph's inputs, outputs and regions, as partitioners need them."""

    def __init__(self, joint_gm, num_fwd_outputs: int):
        self.gm = joint_gm
        self.nodes = list(joint_gm.graph.nodes)
        self.primals = [n for n in self.nodes if n.op == "placeholder" and n.name.startswith("primals")]
        self.tangents = [n for n in self.nodes if n.op == "placeholder" and n.name.startswith("tangents")]
        outputs = list(self.nodes[-1].args[0])
        self.fw_outputs = outputs[:num_fwd_outputs]
        self.bw_outputs = outputs[num_fwd_outputs:]
        self.order = {n: i for i, n in enumerate(self.nodes)}
        self.fw_effects = [n for n in self.nodes if n.meta.get("aot_stage") == "forward" and acts_by_effect(n)]
        self.bw_effects = [n for n in self.nodes if n.meta.get("aot_stage") == "backward" and acts_by_effect(n)]

    def ancestors(self, roots, stop=frozenset()) -> set:
        """`roots` and every node they read, not walking past `stop` (which are included if reached)."""
        seen, todo = set(), [r for r in roots if hasattr(r, "op")]
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            if n not in stop:
                todo.extend(n.all_input_nodes)
        return seen

    def tangent_dependent(self) -> set:
        """Nodes that read a tangent (directly or not): they can only run in the backward."""
        out = set(self.tangents)
        for n in self.nodes:
            if n.op != "output" and any(a in out for a in n.all_input_nodes):
                out.add(n)
        return out


def _extract(joint: _Joint, inputs: list, outputs: list, keep: set, name: str):
    """A GraphModule computing `outputs` (nodes, or None) from `inputs` (nodes that become its
    placeholders, in that order), holding every node of `keep` too, in the joint graph's order."""
    from ..fx import Graph, GraphModule
    graph = Graph()
    env = {}
    for n in inputs:
        env[n] = graph.placeholder(n.name)
        env[n].meta = dict(n.meta)
    needed = joint.ancestors([o for o in outputs if o is not None] + list(keep), stop=set(inputs))
    for n in joint.nodes:
        if n not in needed or n in env:
            continue
        if n.op == "placeholder":
            raise RuntimeError(f"partitioner: {name} graph needs {n.name}, which is not among its inputs "
                               f"({[i.name for i in inputs]}); this is a bug in the partitioner")
        env[n] = graph.node_copy(n, lambda a: env[a])
    graph.output(tuple(env[o] if hasattr(o, "op") else o for o in outputs))
    graph.lint()
    return GraphModule(joint.gm, graph, name)


def _split(joint: _Joint, saved: list):
    """The forward and backward GraphModules for one choice of saved values."""
    fw_keep = set(joint.fw_effects)
    fw_gm = _extract(joint, joint.primals, joint.fw_outputs + saved, fw_keep, "GraphModule")
    bw_gm = _extract(joint, saved + joint.tangents, joint.bw_outputs, set(joint.bw_effects), "GraphModule")
    fw_gm.meta["num_saved"] = bw_gm.meta["num_saved"] = len(saved)
    return fw_gm, bw_gm


def _saved_for(joint: _Joint, forward_nodes: set) -> list:
    """The forward nodes that the rest of the graph (the backward) reads, in graph order; a widening
    cast among them is saved as its narrower source (_narrower_source) unless the forward mutates
    a tensor (an in-place op could change the source after the cast read it)."""
    from ..fx.passes import purity
    backward_roots = [o for o in joint.bw_outputs if o is not None] + joint.bw_effects
    backward = joint.ancestors(backward_roots, stop=forward_nodes)
    mutates = any(purity.mutated_inputs(n) for n in joint.fw_effects)
    narrower = (lambda n: n) if mutates else _narrower_source
    saved = {narrower(n) for n in backward if n in forward_nodes and n.op != "get_attr"}
    return sorted(saved, key=joint.order.__getitem__)


def _forward_nodes(joint: _Joint) -> set:
    roots = [o for o in joint.fw_outputs if o is not None] + joint.fw_effects
    nodes = joint.ancestors(roots) | set(joint.primals)
    # an element of a multi-output forward op that only the backward reads (flash attention's
    # logsumexp) is a forward value too: the tuple itself cannot be saved
    return nodes | {n for n in joint.nodes if n.op == "call_function" and n.target is operator.getitem
                    and n.args[0] in nodes}


def default_partition(joint_module, _joint_inputs=None, *, num_fwd_outputs: int):
    """Forward: what its outputs need (and its side-effecting ops); saved: every forward value the
    backward reads. Returns ``(fw_module, bw_module)``."""
    joint = _Joint(joint_module, num_fwd_outputs)
    return _split(joint, _saved_for(joint, _forward_nodes(joint)))


def _narrower_source(node):
    """The input of `node` when node is a dtype-only _to_copy to a wider float dtype on the same
    device (autocast's float32 copy of bf16 logits for the loss: saved, the forward writes and the
    backward reads twice the bytes of the source, and the cast is exact to redo); else node."""
    if node.op != "call_function" or _op_name(node) != "aten::_to_copy" or len(node.args) != 1 \
            or set(node.kwargs) - {"dtype"} or not hasattr(node.args[0], "op"):
        return node
    src, out = node.args[0].meta.get("val"), node.meta.get("val")
    if src is None or out is None or src.device != out.device or not (
            src.dtype.is_floating_point and out.dtype.is_floating_point and src.dtype.itemsize < out.dtype.itemsize):
        return node
    return node.args[0]


def min_cut_rematerialization_partition(joint_module, _joint_inputs=None, compiler: str = "inductor", *,
                                        num_fwd_outputs: int):
    """Save the fewest bytes: a minimum cut between the primals and what the backward needs (module
    docstring). Returns ``(fw_module, bw_module)``."""
    joint = _Joint(joint_module, num_fwd_outputs)
    if any(_props(n).mutates for n in joint.fw_effects):
        return default_partition(joint_module, _joint_inputs, num_fwd_outputs=num_fwd_outputs)
    saved = _min_cut(joint)
    if saved is None:      # no finite cut (should not happen: primals can always be saved)
        return default_partition(joint_module, _joint_inputs, num_fwd_outputs=num_fwd_outputs)
    return _split(joint, saved)


def _min_cut(joint: _Joint):
    """The saved nodes of a minimum cut, or None when every cut is infinite."""
    import networkx as nx
    required_fw = _forward_nodes(joint)
    # what autograd ran stays in the backward, as in eager (it could sometimes be computed in the
    # forward and saved smaller, but then the forward would do the backward's work)
    required_bw = {n for n in joint.nodes if n.meta.get("aot_stage") == "backward"}
    required_bw |= joint.tangent_dependent() | {o for o in joint.bw_outputs if o is not None}
    g = nx.DiGraph()
    inf = math.inf
    for n in joint.nodes:
        if n.op == "output":
            continue
        if n in required_bw and n.op != "placeholder":
            g.add_edge(n.name + "_in", "sink", capacity=inf)       # computed in the backward whatever we save
            continue
        if n in joint.tangents:
            continue
        if n.op == "get_attr":
            continue                                              # a constant: both graphs hold it
        if n.op == "placeholder" or (n in required_fw and not _recomputable(n)):
            g.add_edge("source", n.name + "_in", capacity=inf)    # must be (and stay) a forward value
        weight = inf if is_view(n) else _nbytes(n.meta.get("val"))
        g.add_edge(n.name + "_in", n.name + "_out", capacity=weight)
        for user in n.users:
            if user.op != "output":
                g.add_edge(n.name + "_out", user.name + "_in", capacity=inf)
    if "sink" not in g or "source" not in g:
        return _saved_for(joint, required_fw)
    cut_value, (reachable, _) = nx.minimum_cut(g, "source", "sink")
    if cut_value == inf:
        return None
    by_name = {n.name: n for n in joint.nodes}
    saved = [by_name[u[:-3]] for u in reachable
             if u.endswith("_in") and u[:-3] in by_name and u[:-3] + "_out" not in reachable
             and g.has_edge(u, u[:-3] + "_out")]
    return sorted(saved, key=joint.order.__getitem__)
