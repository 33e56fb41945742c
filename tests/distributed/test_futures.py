"""``ember.futures.Future`` (what DDP communication hooks return) against ``torch.futures.Future``:
set_result / wait / value / then chains, and the errors of a future used too early."""
import pytest
import torch

import ember
from ember.futures import Future


@pytest.mark.parametrize("make", [Future, torch.futures.Future])
def test_then_chains_run_in_order_on_the_parent_value(make):
    parent = make()
    calls = []
    doubled = parent.then(lambda f: calls.append("double") or f.value() * 2)
    plus_one = doubled.then(lambda f: calls.append("plus") or f.value() + 1)
    parent.set_result(20)
    assert plus_one.wait() == 41 and doubled.value() == 40 and parent.value() == 20
    assert calls == ["double", "plus"]
    assert parent.done() and plus_one.done()


def test_value_before_completion_and_errors():
    f = Future()
    assert not f.done()
    with pytest.raises(RuntimeError, match="not completed"):
        f.value()
    with pytest.raises(RuntimeError, match="set_result"):
        f.wait()
    with pytest.raises(TypeError, match="callable"):
        f.then(3)
    f.set_result(ember.ones(2))
    with pytest.raises(RuntimeError, match="already has a result"):
        f.set_result(1)
    chained = f.then(lambda fut: fut.value() + 1)
    with pytest.raises(RuntimeError, match="already has a result or a source"):
        chained.set_result(0)
    assert chained.wait().tolist() == [2.0, 2.0]


def test_future_type_annotation_and_lazy_module():
    assert Future[ember.Tensor] is Future
    assert ember.futures.Future is Future
