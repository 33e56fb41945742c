"""ember.jit.load of archives with a malformed module tree, graph or zip structure, and of
decompression bombs / huge declared shapes: every one raises RuntimeError naming the file (and the
module/node/entry), before building anything from it.

Each case edits a legitimate archive (hostile_archives.save_legit): its JSON (`JSON_CASES`, a
function of the payload) or its zip/.npy bytes (`ZIP_CASES`, a function (src, dst) writing dst).
"""
import copy
import io
import json
import struct
import zipfile

import numpy as np
import pytest

import ember
import hostile_archives as H


@pytest.fixture(scope="module")
def legit(tmp_path_factory):
    return H.save_legit(str(tmp_path_factory.mktemp("legit")))


def refused(path, *fragments):
    """ember.jit.load(path) raises RuntimeError naming the file (and each of `fragments`)."""
    with pytest.raises(RuntimeError) as info:
        ember.jit.load(path)
    message = str(info.value)
    assert message.startswith(f"ember.jit.load: {path}: "), message
    for fragment in fragments:
        assert fragment in message, message
    return message


# ---------------------------------------------------------------------------------------------
# the module tree and the graphs
# ---------------------------------------------------------------------------------------------
def _forward(p):
    return H.method_of(p)["graph"]["nodes"]


def _node(p, target):
    return next(n for n in H.all_nodes(H.method_of(p)["graph"]) if n.get("target") == target)


def _set(path_fn, value):
    def edit(p):
        holder, key = path_fn(p)
        holder[key] = value
    return edit


def _first_if_else_refers_to_then(p):
    node = _node(p, "prim::If")
    then_nodes, else_nodes = node["blocks"][0]["nodes"], node["blocks"][1]["nodes"]
    then_value = next(n for n in then_nodes if n["op"] != "output")
    else_nodes.insert(0, {"id": 9999, "op": "call_function", "name": "leak", "target": "operator.add",
                          "args": [{"$node": then_value["id"]}, 1], "kwargs": []})


def _forward_reference(p):
    nodes = _forward(p)
    later = nodes[-2]["id"]
    nodes.insert(2, {"id": 9999, "op": "call_function", "name": "early", "target": "operator.add",
                     "args": [{"$node": later}, 1], "kwargs": []})


def _duplicate_id(p):
    nodes = _forward(p)
    nodes.insert(len(nodes) - 1, dict(copy.deepcopy(nodes[-2]), name="again"))


DEEP = "<deep>"   # replaced by a list nested thousands deep once the JSON is written (json.dumps would recurse)


def _deep_args(p):
    _forward(p).insert(2, {"id": 9999, "op": "call_function", "name": "deep", "target": "prim::ListConstruct",
                           "args": DEEP, "kwargs": []})


def _member(kind, name, value=None):
    def edit(p):
        entry = {"type": "int", "value": 1} if kind == "attributes" else value
        if kind == "methods":
            entry = copy.deepcopy(p["module"]["methods"]["forward"])
        p["module"][kind][name] = entry
    return edit


