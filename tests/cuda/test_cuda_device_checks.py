"""Index checks on the device (ember/_cuda/device_checks.py): an embedding index or a
cross-entropy target out of range raises ember's CPU exception (type and message, from the CPU
kernel as the oracle: PyTorch CUDA's device assert would end this process's CUDA context) at
the next point where the host synchronises, not at the call; the flag is cleared after the
report and later work is right. The embedding's weight gradient matches PyTorch CUDA's."""
import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
device_checks = pytest.importorskip("ember._cuda.device_checks", reason="CuPy is not installed")

SYNC_POINTS = {
    "item": lambda t: t.sum().item(),
    "cpu": lambda t: t.cpu(),
    "tolist": lambda t: t.tolist(),
    "repr": lambda t: repr(t),
    "synchronize": lambda t: ember.cuda.synchronize(),
    "event": lambda t: _recorded_event().synchronize(),
    "stream": lambda t: ember.cuda.current_stream().synchronize(),
    "dlpack": lambda t: torch.from_dlpack(t),
}


def _recorded_event():
    event = ember.cuda.Event()
    event.record()
    return event


def _cpu_error(fn, *arrays):
    with pytest.raises(Exception) as info:
        fn(*(ember.tensor(a) for a in arrays))
    return info.value


def _embedding_bad():
    return np.random.default_rng(0).standard_normal((10, 4)).astype(np.float32), np.array([[1, 10], [3, 4]])


@pytest.mark.parametrize("point", list(SYNC_POINTS))
def test_embedding_index_error_raised_at_the_next_sync(point):
    w, idx = _embedding_bad()
    expected = _cpu_error(F.embedding, idx, w)
    out = F.embedding(ember.tensor(idx, device="cuda"), ember.tensor(w, device="cuda"))    # no raise: queued
    assert device_checks.pending
    with pytest.raises(type(expected)) as info:
        SYNC_POINTS[point](out)
    assert str(info.value) == str(expected)
    assert not device_checks.pending
    ember.cuda.synchronize()         # reported once: the flag is clear, and later work is right
    good = F.embedding(ember.tensor(idx % 10, device="cuda"), ember.tensor(w, device="cuda"))
    np.testing.assert_array_equal(good.cpu().numpy(), w[idx % 10])


@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("bad", [-1, 10, 2 ** 40])
def test_embedding_indices_of_both_dtypes_and_signs(index_dtype, bad):
    w = np.random.default_rng(1).standard_normal((10, 4)).astype(np.float32)
    if index_dtype == "int32" and bad > 2 ** 31:
        pytest.skip("not an int32 value")
    idx = np.array([0, 9, bad, 2], dtype=index_dtype)
    expected = _cpu_error(F.embedding, idx, w)
    with pytest.raises(type(expected), match="index out of range"):
        F.embedding(ember.tensor(idx, device="cuda"), ember.tensor(w, device="cuda")).cpu()


def test_cross_entropy_target_error_names_the_target():
    x = np.random.default_rng(2).standard_normal((6, 5)).astype(np.float32)
    t = np.array([0, 4, -100, 7, 1, 2])
    expected = _cpu_error(lambda a, b: F.cross_entropy(a, b), x, t)
    loss = F.cross_entropy(ember.tensor(x, device="cuda"), ember.tensor(t, device="cuda"))
    with pytest.raises(type(expected)) as info:
        loss.item()
    assert str(info.value) == str(expected) == "cross_entropy(): Target 7 is out of bounds."
    # ignore_index rows are not errors; the flag was cleared by the report
    t[3] = -100
    got = F.cross_entropy(ember.tensor(x, device="cuda"), ember.tensor(t, device="cuda")).item()
    want = torch.nn.functional.cross_entropy(torch.tensor(x, device="cuda"), torch.tensor(t, device="cuda")).item()
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_the_first_failure_in_stream_order_is_reported():
    w, idx = _embedding_bad()
    e = F.embedding(ember.tensor(idx, device="cuda"), ember.tensor(w, device="cuda"))
    F.cross_entropy(e.reshape(4, 4), ember.tensor([0, 1, 5, 0], device="cuda"))
    with pytest.raises(IndexError, match="embedding"):
        ember.cuda.synchronize()
    ember.cuda.synchronize()


def test_launch_blocking_reports_at_the_call(monkeypatch):
    monkeypatch.setattr(device_checks, "BLOCKING", True)
    w, idx = _embedding_bad()
    with pytest.raises(IndexError, match="embedding"):
        F.embedding(ember.tensor(idx, device="cuda"), ember.tensor(w, device="cuda"))


def test_pending_checks_are_bounded(monkeypatch):
    monkeypatch.setattr(device_checks, "LIMIT", 3)
    w, idx = _embedding_bad()
    W, good = ember.tensor(w, device="cuda"), ember.tensor(idx % 10, device="cuda")
    for _ in range(5):
        F.embedding(good, W)
        assert sum(map(len, device_checks.pending.values())) < 3
    ember.cuda.synchronize()
    assert not device_checks.pending
    F.embedding(good, W)
    F.embedding(ember.tensor(idx, device="cuda"), W)
    with pytest.raises(IndexError):
        F.embedding(good, W)      # the third pending check reads the flags
    assert not device_checks.pending


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("padding_idx", [None, 3])
def test_embedding_weight_gradient_matches_torch(dtype, padding_idx):
    rng = np.random.default_rng(3)
    w = rng.standard_normal((12, 8)).astype(dtype)
    idx = rng.integers(0, 12, (5, 7))
    idx[0, :3] = 3                     # repeated rows accumulate; row 3 is also the padding row
    g = rng.standard_normal((5, 7, 8)).astype(dtype)
    grads = []
    for lib in (ember, torch):
        weight = lib.tensor(w, device="cuda", requires_grad=True)
        out = lib.nn.functional.embedding(lib.tensor(idx, device="cuda"), weight, padding_idx=padding_idx)
        out.backward(lib.tensor(g, device="cuda"))
        grads.append(weight.grad.cpu().numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6 if dtype == "float32" else 1e-12, atol=1e-6)
    if padding_idx is not None:
        assert not grads[0][padding_idx].any()


def test_a_check_captured_in_a_cuda_graph_reports_after_a_bad_replay():
    w, idx = _embedding_bad()
    W, static = ember.tensor(w, device="cuda"), ember.tensor(idx % 10, device="cuda")
    F.embedding(static, W)             # warm-up: the device's flag exists before the capture
    ember.cuda.synchronize()
    graph = ember.cuda.CUDAGraph()
    with ember.cuda.graph(graph):
        out = F.embedding(static, W)
    graph.replay()
    np.testing.assert_array_equal(out.cpu().numpy(), w[idx % 10])
    static.copy_(ember.tensor(idx, device="cuda"))
    graph.replay()
    with pytest.raises(IndexError, match="embedding"):
        out.cpu()
