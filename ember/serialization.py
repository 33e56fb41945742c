"""``ember.save`` / ``ember.load``: checkpoints in a format that cannot run code when loaded.

A checkpoint is one binary blob::

    header   32 bytes  MAGIC (8) | version u32 | flags u32 | manifest length u64 | data length u64
    manifest JSON (UTF-8): the object tree, the tensor table and the storage table
    data     the storages' raw little-endian bytes, back to back
    digest   SHA-256 of everything above (32 bytes)

Nothing is unpickled: the manifest is a tree of tagged nodes (``{"k": kind, "v": value}``)
from a fixed list (`_DECODERS`); a node of any other kind is refused. Every byte is covered by
the digest, so a truncated or corrupted file raises ``RuntimeError("ember.load: <file>: ...")``
before anything is built. The digest only detects accidents (anyone can recompute it), so every
field is also checked: lengths against the file before reading, each tensor inside its storage,
every node kind and type; a file opened by path must end at its digest.

What can be saved: tensors (every dtype, 0-d, views; ``nn.Parameter`` comes back as a
Parameter; ``requires_grad`` round-trips, tensors load as leaves), ``None``, bools, ints,
floats (bit-exact, NaN/inf included), complex numbers, str, bytes, lists, tuples, dicts and
OrderedDicts (any saveable hashable keys; a state dict's ``_metadata`` is kept), ``ember.Size``,
``ember.dtype``, ``ember.device``, NumPy arrays and scalars. Anything else (namedtuples,
sets, custom classes, dict subclasses...) raises TypeError when saving — it is never
silently converted.

Storage: the same Tensor object saved twice loads as one object. Distinct tensors viewing
one storage (tied weights, a tensor and its views) keep sharing memory and one version
counter after loading: the span of the storage they cover is saved once. A tensor that is
the only one saved from its storage is saved compactly (just its elements, contiguous
unless its strides already cover a dense block), not its whole storage as PyTorch does.
"""
from __future__ import annotations

import base64
import collections
import hashlib
import json
import os
import struct
import sys

import numpy as np

from ._core import dtype as _dt
from ._core.device import device as _device
from ._core.storage import root_array, data_address
from ._core.tensor import Tensor, Size, wrap
from ._checkpoint_reader import _Corrupt, _Reader

__all__ = ["save", "load", "safe_globals", "add_safe_globals", "get_safe_globals", "clear_safe_globals"]

MAGIC = b"\x89EMBER\r\n"
PICKLE_MAGIC = b"\x89EMBPK\r\n"  # a whole-object (pickled) checkpoint: see ember/_pickled_checkpoint.py
JIT_MAGIC = b"\x89EMBJT\r\n"     # an ember.jit.save archive: this format, its object the program (ember/jit/_save_load.py)
# magic -> (the function that reads the file, what the file is)
_READERS = {MAGIC: ("ember.load", "an ember checkpoint"), JIT_MAGIC: ("ember.jit.load", "an ember.jit archive")}
VERSION = 1
_HEADER = struct.Struct("<8sIIQQ")
_DIGEST_LEN = 32
_CHUNK = 1 << 20  # read in 1 MiB pieces: a corrupt length in a stream costs at most one piece more


# ---------------------------------------------------------------------------------------
# saving
# ---------------------------------------------------------------------------------------
def _tensor_kind(t) -> str:
    cls = type(t)
    if cls is Tensor:
        return "tensor"
    if cls.__module__ == "ember.nn.parameter":
        return "parameter" if cls.__name__ == "Parameter" else "tensor"  # nn.Buffer is only a marker
    raise TypeError(f"ember.save: cannot save a tensor subclass {cls.__module__}.{cls.__qualname__}")


def _le(arr: np.ndarray) -> np.ndarray:
    """`arr` with little-endian bytes (a no-op on little-endian hosts)."""
    if sys.byteorder == "big" and arr.dtype.itemsize > 1:
        return arr.byteswap()
    return arr


