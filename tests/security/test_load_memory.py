"""Peak memory of ember.jit.load / ember.load on lying sizes and huge declared shapes: the file is refused (RuntimeError naming it) or, for a legitimately declared tensor, loaded,
and the peak stays under 2x the file size plus the tensors the file legitimately declares.

Measured with tracemalloc (NumPy reports its buffers to it) around the load, after a warm-up load
that builds the lazily made tables (allowlist, dtype tables), so only the file's cost is measured.
`OVERHEAD` covers what any load allocates whatever the file (module objects, messages, frames);
the attacks here would cost hundreds of MiB.
"""
import io
import os
import tracemalloc

import numpy as np
import pytest

import ember
import hostile_archives as H
from ember.serialization import JIT_MAGIC

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


def _jit_resigned(src, dst, edit=lambda manifest: None, **lengths):
    """`src` (a jit archive) with its checkpoint manifest edited by `edit`, its lengths overridden, re-signed."""
    manifest, blob = H.split_checkpoint(H.archive_bytes(src))
    edit(manifest)
    with open(dst, "wb") as fh:
        fh.write(H.resign(manifest, blob, magic=JIT_MAGIC, **lengths))


@pytest.mark.parametrize("field", ["mlen", "dlen"])
def test_jit_archive_declaring_huge_lengths(legit, tmp_path, field):
    path = str(tmp_path / "lengths.pt")
    _jit_resigned(legit["module"], path, **{field: 1 << 40})
    assert "truncated" in str(check_bounded(path, ember.jit.load))


def test_jit_archive_declaring_huge_shape(legit, tmp_path):
    def huge(manifest):
        entry = next(e for e in manifest["tensors"] if len(e["shape"]) == 1)
        entry["shape"] = [BOMB // 4]
    path = str(tmp_path / "shape.pt")
    _jit_resigned(legit["module"], path, huge)
    assert "outside its storage" in str(check_bounded(path, ember.jit.load))


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


def test_checkpoint_stream_declaring_huge_length(legit):
    manifest, blob = H.split_checkpoint(_checkpoint({"w": ember.ones(4)}))
    data = H.resign(manifest, blob, dlen=1 << 40)
    peak, error = peak_of(lambda: ember.load(H.Unseekable(data)))
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
