"""The one "what a tensor looked like" record (ember._core.tensor_spec): spec_of compares equal
exactly when class, device, requires_grad, dtype, shape and strides agree; meta_like keeps all of
them on a meta tensor. Both users of the spec see a stride change: dynamo's TENSOR_MATCH guard and
the jit graph executor's plan key (a transposed input of the same shape gets its own plan)."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._core.tensor_spec import meta_like, spec_of, spec_strides


def _base():
    return ember.from_numpy(np.arange(6, dtype="float32").reshape(2, 3))


LOOKALIKES = {
    "same values, new tensor": lambda: _base() + 1,
    "a view of the same look": lambda: _base().view(2, 3),
}
DIFFERENT = {
    "dtype": lambda: _base().to(ember.float64),
    "shape": lambda: _base().reshape(3, 2),
    "strides": lambda: ember.from_numpy(np.arange(6, dtype="float32").reshape(3, 2)).t(),
    "requires_grad": lambda: _base().requires_grad_(True),
    "device": lambda: _base().to("meta"),
    "class": lambda: ember.nn.Parameter(_base(), requires_grad=False),
    "rank": lambda: _base().unsqueeze(0),
}


@pytest.mark.parametrize("name", sorted(LOOKALIKES))
def test_same_look_same_spec(name):
    assert spec_of(LOOKALIKES[name]()) == spec_of(_base())
    assert hash(spec_of(LOOKALIKES[name]())) == hash(spec_of(_base()))


@pytest.mark.parametrize("name", sorted(DIFFERENT))
def test_each_difference_changes_the_spec(name):
    other = DIFFERENT[name]()
    assert tuple(other.shape) == (2, 3) or name in ("shape", "rank")
    assert spec_of(other) != spec_of(_base())


@pytest.mark.parametrize("make", [_base, DIFFERENT["strides"], DIFFERENT["requires_grad"],
                                  lambda: ember.ones(4, 1, 3)[:, :, 1:], lambda: ember.ones(0, 3)])
def test_meta_like_keeps_the_look_and_no_data(make):
    t = make()
    m = meta_like(t)
    assert m.device.type == "meta" and m.dtype == t.dtype and tuple(m.shape) == tuple(t.shape)
    assert m.stride() == t.stride() and m.requires_grad == t.requires_grad
    assert meta_like(m).stride() == m.stride()
    assert spec_strides(spec_of(m)) == m.stride()
    with pytest.raises(TypeError):
        m.numpy()


def test_jit_plan_key_tells_strides_apart():
    def f(x):
        return x * 2 + 1

    scripted = ember.jit.script(f)
    contiguous = _base()
    transposed = DIFFERENT["strides"]()
    for _ in range(2):
        np.testing.assert_allclose(scripted(contiguous).numpy(), f(contiguous).numpy())
    stats = dict(scripted.get_debug_state()["stats"])
    np.testing.assert_allclose(scripted(transposed).numpy(), f(transposed).numpy())
    after = scripted.get_debug_state()["stats"]
    assert after["bailouts"] == stats["bailouts"] + 1        # not the contiguous input's plan
    text = str(scripted.graph_for(transposed))
    assert "Float(2, 3, strides=[1, 2], requires_grad=0, device=cpu)" in text
    assert "Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)" in str(scripted.graph_for(contiguous))
