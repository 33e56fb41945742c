"""tests/cuda run on a machine with a GPU (scripts/device_cuda.sh); elsewhere every test here is
skipped, saying why. The oracle is PyTorch on the same GPU."""
import sys

import pytest
import torch

import ember


def _why_not():
    if not ember.cuda.is_available():
        return "no CUDA device: ember.cuda.is_available() is False (CuPy missing, or no GPU/driver)"
    if not torch.cuda.is_available():
        return "no CUDA oracle: this PyTorch build has no CUDA"
    return None


def pytest_collection_modifyitems(config, items):
    reason = _why_not()
    if reason is None:
        return
    for item in items:
        if "tests/cuda/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(autouse=True)
def _exact_float32():
    """PyTorch's CUDA defaults use TF32 in cuDNN convolutions: off, so both compute in float32."""
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


@pytest.fixture(autouse=True)
def _no_device_error_left():
    """A device-side index error (ember/_cuda/device_checks.py) that a test leaves unreported fails
    that test, at its teardown, rather than the next test that synchronises."""
    yield
    checks = sys.modules.get("ember._cuda.device_checks")
    if checks is not None and checks.pending:
        ember.cuda.synchronize()


@pytest.fixture
def counted(monkeypatch):
    """Counts of graphs captured and replayed by CUDAGraph (reduce-overhead's tests)."""
    from ember._cuda import graphs
    counts = {"captured": 0, "replayed": 0}
    end, replay = graphs.CUDAGraph.capture_end, graphs.CUDAGraph.replay

    def counting_end(self):
        end(self)
        counts["captured"] += 1

    def counting_replay(self):
        counts["replayed"] += 1
        replay(self)
    monkeypatch.setattr(graphs.CUDAGraph, "capture_end", counting_end)
    monkeypatch.setattr(graphs.CUDAGraph, "replay", counting_replay)
    return counts