JSON_CASES = {
    # members of the module tree
    "attribute_named_forward": ("module", _member("attributes", "forward"), "taken"),
    "attribute_named_dunder_class": ("module", _member("attributes", "__class__"), "taken"),
    "attribute_named_parameters_table": ("module", _member("attributes", "_parameters"), "taken"),
    "parameter_named_to": ("module", _member("parameters", "to", 0), "taken"),
    "buffer_named_state_dict": ("module", _member("buffers", "state_dict", 0), "taken"),
    "submodule_named_apply": ("module", lambda p: p["module"]["submodules"].__setitem__(
        "apply", copy.deepcopy(p["module"]["submodules"]["inner"])), "taken"),
    "method_named_dunder_getattr": ("module", _member("methods", "__getattr__"), "taken"),
    "method_named_train": ("module", _member("methods", "train"), "taken"),
    "member_both_attribute_and_buffer": ("module", _member("attributes", "shift"), "both"),
    "member_name_not_identifier": ("module", _member("attributes", "a.b"), "not an identifier"),
    "member_name_fullwidth": ("module", _member("attributes", "\uff54\uff4f"), "not an identifier"),
    "parameter_tensor_out_of_range": ("module", lambda p: p["module"]["submodules"]["inner"]["submodules"]["lin"][
        "parameters"].__setitem__("weight", 10 ** 6), "lacks"),
    "attribute_value_unknown_tag": ("module", lambda p: p["module"]["attributes"]["calls"].__setitem__(
        "value", {"$import": "os"}), "malformed value"),
    "attribute_type_unparseable": ("module", lambda p: p["module"]["attributes"]["calls"].__setitem__(
        "type", "os.system"), "not a type"),
    "non_persistent_unknown_buffer": ("module", lambda p: p["module"]["non_persistent"].append("ghost"), "ghost"),
    "training_not_bool": ("module", lambda p: p["module"].__setitem__("training", "yes"), "training"),
    "unknown_module_field": ("module", lambda p: p["module"].__setitem__("pickle", "x"), "unknown field"),
    "unknown_top_field": ("function", lambda p: p.__setitem__("code", "import os"), "unknown field"),
    "version_bumped": ("function", lambda p: p.__setitem__("version", 2), "version"),
    "version_true": ("function", lambda p: p.__setitem__("version", True), "version"),
    "kind_unknown": ("function", lambda p: p.__setitem__("kind", "pickle"), "kind"),
    "tensor_table_dtype_object": ("module", lambda p: p["tensors"][0].__setitem__("dtype", "object"), "dtype"),
    "tensor_table_int_requires_grad": ("module", lambda p: p["tensors"][0].update(dtype="int64", requires_grad=True),
                                       "require grad"),
    # schemas
    "schema_default_unknown_tag": ("function", lambda p: p["method"]["schema"]["arguments"][1].__setitem__(
        "default", {"$eval": "1"}), "malformed value"),
    "schema_type_recursion": ("function", lambda p: p["method"]["schema"]["arguments"][0].__setitem__(
        "type", "int" + "[]" * 5000), "not a type"),
    "schema_argument_missing": ("function", lambda p: p["method"]["schema"]["arguments"].pop(), "inputs"),
    "schema_not_object": ("function", lambda p: p["method"].__setitem__("schema", ["x"]), "expected an object"),
    # graphs
    "value_refers_to_later_node": ("module", _forward_reference, "not defined before"),
    "else_block_reads_then_block": ("module", _first_if_else_refers_to_then, "not defined before"),
    "duplicate_node_id": ("module", _duplicate_id, "distinct"),
    "node_id_string": ("module", lambda p: _forward(p)[-2].__setitem__("id", "7"), "distinct"),
    "num_outputs_bomb": ("module", lambda p: _node(p, "prim::If").__setitem__("num_outputs", 10 ** 12), "output count"),
    "if_with_one_block": ("module", lambda p: _node(p, "prim::If")["blocks"].pop(), "blocks"),
    "loop_body_params_mismatch": ("function", lambda p: _node(p, "prim::Loop")["args"].append(3), "do not match"),
    "blocks_on_plain_call": ("function", lambda p: _node(p, "operator.add").__setitem__("blocks", [{"nodes": []}]),
                             "blocks"),
    "output_not_last": ("function", lambda p: _forward(p).append(copy.deepcopy(_forward(p)[1])), "end with"),
    "placeholder_after_body": ("function", lambda p: _forward(p).insert(-1, dict(copy.deepcopy(_forward(p)[0]),
                                                                                id=9999)), "inputs must come"),
    "kwarg_name_not_ascii": ("module", lambda p: _node(p, "prim::If").__setitem__("kwargs", [["\uff4b", 1]]),
                             "keyword"),
    "kwargs_not_pairs": ("module", lambda p: _node(p, "prim::If").__setitem__("kwargs", {"a": 1}), "expected a list"),
    "output_of_foreign_node": ("module", lambda p: _node(p, "prim::If").__setitem__("output_of", 0), "output_of"),
    "loc_wrong_types": ("module", lambda p: _node(p, "prim::If").__setitem__("loc", [1, "a", None]), "location"),
    "node_type_unparseable": ("module", lambda p: _node(p, "prim::If").__setitem__("type", "Dict(int"), "not a type"),
    "constant_dtype_dunder": ("function", lambda p: _node(p, "prim::Loop")["args"].append({"$dtype": "__class__"}),
                              "dtype"),
    "constant_device_injection": ("function", lambda p: _node(p, "prim::Loop")["args"].append(
        {"$device": "cpu; rm -rf /"}), "device"),
    "constant_tensor_out_of_range": ("function", lambda p: _node(p, "prim::Loop")["args"].append({"$tensor": 3}),
                                     "lacks"),
    "constant_float_not_special": ("function", lambda p: _node(p, "prim::Loop")["args"].append({"$float": "1e999"}),
                                   "malformed float"),
    "dict_with_list_key": ("function", lambda p: _node(p, "prim::Loop")["args"].append({"$dict": [[[1], 2]]}),
                           "hashable"),
    "slice_of_five": ("function", lambda p: _node(p, "prim::Loop")["args"].append({"$slice": [1, 2, 3, 4, 5]}),
                      "$slice"),
    "constant_holding_node_ref": ("module", lambda p: _forward(p).insert(3, {
        "id": 9999, "op": "call_function", "name": "c", "target": "prim::Constant", "args": [{"$node": 0}],
        "kwargs": []}), "not defined before"),
    "deeply_nested_args": ("module", _deep_args, "nested too deeply"),
    "graphs_json_not_object": ("function", lambda p: p.clear(), "has no"),
}


