"""CPU tensors mixed with CUDA tensors in one op, against PyTorch CUDA (ember/_core/device_rules.py):
refused by the device-checking wrapper (even 0-d), taken as scalars (0-d, TensorIterator ops), or
taken as indices (advanced indexing). Every program here is valid apart from the devices, so
PyTorch's CUDA run is safe (no device-side assert) and its outcome is the oracle."""
import numpy as np
import pytest
import torch

import ember
from oracle import assert_same


def _x(lib):
    return lib.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4)).to("cuda")


def _cpu(lib, v, dtype=None):
    arr = np.array(v)
    return lib.from_numpy(arr if dtype is None else arr.astype(dtype))   # stays on the CPU


CASES = {
    # device_check ExactSame: the wrapper refuses any CPU tensor, 0-d included
    "index_select": lambda lib: lib.index_select(_x(lib), 1, _cpu(lib, [3, 0])),
    "index_select_0d": lambda lib: lib.index_select(_x(lib), 0, _cpu(lib, 1)),
    "gather": lambda lib: lib.gather(_x(lib), 1, _cpu(lib, [[0], [1], [2]])),
    "gather_0d_input": lambda lib: lib.gather(_x(lib)[0, 0], 0, _cpu(lib, 0)),
    "scatter_value": lambda lib: _x(lib).scatter_(1, _cpu(lib, [[0], [1], [2]]), 5.0),
    "scatter_src": lambda lib: _x(lib).scatter(0, _cpu(lib, [[0, 1]]), _x(lib)),
    "scatter_reduce": lambda lib: _x(lib).scatter_reduce(0, _cpu(lib, [[0, 1]]), _x(lib), "sum"),
    "take": lambda lib: lib.take(_x(lib), _cpu(lib, [0, 5])),
    "put_": lambda lib: _x(lib).put_(_cpu(lib, [0, 5]), _x(lib)[0, :2]),
    "index_add_": lambda lib: _x(lib).index_add_(0, _cpu(lib, [0, 2]), _x(lib)[:2]),
    "index_copy_": lambda lib: _x(lib).index_copy_(0, _cpu(lib, [0, 2]), _x(lib)[:2]),
    "take_along_dim": lambda lib: lib.take_along_dim(_x(lib), _cpu(lib, [[0, 1]]), 1),
    "repeat_interleave": lambda lib: _x(lib).repeat_interleave(_cpu(lib, [1, 2, 1]), dim=0),
    "masked_select": lambda lib: lib.masked_select(_x(lib), _cpu(lib, [True, False, True, False])),
    "embedding": lambda lib: lib.nn.functional.embedding(_cpu(lib, [0, 2]), _x(lib)),
    "nll_loss_target": lambda lib: lib.nn.functional.nll_loss(_x(lib), _cpu(lib, [0, 1, 3])),
    "mm": lambda lib: lib.mm(_x(lib), _cpu(lib, np.ones((4, 2), np.float32))),
    "cat_0d": lambda lib: lib.cat([_x(lib).flatten(), _cpu(lib, [1.0], np.float32)]),
    "clamp_tensor_0d": lambda lib: lib.clamp(_x(lib), min=_cpu(lib, 2.0, np.float32)),
    "nextafter_0d": lambda lib: lib.nextafter(_x(lib), _cpu(lib, 0.0, np.float32)),
    "logaddexp_0d": lambda lib: lib.logaddexp(_x(lib), _cpu(lib, 0.0, np.float32)),
    # TensorIterator (NoCheck): a 0-d CPU tensor is a scalar, anything larger is refused
    "add_0d": lambda lib: _x(lib) + _cpu(lib, 2.0, np.float32),
    "add_1d": lambda lib: _x(lib) + _cpu(lib, [1.0, 2.0, 3.0, 4.0], np.float32),
    "where_0d": lambda lib: lib.where(_x(lib) > 3, _x(lib), _cpu(lib, -1.0, np.float32)),
    "lerp_0d": lambda lib: lib.lerp(_x(lib), _x(lib) * 2, _cpu(lib, 0.25, np.float32)),
    "mul_inplace_0d": lambda lib: _x(lib).mul_(_cpu(lib, 3.0, np.float32)),
    # advanced indexing: CPU indices anywhere, a CPU value only 0-d
    "getitem": lambda lib: _x(lib)[_cpu(lib, [2, 0])],
    "getitem_mask": lambda lib: _x(lib)[_cpu(lib, [True, False, True])],
    "setitem_0d_value": lambda lib: _setitem(_x(lib), _cpu(lib, [0, 2]), _cpu(lib, 7.0, np.float32)),
    "setitem_1d_value": lambda lib: _setitem(_x(lib), _cpu(lib, [0, 2]), _cpu(lib, [1.0] * 4, np.float32)),
    "index_put_accumulate_0d": lambda lib: _x(lib).index_put_((_cpu(lib, [1, 1]),), _cpu(lib, 2.0, np.float32), True),
    "index_put_accumulate_1d": lambda lib: _x(lib).index_put_((_cpu(lib, [1, 1]),), _cpu(lib, [2.0] * 4, np.float32),
                                                              True),
}


def _setitem(x, idx, value):
    x[idx] = value
    return x


def _outcome(lib, fn):
    try:
        return fn(lib), None
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return None, exc


@pytest.mark.parametrize("name", list(CASES))
def test_mixed_devices_like_pytorch_cuda(name):
    expected, texc = _outcome(torch, CASES[name])
    got, eexc = _outcome(ember, CASES[name])
    if texc is not None:
        assert isinstance(eexc, type(texc)), f"torch raised {type(texc).__name__}: {texc}; ember: {eexc!r}"
        if "same device" in str(texc):
            assert "same device" in str(eexc), str(eexc)
        return
    assert eexc is None, f"torch computed, ember raised {eexc!r}"
    assert got.device.type == "cuda"
    assert_same(got, expected)
