"""Fusion groups: maximal straight-line runs of ops the fuser can lower become ``prim::FusionGroup``
nodes, each compiled by ``ember._inductor.compile_fx`` (seed 000's "fusion nodes" in the graph
executor; TorchScript's TensorExpr fuser pass).

``fuse_groups(graph)`` runs after the profiling runs, on the optimised graph, block by block
(If / Loop bodies too). In each block it scans the nodes in order and grows a group from fusible
nodes: a call the fuser has a lowering for (its TorchScript name ``aten::<op>`` against the
``<op>.<overload>`` keys of ``ember._inductor.lowering.LOWERINGS``: one table says what the fuser
can compile) or that the group's fast path runs on arrays for its profiled argument looks (an
extern of the compiled group: ``fused_kernel.ARRAY_EXTERNS``, a 2-D matmul), with a profiled tensor
result (``meta["val"]``), deterministic and pure, whose other arguments are tensors with a profiled
look or constants. A pure node that reads no member is stepped over (it stays where it is); anything
else (a side effect, a block, a reader of a member) ends the group. A group of fewer than
``config.min_group_size`` lowered ops is left alone (a kernel launch does not pay for one op). A member whose result may alias an argument (a view, ``contiguous``) is
never a group output: fused outputs are fresh tensors.

Each group becomes, at the position of its last member::

    %ok : bool = prim::TypeCheck[types=[Float(3, 4)]](%v)     # only inputs the plan does not guarantee
    %r : Tensor = prim::If(%ok)
      block0():
        %f : Tensor = prim::FusionGroup_0(%a, %v)             # the compiled kernel
        -> (%f)
      block1():
        ... the unfused members (the fallback) ...
        -> (%d)

The plan is used only for its exact input signature (the executor's guard: the inputs' dtype, shape,
strides, device, requires_grad and the grad mode), and ``keep_guaranteed_types`` keeps a value's
profiled ``meta["val"]`` only where that signature fixes it; so a group whose inputs are all such
values needs no check, and is the bare FusionGroup. An input whose look was only observed
(``meta["observed_val"]``: after a data-dependent op, say) is checked: a run where it differs takes
the fallback, never a kernel compiled for another look. ``meta["subgraph"]`` holds the group as a
script graph (printed by graph_for, run by the reference interpreter); ``meta["kernel"]`` the
``FusedKernel`` that compiles it on first use (ember/jit/executor/fused_kernel.py).
"""
from __future__ import annotations

from ember._core.tensor import Tensor
from ember.fx.graph import Graph
from ember.fx.node import Node
from ember.fx.passes import purity
from ember.fx.passes.pass_manager import PassResult, finish
from ember.jit.ir import BoolType, TensorType, add_if, call, prim, set_block_returns, walk
from ember.jit.ir.op_names import op_name
from ember.jit.ir.types import observed_tensor_type

_lowered_names: frozenset | None = None


def lowered_op_names() -> frozenset:
    """The op names the fuser lowers ("add", "tanh", "layer_norm", ...), from its lowering table
    (imported on first use: ``import ember`` does not load the fuser)."""
    global _lowered_names
    if _lowered_names is None:
        from ember._inductor.lowering import LOWERINGS
        _lowered_names = frozenset(key.split(".", 1)[0] for key in LOWERINGS)
    return _lowered_names


def profiled_val(node):
    """What a profiling run saw `node` hold (a meta tensor), guaranteed by the signature or not;
    None when nothing or conflicting looks were seen."""
    val = node.meta.get("val")
    if not isinstance(val, Tensor):
        val = node.meta.get("observed_val")
    return val if isinstance(val, Tensor) else None


def _guaranteed(node) -> bool:
    return isinstance(node.meta.get("val"), Tensor)


def _is_constant_arg(a, fusible_users) -> bool:
    """A literal, a prim::Constant, or a list/tuple of those built only for fusible calls."""
    if isinstance(a, (list, tuple)):
        return all(_is_constant_arg(x, fusible_users) for x in a)
    if not isinstance(a, Node):
        return not isinstance(a, slice) or all(_is_constant_arg(x, fusible_users) for x in (a.start, a.stop, a.step))
    if a.op == "call_function" and a.target is prim.Constant:
        return not isinstance(a.args[0], Tensor)    # tensor constants are inputs of their own
    if a.op == "call_function" and a.target in (prim.ListConstruct, prim.TupleConstruct):
        return all(u in fusible_users for u in a.users) and _is_constant_arg(list(a.args), fusible_users)
    return False


