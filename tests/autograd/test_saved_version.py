"""A saved tensor that had no version counter when it was saved (SavedTensor makes none: it reads
the tensor's counter when unpacked) is still checked: every way of writing it after the save --
in place, through a view or a detached alias made after the save, through ``.data`` (which PyTorch
does not see) -- raises or not exactly as in PyTorch, with the same versions in the message."""
import numpy as np
import pytest
import torch

import ember

A = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.5]], dtype=np.float32)

def _through_view(h):
    with (torch if isinstance(h, torch.Tensor) else ember).no_grad():     # (ember records no in-place op on a view)
        h[0].add_(1)


WRITES = {
    "in-place": lambda h: h.mul_(2),
    "twice": lambda h: (h.add_(1), h.add_(1)),
    "view-after-save": _through_view,
    "detach-after-save": lambda h: h.detach().zero_(),
    "data": lambda h: h.data.add_(1),
    "none": lambda h: None,
}


def _run(T, write):
    x = T.tensor(A, requires_grad=True)
    h = x * 3               # an activation: no in-place write or view yet
    y = (h * h).sum()       # saves h
    write(h)
    try:
        y.backward()
    except RuntimeError as e:
        message = str(e)
        return "error", message[message.index("is at version"):message.index(" instead")]
    return "ok", x.grad.numpy().copy()


@pytest.mark.parametrize("name", sorted(WRITES))
def test_writes_after_save_are_seen_as_in_pytorch(name):
    got, want = _run(ember, WRITES[name]), _run(torch, WRITES[name])
    assert got[0] == want[0]
    if got[0] == "error":
        assert got[1] == want[1]
    else:
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
