"""The decoding half of ``ember.load``: the manifest's tagged nodes, checked field by field, turned
back into tensors and containers (see ember/serialization.py for the format). Nothing here is
unpickled; a node of a kind not in `_DECODERS` is refused."""
from __future__ import annotations

import base64
import collections
import sys

import numpy as np

from ._core import dtype as _dt
from ._core.device import device as _device
from ._core.tensor import Tensor, Size, wrap, _VersionCounter


def _param_class():
    """nn.Parameter, imported lazily (serialization must not depend on nn at import time)."""
    from .nn.parameter import Parameter
    return Parameter


class _Corrupt(Exception):
    """Internal: what is wrong with the file (turned into a RuntimeError naming it)."""


def _check(cond, what):
    if not cond:
        raise _Corrupt(f"malformed manifest: {what}")


def _int(v, what, lo=0):
    _check(type(v) is int and v >= lo, f"{what} must be an integer >= {lo}")
    return v


def _float(s):
    _check(type(s) is str, "float value must be a hex string")
    try:
        return float.fromhex(s)
    except (ValueError, OverflowError):      # "0x1p99999" overflows
        raise _Corrupt(f"malformed manifest: bad float {s[:40]!r}") from None


def _bytes(r, v, n):
    _check(type(v) is str, "a bytes node needs a str value")
    try:
        return base64.b64decode(v, validate=True)
    except ValueError:
        raise _Corrupt("malformed manifest: bad base64 in a bytes node") from None


class _Reader:
    """Rebuilds the object from a verified manifest and data blob."""

    def __init__(self, manifest, data: bytes, map_location):
        _check(type(manifest) is dict, "top level must be an object")
        self.data = data
        self.map_location = map_location
        self.storages = self._storages(manifest.get("storages"))
        entries = manifest.get("tensors")
        _check(type(entries) is list, "'tensors' must be a list")
        self.entries = entries
        self.built = {}
        self.counters = {}
        self.root = manifest.get("root")

    def _storages(self, table):
        _check(type(table) is list, "'storages' must be a list")
        out, expect = [], 0
        for item in table:
            _check(type(item) is list and len(item) == 2, "storage entries are [offset, nbytes]")
            off, n = _int(item[0], "storage offset"), _int(item[1], "storage size")
            _check(off == expect, "storages must be laid out back to back")
            expect += n
            _check(expect <= len(self.data), "storages do not cover the data section")
            out.append(np.frombuffer(self.data, np.uint8, n, off).copy())
        _check(expect == len(self.data), "storages do not cover the data section")
        return out

    def node(self, n):
        _check(type(n) is dict and type(n.get("k")) is str, "a node must be an object with a kind 'k'")
        decode = _DECODERS.get(n["k"])
        if decode is None:
            raise _Corrupt(f"unknown node kind {n['k']!r} (refusing to load it)")
        return decode(self, n.get("v"), n)

    def storage_bytes(self, idx) -> int:
        """The size of the storage tensor `idx` views (0 for meta tensors)."""
        sid = self.entries[idx].get("storage")
        return self.storages[sid].nbytes if type(sid) is int else 0

    def tensor(self, idx):
        _check(type(idx) is int and 0 <= idx < len(self.entries), "tensor reference out of range")
        t = self.built.get(idx)
        if t is None:
            t = self.built[idx] = self._build(self.entries[idx])
        return t

    def _build(self, e):
        import ember
        _check(type(e) is dict, "tensor entries must be objects")
        dt = _dt._BY_NAME.get(e.get("dtype")) if type(e.get("dtype")) is str else None
        _check(dt is not None, f"unknown dtype {str(e.get('dtype'))[:40]!r}")
        _dt.check_supported(dt)
        shape = e.get("shape")
        _check(type(shape) is list, "tensor shape must be a list")
        shape = tuple(_int(s, "tensor size") for s in shape)
        span = dt.itemsize
        for n in shape:
            span *= max(n, 1)
        _check(span < 1 << 62, f"tensor shape {list(shape)[:8]} is too large for any tensor")
        saved_device = _device_node(self, e.get("device"), e)
        if saved_device.type == "meta":
            t = ember.empty(shape, dtype=dt, device="meta")
        else:
            sid = e.get("storage")
            _check(type(sid) is int and 0 <= sid < len(self.storages), "tensor storage index out of range")
            storage = self.storages[sid]
            offset = _int(e.get("offset"), "tensor offset")
            strides = e.get("strides")
            _check(type(strides) is list and len(strides) == len(shape), "tensor strides must match its shape")
            item = dt.itemsize
            _check(all(type(s) is int and s % item == 0 for s in strides), "strides must be whole elements")
            lo = hi = offset
            if all(shape):
                for n, s in zip(shape, strides):
                    hi, lo = (hi + (n - 1) * s, lo) if s > 0 else (hi, lo + (n - 1) * s)
                _check(lo >= 0 and hi + item <= storage.nbytes, "tensor lies outside its storage")
            np_dt = dt.np if sys.byteorder == "little" else dt.np.newbyteorder("<")
            arr = np.ndarray(shape, np_dt, buffer=storage, offset=offset if all(shape) else 0,
                             strides=strides) if all(shape) else np.empty(shape, np_dt)
            t = wrap(arr)
            if all(shape):  # tensors of one storage share memory, so they share a version counter too
                t._version_counter = self.counters.setdefault(sid, _VersionCounter())
            t = self._place(t, str(saved_device))
        _check(not e.get("requires_grad") or dt.category in (_dt.FLOAT, _dt.COMPLEX),
               "only floating point and complex tensors can require grad")
        if e.get("parameter"):
            t = _param_class()(t, bool(e.get("requires_grad")))
        elif e.get("requires_grad"):
            t.requires_grad_(True)
        return t

    def _place(self, t, location):
        ml = self.map_location
        if ml is None:
            target = location
        elif isinstance(ml, dict):
            target = ml.get(location, location)
        elif isinstance(ml, (str, _device)):
            target = ml
        elif callable(ml):
            out = ml(t, location)
            if not isinstance(out, Tensor):
                raise TypeError("ember.load: a callable map_location must return a Tensor "
                                f"(got {type(out).__name__})")
            return out
        else:
            raise TypeError(f"ember.load: map_location should be None, a str, an ember.device, a dict or a "
                            f"callable, got {type(ml).__name__}")
        target = _device(target)
        if target.type == "cpu":
            return t
        try:
            return t.to(target)
        except Exception as exc:  # noqa: BLE001 - whatever the backend raises, the file names a device we lack
            raise _Corrupt(f"Attempting to deserialize object on device {target} which is not available "
                           f"({exc}). Use map_location='cpu' to load the checkpoint on the CPU.") from exc