def _is_tensor_input(a) -> bool:
    return isinstance(a, Node) and isinstance(a.type, TensorType) and profiled_val(a) is not None \
        and profiled_val(a).device.type in ("cpu", "meta")


def _fusible_op(node: Node) -> bool:
    """The op itself qualifies (its arguments are checked by `_fusible`)."""
    if node.op not in ("call_function", "call_method") or node.blocks or "num_outputs" in node.meta:
        return False
    if prim.is_prim(node.target) or node.kwargs.get("out") is not None:
        return False
    name = op_name(node)
    if not name.startswith("aten::") or (name[6:] not in lowered_op_names() and not _array_extern(node)):
        return False
    if not isinstance(node.type, TensorType) or profiled_val(node) is None:
        return False
    props = purity.properties(node)
    return purity.is_pure(node) and not props.nondeterministic and not props.dynamic_output_shape


def _array_extern(node: Node) -> bool:
    """An op without a lowering that the group's fast path runs on arrays, its profiled argument looks
    taking its CPU kernel's hot path (``fused_kernel.ARRAY_EXTERNS``: a 2-D matmul)."""
    from ember.jit.executor.fused_kernel import ARRAY_EXTERNS, look_of
    rule, vals = ARRAY_EXTERNS.get(op_name(node)), [profiled_val(a) if isinstance(a, Node) else None for a in node.args]
    return rule is not None and not node.kwargs and None not in vals and rule(*map(look_of, vals)) is not None


def _fusible(node: Node, candidates: set) -> bool:
    if node not in candidates:
        return False
    for a in list(node.args) + list(node.kwargs.values()):
        if isinstance(a, Node) and isinstance(a.type, TensorType) and not _is_constant_arg(a, candidates):
            if not _is_tensor_input(a):
                return False
        elif not _is_constant_arg(a, candidates):
            return False
    return True


def _groups_of(block: Graph, candidates: set, min_size: int) -> list:
    """The maximal straight-line groups of `block` (lists of member nodes in order)."""
    groups, current = [], []

    def close():
        if current:
            groups.append(list(current))
        current.clear()

    for node in block.nodes:
        if node.op in ("placeholder", "output"):
            continue
        if _fusible(node, candidates):
            current.append(node)
            continue
        if not current:
            continue
        reads_member = any(isinstance(a, Node) and a in current for a in node.all_input_nodes)
        if reads_member or node.blocks or not purity.is_pure(node) or purity.is_grad_mode_switch(node):
            close()
    close()
    split = [g for group in groups for g in _split_at_aliasing_outputs(group)]
    return [g for g in split if sum(1 for m in g if not purity.properties(m).is_view and not _array_extern(m)) >= min_size]


def _outputs(group: list) -> list:
    members = set(group)
    return [m for m in group if any(u not in members for u in m.users)]


def _split_at_aliasing_outputs(group: list) -> list:
    """A member that may return (a view of) an argument cannot be an output (fused outputs are
    fresh): the group ends before it, and a new one may start after it. Both parts are checked
    again (a member the split node read is now an output of the part before it)."""
    for i, m in enumerate(group):
        if m in _outputs(group) and purity.properties(m).aliases_args:
            return _split_at_aliasing_outputs(group[:i]) + _split_at_aliasing_outputs(group[i + 1:])
    return [group] if group else []


def _inputs(group: list) -> list:
    """The tensor values the group reads from outside, in first-use order."""
    members, seen = set(group), []
    for m in group:
        for a in m.all_input_nodes:
            if a not in members and a not in seen and isinstance(a.type, TensorType) and _is_tensor_input(a):
                seen.append(a)
    return seen


def _copy_member(dst: Graph, node: Node, env: dict) -> Node:
    """Copy `node` into `dst`, mapping inputs through `env` and copying constant arguments along."""
    def arg(a):
        if a in env:
            return env[a]
        if a.target in (prim.ListConstruct, prim.TupleConstruct) or a.target is prim.Constant:
            env[a] = _copy_member(dst, a, env)
            return env[a]
        return a
    env[node] = new = dst.node_copy(node, arg)
    return new


