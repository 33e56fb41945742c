"""ember.save / ember.load: round trips, storage sharing, and refusal of bad or hostile files."""
from __future__ import annotations

import base64
import collections
import hashlib
import io
import json
import math
import os
import pickle
import struct

import numpy as np
import pytest
import torch

import ember
from ember import serialization as ser
from ember.nn.parameter import Parameter


def roundtrip(obj, **load_kw):
    buf = io.BytesIO()
    ember.save(obj, buf)
    buf.seek(0)
    return ember.load(buf, **load_kw)


def assert_tensor_equal(a, b):
    assert type(a) is type(b)
    assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape) and a.device == b.device
    assert a.requires_grad == b.requires_grad
    if a.device.type != "meta":  # bit-exact (NaN, -0.0 and bfloat16 included)
        x, y = a.detach().numpy(), b.detach().numpy()
        assert np.ascontiguousarray(x).tobytes() == np.ascontiguousarray(y).tobytes()


def assert_same(a, b):
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, ember.Tensor):
        assert_tensor_equal(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    else:
        assert a == b
        if isinstance(a, float):
            assert math.copysign(1, a) == math.copysign(1, b)


_RNG = np.random.default_rng(0)
_ARRAYS = {
    "bool": _RNG.random((3, 4)) > 0.5, "uint8": _RNG.integers(0, 255, (5,), dtype=np.uint8),
    "int8": np.array([-128, 0, 127], np.int8), "int16": np.array([-7, 3], np.int16),
    "int32": _RNG.integers(-9, 9, (2, 3), dtype=np.int32), "int64": np.array([-(2 ** 62), 2 ** 62]),
    "float16": _RNG.standard_normal((3,)).astype(np.float16), "float32": _RNG.standard_normal((2, 3, 4)).astype(np.float32),
    "float64": np.array([np.nan, np.inf, -0.0, 1e-310]),
    "complex64": (_RNG.standard_normal(3) + 1j * _RNG.standard_normal(3)).astype(np.complex64),
    "complex128": np.array([1 + 2j, np.nan - 1j]),
}


@pytest.mark.parametrize("name", list(_ARRAYS) + ["bfloat16"])
def test_all_dtypes_roundtrip(name):
    if name == "bfloat16":
        t = ember.tensor(_ARRAYS["float32"]).to(ember.bfloat16)
    else:
        t = ember.tensor(_ARRAYS[name])
    for x in (t, t.reshape(-1)[0], t.reshape(-1)[:0]):  # full, 0-d, empty
        y = roundtrip(x)
        assert_tensor_equal(y, x)
        assert y.dtype == getattr(ember, name if name != "bool" else "bool")


def test_views_roundtrip_compactly():
    big = ember.arange(100000, dtype=ember.float32).reshape(1000, 100)
    for v in (big[3, 10:20], big[::50, ::7], big[5:8].t(), big[0].expand(3, 100), big[2, 3]):
        buf = io.BytesIO()
        ember.save(v, buf)
        assert len(buf.getvalue()) < 4000, "a small view must not drag its whole storage along"
        buf.seek(0)
        y = ember.load(buf)
        np.testing.assert_array_equal(y.numpy(), v.numpy())
    y = roundtrip(big.t())  # a dense permuted tensor keeps its strides
    assert y.stride() == big.t().stride() and np.array_equal(y.numpy(), big.t().numpy())


def test_shared_storage_and_identity_are_kept():
    x = ember.arange(12.).reshape(3, 4)
    out = roundtrip({"x": x, "t": x.t(), "row": x[1], "again": x, "data": x.data})
    assert out["again"] is out["x"]
    out["x"][1, 2] = -5.0
    assert out["row"][2].item() == -5.0 and out["t"][2, 1].item() == -5.0 and out["data"][1, 2].item() == -5.0
    assert out["row"]._version == out["x"]._version == 1  # one version counter for the shared memory
    np.testing.assert_array_equal(out["t"].numpy(), out["x"].numpy().T)


def test_requires_grad_and_parameters_roundtrip():
    w = ember.randn(3, 2, requires_grad=True)
    p = Parameter(ember.randn(2))
    nonleaf = w * 2
    out = roundtrip([w, p, Parameter(ember.zeros(1), requires_grad=False), nonleaf, ember.ones(2)])
    assert out[0].requires_grad and out[0].is_leaf
    assert type(out[1]) is Parameter and out[1].requires_grad
    assert type(out[2]) is Parameter and not out[2].requires_grad
    assert out[3].requires_grad and out[3].is_leaf
    assert not out[4].requires_grad
    np.testing.assert_array_equal(out[3].detach().numpy(), nonleaf.detach().numpy())
    (out[0] * 3).sum().backward()
    np.testing.assert_array_equal(out[0].grad.numpy(), np.full((3, 2), 3, np.float32))


def test_python_values_and_containers_roundtrip():
    od = collections.OrderedDict([("b", 1), ("a", [ember.tensor(1.0), (2, 3.5)])])
    od._metadata = {"": {"version": 1}, "layer": {"version": 2}}
    obj = {
        "none": None, "t": True, "f": False, "int": 2 ** 100, "neg": -3, "floats": [0.1, -0.0, math.inf, -math.inf,
        math.nan, 5e-324, 1.7976931348623157e308], "c": 1 - 2.5j, "s": "héllo ✓", "b": b"\x00\xff",
        "tuple": (1, (2, [3])), "list": [[], {}, ()], "od": od, 3: "int key", (1, "x"): "tuple key",
        None: "none key", 2.5: "float key", "dtypes": [ember.float32, ember.bfloat16, ember.bool, ember.complex128],
        "devices": [ember.device("cpu"), ember.device("cuda", 1), ember.device("meta")],
        "size": ember.Size([2, 3]), "np": np.arange(6, dtype=np.int16).reshape(2, 3), "np0": np.float32(2.5),
        "npi": np.int64(7),
    }
    out = roundtrip(obj)
    assert_same(out, obj)
    assert out["od"]._metadata == od._metadata
    assert type(out["np0"]) is np.float32 and type(out["npi"]) is np.int64
    assert out["dtypes"][1] is ember.bfloat16


def test_optimizer_state_dict_roundtrip():
    """The structure torch.optim produces (int keys, nested lists, tensors), copied to ember."""
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, amsgrad=True)
    model(torch.randn(5, 3)).sum().backward()
    opt.step()

    def to_ember(o):
        if isinstance(o, torch.Tensor):
            return ember.tensor(o.detach().numpy())
        if isinstance(o, dict):
            return type(o)((k, to_ember(v)) for k, v in o.items())
        if isinstance(o, (list, tuple)):
            return type(o)(to_ember(v) for v in o)
        return o

    sd = to_ember(opt.state_dict())
    msd = to_ember(model.state_dict())
    out = roundtrip({"optimizer": sd, "model": msd, "epoch": 3})
    assert_same(out["optimizer"], sd)
    assert_same(out["model"], msd)
    assert sorted(out["optimizer"]["state"]) == [0, 1, 2, 3]