class _Writer:
    """Walks the object, building the manifest and the list of storages to write."""

    def __init__(self):
        self.tensors = []          # manifest entries
        self.tensor_ids = {}       # id(Tensor) -> index (same object saved twice -> one entry)
        self.keep_alive = []       # the tensors, so ids stay unique while we walk
        self.storages = []         # (offset, uint8 ndarray)
        self.nbytes = 0
        self.path = set()          # ids of containers being walked (cycle detection)

    def node(self, obj):
        t = type(obj)
        if obj is None:
            return {"k": "none"}
        if t is bool:
            return {"k": "bool", "v": obj}
        if t is int:
            return {"k": "int", "v": obj}
        if t is float:
            return {"k": "float", "v": obj.hex()}
        if t is complex:
            return {"k": "complex", "v": [obj.real.hex(), obj.imag.hex()]}
        if t is str:
            return {"k": "str", "v": obj}
        if t is bytes:
            return {"k": "bytes", "v": base64.b64encode(obj).decode("ascii")}
        if t is _dt.dtype:
            return {"k": "dtype", "v": obj.name}
        if t is _device:
            return {"k": "device", "v": str(obj)}
        if isinstance(obj, Tensor):
            return {"k": "tensor", "v": self.tensor(obj)}
        if t is np.ndarray or isinstance(obj, np.generic):
            if obj.dtype.hasobject or obj.dtype.kind in "SUVMm":
                raise TypeError(f"ember.save: cannot save a NumPy array of dtype {obj.dtype}")
            kind = "ndarray" if t is np.ndarray else "npscalar"
            return {"k": kind, "v": self.tensor(wrap(np.asarray(obj)))}
        if t is Size:
            return {"k": "size", "v": [int(s) for s in obj]}
        if t in (list, tuple, dict, collections.OrderedDict):
            if id(obj) in self.path:
                raise ValueError("ember.save: the object contains a reference cycle")
            self.path.add(id(obj))
            try:
                if t is list or t is tuple:
                    return {"k": t.__name__, "v": [self.node(x) for x in obj]}
                out = {"k": "dict" if t is dict else "odict",
                       "v": [[self.key(k), self.node(v)] for k, v in obj.items()]}
                meta = getattr(obj, "_metadata", None)
                if meta is not None:
                    out["meta"] = self.node(meta)
                return out
            finally:
                self.path.discard(id(obj))
        raise TypeError(f"ember.save: cannot save an object of type {t.__module__}.{t.__qualname__} "
                        "(the checkpoint format holds tensors, numbers, strings, None, dtypes, devices, "
                        "NumPy arrays, and lists/tuples/dicts/OrderedDicts of them)")

    def key(self, k):
        if isinstance(k, (Tensor, np.ndarray)):
            raise TypeError("ember.save: tensors cannot be dictionary keys in a checkpoint")
        return self.node(k)

    def tensor(self, t: Tensor) -> int:
        idx = self.tensor_ids.get(id(t))
        if idx is not None:
            return idx
        kind = _tensor_kind(t)
        entry = {"dtype": t.dtype.name, "shape": list(t.shape), "requires_grad": t.requires_grad,
                 "device": str(t.device)}
        if kind == "parameter":
            entry["parameter"] = True
        if t.device.type != "meta":
            entry["storage"], entry["offset"], entry["strides"] = None, 0, None  # filled by _layout
        idx = len(self.tensors)
        self.tensors.append(entry)
        self.tensor_ids[id(t)] = idx
        self.keep_alive.append(t)
        return idx

    def layout(self):
        """Assign storages: tensors viewing one CPU storage share a saved span of it."""
        groups = {}
        for i, t in enumerate(self.keep_alive):
            if "storage" not in self.tensors[i]:
                continue  # meta: no data
            arr = t._data
            if isinstance(arr, np.ndarray) and arr.size:
                root = root_array(arr)
                groups.setdefault(id(root), (root, []))[1].append(i)
            else:
                groups[("solo", i)] = (None, [i])
        for root, members in groups.values():
            if root is not None:
                span = self._span(root, [self.keep_alive[i]._data for i in members])
                if span is not None:
                    lo, hi = span
                    dense = sum(self.keep_alive[i]._data.nbytes for i in members) >= hi - lo
                    if len(members) > 1 or dense:
                        buf = root.reshape(-1).view(np.uint8)[lo:hi]
                        sid = self._add_storage(buf)
                        for i in members:
                            arr = self.keep_alive[i]._data
                            e = self.tensors[i]
                            e["storage"], e["offset"] = sid, data_address(arr) - data_address(root) - lo
                            e["strides"] = list(arr.strides)
                        continue
            for i in members:  # compact: the tensor's elements, contiguous
                arr = self.keep_alive[i].numpy(force=True)
                arr = _le(np.ascontiguousarray(arr))
                e = self.tensors[i]
                e["storage"] = self._add_storage(arr.reshape(-1).view(np.uint8))
                e["offset"], e["strides"] = 0, list(arr.strides)

    @staticmethod
    def _span(root, arrays):
        """The byte range [lo, hi) of `root` that `arrays` (views of it) touch, or None when
        `root` is not a plain contiguous buffer we can slice."""
        if not root.flags.c_contiguous or sys.byteorder == "big":
            return None
        base, lo, hi = data_address(root), None, None
        for a in arrays:
            start = data_address(a) - base
            a_lo = a_hi = start
            for n, s in zip(a.shape, a.strides):
                if s > 0:
                    a_hi += (n - 1) * s
                else:
                    a_lo += (n - 1) * s
            a_hi += a.itemsize
            lo = a_lo if lo is None else min(lo, a_lo)
            hi = a_hi if hi is None else max(hi, a_hi)
        if lo < 0 or hi > root.nbytes:
            return None
        return lo, hi

    def _add_storage(self, buf: np.ndarray) -> int:
        self.storages.append((self.nbytes, buf))
        self.nbytes += buf.nbytes
        return len(self.storages) - 1


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True) -> None:
    """Save `obj` (tensors, numbers, strings, containers — see the module doc) to `f`, a path
    or a binary file object. ``pickle_module``/``pickle_protocol`` are accepted for PyTorch
    compatibility and ignored: nothing is pickled — except an object tree holding an nn.Module,
    which is pickled as PyTorch does (`ember._pickled_checkpoint`: loads only with weights_only=False)."""
    try:
        write(obj, f)
    except TypeError:
        from . import _pickled_checkpoint
        if not _pickled_checkpoint.holds_module(obj):
            raise
        data = _pickled_checkpoint.dumps(obj, pickle_protocol)
        if hasattr(f, "write"):
            f.write(data)
        else:
            with open(os.fspath(f), "wb") as out:
                out.write(data)


