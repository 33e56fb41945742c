"""The engine's final callbacks (``Variable._execution_engine.queue_callback`` in PyTorch): queued
from a hook during backward, run once the whole graph has run (leaf gradients accumulated)."""
import pytest
import torch

import ember
from ember.autograd.engine import queue_callback


def run(lib, queue):
    w = lib.tensor([1.0, 2.0], requires_grad=True)
    v = lib.tensor([3.0], requires_grad=True)
    seen = []

    def hook(grad):
        queue(lambda: seen.append(("callback", w.grad.tolist(), v.grad.tolist())))
        seen.append(("hook", grad.tolist()))
    w.register_hook(hook)
    ((w * v).sum() * 2).backward()
    seen.append("after backward")
    return seen


def test_callback_runs_after_every_gradient_like_torch():
    theirs = run(torch, torch.autograd.Variable._execution_engine.queue_callback)
    ours = run(ember, queue_callback)
    assert ours == theirs


def test_callbacks_queued_by_a_callback_run_too():
    x = ember.ones(2, requires_grad=True)
    order = []
    x.register_hook(lambda g: queue_callback(lambda: (order.append(1), queue_callback(lambda: order.append(2)))))
    x.sum().backward()
    assert order == [1, 2]


def test_outside_backward_is_refused_like_torch():
    with pytest.raises(RuntimeError) as theirs:
        torch.autograd.Variable._execution_engine.queue_callback(lambda: None)
    with pytest.raises(RuntimeError) as ours:
        queue_callback(lambda: None)
    assert str(ours.value) == str(theirs.value)