def test_paths_file_objects_and_concatenation(tmp_path):
    obj = {"w": ember.randn(4, 4), "n": 1}
    p = tmp_path / "ckpt.pt"
    ember.save(obj, p)
    assert_same(ember.load(p), obj)
    ember.save(obj, str(p))
    assert_same(ember.load(str(p)), obj)
    with open(p, "wb") as fh:
        ember.save(obj, fh)
        ember.save([1, 2], fh)
    with open(p, "rb") as fh:  # two checkpoints back to back in one stream
        assert_same(ember.load(fh), obj)
        assert ember.load(fh) == [1, 2]


def test_map_location():
    t = ember.randn(2, 3)
    meta = ember.empty(2, 5, device="meta")
    for ml in (None, "cpu", ember.device("cpu"), {"cpu": "cpu"}, lambda s, loc: s):
        out = roundtrip({"t": t, "m": meta}, map_location=ml)
        assert_tensor_equal(out["t"], t)
        assert out["m"].is_meta and tuple(out["m"].shape) == (2, 5)
    out = roundtrip(t, map_location="meta")
    assert out.is_meta and out.shape == t.shape
    with pytest.raises(TypeError, match="map_location"):
        roundtrip(t, map_location=3)


@pytest.mark.parametrize("bad, err", [
    ({1, 2}, TypeError), (collections.namedtuple("P", "x")(1), TypeError), (object(), TypeError),
    (lambda: 0, TypeError), ({ember.ones(1): 1}, TypeError), (collections.defaultdict(int), TypeError),
    (np.array(["a"]), TypeError), (np.array([object()]), TypeError),
])
def test_unsaveable_objects_raise_and_write_nothing(tmp_path, bad, err):
    p = tmp_path / "x.pt"
    with pytest.raises(err, match="ember.save"):
        ember.save({"ok": ember.ones(2), "bad": [bad]}, p)
    assert not p.exists()
    buf = io.BytesIO()
    with pytest.raises(err):
        ember.save(bad, buf)
    assert buf.getvalue() == b""


def test_reference_cycle_raises():
    a = [1]
    a.append(a)
    with pytest.raises(ValueError, match="cycle"):
        ember.save(a, io.BytesIO())
    shared = [1, 2]
    assert roundtrip([shared, shared]) == [[1, 2], [1, 2]]  # shared (acyclic) containers are fine


# -- damaged and hostile files ----------------------------------------------------------------
def _blob():
    buf = io.BytesIO()
    ember.save({"w": ember.randn(3, 4), "b": ember.zeros(4, dtype=ember.int64), "meta": [1, "x"]}, buf)
    return buf.getvalue()


