"""A Python number on the left of an operator (``2/sqrt(pi) * t``) is held in double precision, as
ATen's wrapped scalars are: against a float64 tensor no digit is lost, and the result dtype is still
the one the number promotes to (float32 for ``2.5 * int_tensor``). Checked against PyTorch."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import ember

NUMBERS = (1.0 / math.sqrt(2.0 * math.pi), math.pi, 1e-300, 1e300, 0.1, 3, True, 2 + 0.5j)
OPS = {"mul": lambda n, t: n * t, "add": lambda n, t: n + t, "sub": lambda n, t: n - t,
       "div": lambda n, t: n / t, "pow": lambda n, t: n ** t}


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
def test_reflected_number_matches_torch(op, dtype):
    data = np.array([0.634653257760708, 1.5, -2.25]) if dtype.startswith("float") else np.array([1, 2, 3])
    data = data.astype(dtype) if dtype != "bool" else np.array([True, False, True])
    for number in NUMBERS:
        if op == "sub" and dtype == "bool" and isinstance(number, bool):
            continue            # bool - bool: torch refuses, a separate rule
        try:
            expected = OPS[op](number, torch.from_numpy(data.copy()))
        except Exception as e:
            with pytest.raises(type(e)):
                OPS[op](number, ember.from_numpy(data.copy()))
            continue
        got = OPS[op](number, ember.from_numpy(data.copy()))
        assert str(got.dtype).split(".")[1] == str(expected.dtype).split(".")[1], (op, number, dtype)
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-15 if dtype == "float64" else 1e-6,
                                   equal_nan=True, err_msg=f"{op} {number} {dtype}")
