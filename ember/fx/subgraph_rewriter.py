"""replace_pattern: find every occurrence of a small graph (the pattern) and put another in its place.

    >>> def pattern(x, y):
    ...     return ember.neg(x) + ember.relu(y)
    >>> def replacement(x, y):
    ...     return ember.sigmoid(x) * y
    >>> matches = replace_pattern(gm, pattern, replacement)    # list[Match(anchor, nodes_map)]

Matching follows use-def edges backwards from the pattern's returned nodes (the anchors): a
pattern node matches a graph node with the same op, target, literal arguments and kwargs names
whose argument nodes match in turn; a pattern placeholder matches any graph node (the same one
every time it is used). Matches do not overlap (the first one in graph order wins), and a match is
rejected when a value computed inside it, other than the returned ones, is also used outside
it: removing the matched nodes would leave that user without its input.
"""
from __future__ import annotations

from typing import NamedTuple

from .node import Node, map_arg

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    """One replaced occurrence: `anchor` is the pattern's (first) returned node, `nodes_map`
    maps each pattern node to the graph node it matched (placeholders included)."""
    anchor: Node
    nodes_map: dict


def _as_graph(obj, what: str):
    from .graph import Graph
    if isinstance(obj, Graph):
        return obj, None
    graph = getattr(obj, "graph", None)
    if isinstance(graph, Graph):
        return graph, obj
    if callable(obj):
        from ._symbolic_trace import symbolic_trace
        gm = symbolic_trace(obj)
        return gm.graph, gm
    raise TypeError(f"replace_pattern(): {what} must be a callable, a GraphModule or a Graph, "
                    f"got {type(obj).__name__}")


def _flatten_nodes(value) -> list:
    found: list = []
    map_arg(value, lambda n: found.append(n) or n)
    return found


class _Matcher:
    """Backtracking matcher of one pattern graph against one graph."""

    def __init__(self, pattern_graph):
        self.placeholders = [n for n in pattern_graph.nodes if n.op == "placeholder"]
        outputs = [n for n in pattern_graph.nodes if n.op == "output"]
        if len(outputs) != 1:
            raise ValueError("replace_pattern(): the pattern graph must have exactly one output node")
        self.output_value = outputs[0].args[0]
        self.anchors = _flatten_nodes(self.output_value)
        if not self.anchors:
            raise ValueError("replace_pattern(): the pattern returns no node")
        if any(a.op == "placeholder" for a in self.anchors):
            raise ValueError("replace_pattern(): the pattern must compute something; it returns one of its inputs")

    def match_node(self, pn, gn, mapping: dict, used: set) -> bool:
        """Extend `mapping` (pattern node -> graph node) so that `pn` matches `gn`; undone on failure."""
        if pn in mapping:
            return mapping[pn] is gn
        if gn in used:
            return False                      # two pattern nodes cannot share one graph node
        if pn.op == "placeholder":
            mapping[pn] = gn
            used.add(gn)
            return True
        if pn.op != gn.op or gn.op in ("placeholder", "output") or not _same_target(pn.target, gn.target):
            return False
        if len(pn.args) != len(gn.args) or set(pn.kwargs) != set(gn.kwargs):
            return False
        saved = dict(mapping), set(used)
        mapping[pn] = gn
        used.add(gn)
        ok = all(self.match_arg(pa, ga, mapping, used) for pa, ga in zip(pn.args, gn.args)) and all(
            self.match_arg(pn.kwargs[k], gn.kwargs[k], mapping, used) for k in pn.kwargs)
        if not ok:
            mapping.clear(); mapping.update(saved[0])
            used.clear(); used.update(saved[1])
        return ok

    def match_arg(self, pa, ga, mapping, used) -> bool:
        if isinstance(pa, Node):
            return isinstance(ga, Node) and self.match_node(pa, ga, mapping, used)
        if isinstance(ga, Node):
            return False
        if isinstance(pa, (tuple, list)):
            return (isinstance(ga, (tuple, list)) and len(pa) == len(ga)
                    and all(self.match_arg(p, g, mapping, used) for p, g in zip(pa, ga)))
        if isinstance(pa, dict):
            return (isinstance(ga, dict) and set(pa) == set(ga)
                    and all(self.match_arg(pa[k], ga[k], mapping, used) for k in pa))
        return type(pa) is type(ga) and _literal_equal(pa, ga)

    def find(self, graph) -> list:
        """All non-overlapping, self-contained matches in `graph`, in graph order (mappings)."""
        order = {n: i for i, n in enumerate(graph.nodes)}
        candidates = [n for n in graph.nodes if n.op not in ("placeholder", "output")]
        taken: set = set()
        found = []
        for first in candidates:
            mapping = self._match_anchors(0, first, candidates, {}, set(), order)
            if mapping is None:
                continue
            inner = {gn for pn, gn in mapping.items() if pn.op != "placeholder"}
            if inner & taken:
                continue
            taken |= inner
            found.append(mapping)
        return found

    def _match_anchors(self, i, candidate, candidates, mapping, used, order):
        if not self.match_node(self.anchors[i], candidate, mapping, used):
            return None
        if i + 1 == len(self.anchors):
            return mapping if self._self_contained(mapping, order) else None
        for nxt in candidates:
            trial_map, trial_used = dict(mapping), set(used)
            result = self._match_anchors(i + 1, nxt, candidates, trial_map, trial_used, order)
            if result is not None:
                return result
        return None

    def _self_contained(self, mapping, order) -> bool:
        """No inner value escapes, and the anchors' outside users all come after the last matched node."""
        inner = {gn for pn, gn in mapping.items() if pn.op != "placeholder"}
        anchors = {mapping[a] for a in self.anchors}
        last = max(order[n] for n in inner)
        for pn, gn in mapping.items():
            if pn.op == "placeholder":
                continue
            for user in gn.users:
                if user in inner:
                    continue
                if gn not in anchors or order[user] < last:
                    return False
        return True