def test_truncated_files_raise_clear_errors():
    blob = _blob()
    for cut in sorted(set(range(0, 40)) | set(range(40, len(blob), 7)) | {len(blob) - 1}):
        with pytest.raises(RuntimeError, match=r"ember\.load: BytesIO: (truncated|not an ember checkpoint)"):
            ember.load(io.BytesIO(blob[:cut]))


def test_flipped_bytes_raise_clear_errors():
    blob = _blob()
    for pos in range(0, len(blob), 3):
        for mask in (0x01, 0x80):
            bad = bytearray(blob)
            bad[pos] ^= mask
            with pytest.raises(RuntimeError, match=r"ember\.load: BytesIO: "):
                ember.load(io.BytesIO(bytes(bad)))


def test_error_names_the_file(tmp_path):
    p = tmp_path / "broken.ckpt"
    p.write_bytes(_blob()[:100])
    with pytest.raises(RuntimeError, match="broken.ckpt: truncated"):
        ember.load(p)
    p.write_bytes(b"hello world, not a checkpoint")
    with pytest.raises(RuntimeError, match="broken.ckpt: not an ember checkpoint"):
        ember.load(p)


class _Boom:
    def __reduce__(self):
        return (os.system, ("touch /tmp/ember_pwned_by_checkpoint",))


def _craft(manifest, data=b""):
    """A well-formed, correctly checksummed file around a hand-written manifest."""
    m = json.dumps(manifest).encode()
    head = ser._HEADER.pack(ser.MAGIC, ser.VERSION, 0, len(m), len(data))
    return head + m + data + hashlib.sha256(head + m + data).digest()


def test_pickles_are_never_loaded(tmp_path):
    marker = "/tmp/ember_pwned_by_checkpoint"
    if os.path.exists(marker):
        os.remove(marker)
    payload = pickle.dumps(_Boom())
    with pytest.raises(RuntimeError, match="not an ember checkpoint.*pickle"):
        ember.load(io.BytesIO(payload))
    p = tmp_path / "torch.pt"
    torch.save({"w": torch.ones(2), "boom": 1}, p)
    with pytest.raises(RuntimeError, match="not an ember checkpoint.*zip"):
        ember.load(p, weights_only=False)
    smuggled = _craft({"root": {"k": "pickle", "v": base64.b64encode(payload).decode()}, "tensors": [],
                       "storages": []})
    with pytest.raises(RuntimeError, match="unknown node kind 'pickle'"):
        ember.load(io.BytesIO(smuggled), weights_only=False)
    assert not os.path.exists(marker)


@pytest.mark.parametrize("manifest", [
    [],
    {"root": {"k": "tensor", "v": 0}, "tensors": [{"dtype": "object", "shape": [1], "device": "cpu",
                                                    "storage": 0, "offset": 0, "strides": [8]}],
     "storages": [[0, 8]]},
    {"root": {"k": "tensor", "v": 0}, "tensors": [{"dtype": "float64", "shape": [4], "device": "cpu",
                                                    "storage": 0, "offset": 0, "strides": [8]}],
     "storages": [[0, 8]]},  # reads past its storage
    {"root": {"k": "tensor", "v": 3}, "tensors": [], "storages": [[0, 8]]},
    {"root": {"k": "dict", "v": [[{"k": "list", "v": []}, {"k": "none"}]]}, "tensors": [], "storages": [[0, 8]]},
    {"root": {"k": "float", "v": "not-a-float"}, "tensors": [], "storages": [[0, 8]]},
    {"root": {"k": "int", "v": "1"}, "tensors": [], "storages": [[0, 8]]},
    {"root": {"k": "bytes", "v": "***"}, "tensors": [], "storages": [[0, 8]]},
    {"root": {"k": "none"}, "tensors": [], "storages": [[0, 4]]},
    {"root": {"k": "tensor", "v": 0}, "tensors": [{"dtype": "int64", "shape": [1], "device": "cpu", "storage": 0,
                                                    "offset": 0, "strides": [8], "requires_grad": True}],
     "storages": [[0, 8]]},
    {"root": {"k": "tensor", "v": 0}, "tensors": [{"dtype": "int64", "shape": [1], "device": "gpu", "storage": 0,
                                                    "offset": 0, "strides": [8]}], "storages": [[0, 8]]},
])
def test_malformed_manifests_are_rejected(manifest):
    with pytest.raises(RuntimeError, match=r"ember\.load: BytesIO: malformed manifest"):
        ember.load(io.BytesIO(_craft(manifest, b"\x00" * 8)))


def test_future_version_rejected():
    blob = bytearray(_blob())
    struct.pack_into("<I", blob, 8, 99)
    with pytest.raises(RuntimeError, match="unsupported checkpoint version 99"):
        ember.load(io.BytesIO(bytes(blob)))
