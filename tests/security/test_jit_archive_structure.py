"""ember.jit.load of archives with a malformed module tree, graph, tensor list or file structure,
and of huge declared lengths and shapes: every one raises RuntimeError naming the file (and the
module/node/tensor), before building anything from the program.

Each case edits a legitimate archive (hostile_archives.save_legit): its program, the object tree
the file holds (`PROGRAM_CASES`, a function of the payload), or the file (`FILE_CASES`, a function
(src, dst) writing dst): its checkpoint manifest (re-signed) or its bytes. The file is in
ember.save's format, so what tests/security checks of ember.load's reader holds for these files too.
"""
import collections
import copy
import io
import json
import math
import struct
import zipfile

import numpy as np
import pytest

import ember
import hostile_archives as H
from ember import serialization
from ember.serialization import JIT_MAGIC, MAGIC


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


def _member(kind, name, value=None):
    def edit(p):
        entry = {"type": "int", "value": 1} if kind == "attributes" else value
        if kind == "methods":
            entry = copy.deepcopy(p["module"]["methods"]["forward"])
        p["module"][kind][name] = entry
    return edit


def _loop_arg(value):
    return lambda p: _node(p, "prim::Loop")["args"].append(value)


def _weight(p, value):
    p["module"]["submodules"]["inner"]["submodules"]["lin"]["parameters"]["weight"] = value


PROGRAM_CASES = {
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
    "parameter_an_int": ("module", lambda p: _weight(p, 3), "is a int, not a parameter"),
    "parameter_an_ndarray": ("module", lambda p: _weight(p, np.zeros((3, 3), np.float32)), "not a parameter"),
    "parameter_a_plain_tensor": ("module", lambda p: _weight(p, ember.zeros(3, 3)), "not a parameter"),
    "buffer_a_list": ("module", lambda p: p["module"]["buffers"].__setitem__("shift", [1.0]), "not a tensor"),
    "attribute_value_unknown_tag": ("module", lambda p: p["module"]["attributes"]["calls"].__setitem__(
        "value", {"$import": "os"}), "malformed value"),
    "attribute_type_unparseable": ("module", lambda p: p["module"]["attributes"]["calls"].__setitem__(
        "type", "os.system"), "not a type"),
    "non_persistent_unknown_buffer": ("module", lambda p: p["module"]["non_persistent"].append("ghost"), "ghost"),
    "training_not_bool": ("module", lambda p: p["module"].__setitem__("training", "yes"), "training"),
    "unknown_module_field": ("module", lambda p: p["module"].__setitem__("pickle", "x"), "unknown field"),
    "unknown_top_field": ("function", lambda p: p.__setitem__("code", "import os"), "unknown field"),
    "unknown_top_field_of_module": ("module", lambda p: p.__setitem__("tensors", []), "unknown field"),
    "version_bumped": ("function", lambda p: p.__setitem__("version", 3), "version 3"),
    "version_true": ("function", lambda p: p.__setitem__("version", True), "version"),
    "kind_unknown": ("function", lambda p: p.__setitem__("kind", "pickle"), "kind"),
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
    # values: what the checkpoint format holds but a program never does, format 1's tags
    "value_ndarray": ("function", _loop_arg(np.zeros(3)), "malformed value"),
    "value_bytes": ("function", _loop_arg(b"os"), "malformed value"),
    "value_complex": ("function", _loop_arg(1j), "malformed value"),
    "value_size": ("function", _loop_arg(ember.Size([2])), "malformed value"),
    "value_ordered_dict": ("function", _loop_arg(collections.OrderedDict(a=1)), "malformed value"),
    "value_plain_dict": ("function", _loop_arg({"a": 1, "b": 2}), "malformed value"),
    "value_format_1_dtype_tag": ("function", _loop_arg({"$dtype": "float32"}), "malformed value"),
    "value_format_1_tensor_tag": ("function", _loop_arg({"$tensor": 0}), "malformed value"),
    "value_format_1_tuple_tag": ("module", lambda p: _forward(p)[-1].__setitem__("args", [{"$tuple": []}]),
                                 "malformed value"),
    "dict_with_list_key": ("function", _loop_arg({"$dict": [[[1], 2]]}), "hashable"),
    "dict_with_tuple_of_list_key": ("function", _loop_arg({"$dict": [[(1, [2]), 2]]}), "hashable"),
    "slice_of_five": ("function", _loop_arg({"$slice": [1, 2, 3, 4, 5]}), "$slice"),
    "block_returns_a_list": ("module", lambda p: _node(p, "prim::If")["blocks"][0]["nodes"][-1].__setitem__(
        "args", [[]]), "tuple of values"),
    "op_a_tensor": ("module", lambda p: _forward(p)[-1].__setitem__("op", ember.ones(2)), "expected a string"),
    "target_an_ndarray": ("module", lambda p: _node(p, "prim::If").__setitem__("target", np.zeros(2)),
                          "expected a string"),
    "output_of_an_ndarray_arg": ("module", lambda p: _node(p, "prim::If").update(
        output_of=0, args=[np.zeros(2)]), "output_of"),
    "constant_holding_node_ref": ("module", lambda p: _forward(p).insert(3, {
        "id": 9999, "op": "call_function", "name": "c", "target": "prim::Constant", "args": [{"$node": 0}],
        "kwargs": []}), "not defined before"),
    "program_empty": ("function", lambda p: p.clear(), "version None"),
    "program_a_list": ("function", lambda p: p.__setitem__("version", [p.pop("version")]), "version [2]"),
}


