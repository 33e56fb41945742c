"""``x[i]`` with an int index in optimised plans (ember/jit/executor/codegen.py `_getitem_call`): the
plan runs tensor_indexing.getitem's CPU path in line (a view of the array sharing x's version
counter) and calls ``x[i]`` for anything else. Oracles: ember eager on the same inputs, torch for
values, exception types and view semantics."""
from __future__ import annotations

import types

import numpy as np
import pytest
import torch

import ember


def _script(fn):
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__)    # script() caches per function
    copy.__annotations__ = dict(fn.__annotations__)
    return ember.jit.script(copy)


def _plan_source(sf):
    return next(iter(sf.get_debug_state()["plans"].values())).source


def pick(x, i: int):
    return x[i]


def rows(xs):
    acc = xs[0] * 0
    for t in range(xs.shape[0]):
        acc = acc + xs[t] * float(t)
    return acc


def _arr(seed, *shape, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def test_a_loop_over_rows_equals_eager_and_torch_and_runs_in_line():
    xs = ember.from_numpy(_arr(0, 6, 2, 3))
    sf = _script(rows)
    for _ in range(3):
        got = sf(xs)
    assert "._data[" in _plan_source(sf)           # the in-line path is in the plan
    np.testing.assert_array_equal(got.numpy(), rows(xs).numpy())
    t = torch.from_numpy(xs.numpy())
    np.testing.assert_allclose(got.numpy(), sum(t[k] * float(k) for k in range(6)).numpy(), rtol=1e-6)


@pytest.mark.parametrize("shape", [(5, 3), (5,), (4, 1, 2)])
@pytest.mark.parametrize("i", [0, 3, -1, -4])
def test_indices_and_ranks_equal_eager(shape, i):
    x = ember.from_numpy(_arr(1, *shape))
    sf = _script(pick)
    sf(x, 0), sf(x, 0)
    got, want = sf(x, i), pick(x, i)
    assert tuple(got.shape) == tuple(want.shape) == tuple(torch.from_numpy(x.numpy())[i].shape)
    assert got.stride() == want.stride() and got.storage_offset() == want.storage_offset()
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("shape", [(5,), (5, 2)])
def test_the_result_is_a_view_sharing_the_version_counter(shape):
    x = ember.from_numpy(_arr(2, *shape))
    sf = _script(pick)
    sf(x, 1), sf(x, 1)
    y = sf(x, 1)
    before = x._version
    y.add_(1.0)                                    # writes through to x, as torch's x[1].add_(1)
    t = torch.from_numpy(_arr(2, *shape))
    t[1].add_(1.0)
    np.testing.assert_array_equal(x.numpy(), t.numpy())
    assert x._version == y._version == before + 1


@pytest.mark.parametrize("i", [5, -6, 100])
def test_out_of_bounds_raises_eagers_error(i):
    x = ember.from_numpy(_arr(3, 5, 2))
    sf = _script(pick)
    sf(x, 0), sf(x, 0)
    with pytest.raises(IndexError) as eager:
        pick(x, i)
    with pytest.raises(IndexError) as scripted:
        sf(x, i)
    with pytest.raises(IndexError):
        torch.from_numpy(x.numpy())[i]
    assert str(eager.value) in str(scripted.value)


def test_a_0d_tensor_raises_eagers_error():
    x = ember.tensor(2.0)
    sf = _script(pick)
    with pytest.raises(IndexError) as eager:
        pick(x, 0)
    for _ in range(3):                              # profiling runs raise too, then no plan is made
        with pytest.raises(IndexError) as scripted:
            sf(x, 0)
        assert str(eager.value) in str(scripted.value)


def test_a_tensor_recording_autograd_takes_the_binding():
    x = ember.from_numpy(_arr(4, 4, 3)).requires_grad_()
    sf = _script(rows)
    for _ in range(3):
        out = sf(x)
    out.sum().backward()
    g = x.grad.clone()
    x.grad = None
    rows(x).sum().backward()
    np.testing.assert_array_equal(g.numpy(), x.grad.numpy())
    assert out.requires_grad


def test_a_dispatch_mode_sees_the_select():
    x = ember.from_numpy(_arr(5, 4, 3))
    sf = _script(pick)
    sf(x, 2), sf(x, 2)
    with ember.profiler.profile() as prof:
        got = sf(x, 2)
    np.testing.assert_array_equal(got.numpy(), x.numpy()[2])
    names = " ".join(str(getattr(e, "name", "")) for e in prof.events())
    assert "aten::select" in names                  # what eager's x[2] shows under the profiler
