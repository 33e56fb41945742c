"""ember.load of hostile checkpoints: manifests edited (and re-signed: the SHA-256 digest detects
accidents, not attackers) to name objects the format does not hold, to point tensors outside their
storage, or to smuggle pickles. Each raises RuntimeError naming the file; nothing is unpickled or
imported, whatever ``weights_only`` says; the marker files never appear.
"""
import base64
import io
import os
import pickle

import numpy as np
import pytest

import ember
import hostile_archives as H


class Marker:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return os.system, (f"touch {self.path}",)


def _checkpoint(obj) -> tuple:
    buf = io.BytesIO()
    ember.save(obj, buf)
    return H.split_checkpoint(buf.getvalue())


def _root(kind, value):
    def edit(m, marker):
        m["root"] = {"k": kind, "v": value(marker) if callable(value) else value}
    return edit


def _tensor(**fields):
    def edit(m, marker):
        m["tensors"][0].update(fields)
    return edit


def _pickled(marker):
    return base64.b64encode(pickle.dumps(Marker(marker))).decode()


CASES = {
    "node_kind_pickle": (_root("pickle", _pickled), "unknown node kind"),
    "node_kind_global": (_root("global", "os.system"), "unknown node kind"),
    "node_kind_reduce": (_root("reduce", ["os.system", ["touch x"]]), "unknown node kind"),
    "node_kind_object": (_root("object", {"class": "collections.OrderedDict"}), "unknown node kind"),
    "node_kind_eval": (_root("eval", "__import__('os')"), "unknown node kind"),
    "node_kind_set": (_root("set", []), "unknown node kind"),
    "node_kind_not_string": (_root(["list"], []), "kind"),
    "node_without_kind": (lambda m, marker: m.__setitem__("root", {"v": 1}), "kind"),
    "int_node_holding_string": (_root("int", "1"), "int"),
    "float_node_not_hex": (_root("float", "nan; import os"), "bad float"),
    "bytes_node_bad_base64": (_root("bytes", "!!notbase64"), "base64"),
    "dict_with_list_key": (_root("dict", [[{"k": "list", "v": []}, {"k": "int", "v": 1}]]), "unhashable"),
    "dict_items_not_pairs": (_root("dict", [[1, 2, 3]]), "dict items"),
    "tensor_ref_out_of_range": (_root("tensor", 10 ** 9), "out of range"),
    "tensor_ref_negative": (_root("tensor", -1), "out of range"),
    "tensor_dtype_object": (_tensor(dtype="object"), "unknown dtype"),
    "tensor_dtype_not_string": (_tensor(dtype=["float32"]), "unknown dtype"),
    "tensor_shape_huge": (_tensor(shape=[1 << 40]), "outside its storage"),
    "tensor_shape_overflows_int64": (_tensor(shape=[1 << 40, 1 << 40], strides=[0, 0]), "too large"),
    "tensor_shape_negative": (_tensor(shape=[-4]), "integer >= 0"),
    "tensor_offset_past_storage": (_tensor(offset=1 << 40), "outside its storage"),
    "tensor_negative_stride_reads_before_storage": (_tensor(strides=[-4]), "outside its storage"),
    "tensor_stride_not_whole_elements": (_tensor(strides=[3]), "whole elements"),
    "tensor_strides_wrong_rank": (_tensor(strides=[4, 4]), "match its shape"),
    "tensor_storage_index_out_of_range": (_tensor(storage=7), "storage index"),
    "tensor_int_requires_grad": (_tensor(dtype="int32", requires_grad=True), "require grad"),
    "tensor_device_not_string": (_tensor(device={"type": "cpu"}), "device"),
    "tensor_device_unknown": (_tensor(device="tpu:0"), "device"),
    "meta_tensor_shape_overflow": (_tensor(device="meta", shape=[1 << 62, 1 << 62]), "too large"),
    "storage_overlap": (lambda m, marker: m["storages"].append([0, 4]), "back to back"),
    "storage_beyond_data": (lambda m, marker: m["storages"].__setitem__(0, [0, 1 << 70]), "cover the data"),
    "storages_not_list": (lambda m, marker: m.__setitem__("storages", {"0": 16}), "must be a list"),
    "manifest_without_tables": (lambda m, marker: m.clear() or m.update({"root": None}), "must be a list"),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("weights_only", [True, False])
def test_hostile_manifest_refused(tmp_path, name, weights_only):
    edit, fragment = CASES[name]
    manifest, blob = _checkpoint({"w": ember.arange(4, dtype=ember.float32)})
    marker = str(tmp_path / "MARKER")
    edit(manifest, marker)
    path = tmp_path / f"{name}.pt"
    path.write_bytes(H.resign(manifest, blob))
    with pytest.raises(RuntimeError) as info:
        ember.load(str(path), weights_only=weights_only)
    assert str(info.value).startswith(f"ember.load: {path}: ") and fragment in str(info.value), str(info.value)
    assert not os.path.exists(marker)


def test_pickle_inside_bytes_is_only_data(tmp_path):
    """A pickle saved as bytes comes back as bytes: nothing unpickles it."""
    marker = str(tmp_path / "MARKER")
    evil = pickle.dumps(Marker(marker))
    path = tmp_path / "bytes.pt"
    ember.save({"blob": evil}, str(path))
    assert ember.load(str(path), weights_only=False) == {"blob": evil}
    assert not os.path.exists(marker)


@pytest.mark.parametrize("weights_only", [True, False])
def test_pickle_module_argument_is_never_used(tmp_path, weights_only):
    class Exploding:
        @staticmethod
        def load(*args, **kwargs):
            raise AssertionError("ember.load used pickle_module")
        Unpickler = load
    path = tmp_path / "ok.pt"
    ember.save({"w": ember.ones(2)}, str(path))
    out = ember.load(str(path), pickle_module=Exploding, weights_only=weights_only)
    np.testing.assert_array_equal(out["w"].numpy(), np.ones(2, np.float32))


def test_expanded_view_of_storage_is_legitimate(tmp_path):
    """Offsets and strides inside the storage are fine, including stride 0 (an expanded tensor)."""
    manifest, blob = _checkpoint({"w": ember.arange(4, dtype=ember.float32)})
    manifest["tensors"][0].update(shape=[2, 3], strides=[4, 0], offset=4)
    path = tmp_path / "view.pt"
    path.write_bytes(H.resign(manifest, blob))
    np.testing.assert_array_equal(ember.load(str(path))["w"].numpy(), [[1, 1, 1], [2, 2, 2]])