@pytest.mark.parametrize("name", sorted(JSON_CASES))
def test_malformed_json_refused(legit, tmp_path, name):
    base, edit, fragment = JSON_CASES[name]
    payload, entries = H.read_archive(legit[base])
    edit(payload)
    text = json.dumps(payload).replace(json.dumps(DEEP), "[" * 100_000 + "]" * 100_000)
    path = str(tmp_path / f"{name}.pt")
    H.write_archive(path, None, [(n, text.encode() if n == H.GRAPHS else b) for n, b in entries])
    refused(path, fragment)


# ---------------------------------------------------------------------------------------------
# the zip structure and the .npy entries
# ---------------------------------------------------------------------------------------------
def _rebuild(src, dst, *, replace=None, names=None, drop=(), extra=(), compress=None):
    payload, entries = H.read_archive(src)
    replace = replace or {}
    entries = [(n, replace.get(n, b)) for n, b in entries if n not in drop]
    H.write_archive(dst, None, entries, names=names, extra=extra, compress=compress)


def _patch(fn):
    def case(src, dst):
        data = H.archive_bytes(src)
        result = fn(data)
        data = result if isinstance(result, (bytes, bytearray)) else data
        with open(dst, "wb") as fh:
            fh.write(data)
    return case


def _npy(header, body=b""):
    return lambda src, dst: _rebuild(src, dst, replace={"data/0.npy": H.npy_bytes(header, body)})


def _central(field, value, entry=-1):
    def patch(data):
        H.set_central_field(data, H.central_entries(data)[entry], field, value)
    return _patch(patch)


def _flip_in(name):
    def patch(data):
        with zipfile.ZipFile(io.BytesIO(bytes(data))) as zf:
            info = zf.getinfo(name)
        start = info.header_offset + 30 + len(info.filename) + len(info.extra)
        data[start + info.file_size - 1] ^= 0x01
    return _patch(patch)


def _shift_offsets(data: bytes, by: int) -> bytearray:
    """`data` (a zip with `by` bytes put in front) with every offset moved, as ``zip -A`` does."""
    data = bytearray(data)
    for entry in H.central_entries(data):
        offset = struct.unpack_from("<I", data, entry + 42)[0]
        H.set_central_field(data, entry, "offset", offset + by)
    H.set_eocd_field(data, "cd_offset", struct.unpack_from("<I", data, len(data) - 6)[0] + by)
    return data


