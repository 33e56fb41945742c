"""Every dynamo test starts and ends with empty compile caches (ember's and torch's), so frame
counts and recompilations measured by one test never depend on another."""
import pytest
import torch

import ember


def _reset_all():
    torch._dynamo.reset()
    ember._dynamo.reset()


@pytest.fixture(autouse=True)
def _reset_dynamo_caches():
    _reset_all()
    yield
    _reset_all()

