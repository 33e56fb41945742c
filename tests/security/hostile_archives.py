"""Building hostile files from legitimate ones, for the tests of tests/security.

Every hostile jit archive starts as a real ``ember.jit.save`` file of a small scripted program
(`save_legit`); its program (the object tree the file holds) is edited (`Edit`) and written back
(`write_archive`), or its checkpoint manifest is edited, so it looks like a real file with one thing
changed. Checkpoints
(a jit archive is one, with its own magic number) are re-signed (`resign`) after editing, since the
SHA-256 digest only detects accidents: an attacker can compute it too.

    paths = save_legit(tmp)                       # {"module": ..., "function": ...}
    payload = read_archive(paths["module"])
    e = Edit(payload)                              # the forward method of the top module
    arr = e.method("numpy", e.x)                   # %p = x.numpy()
    e.method("tofile", arr, "/tmp/marker")
    e.returns(arr)
    write_archive(dst, payload)
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import struct

import ember
from ember import nn, serialization
from ember.serialization import JIT_MAGIC, MAGIC


# ---------------------------------------------------------------------------------------------
# legitimate programs
# ---------------------------------------------------------------------------------------------
class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.scale = 2.0

    def forward(self, x):
        return self.lin(x) * self.scale


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()
        self.register_buffer("shift", ember.ones(3))
        self.calls = 0
        self.tag = "outer"

    def forward(self, x):
        y = self.inner(x) + self.shift
        if bool(y.sum() > 0):
            y = y * 2
        self.calls = self.calls + 1
        return y


def add_n(x, n: int):
    for _ in range(n):
        x = x + 1
    return x


def save_legit(folder: str) -> dict:
    """A scripted module and a scripted function, saved; kind -> path."""
    ember.manual_seed(0)
    paths = {"module": os.path.join(folder, "legit_module.pt"), "function": os.path.join(folder, "legit_fn.pt")}
    ember.jit.save(ember.jit.script(Outer()), paths["module"])
    ember.jit.save(ember.jit.script(add_n), paths["function"])
    return paths


def call_legit(loaded, kind: str):
    """Call a loaded program of `kind` the way the tests do."""
    x = ember.randn(2, 3)
    return loaded(x) if kind == "module" else loaded(x, 2)


# ---------------------------------------------------------------------------------------------
# archives
# ---------------------------------------------------------------------------------------------
def read_archive(f) -> dict:
    """The program of a jit archive (a path, bytes or a binary file): the object tree it holds."""
    fh = open(f, "rb") if isinstance(f, str) else io.BytesIO(f) if isinstance(f, (bytes, bytearray)) else f
    with fh:
        return serialization.read(fh, fh.read(len(JIT_MAGIC)), None, True, JIT_MAGIC)


def write_archive(f, payload) -> None:
    """Write a jit archive holding `payload` as its program, as ember.jit.save writes it."""
    serialization.write(payload, f, JIT_MAGIC)


class Unseekable(io.RawIOBase):
    """A stream that cannot tell its length (a pipe, a socket)."""

    def __init__(self, data: bytes):
        self._data, self._pos, self.name = data, 0, "<pipe>"

    def readable(self):
        return True

    def readinto(self, b):
        n = min(len(b), len(self._data) - self._pos)
        b[:n] = self._data[self._pos:self._pos + n]
        self._pos += n
        return n


def archive_bytes(path: str) -> bytearray:
    with open(path, "rb") as fh:
        return bytearray(fh.read())


# ---------------------------------------------------------------------------------------------
# editing graphs
# ---------------------------------------------------------------------------------------------
def all_nodes(graph: dict):
    for node in graph["nodes"]:
        yield node
        for block in node.get("blocks", []):
            yield from all_nodes(block)


def method_of(payload: dict, name: str = "forward") -> dict:
    return payload["method"] if payload["kind"] == "function" else payload["module"]["methods"][name]


class Edit:
    """Append nodes to a method's graph (before its output), the way save writes them.

    `e.x` is the first tensor input, `e.self` the module (None for a function). `e.block(...)`
    switches where nodes go (a block of an If/Loop node this editor made)."""

    def __init__(self, payload: dict, method: str = "forward"):
        self.payload = payload
        self.graph = method_of(payload, method)["graph"]
        self.next_id = 1 + max(n["id"] for n in all_nodes(self.graph))
        inputs = [n for n in self.graph["nodes"] if n["op"] == "placeholder"]
        self.self = {"$node": inputs[0]["id"]} if payload["kind"] == "module" else None
        self.x = {"$node": inputs[1 if payload["kind"] == "module" else 0]["id"]}
        self.target_graph = self.graph

    def add(self, target, *args, op: str = "call_function", kwargs: dict | None = None, blocks: list | None = None,
            **fields) -> dict:
        node = {"id": self.next_id, "op": op, "name": f"p{self.next_id}", "target": target, "args": list(args),
                "kwargs": [[k, v] for k, v in (kwargs or {}).items()], **fields}
        if blocks is not None:
            node["blocks"] = blocks
        self.next_id += 1
        nodes = self.target_graph["nodes"]
        nodes.insert(len(nodes) - 1, node)
        return {"$node": node["id"]}

    def call(self, target: str, *args, **kwargs) -> dict:
        return self.add(target, *args, kwargs=kwargs)

    def method(self, name: str, receiver, *args, **kwargs) -> dict:
        return self.add(name, receiver, *args, op="call_method", kwargs=kwargs)

    def const(self, value) -> dict:
        return self.add("prim::Constant", value)

    def returns(self, value) -> None:
        """Make the graph also return `value` (so nothing can drop the payload as unused)."""
        out = self.graph["nodes"][-1]
        out["args"] = [(out["args"][0], value)]

    def in_if(self, build) -> dict:
        """An ``if True:`` whose then-block is what `build(self)` adds; returns the If's value."""
        then_block = {"nodes": []}
        else_block = {"nodes": [self._output([])]}
        then_block["nodes"].append(self._output([]))
        node = self.add("prim::If", True, blocks=[then_block, else_block], num_outputs=0)
        self._fill(then_block, build)
        return node

    def in_loop(self, build, trips: int = 1) -> dict:
        """A loop of `trips` iterations whose body is what `build(self)` adds."""
        body = {"nodes": []}
        body["nodes"].append(self._placeholder("i"))
        body["nodes"].append(self._output([True]))
        node = self.add("prim::Loop", trips, True, blocks=[body], num_outputs=0)
        self._fill(body, build)
        return node

    def _fill(self, block: dict, build) -> None:
        outer = self.target_graph
        self.target_graph = block
        try:
            build(self)
        finally:
            self.target_graph = outer

    def _output(self, values: list) -> dict:
        node = {"id": self.next_id, "op": "output", "name": "output", "target": "output",
                "args": [tuple(values)], "kwargs": []}
        self.next_id += 1
        return node

    def _placeholder(self, name: str) -> dict:
        node = {"id": self.next_id, "op": "placeholder", "name": name, "target": name, "args": [], "kwargs": []}
        self.next_id += 1
        return node


# ---------------------------------------------------------------------------------------------
# checkpoints
# ---------------------------------------------------------------------------------------------
_HEADER = struct.Struct("<8sIIQQ")


def split_checkpoint(data: bytes) -> tuple:
    """(manifest dict, tensor data bytes) of an ember.save file."""
    _, _, _, mlen, dlen = _HEADER.unpack_from(data)
    start = _HEADER.size
    return json.loads(data[start:start + mlen]), bytes(data[start + mlen:start + mlen + dlen])


def resign(manifest, blob: bytes, *, mlen: int | None = None, dlen: int | None = None,
           manifest_bytes: bytes | None = None, magic: bytes = MAGIC) -> bytes:
    """An ember.save file (an ember.jit.save archive with `magic` JIT_MAGIC) holding `manifest` and
    `blob` with a valid digest; `mlen`/`dlen` override the lengths the header declares (the digest
    still covers the real bytes)."""
    text = manifest_bytes if manifest_bytes is not None else json.dumps(manifest).encode()
    header = _HEADER.pack(magic, 1, 0, len(text) if mlen is None else mlen, len(blob) if dlen is None else dlen)
    return header + text + blob + hashlib.sha256(header + text + blob).digest()