F32 = "<f4"
ZIP_CASES = {
    "entry_deflated": (lambda s, d: _rebuild(s, d, compress={"data/0.npy": zipfile.ZIP_DEFLATED}), "compressed"),
    "graphs_json_deflated": (lambda s, d: _rebuild(s, d, compress={H.GRAPHS: zipfile.ZIP_DEFLATED}), "compressed"),
    "stored_size_lie": (_central("usize", 200 << 20), "declares"),
    "method_field_lie": (_central("method", 8), "compressed"),
    "encrypted_flag": (_central("flags", 1), "encrypted"),
    "path_traversal_dotdot": (lambda s, d: _rebuild(s, d, names={"data/2.npy": "../../evil.npy"}), "unexpected"),
    "path_traversal_absolute": (lambda s, d: _rebuild(s, d, names={"data/2.npy": "/etc/cron.d/evil"}), "unexpected"),
    "path_traversal_in_data": (lambda s, d: _rebuild(s, d, names={"data/2.npy": "data/../../2.npy"}), "unexpected"),
    "entry_name_leading_zero": (lambda s, d: _rebuild(s, d, names={"data/2.npy": "data/02.npy"}), "unexpected"),
    "entry_index_past_table": (lambda s, d: _rebuild(s, d, names={"data/2.npy": "data/3.npy"}), "unexpected"),
    "duplicate_entry": (lambda s, d: _rebuild(s, d, names={"data/1.npy": "data/0.npy"}), "duplicate"),
    "duplicate_graphs_json": (lambda s, d: _rebuild(s, d, names={"data/1.npy": H.GRAPHS}), "more than one"),
    "missing_entry": (lambda s, d: _rebuild(s, d, drop={"data/2.npy"}), "declares 3 tensors"),
    "missing_graphs_json": (lambda s, d: _rebuild(s, d, drop={H.GRAPHS}), "no code/graphs.json"),
    "extra_entry": (lambda s, d: _rebuild(s, d, extra=[("code/evil.py", b"import os")]), "declares 3 tensors"),
    "renamed_to_source_file": (lambda s, d: _rebuild(s, d, names={"data/2.npy": "code/evil.py"}), "unexpected"),
    "trailing_bytes": (_patch(lambda data: data + b"\0" * 100), "end record"),
    "prepended_bytes": (_patch(lambda data: b"\x80\x04junk" + data), "central directory"),
    "prepended_bytes_offsets_adjusted": (_patch(lambda data: _shift_offsets(b"\x80\x04junk" + data, 6)), "hidden"),
    "zip_comment": (_patch(lambda data: (H.set_eocd_field(data, "comment", 4), data + b"evil")[1]), "end record"),
    "eocd_count_huge": (_patch(lambda data: (H.set_eocd_field(data, "count", 65000),
                                             H.set_eocd_field(data, "count_disk", 65000))), "central directory"),
    "eocd_offset_outside": (_patch(lambda data: H.set_eocd_field(data, "cd_offset", 1 << 30)), "central directory"),
    "zip64_markers_without_record": (_patch(lambda data: H.set_eocd_field(data, "cd_offset", 0xFFFFFFFF)), "zip64"),
    "central_offset_points_at_other_entry": (_central("offset", 0), "local header"),
    "central_offset_outside_file": (_central("offset", 1 << 31), "past the end"),
    "crc_of_tensor_wrong": (_flip_in("data/1.npy"), "CRC-32"),
    "crc_of_graphs_json_wrong": (_central("crc", 0, entry=0), "CRC-32"),
    "npy_huge_declared_shape": (_npy({"descr": F32, "fortran_order": False, "shape": (10 ** 12,)}, b"\0" * 16),
                                "declares shape [1000000000000]"),
    "npy_shape_overflows_int64": (_npy({"descr": F32, "fortran_order": False, "shape": (2 ** 62, 2 ** 62)}),
                                  "declares shape"),
    "npy_negative_dim": (_npy({"descr": F32, "fortran_order": False, "shape": (-1, 3)}), "npy"),
    "npy_object_dtype": (_npy({"descr": "|O", "fortran_order": False, "shape": (1,)}, b"\x80\x04N."), "malformed"),
    "npy_structured_dtype": (_npy({"descr": [("a", F32)], "fortran_order": False, "shape": (1,)}, b"\0" * 4),
                             "malformed"),
    "npy_dtype_mismatch": (_npy({"descr": "<i8", "fortran_order": False, "shape": (3, 3)}, b"\0" * 72), "dtype int64"),
    "npy_big_endian": (_npy({"descr": ">f4", "fortran_order": False, "shape": (3, 3)}, b"\0" * 36), "dtype >f4"),
    "npy_short_body": (_npy({"descr": F32, "fortran_order": False, "shape": (3, 3)}, b"\0" * 35), "holds 35 bytes"),
    "npy_long_body": (_npy({"descr": F32, "fortran_order": False, "shape": (3, 3)}, b"\0" * 37), "holds 37 bytes"),
    "npy_not_npy": (lambda s, d: _rebuild(s, d, replace={"data/0.npy": b"\x80\x04\x95junk"}), "not a .npy"),
    "npy_header_length_huge": (lambda s, d: _rebuild(s, d, replace={"data/0.npy": b"\x93NUMPY\x02\x00" +
                                                                    struct.pack("<I", 1 << 31) + b"{}"}), ".npy"),
    "npy_version_3": (lambda s, d: _rebuild(s, d, replace={"data/0.npy": b"\x93NUMPY\x03\x00" + b"\0" * 64}),
                      "format 1.0"),
    "npy_header_eval": (_npy({"descr": "__import__('os').system('touch x')", "fortran_order": False, "shape": (1,)}),
                        ".npy"),
}


