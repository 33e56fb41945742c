"""Peak memory of ember.jit.load / ember.load on decompression bombs, lying sizes and huge declared
shapes: the file is refused (RuntimeError naming it) or, for a legitimately declared tensor, loaded,
and the peak stays under 2x the file size plus the tensors the file legitimately declares.

Measured with tracemalloc (NumPy reports its buffers to it) around the load, after a warm-up load
that builds the lazily made tables (allowlist, dtype tables), so only the file's cost is measured.
`OVERHEAD` covers what any load allocates whatever the file (module objects, messages, frames);
the attacks here would cost hundreds of MiB.
"""
import io
import json
import os
import tracemalloc
import zipfile

import numpy as np
import pytest

import ember
import hostile_archives as H

MiB = 1 << 20
OVERHEAD = 2 * MiB
BOMB = 200 * MiB      # what the 0.19 MiB archive expanded to


def peak_of(fn) -> tuple:
    """(peak bytes allocated while fn() runs, its exception or None)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    error = None
    try:
        fn()
    except RuntimeError as exc:
        error = exc
    finally:
        peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
    return peak, error


def check_bounded(path, load, declared: int = 0, refused: bool = True):
    size = os.path.getsize(path) if isinstance(path, str) else len(path.getvalue())
    peak, error = peak_of(lambda: load(path))
    name = path if isinstance(path, str) else None
    if refused:
        assert error is not None, "the file was accepted"
        if name is not None:
            assert f": {name}: " in str(error), str(error)
    else:
        assert error is None, str(error)
    assert peak < 2 * size + declared + OVERHEAD, f"peak {peak / MiB:.1f} MiB for a {size / MiB:.2f} MiB file"
    return error


@pytest.fixture(scope="module")
def legit(tmp_path_factory):
    paths = H.save_legit(str(tmp_path_factory.mktemp("legit")))
    for kind, path in paths.items():   # warm-up: lazily built tables
        H.call_legit(ember.jit.load(path), kind)
    ember.load(io.BytesIO(_checkpoint({"w": ember.ones(2)})))
    return paths


def _checkpoint(obj) -> bytes:
    buf = io.BytesIO()
    ember.save(obj, buf)
    return buf.getvalue()


def _stream_entry(zf, name, chunks, compress):
    info = zipfile.ZipInfo(name)
    info.compress_type = compress
    with zf.open(info, "w", force_zip64=True) as w:
        for chunk in chunks:
            w.write(chunk)


def _bomb_archive(src, dst, target):
    """`src` with entry `target` replaced by a deflated one expanding to BOMB bytes."""
    payload, entries = H.read_archive(src)
    with zipfile.ZipFile(dst, "w") as zf:
        for name, data in entries:
            if name != target:
                zf.writestr(name, data)
                continue
            if name == H.GRAPHS:
                head = json.dumps(payload).encode()
            else:
                head = H.npy_bytes({"descr": "<f4", "fortran_order": False, "shape": (BOMB // 4,)}, b"")
            _stream_entry(zf, name, [head] + [b" " * MiB] * (BOMB // MiB), zipfile.ZIP_DEFLATED)


@pytest.mark.parametrize("target", [H.GRAPHS, "data/0.npy"])
def test_jit_decompression_bomb(legit, tmp_path, target):
    path = str(tmp_path / "bomb.pt")
    _bomb_archive(legit["module"], path, target)
    assert os.path.getsize(path) < MiB
    assert "compressed" in str(check_bounded(path, ember.jit.load))


def test_jit_stored_entry_declaring_200_mib(legit, tmp_path):
    data = H.archive_bytes(legit["module"])
    H.set_central_field(data, H.central_entries(data)[0], "usize", BOMB)
    path = tmp_path / "lying.pt"
    path.write_bytes(data)
    check_bounded(str(path), ember.jit.load)


def test_jit_npy_declaring_huge_shape(legit, tmp_path):
    payload, entries = H.read_archive(legit["module"])
    npy = H.npy_bytes({"descr": "<f4", "fortran_order": False, "shape": (BOMB // 4,)}, b"\0" * 64)
    path = str(tmp_path / "shape.pt")
    H.write_archive(path, None, [(n, npy if n == "data/0.npy" else b) for n, b in entries])
    check_bounded(path, ember.jit.load)


def test_jit_archive_with_many_entries(legit, tmp_path):
    payload, entries = H.read_archive(legit["module"])
    path = str(tmp_path / "entries.pt")
    H.write_archive(path, None, entries, extra=[(f"data/{i}.npy", b"") for i in range(3, 30000)])
    assert "30001 entries" in str(check_bounded(path, ember.jit.load))


def test_jit_legit_large_tensor_loads_within_bound(tmp_path):
    lin = ember.nn.Linear(1024, 1024)
    path = str(tmp_path / "large.pt")
    ember.jit.save(ember.jit.script(lin), path)
    check_bounded(path, ember.jit.load, declared=(1024 * 1024 + 1024) * 4, refused=False)


# ---------------------------------------------------------------------------------------------
# ember.load
# ---------------------------------------------------------------------------------------------
def _write(tmp_path, name, data) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("field", ["mlen", "dlen"])
def test_checkpoint_declaring_huge_lengths(legit, tmp_path, field):
    manifest, blob = H.split_checkpoint(_checkpoint({"w": ember.ones(4)}))
    path = _write(tmp_path, "lengths.pt", H.resign(manifest, blob, **{field: 1 << 40}))
    assert "truncated" in str(check_bounded(path, ember.load))


class _Unseekable(io.RawIOBase):
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


def test_checkpoint_stream_declaring_huge_length(legit):
    manifest, blob = H.split_checkpoint(_checkpoint({"w": ember.ones(4)}))
    data = H.resign(manifest, blob, dlen=1 << 40)
    peak, error = peak_of(lambda: ember.load(_Unseekable(data)))
    assert error is not None and "ember.load: <pipe>: truncated" in str(error)
    assert peak < 2 * len(data) + OVERHEAD


def test_checkpoint_declaring_huge_shape(legit, tmp_path):
    manifest, blob = H.split_checkpoint(_checkpoint({"w": ember.ones(4)}))
    manifest["tensors"][0]["shape"] = [BOMB]
    path = _write(tmp_path, "shape.pt", H.resign(manifest, blob))
    assert "outside its storage" in str(check_bounded(path, ember.load))


def test_checkpoint_expanded_tensor_and_array_stay_views(legit, tmp_path):
    """A stride-0 tensor (what ``expand`` makes) of 200 MiB over 4 bytes is a legitimate saved tensor:
    it loads as a view, and as a NumPy array (an "ndarray" node) it comes back a read-only view
    instead of 200 MiB of copies."""
    manifest, blob = H.split_checkpoint(_checkpoint({"t": ember.ones(1), "a": np.ones(1, np.float32)}))
    for entry in manifest["tensors"]:
        entry["shape"], entry["strides"] = [BOMB // 4], [0]
    path = _write(tmp_path, "expanded.pt", H.resign(manifest, blob))
    check_bounded(path, ember.load, refused=False)
    out = ember.load(path)
    assert out["t"].shape == (BOMB // 4,) and out["t"].stride() == (0,)
    assert out["a"].shape == (BOMB // 4,) and not out["a"].flags.writeable
    assert float(out["t"][12345]) == 1.0 and out["a"][-1] == 1.0


def test_checkpoint_legit_large_tensor_loads_within_bound(tmp_path):
    t = ember.randn(1024, 1024)
    path = _write(tmp_path, "large.pt", _checkpoint({"t": t}))
    check_bounded(path, ember.load, declared=t.numel() * 4, refused=False)
