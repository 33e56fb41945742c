import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
    yield


@pytest.fixture(autouse=True, scope="session")
def _kernel_cache_dir(tmp_path_factory):
    """Compiled kernels go to a per-session temp dir, never ~/.cache/ember (ember.compile's default
    backend compiles C)."""
    from ember._inductor import config
    old, config.cache_dir = config.cache_dir, str(tmp_path_factory.mktemp("ember_cache"))
    # the AOT graph cache off: tests patch tracing internals and read trace logs per test, which an
    # entry stored by an earlier test would skip (tests/functorch/test_aot_cache.py turns it on)
    old_aot, config.aot_cache = config.aot_cache, False
    yield
    config.cache_dir, config.aot_cache = old, old_aot


@pytest.fixture
def strict_fuser(monkeypatch):
    """ember._inductor.config.strict on: a graph the fuser cannot generate fails the test instead of
    falling back to eager (modules opt in with ``pytestmark = pytest.mark.usefixtures("strict_fuser")``)."""
    from ember._inductor import config
    monkeypatch.setattr(config, "strict", True)