def _pairs(r, v, n):
    _check(type(v) is list and all(type(p) is list and len(p) == 2 for p in v), "dict items are [key, value]")
    pairs = [(r.node(k), r.node(x)) for k, x in v]
    for k, _ in pairs:
        try:
            hash(k)
        except TypeError:
            raise _Corrupt(f"malformed manifest: unhashable dict key of type {type(k).__name__}") from None
    return pairs


def _odict(r, v, n):
    out = collections.OrderedDict(_pairs(r, v, n))
    if "meta" in n:
        out._metadata = r.node(n["meta"])
    return out


def _typed(t, what):
    def dec(r, v, n):
        _check(type(v) is t, f"a {what} node needs a {t.__name__} value")
        return v
    return dec


def _nodes(r, v):
    _check(type(v) is list, "a container node needs a list value")
    return [r.node(x) for x in v]


def _dtype_node(r, v, n):
    d = _dt._BY_NAME.get(v) if type(v) is str else None
    _check(d is not None, f"unknown dtype {v!r}")
    return d


def _device_node(r, v, n):
    try:
        _check(type(v) is str, "a device is a string")
        return _device(v)
    except (TypeError, ValueError, RuntimeError):
        raise _Corrupt(f"malformed manifest: bad device {str(v)[:40]!r}") from None


def _array_node(r, v, n):
    t = r.tensor(v)
    view = t.detach().numpy(force=True)
    if view.size * view.itemsize > r.storage_bytes(v):
        # its elements overlap (a stride-0 view, as np.broadcast_to makes): copying it would
        # allocate more than the file holds, so it comes back as the read-only view it was
        view = np.lib.stride_tricks.as_strided(view, writeable=False)
        return view if n["k"] == "ndarray" else view[()]
    arr = np.array(view)
    return arr if n["k"] == "ndarray" else arr[()]


_DECODERS = {
    "none": lambda r, v, n: None,
    "bool": _typed(bool, "bool"),
    "int": _typed(int, "int"),
    "float": lambda r, v, n: _float(v),
    "complex": lambda r, v, n: (_check(type(v) is list and len(v) == 2, "complex is [re, im]"),
                                complex(_float(v[0]), _float(v[1])))[1],
    "str": _typed(str, "str"),
    "bytes": _bytes,
    "dtype": _dtype_node,
    "device": _device_node,
    "size": lambda r, v, n: Size(_int(x, "size") for x in _typed(list, "size")(r, v, n)),
    "list": lambda r, v, n: _nodes(r, v),
    "tuple": lambda r, v, n: tuple(_nodes(r, v)),
    "dict": lambda r, v, n: dict(_pairs(r, v, n)),
    "odict": _odict,
    "tensor": lambda r, v, n: r.tensor(v),
    "ndarray": _array_node,
    "npscalar": _array_node,
}