@pytest.mark.parametrize("name", sorted(PROGRAM_CASES))
def test_malformed_program_refused(legit, tmp_path, name):
    base, edit, fragment = PROGRAM_CASES[name]
    payload = H.read_archive(legit[base])
    edit(payload)
    path = str(tmp_path / f"{name}.pt")
    H.write_archive(path, payload)
    refused(path, fragment)


# ---------------------------------------------------------------------------------------------
# the file: ember.save's format holding the program
# ---------------------------------------------------------------------------------------------
def _format_1(value, tensors: list):
    """`value` of a program in the form ember.jit.save wrote in format 1: JSON values with tags for
    what JSON lacks, and tensors as indices of a list stored beside the program's JSON text."""
    if isinstance(value, ember.Tensor):
        tensors.append(value)
        return {"$tensor": len(tensors) - 1}
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": repr(value)}
    tags = {ember.dtype: ("$dtype", lambda v: v.name), ember.device: ("$device", str),
            tuple: ("$tuple", lambda v: [_format_1(x, tensors) for x in v])}
    if type(value) in tags:
        return {tags[type(value)][0]: tags[type(value)][1](value)}
    if isinstance(value, list):
        return [_format_1(x, tensors) for x in value]
    if not isinstance(value, dict):
        return value
    out = {k: _format_1(x, tensors) for k, x in value.items()}
    for members in {"parameters", "buffers"} & out.keys():   # a module's tensors: bare indices
        out[members] = {n: None if t is None else t["$tensor"] for n, t in out[members].items()}
    return out


def _format_1_archive(src, dst):
    """The archive as ember.jit.save wrote it in format 1: ``{"program": <JSON text>, "tensors": [...]}``."""
    payload, tensors = H.read_archive(src), []
    program = _format_1(dict(payload, version=1), tensors)
    serialization.write({"program": json.dumps(program), "tensors": tensors}, dst, JIT_MAGIC)


def _in_manifest(tree, kind: str):
    """The first node of checkpoint kind `kind` in a manifest's object tree."""
    if isinstance(tree, dict):
        if tree.get("k") == kind:
            return tree
        tree = list(tree.values())
    for item in tree if isinstance(tree, list) else ():
        found = _in_manifest(item, kind)
        if found is not None:
            return found
    return None


def _manifest_value(value, kind: str, bad):
    """A case saving `value` as an attribute of the module, then giving its checkpoint node of
    `kind` the value `bad` in the manifest (re-signed): what no program object could hold."""
    def case(src, dst):
        payload = H.read_archive(src)
        payload["module"]["attributes"]["calls"]["value"] = value
        buf = io.BytesIO()
        H.write_archive(buf, payload)
        manifest, blob = H.split_checkpoint(buf.getvalue())
        _in_manifest(manifest["root"], kind)["v"] = bad
        with open(dst, "wb") as fh:
            fh.write(H.resign(manifest, blob, magic=JIT_MAGIC))
    return case


def _deep_value(src, dst):
    """An attribute value nested 100,000 lists deep (the writer itself would recurse)."""
    payload = H.read_archive(src)
    payload["module"]["attributes"]["calls"]["value"] = "<deep>"
    buf = io.BytesIO()
    H.write_archive(buf, payload)
    manifest, blob = H.split_checkpoint(buf.getvalue())
    deep = '{"k":"list","v":[' * 100_000 + "]}" * 100_000
    text = json.dumps(manifest).replace('{"k": "str", "v": "<deep>"}', deep).encode()
    with open(dst, "wb") as fh:
        fh.write(H.resign(None, blob, manifest_bytes=text, magic=JIT_MAGIC))


def _manifest(edit, magic=JIT_MAGIC, **lengths):
    """A case editing the archive's checkpoint manifest in place (`edit(manifest)`), re-signed."""
    def case(src, dst):
        manifest, blob = H.split_checkpoint(H.archive_bytes(src))
        edit(manifest)
        with open(dst, "wb") as fh:
            fh.write(H.resign(manifest, blob, magic=magic, **lengths))
    return case


def _bytes(edit):
    def case(src, dst):
        with open(dst, "wb") as fh:
            fh.write(edit(bytes(H.archive_bytes(src))))
    return case


def _weight_entry(manifest) -> dict:
    """The manifest entry of a 3x3 parameter (a Linear's weight)."""
    return next(e for e in manifest["tensors"] if e.get("parameter") and e["shape"] == [3, 3])


