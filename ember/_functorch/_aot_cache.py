"""The AOT cache: the forward and backward aten graphs of a captured program, on disk, so that the
same program in a new process skips the joint trace and the partition.

    namespace = program_namespace(dynamo_gm)        # None: not cacheable (see below)
    key = entry_key(namespace, spec_key)              # + everything else the graphs depend on
    entry = load(key)                                 # (info, fw_gm, bw_gm) or None
    store(key, info, fw_gm, bw_gm)

What the traced graphs depend on, all in the key:
- the program: every node of the captured graph, encoded as data (op, target by its import path,
  literal arguments). A graph that calls anything but ember's own functions, operator/builtins and
  aten ops, reads attributes (get_attr) or calls submodules is not cached: their behaviour is not
  in the text.
- the inputs: grad mode and each argument's spec (class, dispatch keys, dtype, shape, strides);
  the thread's dispatch include/exclude sets and the default dtype;
- the code that traced them: a stamp of every ember source file (path, size, mtime: what
  Python's own bytecode cache trusts), NumPy's and Python's versions.
Only the default partition and decompositions are cached (the caller checks).

An entry is JSON in diskstore's format (digest-checked, written atomically under a lock, never
loaded from a directory or file others can write). Loading parses JSON and looks aten ops up by
name: it runs no code of its own. An entry that does not decode, or whose graphs do not fit the
call, is counted as rejected and the program is traced again (and the entry rewritten).
"""
from __future__ import annotations

import hashlib
import operator
import os
import sys

from .._logging import lazy_logger
from .._core.dispatch import AUTOGRAD_BIT, META_BIT, OperatorHandle, tls
from .._core.storage import MetaArray
from .._core.dtype import _BY_NAME as DTYPES
from .._core.tensor import Tensor, _make

log = lazy_logger("ember._functorch.aot_cache")     # logging is imported on the first message
FORMAT = "ember-aot-1"
counters = {"aot_hit": 0, "aot_miss": 0, "aot_rejected": 0, "aot_stored": 0}
_ALLOWED_MODULES = ("ember", "operator", "_operator", "builtins", "math")
_source_stamp = None


def enabled() -> bool:
    from .._inductor import config
    return config.aot_cache


class NotCacheable(Exception):
    """The graph holds something the cache cannot name exactly."""