def write(obj, f, magic: bytes = MAGIC) -> None:
    """Write `obj` to `f` (a path or a binary file object) in this module's format, starting with
    `magic` (``ember.jit.save`` writes its archives with `JIT_MAGIC`). An object the format cannot
    hold raises TypeError before anything is written."""
    w = _Writer()
    root = w.node(obj)
    w.layout()
    manifest = {"root": root, "tensors": w.tensors,
                "storages": [[off, buf.nbytes] for off, buf in w.storages]}
    mbytes = json.dumps(manifest, separators=(",", ":"), allow_nan=False).encode("utf-8")
    header = _HEADER.pack(magic, VERSION, 0, len(mbytes), w.nbytes)
    h = hashlib.sha256()

    def write_all(out):
        for piece in (header, mbytes):
            h.update(piece)
            out.write(piece)
        for _, buf in w.storages:
            mv = memoryview(np.ascontiguousarray(buf))
            h.update(mv)
            out.write(mv)
        out.write(h.digest())

    if hasattr(f, "write"):
        write_all(f)
    else:
        with open(os.fspath(f), "wb") as out:
            write_all(out)


def __getattr__(name):
    """The weights-only allowlist API lives with the pickled format, loaded on first use."""
    if name in ("safe_globals", "add_safe_globals", "get_safe_globals", "clear_safe_globals"):
        from . import _pickled_checkpoint
        return getattr(_pickled_checkpoint, name)
    raise AttributeError(f"module 'ember.serialization' has no attribute '{name}'")


# ---------------------------------------------------------------------------------------
# loading (decoding the manifest: ember/_checkpoint_reader.py)
# ---------------------------------------------------------------------------------------

def _read_exact(f, n: int, what: str, known: bool) -> bytearray:
    """`n` bytes of `f`. When the caller checked the file holds them (`known`) they go into one
    buffer allocated up front; from a stream of unknown length the buffer grows with what arrives,
    so a corrupt length costs at most one piece more than the stream holds."""
    data, pos = (bytearray(n) if known else bytearray()), 0
    while pos < n:
        piece = f.read(min(n - pos, _CHUNK))
        if not piece:
            break
        if known:
            data[pos:pos + len(piece)] = piece
        else:
            data += piece
        pos += len(piece)
    if pos != n:
        raise _Corrupt(f"truncated checkpoint: expected {n} bytes of {what}, found {pos}")
    return data


def _remaining(f) -> int | None:
    """How many bytes `f` holds after its position, or None for a stream that cannot tell."""
    try:
        if not (hasattr(f, "seekable") and f.seekable()):
            return None
        here = f.tell()
        end = f.seek(0, os.SEEK_END)
        f.seek(here)
        return end - here
    except (OSError, ValueError):
        return None


def no_json_constant(name):
    raise ValueError(f"{name} is not valid in an ember file")   # json's parse_constant: no NaN, Infinity