def _zip_layout(src, dst):
    """The layout ember.jit.save wrote before it used ember.save's format: a zip of
    ``code/graphs.json`` and ``data/<i>.npy``."""
    tensors = []
    program = _format_1(H.read_archive(src), tensors)
    with zipfile.ZipFile(dst, "w") as zf:
        zf.writestr("code/graphs.json", json.dumps(program))
        for i, t in enumerate(tensors):
            buf = io.BytesIO()
            np.save(buf, t.detach().numpy())
            zf.writestr(f"data/{i}.npy", buf.getvalue())


def _flip(position):
    return _bytes(lambda d: d[:position] + bytes([d[position] ^ 1]) + d[position + 1:])


FILE_CASES = {
    # the program's values, as the checkpoint reader checks them
    "format_1_archive": (_format_1_archive, "format 1"),
    "value_dtype_dunder": (_manifest_value(ember.float64, "dtype", "__class__"), "unknown dtype"),
    "value_device_injection": (_manifest_value(ember.device("cpu"), "device", "cpu; rm -rf /"), "bad device"),
    "value_tensor_out_of_range": (_manifest_value(ember.ones(2), "tensor", 10 ** 6), "out of range"),
    "value_float_not_hex": (_manifest_value(1.5, "float", "one and a half"), "bad float"),
    "value_float_overflows": (_manifest_value(1.5, "float", "0x1p99999"), "bad float"),
    "value_nested_too_deeply": (_deep_value, "nested too deeply"),
    # the tensors' manifest entries
    "tensor_dtype_object": (_manifest(lambda m: _weight_entry(m).update(dtype="object")), "unknown dtype"),
    "int_tensor_requires_grad": (_manifest(lambda m: _weight_entry(m).update(dtype="int32", requires_grad=True)),
                                 "require grad"),
    "tensor_huge_shape": (_manifest(lambda m: _weight_entry(m).update(shape=[10 ** 6, 10 ** 6])), "outside its storage"),
    "tensor_shape_overflows_int64": (_manifest(lambda m: _weight_entry(m).update(shape=[2 ** 62, 2 ** 62])), "too large"),
    "tensor_negative_dim": (_manifest(lambda m: _weight_entry(m).update(shape=[-1, 3])), "integer >= 0"),
    "tensor_offset_outside_storage": (_manifest(lambda m: _weight_entry(m).update(offset=1 << 40)), "outside its storage"),
    "unknown_node_kind": (_manifest(lambda m: m.__setitem__("root", {"k": "pickle", "v": "cos\nsystem\n"})),
                          "unknown node kind"),
    "storage_table_lie": (_manifest(lambda m: m["storages"][-1].__setitem__(1, m["storages"][-1][1] + 4)),
                          "storages do not cover"),
    # the header and the bytes
    "declared_length_huge": (_manifest(lambda m: None, dlen=1 << 40), "truncated"),
    "version_bumped": (_bytes(lambda d: d[:8] + struct.pack("<I", 2) + d[12:]), "unsupported"),
    "trailing_bytes": (_bytes(lambda d: d + b"\0" * 100), "unexpected bytes after the checksum"),
    "prepended_bytes": (_bytes(lambda d: b"\x80\x04junk" + d), "bad magic"),
    "tensor_byte_flipped": (_flip(-33), "checksum"),
    "digest_flipped": (_flip(-1), "checksum"),
    "checkpoint_magic": (_manifest(lambda m: None, magic=MAGIC), "ember.save checkpoint"),
    "old_zip_layout": (_zip_layout, "zip archive"),
}


@pytest.mark.parametrize("name", sorted(FILE_CASES))
def test_malformed_file_refused(legit, tmp_path, name):
    build, fragment = FILE_CASES[name]
    path = str(tmp_path / f"{name}.pt")
    build(legit["module"], path)
    refused(path, fragment)


def test_archive_loads_from_a_stream_that_cannot_seek(legit):
    reference = ember.jit.load(legit["module"])
    loaded = ember.jit.load(H.Unseekable(bytes(H.archive_bytes(legit["module"]))))
    x = ember.randn(2, 3)
    np.testing.assert_array_equal(loaded(x).detach().numpy(), reference(x).detach().numpy())


def test_tied_weights_stay_tied_through_save_and_load(tmp_path):
    """The tensors go through ember.save's code: one tensor reached twice (a tied weight) and views
    of one storage load sharing memory, as torch.jit.load's do."""
    class Tied(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = ember.nn.Linear(3, 3)
            self.b = ember.nn.Linear(3, 3)
            self.b.weight = self.a.weight
            self.register_buffer("row", self.a.bias.detach()[1:])

        def forward(self, x):
            return self.b(self.a(x)) + self.row.sum()

    path = str(tmp_path / "tied.pt")
    ember.jit.save(ember.jit.script(Tied()), path)
    loaded = ember.jit.load(path)
    assert loaded.a.weight is loaded.b.weight
    with ember.no_grad():
        loaded.a.bias[2] = 7.0
    assert float(loaded.row[1]) == 7.0
