"""ember.set_default_device / get_default_device and set_float32_matmul_precision, against
PyTorch (on the CPU build: the meta device stands in for an accelerator)."""
import pytest
import torch

import ember


@pytest.fixture(autouse=True)
def _restore():
    yield
    ember.set_default_device(None)
    torch.set_default_device(None)


@pytest.mark.parametrize("make", [
    lambda lib: lib.zeros(2, 3), lambda lib: lib.ones(4), lambda lib: lib.empty(2), lambda lib: lib.arange(5),
    lambda lib: lib.full((2,), 1.5), lambda lib: lib.tensor([1.0, 2.0]), lambda lib: lib.eye(3),
    lambda lib: lib.randn(3), lambda lib: lib.zeros(2, device="cpu"),
])
def test_factories_follow_the_default_device(make):
    for device in ("meta", "cpu"):
        ember.set_default_device(device)
        torch.set_default_device(device)
        e, t = make(ember), make(torch)
        assert str(e.device) == str(t.device) and tuple(e.shape) == tuple(t.shape) and e.dtype.name == str(t.dtype)[6:]
        assert str(ember.get_default_device()) == str(torch.get_default_device())


def test_ops_on_tensors_keep_their_device():
    ember.set_default_device("meta")
    x = ember.from_numpy(__import__("numpy").ones(3, dtype="float32"))   # from_numpy is always CPU
    assert x.device.type == "cpu" and (x + 1).device.type == "cpu" and ember.zeros_like(x).device.type == "cpu"
    ember.set_default_device(None)
    assert ember.zeros(1).device.type == "cpu"


def test_float32_matmul_precision_sets_the_tf32_switch():
    saved = torch.get_float32_matmul_precision()
    try:
        for p in ("high", "medium", "highest"):
            ember.set_float32_matmul_precision(p)
            torch.set_float32_matmul_precision(p)
            assert ember.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == p
            assert ember.backends.cuda.matmul.allow_tf32 == torch.backends.cuda.matmul.allow_tf32
        for lib in (ember, torch):
            lib.set_float32_matmul_precision("high")
            with pytest.warns(UserWarning, match="no effect"):
                lib.set_float32_matmul_precision("fast")
            assert lib.get_float32_matmul_precision() == "high"
    finally:
        ember.set_float32_matmul_precision("highest")
        torch.set_float32_matmul_precision(saved)