@pytest.mark.parametrize("name", sorted(ZIP_CASES))
def test_malformed_zip_refused(legit, tmp_path, name):
    build, fragment = ZIP_CASES[name]
    path = str(tmp_path / f"{name}.pt")
    build(legit["module"], path)
    refused(path, fragment)


def test_fortran_order_npy_entry_loads_in_order(legit, tmp_path):
    values = np.arange(9, dtype=np.float32).reshape(3, 3)
    body = np.asfortranarray(values).tobytes(order="F")
    path = str(tmp_path / "fortran.pt")
    payload, _ = H.read_archive(legit["module"])
    index = payload["module"]["submodules"]["inner"]["submodules"]["lin"]["parameters"]["weight"]
    header = H.npy_bytes({"descr": F32, "fortran_order": True, "shape": (3, 3)}, body)
    _rebuild(legit["module"], path, replace={f"data/{index}.npy": header})
    loaded = ember.jit.load(path)
    np.testing.assert_array_equal(loaded.inner.lin.weight.detach().numpy(), values)


def test_data_descriptors_of_a_streamed_zip_load(legit, tmp_path):
    """A zip written to a stream that cannot seek puts sizes in data descriptors after each entry:
    still a well-formed archive, and it loads."""
    class Unseekable:
        def __init__(self):
            self.chunks = []

        def write(self, b):
            self.chunks.append(bytes(b))
            return len(b)

        def flush(self):
            pass

    payload, entries = H.read_archive(legit["module"])
    out = Unseekable()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        for name, data in entries:
            with zf.open(name, "w") as w:
                w.write(data)
    path = tmp_path / "streamed.pt"
    path.write_bytes(b"".join(out.chunks))
    assert any(i.flag_bits & 0x8 for i in zipfile.ZipFile(path).infolist())
    reference = ember.jit.load(legit["module"])
    x = ember.randn(2, 3)
    np.testing.assert_array_equal(ember.jit.load(str(path))(x).detach().numpy(), reference(x).detach().numpy())