def _same_target(a, b) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:
        return False


def _literal_equal(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:             # e.g. tensors: equal only if the same object
        return a is b


def replace_pattern(gm, pattern, replacement) -> list:
    """Replace every non-overlapping match of `pattern` in ``gm.graph`` with `replacement`.

    >>> replace_pattern(gm, lambda x: ember.relu(ember.neg(x)), lambda x: ember.neg(ember.relu(x)))

    `pattern` and `replacement` are callables (traced with ``symbolic_trace``), GraphModules or
    Graphs, with the same number of inputs. The replacement returns as many values as the pattern.
    Edits `gm` in place, recompiles it and returns the list of Matches.
    """
    pattern_graph, _ = _as_graph(pattern, "pattern")
    replacement_graph, replacement_module = _as_graph(replacement, "replacement")
    matcher = _Matcher(pattern_graph)
    rep_placeholders = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    if len(rep_placeholders) != len(matcher.placeholders):
        raise ValueError(f"replace_pattern(): the replacement takes {len(rep_placeholders)} inputs but the "
                         f"pattern takes {len(matcher.placeholders)}; they must take the same inputs")
    graph = gm.graph
    replaced: dict = {}          # erased anchor (graph node) -> the value that took its place

    def resolve(n):
        while isinstance(n, Node) and n in replaced:
            n = replaced[n]
        return n

    matches = []
    for mapping in matcher.find(graph):
        inputs = [resolve(mapping[p]) for p in matcher.placeholders]
        inner = [gn for pn, gn in mapping.items() if pn.op != "placeholder"]
        order = {n: i for i, n in enumerate(graph.nodes)}
        inner.sort(key=order.__getitem__)
        outputs = _insert_replacement(gm, replacement_graph, replacement_module, inputs, inner[-1].next)
        if len(outputs) != len(matcher.anchors):
            raise ValueError(f"replace_pattern(): the pattern returns {len(matcher.anchors)} values but the "
                             f"replacement returns {len(outputs)}")
        for anchor, new in zip(matcher.anchors, outputs):
            old = mapping[anchor]
            old.replace_all_uses_with(new)
            replaced[old] = new
        for gn in reversed(inner):
            if not gn.users:
                graph.erase_node(gn)
        # like torch: inputs name the node they read now; matched nodes stay the (erased) originals
        nodes_map = {pn: resolve(gn) if pn.op == "placeholder" else gn for pn, gn in mapping.items()}
        matches.append(Match(anchor=matcher.anchors[0], nodes_map=nodes_map))
    if matches and hasattr(gm, "recompile"):
        gm.recompile()
    return matches


def _insert_replacement(gm, rep_graph, rep_module, inputs, before) -> list:
    """Copy `rep_graph` into ``gm.graph`` before node `before`; returns the values it returns."""
    graph = gm.graph
    val_map: dict = {}
    placeholders = iter(inputs)
    result = None
    with graph.inserting_before(before):
        for n in rep_graph.nodes:
            if n.op == "placeholder":
                val_map[n] = next(placeholders)
            elif n.op == "output":
                result = map_arg(n.args[0], lambda a: val_map[a])
            else:
                if n.op in ("get_attr", "call_module"):
                    _copy_attribute(gm, rep_module, n.target)
                val_map[n] = graph.node_copy(n, lambda a: val_map[a])
    if isinstance(result, (tuple, list)):
        return list(result)
    return [result]


def _copy_attribute(gm, rep_module, target: str) -> None:
    """Give `gm` the attribute/submodule `target` of the replacement module if it lacks it."""
    if rep_module is None:
        return
    owner, value = gm, rep_module
    atoms = target.split(".")
    for atom in atoms:
        value = getattr(value, atom, None)
        if value is None:
            return
    for atom in atoms[:-1]:
        if not hasattr(owner, atom):
            return                     # a nested path gm lacks: leave it to lint() to report
        owner = getattr(owner, atom)
    if not hasattr(owner, atoms[-1]):
        setattr(owner, atoms[-1], value)