def _subgraph(group: list, inputs: list, outputs: list) -> Graph:
    """The group as a script graph of its own: one placeholder per input, the members, the outputs."""
    sub, env = Graph(), {}
    for i, x in enumerate(inputs):
        p = sub.placeholder(f"x{i}", type_expr=x.type)
        p.meta["val"] = profiled_val(x)
        env[x] = p
    for m in group:
        _copy_member(sub, m, env)
    sub.output(env[outputs[0]] if len(outputs) == 1 else tuple(env[o] for o in outputs))
    return sub


def _rewrite(group: list, names: list) -> None:
    """Replace `group` by the (checked) FusionGroup + fallback, at its last member's place."""
    from ember.jit.executor.fused_kernel import FusedKernel
    from ember.jit.ir import unpack_outputs
    block, members = group[-1].graph, set(group)
    inputs, outputs = _inputs(group), _outputs(group)
    unchecked = [x for x in inputs if not _guaranteed(x)]
    sub = _subgraph(group, inputs, outputs)

    def emit_group(dst: Graph) -> list:
        fg = call(dst, prim.FusionGroup, tuple(inputs), type_=outputs[0].type if len(outputs) == 1 else None)
        fg.meta["subgraph"] = sub
        if len(outputs) == 1 and _guaranteed(outputs[0]):
            fg.meta["val"] = outputs[0].meta["val"]
        fg.meta["kernel"] = FusedKernel(sub, len(outputs), f"fused_{len(names)}")
        names.append(fg.meta["kernel"].name)
        if len(outputs) == 1:
            return [fg]
        return unpack_outputs(fg, [o.type for o in outputs])

    with block.inserting_before(group[-1].next):
        if not unchecked:
            results = emit_group(block)
        else:
            check = call(block, prim.TypeCheck, tuple(unchecked), type_=BoolType())
            check.meta["types"] = [observed_tensor_type(profiled_val(x)) for x in unchecked]
            check.meta["vals"] = [profiled_val(x) for x in unchecked]
            if_node, results = add_if(block, check, [o.type for o in outputs])
            if_node.meta["fusion_fallback"] = True
            fused, fallback = if_node.blocks
            set_block_returns(fused, emit_group(fused))
            env: dict = {}
            for m in group:
                _copy_member(fallback, m, env)
            set_block_returns(fallback, [env[o] for o in outputs])
    for old, new in zip(outputs, results):
        for key in ("val", "observed_val"):   # a later group may read `new`: it looks like `old`
            if key in old.meta:
                new.meta[key] = old.meta[key]
        for user in list(old.users):
            if user not in members:
                user.replace_input_with(old, new)
    lists = {a for m in group for a in m.all_input_nodes if a.target in (prim.ListConstruct, prim.TupleConstruct)}
    for m in reversed(group):
        block.erase_node(m)
    for a in lists:                          # constant lists built only for members go with them
        if not a.users:
            a.graph.erase_node(a)


def fuse_groups(graph: Graph, min_size: int | None = None) -> PassResult:
    """Wrap the fusible regions of `graph` and its blocks in FusionGroups (see the module docstring),
    in place.

        fuse_groups(g)      # after the profiling runs: values carry meta["val"]
    """
    from ember.jit.executor import config
    min_size = config.min_group_size if min_size is None else min_size
    nodes = [n for n in walk(graph) if not n._erased]
    candidates = {n for n in nodes if _fusible_op(n)}
    blocks = [graph] + [b for n in nodes if not n.meta.get("fusion_fallback") for b in n.blocks]
    names: list = []
    for block in blocks:
        for group in _groups_of(block, candidates, min_size):
            _rewrite(group, names)
    return finish("fuse_groups", graph, bool(names))


def fusion_groups(graph: Graph) -> list:
    """The FusionGroup nodes of `graph` and its blocks, in program order."""
    return [n for n in walk(graph) if n.op == "call_function" and n.target is prim.FusionGroup]


__all__ = ["fuse_groups", "fusion_groups", "lowered_op_names", "profiled_val"]
