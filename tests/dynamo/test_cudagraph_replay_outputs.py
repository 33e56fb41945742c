"""Which outputs of a CUDA-graph replay are still alive at the next replay, and moving them
(ember/_cuda/replay_outputs.py), without a GPU: the same logic on NumPy-backed tensors, where
the "replay" writes new values into the static arrays in place as a graph replay would.

The oracle is the values each tensor held before the simulated replay (NumPy copies): a tensor
that was moved keeps them, aliasing among outputs survives the move, and every holder the logic
cannot move makes `moves` answer None (the caller then runs without the graph).
"""
import gc

import numpy as np
import pytest

import ember
from ember._core.storage import data_address, root_array
from ember._core.tensor import alias
from ember._cuda.replay_outputs import ArrayMemory, ReplayOutputs


def _numpy_memory():
    def rebuild(arr, old, new):
        return np.ndarray(arr.shape, arr.dtype, buffer=new, offset=data_address(arr) - data_address(old),
                          strides=arr.strides)
    return ArrayMemory(root_array, lambda arr: () if arr.base is None else (arr.base,), lambda root: root.copy(),
                       rebuild)


class _Graph:
    """A record with static outputs (the first two share one buffer, as outputs that alias each
    other do) whose replay writes `value` everywhere and hands out fresh aliases."""

    def __init__(self):
        buffer = ember.zeros(12)
        self.captured = [buffer[:6].view(2, 3), buffer[6:], ember.zeros(4)]
        assert root_array(self.captured[0]._data) is root_array(self.captured[1]._data)
        self.outputs = ReplayOutputs([t._data for t in self.captured], _numpy_memory())

    def replay(self, value):
        """The outputs of a replay, or None where a held output cannot be moved."""
        moves = self.outputs.moves()
        if moves is None:
            return None
        self.outputs.move(moves)
        root_array(self.captured[0]._data)[:] = value
        self.captured[2]._data[:] = value
        out = [alias(t, t._keys) for t in self.captured]
        self.outputs.handed_out(out)
        return out


def test_outputs_nobody_holds_are_not_moved():
    g = _Graph()
    g.replay(1.0)                     # nothing kept
    assert g.outputs.moves() == []
    out = g.replay(2.0)
    np.testing.assert_array_equal(out[2].numpy(), np.full(4, 2.0, np.float32))
    assert out[2]._data is g.captured[2]._data       # handed out over the static buffer itself


def test_a_held_output_keeps_its_value_across_replays():
    g = _Graph()
    loss = g.replay(1.0)[2]
    assert [t is loss for t in g.outputs.moves()] == [True]
    after = g.replay(2.0)
    np.testing.assert_array_equal(loss.numpy(), np.full(4, 1.0, np.float32))
    np.testing.assert_array_equal(after[2].numpy(), np.full(4, 2.0, np.float32))
    assert not np.shares_memory(loss._data, after[2]._data)
    loss.add_(1.0)                    # the moved tensor is an ordinary tensor: writable, its own memory
    np.testing.assert_array_equal(after[2].numpy(), np.full(4, 2.0, np.float32))


def test_outputs_sharing_a_buffer_still_share_it_after_the_move():
    g = _Graph()
    a, b, _ = g.replay(1.0)
    g.replay(2.0)
    np.testing.assert_array_equal(a.numpy(), np.ones((2, 3), np.float32))
    assert root_array(a._data) is root_array(b._data)          # one copy per allocation
    assert root_array(a._data) is not root_array(g.captured[0]._data)
    root_array(a._data)[:] = 5.0
    np.testing.assert_array_equal(b.numpy(), np.full(6, 5.0, np.float32))


def test_version_counter_and_autograd_metadata_stay_with_the_moved_tensor():
    g = _Graph()
    kept = g.replay(1.0)[2]
    kept.requires_grad_()
    version = kept._version
    g.replay(2.0)
    assert kept.requires_grad and kept._version == version


@pytest.mark.parametrize("holder", ["view", "detach", "slice", "raw array"])
def test_a_holder_that_cannot_be_moved_refuses_the_replay(holder):
    g = _Graph()
    out = g.replay(1.0)
    make = {"view": lambda: out[2].view(2, 2), "detach": lambda: out[2].detach(), "slice": lambda: out[0][1],
            "raw array": lambda: out[2]._data[1:]}
    held = make[holder]()
    before = np.array(held.numpy() if holder != "raw array" else held)
    assert g.replay(2.0) is None                      # the caller runs without the graph
    got = held.numpy() if holder != "raw array" else held
    np.testing.assert_array_equal(got, before)        # nothing was overwritten
    del held, got
    gc.collect()
    assert g.replay(3.0) is not None                  # gone: replays again


def test_a_dead_output_and_a_reassigned_tensor_are_not_moved():
    g = _Graph()
    out = g.replay(1.0)
    del out
    kept = g.replay(2.0)[2]
    kept.data = ember.ones(4)         # no longer over the static buffer
    assert g.outputs.moves() == []
    g.replay(3.0)
    np.testing.assert_array_equal(kept.numpy(), np.ones(4, np.float32))


def test_the_first_replay_has_nothing_to_move():
    g = _Graph()
    assert g.outputs.moves() == []


def test_checks_are_deferred_only_under_a_capture():
    # (the device half, a bounds check raised after a replay: tests/cuda/test_cuda_graph_training.py)
    from ember._cuda.graphs import defer_check
    assert defer_check(lambda: None) is False       # no capture underway: the caller checks now