def describe_foreign(head: bytes, loader: str) -> str:
    """Why `loader` ("ember.load" / "ember.jit.load") refuses a file starting with `head`, as a message tail."""
    if not head:
        return " (the file is empty)"
    if head.startswith(b"PK"):
        return (" (it is a zip archive, e.g. a PyTorch checkpoint; ember.load reads only ember.save files)"
                if loader == "ember.load" else " (it is a zip archive: a torch.save or torch.jit.save file)")
    if head.startswith(JIT_MAGIC) and loader == "ember.load":
        return " (it is an ember.jit.save archive: load it with ember.jit.load)"
    if head.startswith((MAGIC, PICKLE_MAGIC)) and loader == "ember.jit.load":
        return " (it is an ember.save checkpoint: load it with ember.load)"
    return f" (it is a pickle; {loader} never unpickles)" if head[:1] == b"\x80" else ""


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **pickle_load_args):
    """Load an object saved by ``ember.save`` from `f` (a path or a binary file object).

    `map_location` moves tensors: a device or string, a dict mapping saved locations
    (``"cuda:0"``) to new ones, or a callable ``(tensor, location) -> tensor`` (PyTorch passes
    a storage; ember passes the loaded tensor). `weights_only` matters only for a whole-object
    checkpoint (a pickled nn.Module): it loads with ``weights_only=False``, for trusted files only,
    and with the default True raises pickle.UnpicklingError unless its globals are allowlisted
    (``ember.serialization.safe_globals``); the safe format never runs code. Raises RuntimeError
    naming the file for a file that is not an ember checkpoint, is truncated, has bytes after its
    checksum (a path; a file object may hold more after it), or is corrupted or malformed.
    """
    if mmap:
        raise NotImplementedError("ember.load: mmap=True is not supported")
    if hasattr(f, "read"):
        name = getattr(f, "name", None) or type(f).__name__
        return _load(f, str(name), map_location, whole_file=False, weights_only=weights_only)
    name = os.fspath(f)
    with open(name, "rb") as fh:
        return _load(fh, str(name), map_location, whole_file=True, weights_only=weights_only)


def _load(fh, name, map_location, whole_file: bool, weights_only=True):
    """`whole_file`: `fh` was opened from a path, so the checkpoint must end the file; a file object
    passed in is a stream that may hold more after it (checkpoints saved back to back)."""
    try:
        head = fh.read(len(MAGIC)) or b""
        if head == PICKLE_MAGIC:
            from . import _pickled_checkpoint
            return _pickled_checkpoint.load(fh, name, map_location, weights_only)
        return read(fh, head, map_location, whole_file)
    except _Corrupt as exc:
        raise RuntimeError(f"ember.load: {name}: {exc}") from None


def read(fh, head: bytes, map_location, whole_file: bool, magic: bytes = MAGIC):
    """The object of the file `fh` in this module's format starting with `magic`, `head` being the
    bytes already read from it; what is wrong with the file raises `_Corrupt` (the caller names it)."""
    head += fh.read(_HEADER.size - len(head)) if len(head) == len(magic) else b""
    if not head.startswith(magic):
        if len(head) < len(magic) and magic.startswith(head) and head:
            raise _Corrupt("truncated checkpoint: the header is incomplete")
        loader, what = _READERS[magic]
        raise _Corrupt(f"not {what} (bad magic number)" + describe_foreign(head, loader))
    if len(head) < _HEADER.size:
        raise _Corrupt("truncated checkpoint: the header is incomplete")
    _, version, flags, mlen, dlen = _HEADER.unpack(head)
    if version != VERSION or flags != 0:
        raise _Corrupt(f"unsupported checkpoint version {version} (flags {flags}); this ember reads "
                       f"version {VERSION} — or the header is corrupted")
    left = _remaining(fh)
    declared = mlen + dlen + _DIGEST_LEN
    if left is not None and left < declared:
        raise _Corrupt(f"truncated checkpoint: the header declares {declared} more bytes, the file holds {left}")
    if whole_file and left is not None and left > declared:
        raise _Corrupt(f"{left - declared} unexpected bytes after the checksum")
    known = left is not None
    mbytes = _read_exact(fh, mlen, "manifest", known)
    data = _read_exact(fh, dlen, "tensor data", known)
    digest = _read_exact(fh, _DIGEST_LEN, "checksum", known)
    h = hashlib.sha256(head)
    h.update(mbytes)
    h.update(data)
    if h.digest() != digest:
        raise _Corrupt("corrupted checkpoint: checksum mismatch")
    try:
        manifest = json.loads(mbytes.decode("utf-8"), parse_constant=no_json_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise _Corrupt(f"malformed manifest: {exc}") from None
    except RecursionError:
        raise _Corrupt("malformed manifest: nested too deeply") from None
    del mbytes
    reader = _Reader(manifest, data, map_location)
    try:
        return reader.node(reader.root)
    except RecursionError:
        raise _Corrupt("malformed manifest: nested too deeply") from None
