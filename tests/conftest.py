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
    yield
    config.cache_dir = old
