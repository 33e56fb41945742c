"""Fixtures of the op tests."""
import pytest

from ember.ops import native


@pytest.fixture
def native_calls(monkeypatch):
    """The names of the native kernels looked up during the test (each call looks its kernel up)."""
    seen = []
    original = native.kernel

    def spy(name, dtype):
        seen.append(name)
        return original(name, dtype)
    monkeypatch.setattr(native, "kernel", spy)
    return seen