def _stamp() -> str:
    """(path, size, mtime) of every ember source file, hashed once per process (os.scandir and
    plain string paths: this runs in every warm process, ~300 files)."""
    global _source_stamp
    if _source_stamp is None:
        h = hashlib.sha256()
        todo = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
        skip = len(todo[0])
        while todo:
            with os.scandir(todo.pop()) as it:
                entries = sorted(it, key=lambda e: e.name)
            for entry in entries:
                if entry.name.endswith(".py") and entry.is_file():
                    st = entry.stat()
                    h.update(f"{entry.path[skip:]}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
                elif entry.is_dir() and entry.name != "__pycache__":
                    todo.append(entry.path)
        import numpy
        h.update(f"{numpy.__version__}\0{sys.version}".encode())
        _source_stamp = h.hexdigest()
    return _source_stamp


# -- values <-> JSON ------------------------------------------------------------------------------

def _op_of(name: str):
    """The aten op named `name` ("aten::sum.dim_IntList", "aten::relu" for its default overload)."""
    import ember
    namespace, _, rest = name.partition("::")
    packet, _, overload = rest.partition(".")
    op = getattr(getattr(getattr(ember.ops, namespace, None), packet, None), overload or "default", None)
    if not isinstance(op, OperatorHandle):
        raise ValueError(f"no aten op named {name!r}")
    return op


def _target(node) -> object:
    t = node.target
    if node.op in ("placeholder", "output", "call_method"):
        return t
    if node.op != "call_function":
        raise NotCacheable(f"a {node.op} node")
    if isinstance(t, OperatorHandle):
        for kernel in [*t.kernels.values(), t.composite]:
            # a kernel registered from outside ember (ember.library) is not in the source stamp
            if kernel is not None and not (getattr(kernel, "__module__", None) or "ember").startswith("ember"):
                raise NotCacheable(f"{t.name} has a kernel from {kernel.__module__}")
        try:
            found = _op_of(t.name)
        except ValueError:
            found = None
        if found is not t:
            raise NotCacheable(f"{t.name} is not found by its name")
        return {"op": t.name}
    if t is operator.getitem:
        return {"getitem": 0}
    from ..ops.registry import public_name
    public = public_name(t)          # ember's generated bindings (ember.nn.functional.linear ...)
    if public is not None:
        return {"fn": public}
    module, qualname = getattr(t, "__module__", None) or "", getattr(t, "__qualname__", "")
    if module.split(".")[0] not in _ALLOWED_MODULES or "<" in qualname or not qualname:
        raise NotCacheable(f"a call of {module}.{qualname or t!r}")
    return {"fn": f"{module}.{qualname}"}


def _value(v):
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if v == v and abs(v) != float("inf") else {"float": repr(v)}
    if hasattr(v, "op") and hasattr(v, "graph"):
        return {"node": v.name}
    if isinstance(v, (list, tuple)):
        return {type(v).__name__: [_value(x) for x in v]}
    if isinstance(v, dict) and all(type(k) is str for k in v):
        # pairs, not a JSON object: the file is written with sorted keys, and the order of a
        # node's kwargs is part of the graph's code (the fuser's graph-cache key)
        return {"dict": [[k, _value(x)] for k, x in v.items()]}
    if isinstance(v, slice):
        return {"slice": [_value(v.start), _value(v.stop), _value(v.step)]}
    if type(v).__name__ == "dtype" and DTYPES.get(getattr(v, "name", None)) is v:
        return {"dtype": v.name}
    if type(v).__name__ == "device" and type(v).__module__.startswith("ember"):
        return {"device": str(v)}
    if isinstance(v, Tensor):        # a node's meta value: what it looked like
        return {"tensor": [list(v.shape), list(v.stride()), v.dtype.name, bool(v.requires_grad)]}
    raise NotCacheable(f"a value of type {type(v).__name__}")


def _decode(v, nodes):
    import ember
    if not isinstance(v, dict):
        if isinstance(v, list):
            raise ValueError("a bare list")
        return v
    (kind, x), = v.items()
    if kind == "node":
        return nodes[x]
    if kind in ("list", "tuple"):
        return (list if kind == "list" else tuple)(_decode(e, nodes) for e in x)
    if kind == "dict":
        if not all(isinstance(kv, list) and len(kv) == 2 and type(kv[0]) is str for kv in x):
            raise ValueError("a dict entry that is not a [name, value] pair")
        return {k: _decode(e, nodes) for k, e in x}
    if kind == "slice":
        return slice(*(_decode(e, nodes) for e in x))
    if kind == "float":
        return float(x)
    if kind == "dtype":
        return DTYPES[x]
    if kind == "device":
        return ember.device(x)
    if kind == "tensor":        # a meta tensor made from its slots, as tensor_spec.meta_like does
        shape, stride, dtype, requires_grad = x
        if len(shape) != len(stride) or not all(type(d) is int and d >= 0 for d in shape):
            raise ValueError(f"a tensor value of shape {shape} and strides {stride}")
        return _make(MetaArray(shape, stride, DTYPES[dtype].np), META_BIT | (AUTOGRAD_BIT if requires_grad else 0))
    raise ValueError(f"unknown entry {kind!r}")


def encode_graph(gm, with_values: bool = True) -> list:
    """Every node of `gm` as data: [name, op, target, args, kwargs(, meta value)]."""
    rows = []
    for n in gm.graph.nodes:
        row = [n.name, n.op, _target(n), _value(n.args), _value(n.kwargs)]
        if with_values:
            row.append(_value(n.meta.get("val")))
        rows.append(row)
    return rows


def decode_graph(rows):
    """The GraphModule of encode_graph's rows (the same node names, so the same generated code)."""
    from ..fx import Graph, GraphModule
    graph, nodes = Graph(), {}
    for name, op, target, args, kwargs, val in rows:
        if op == "call_function":
            (kind, t), = target.items()
            if kind == "op":
                target = _op_of(t)
            elif kind == "getitem":
                target = operator.getitem
            else:
                raise ValueError(f"an aten graph calls {t!r}")
        elif op not in ("placeholder", "output"):
            raise ValueError(f"an aten graph has a {op} node")
        node = graph.create_node(op, target, _decode(args, nodes), _decode(kwargs, nodes), name=name)
        if node.name != name:
            raise ValueError(f"node {name!r} came back as {node.name!r}")
        if val is not None:
            node.meta["val"] = _decode(val, nodes)
        nodes[name] = node
    return GraphModule({}, graph, lazy_recompile=True)     # its code made only if it runs eagerly


# -- keys and entries -----------------------------------------------------------------------------

def program_namespace(gm) -> str | None:
    """The captured program's part of the key, or None when it cannot be named exactly."""
    try:
        return repr(encode_graph(gm, with_values=False))
    except NotCacheable as e:
        log.debug("ember aot cache: not cached: %s", e)
        return None


def entry_key(namespace: str, spec_key: tuple) -> str:
    import ember
    grad_mode, specs = spec_key[0], spec_key[1:]
    spec_text = repr([(f"{c.__module__}.{c.__qualname__}", keys, str(dt), tuple(shape), tuple(strides))
                      for c, keys, dt, shape, strides in specs])
    text = "\0".join((FORMAT, _stamp(), namespace, str(grad_mode), spec_text, str(tls.include), str(tls.exclude),
                      ember.get_default_dtype().name))
    return hashlib.sha256(text.encode()).hexdigest()


def _path(key: str) -> str:
    from .._inductor import diskstore
    return os.path.join(diskstore.subdir("aot"), key + ".json")


def load(key: str, num_inputs: int):
    """(info, fw_gm, bw_gm or None) stored under `key`, or None (missing, tampered, not fitting)."""
    from .._inductor import diskstore
    path = _path(key)
    if not os.path.lexists(path):
        counters["aot_miss"] += 1
        return None
    payload = diskstore.read_json(path)
    try:
        if not isinstance(payload, dict) or payload.get("key") != key:
            raise ValueError("not an entry of this key")
        info = {k: payload["info"][k] for k in ("num_fwd_outputs", "tangent_outputs", "out_kind", "grad_mode_after")}
        info["mutations"] = None
        fw_gm = decode_graph(payload["forward"])
        bw_gm = decode_graph(payload["backward"]) if payload["backward"] is not None else None
        if sum(n.op == "placeholder" for n in fw_gm.graph.nodes) != num_inputs:
            raise ValueError("the forward graph takes another number of inputs")
    except (ValueError, KeyError, TypeError, AttributeError, RuntimeError) as e:
        log.warning("ember aot cache: entry %s does not fit (%s: %s); tracing again", key[:12], type(e).__name__, e)
        counters["aot_rejected"] += 1
        return None
    counters["aot_hit"] += 1
    return info, fw_gm, bw_gm


def store(key: str, info: dict, fw_gm, bw_gm) -> None:
    from .._inductor import diskstore
    try:
        payload = {"key": key, "forward": encode_graph(fw_gm),
                   "backward": encode_graph(bw_gm) if bw_gm is not None else None,
                   "info": {k: info[k] for k in ("num_fwd_outputs", "tangent_outputs", "out_kind", "grad_mode_after")}}
    except NotCacheable as e:
        log.debug("ember aot cache: graphs not cached: %s", e)
        return
    try:
        path = _path(key)
        with diskstore.locked(path):
            diskstore.write_json(path, payload)
    except OSError as e:          # a read-only or full cache: the program still runs
        log.warning("ember aot cache: could not store entry %s: %s", key[:12], e)
        return
    counters["aot_stored"] += 1
