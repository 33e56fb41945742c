"""Corrupt and foreign files given to ember.jit.load and ember.load: truncated, bit-flipped, empty,
a pickle, torch.save and torch.jit.save files, each loader's files given to the other, text, and
every JSON field replaced by a value of another type. Each raises RuntimeError naming the function
and the file -- never zipfile/json/NumPy errors, KeyError or TypeError -- or, where the damage
is in bytes the format does not use, loads a program that computes the same.
A missing path or a directory raise what PyTorch raises (ValueError for jit.load, OSError for
load), naming the file. Malicious pickles never run: their marker files never appear.
"""
import copy
import io
import os
import pickle
import random

import numpy as np
import pytest
import torch

import ember
import hostile_archives as H


class Marker:
    """Unpickling it runs ``os.system("touch <path>")``."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return os.system, (f"touch {self.path}",)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("foreign")
    out = dict(H.save_legit(str(d)))
    out["marker"] = str(d / "MARKER")
    ember.save({"w": ember.randn(3, 3), "b": [ember.ones(2), 3, "s"], "n": np.arange(4)}, str(d / "ckpt.pt"))
    out["checkpoint"] = str(d / "ckpt.pt")
    with open(d / "evil.pkl", "wb") as fh:
        pickle.dump({"x": Marker(out["marker"])}, fh)
    out["pickle"] = str(d / "evil.pkl")
    torch.save({"w": torch.ones(2), "evil": Marker(out["marker"])}, str(d / "torch_save.pt"))
    out["torch_save"] = str(d / "torch_save.pt")
    torch.jit.save(torch.jit.script(torch.nn.Linear(3, 3)), str(d / "torch_jit.pt"))
    out["torch_jit"] = str(d / "torch_jit.pt")
    (d / "text.pt").write_text("def forward(self, x):\n    import os\n    os.system('touch x')\n")
    out["text"] = str(d / "text.pt")
    (d / "empty.pt").write_bytes(b"")
    out["empty"] = str(d / "empty.pt")
    (d / "random.pt").write_bytes(random.Random(0).randbytes(4096))
    out["random"] = str(d / "random.pt")
    (d / "folder").mkdir()
    out["folder"] = str(d / "folder")
    return out


def refused(load, path, function):
    with pytest.raises(RuntimeError) as info:
        load(path)
    assert str(info.value).startswith(f"{function}: {path}: "), str(info.value)
    return str(info.value)


def _jit_reference(path, kind):
    ember.manual_seed(1)
    return H.call_legit(ember.jit.load(path), kind).detach().numpy()


def _jit_same_or_refused(path, original, kind):
    try:
        loaded = ember.jit.load(path)
    except RuntimeError as exc:
        assert str(exc).startswith(f"ember.jit.load: {path}: "), str(exc)
        return False
    ember.manual_seed(1)
    np.testing.assert_array_equal(H.call_legit(loaded, kind).detach().numpy(), _jit_reference(original, kind))
    return True


# ---------------------------------------------------------------------------------------------
# foreign files
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind, hint", [("empty", "empty"), ("pickle", "never unpickles"), ("torch_save", "torch.save"),
                                        ("torch_jit", "torch.jit.save"), ("checkpoint", "ember.load"),
                                        ("text", "bad magic"), ("random", "bad magic")])
def test_jit_load_of_foreign_files(files, kind, hint):
    assert hint in refused(ember.jit.load, files[kind], "ember.jit.load")
    assert not os.path.exists(files["marker"])


@pytest.mark.parametrize("kind, hint", [("empty", "bad magic"), ("pickle", "never unpickles"), ("torch_save", "zip"),
                                        ("torch_jit", "zip"), ("module", "ember.jit.load"), ("text", "bad magic"),
                                        ("random", "bad magic")])
@pytest.mark.parametrize("weights_only", [True, False])
def test_ember_load_of_foreign_files(files, kind, hint, weights_only):
    with pytest.raises(RuntimeError) as info:
        ember.load(files[kind], weights_only=weights_only)
    assert str(info.value).startswith(f"ember.load: {files[kind]}: ") and hint in str(info.value)
    assert not os.path.exists(files["marker"])


def test_missing_paths_and_directories_raise_what_torch_raises(files, tmp_path):
    missing = str(tmp_path / "missing.pt")
    for path in (missing, files["folder"]):
        for ours, theirs, name in ((ember.jit.load, torch.jit.load, "ember.jit.load"),
                                   (ember.load, torch.load, None)):
            with pytest.raises(Exception) as expected:
                theirs(path)
            with pytest.raises(type(expected.value)) as got:
                ours(path)
            assert path in str(got.value) and (name is None or name in str(got.value))


# ---------------------------------------------------------------------------------------------
# truncation and bit flips
# ---------------------------------------------------------------------------------------------
def _cuts(n: int) -> list:
    return sorted(set(list(range(0, n, max(1, n // 60))) + list(range(max(0, n - 70), n))))


@pytest.mark.parametrize("kind", ["module", "function"])
def test_truncated_jit_archives(files, tmp_path, kind):
    data = H.archive_bytes(files[kind])
    for cut in _cuts(len(data)):
        path = tmp_path / f"cut{cut}.pt"
        path.write_bytes(data[:cut])
        refused(ember.jit.load, str(path), "ember.jit.load")


def test_truncated_checkpoints(files, tmp_path):
    data = H.archive_bytes(files["checkpoint"])
    for cut in _cuts(len(data)):
        path = tmp_path / f"cut{cut}.pt"
        path.write_bytes(data[:cut])
        refused(ember.load, str(path), "ember.load")
        with pytest.raises(RuntimeError, match="ember.load: BytesIO: "):
            ember.load(io.BytesIO(bytes(data[:cut])))


@pytest.mark.parametrize("kind", ["module", "function"])
def test_bit_flipped_jit_archives(files, tmp_path, kind):
    data = H.archive_bytes(files[kind])
    rng = random.Random(kind)
    loaded = 0
    for i in range(150):
        flipped = bytearray(data)
        flipped[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        path = tmp_path / f"flip{i}.pt"
        path.write_bytes(flipped)
        loaded += _jit_same_or_refused(str(path), files[kind], kind)
    assert loaded < 40    # most bytes matter; the rest (timestamps, versions) change nothing


def test_bit_flipped_checkpoints(files, tmp_path):
    data = H.archive_bytes(files["checkpoint"])
    rng = random.Random(0)
    for i in range(300):
        flipped = bytearray(data)
        flipped[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        path = tmp_path / f"flip{i}.pt"
        path.write_bytes(flipped)
        refused(ember.load, str(path), "ember.load")


def test_trailing_bytes(files, tmp_path):
    for kind, load, function in (("module", ember.jit.load, "ember.jit.load"), ("checkpoint", ember.load, "ember.load")):
        path = tmp_path / f"trailing_{kind}.pt"
        path.write_bytes(H.archive_bytes(files[kind]) + b"\0")
        refused(load, str(path), function)


def test_checkpoint_stream_stops_at_its_checksum(files):
    """A file object may hold more after a checkpoint (two saved back to back): load reads one."""
    data = H.archive_bytes(files["checkpoint"])
    stream = io.BytesIO(bytes(data) + b"rest")
    assert set(ember.load(stream)) == {"w", "b", "n"} and stream.read() == b"rest"


# ---------------------------------------------------------------------------------------------
# wrong JSON types
# ---------------------------------------------------------------------------------------------
_OTHER_VALUES = [None, True, 0, -1, 1.5, "x", [], {}, [0], {"$node": 0}, 2 ** 70, {"$node": [0]}, "\x1b[2J",
                 {"$tuple": [[1]]}, 1e308]
_PROGRAM_VALUES = _OTHER_VALUES + [ember.ones(2), np.zeros(2), ember.ones(()), b"x", 1j, (1, [2]), float("nan"),
                                   ember.float32, {1: "x"}]


def _slots(tree, path=()):
    """The path of every item of a tree of dicts and lists."""
    items = tree.items() if isinstance(tree, dict) else enumerate(tree) if isinstance(tree, list) else ()
    for key, value in items:
        yield path + (key,)
        yield from _slots(value, path + (key,))


def _replaced(tree, path, value):
    tree = copy.deepcopy(tree)
    holder = tree
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = value
    return tree


@pytest.mark.parametrize("kind", ["module", "function"])
def test_jit_program_fields_of_other_types(files, tmp_path, kind):
    """Every field of the program, each given three of `_PROGRAM_VALUES` in turn (all of them over
    neighbouring fields): refused with a RuntimeError naming the file, or loaded. A program holds
    more than JSON: tensors and arrays too, which raise when compared to a string."""
    payload = H.read_archive(files[kind])
    target = str(tmp_path / "types.pt")
    for i, path in enumerate(_slots(payload)):
        for j in range(3):
            H.write_archive(target, _replaced(payload, path, _PROGRAM_VALUES[(3 * i + j) % len(_PROGRAM_VALUES)]))
            try:
                ember.jit.load(target)
            except RuntimeError as exc:
                assert str(exc).startswith(f"ember.jit.load: {target}: "), (path, str(exc))


def test_checkpoint_json_fields_of_other_types(files, tmp_path):
    manifest, blob = H.split_checkpoint(H.archive_bytes(files["checkpoint"]))
    rng = random.Random(0)
    for i, path in enumerate(list(_slots(manifest))):
        for value in rng.sample(_OTHER_VALUES, 3):
            target = tmp_path / f"types{i}.pt"
            target.write_bytes(H.resign(_replaced(manifest, path, value), blob))
            try:
                ember.load(str(target))
            except RuntimeError as exc:
                assert str(exc).startswith(f"ember.load: {target}: "), (path, value, str(exc))


def test_checkpoint_manifest_not_json(files, tmp_path):
    manifest, blob = H.split_checkpoint(H.archive_bytes(files["checkpoint"]))
    for i, text in enumerate([b"\xff\xfe", b"[" * 100_000, b'{"root": NaN}', b"1" * 5000, b'{"root": {"k": "none"}']):
        target = tmp_path / f"text{i}.pt"
        target.write_bytes(H.resign(None, blob, manifest_bytes=text))
        refused(ember.load, str(target), "ember.load")
