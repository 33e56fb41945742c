"""creation operators (table rows) and the Python-level constructors."""
from ..registry import Op  # noqa: F401
from ..cpu import creation as cpu

OPS = []


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of `data` (nested lists, numbers, arrays, tensors)."""
    t = cpu.tensor_from_data(data, dtype)
    if device is not None and str(device) != "cpu":
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


PYTHON_FUNCTIONS = {"": {"tensor": tensor, "from_numpy": cpu.from_numpy}}
