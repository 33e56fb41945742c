"""nn.DataParallel (a transparent wrapper without an accelerator), nn.PixelShuffle / PixelUnshuffle and
ember.onnx, against PyTorch 2.13's CPU build."""
import numpy as np
import pytest
import torch

import ember
from oracle import as_numpy, make


def linear_pair(in_f=4, out_f=3):
    e, t = ember.nn.Linear(in_f, out_f), torch.nn.Linear(in_f, out_f)
    t.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in e.state_dict().items()})
    return e, t


def test_data_parallel_wraps_transparently():
    e_inner, t_inner = linear_pair()
    e, t = ember.nn.DataParallel(e_inner), torch.nn.DataParallel(t_inner)
    assert e.module is e_inner and e.device_ids == t.device_ids == []
    assert list(e.state_dict()) == list(t.state_dict()) == ["module.weight", "module.bias"]
    assert repr(e).replace("ember", "torch") == repr(t)
    x = make((5, 4))
    np.testing.assert_allclose(as_numpy(e(ember.from_numpy(x))), as_numpy(t(torch.from_numpy(x))), rtol=1e-6)
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]


def test_data_parallel_state_dict_round_trips_and_device_ids_are_ignored():
    e = ember.nn.parallel.DataParallel(ember.nn.Linear(4, 3), device_ids=[0], output_device=0)
    t = torch.nn.parallel.DataParallel(torch.nn.Linear(4, 3), device_ids=[0], output_device=0)
    assert e.device_ids == t.device_ids == []
    t.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in e.state_dict().items()})
    e2 = ember.nn.DataParallel(ember.nn.Linear(4, 3))
    e2.load_state_dict(e.state_dict())
    x = make((2, 4))
    np.testing.assert_allclose(as_numpy(e2(ember.from_numpy(x))), as_numpy(t(torch.from_numpy(x))), rtol=1e-6)


def test_functional_data_parallel_needs_a_device():
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="device type could not be determined"):
            lib.nn.parallel.data_parallel(lib.nn.Linear(2, 2), lib.ones(1, 2))


@pytest.mark.parametrize("shape, r", [((1, 8, 3, 3), 2), ((2, 9, 2, 4), 3), ((4, 3, 2, 2), 1), ((2, 3, 4, 8, 2, 2), 2),
                                      ((1, 6, 3, 3), 2), ((8, 2, 2), 2)])
def test_pixel_shuffle_module_and_functional(shape, r):
    x = make(shape)
    results = []
    for lib in (ember, torch):
        try:
            a = lib.tensor(x, requires_grad=True)
            y = lib.nn.PixelShuffle(r)(a)
            z = lib.nn.PixelUnshuffle(r)(y)
            (y.sum() * 2 + (z * z).sum()).backward()
            results.append((as_numpy(y), as_numpy(z), as_numpy(a.grad),
                            as_numpy(lib.nn.functional.pixel_shuffle(a.detach(), r))))
        except Exception as exc:  # noqa: BLE001 - compared below
            results.append(type(exc))
    if isinstance(results[1], type):
        assert results[0] is results[1]
        return
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_pixel_shuffle_repr_and_bad_factor():
    assert repr(ember.nn.PixelShuffle(3)) == repr(torch.nn.PixelShuffle(3))
    assert repr(ember.nn.PixelUnshuffle(2)) == repr(torch.nn.PixelUnshuffle(2))
    for lib in (ember, torch):
        with pytest.raises(RuntimeError):
            lib.nn.PixelUnshuffle(2)(lib.ones(1, 1, 3, 3))


def test_onnx_module_exists_and_export_says_it_is_not_implemented(tmp_path):
    import ember.onnx
    assert ember.onnx.is_in_onnx_export() is torch.onnx.is_in_onnx_export()
    path = tmp_path / "m.onnx"
    with pytest.raises(NotImplementedError, match="ember.onnx.export"):
        ember.onnx.export(ember.nn.Linear(2, 2), (ember.ones(1, 2),), str(path))
    assert not path.exists()
