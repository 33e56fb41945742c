"""A tour of eager ember: tensors, the dispatcher, meta tensors and user-defined operators.

    PYTHONPATH=. .venv/bin/python examples/eager_tour.py

Every line below is also valid PyTorch: change the import to ``import torch`` and it runs.
"""
from __future__ import annotations

import time

import numpy as np

import ember as torch
from ember._core.dispatch import keys_of
from ember.utils._python_dispatch import TorchDispatchMode


def section(title):
    print(f"\n== {title} " + "=" * max(0, 70 - len(title)))


def tensors():
    section("tensors, dtypes and promotion")
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    print(x)
    print("x.t() is a view:", x.t().stride(), "shares memory:", x.t().data_ptr() == x.data_ptr())
    i = torch.tensor([1, 2, 3], dtype=torch.int32)
    print("int32 + 2.5 ->", (i + 2.5).dtype, "| uint8 + int8 ->", torch.promote_types(torch.uint8, torch.int8))
    y = x[1:, ::2]
    y.mul_(10)
    print("writing through a slice changes the base:\n", x)
    print("version counter after one in-place op on a view:", x._version)
    print("softmax rows:", torch.softmax(torch.tensor([[1.0, 2.0, 3.0]]), dim=1))


def dispatcher():
    section("the dispatcher")
    x = torch.randn(2, 3)
    print("key set of a CPU tensor:", [k.name for k in keys_of(x._keys)])
    x.requires_grad_(True)
    print("after requires_grad_():  ", [k.name for k in keys_of(x._keys)])

    class LogOps(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            shapes = [tuple(a.shape) for a in args if isinstance(a, torch.Tensor)]
            print(f"  {func.name:<28} inputs {shapes}")
            return out

    print("a Python mode sees every operator a small MLP layer runs:")
    w, b = torch.randn(4, 3), torch.zeros(4)
    with LogOps():
        torch.nn.functional.gelu(torch.nn.functional.linear(torch.randn(2, 3), w, b)).sum()
    print("the generated binding behind torch.add:")
    print("  " + torch.ops.registry.binding_source("aten::add.Tensor").replace("\n", "\n  "))


def meta():
    section("meta tensors: shapes without data")
    images = torch.empty(64, 3, 224, 224, device="meta")
    weight = torch.empty(16, 3, 3, 3, device="meta")
    out = torch.nn.functional.conv2d(images, weight, stride=2, padding=1)
    pooled = torch.nn.functional.max_pool2d(out, 2)
    print("conv2d -> max_pool2d on meta:", tuple(out.shape), "->", tuple(pooled.shape), pooled.dtype)


def user_ops():
    section("a user-defined operator (ember.library)")

    @torch.library.custom_op("demo::smooth_clip", mutates_args=())
    def smooth_clip(x: torch.Tensor, limit: float) -> torch.Tensor:
        return torch.tanh(x / limit) * limit

    @smooth_clip.register_fake
    def _(x, limit):
        return torch.empty_like(x)

    x = torch.linspace(-4, 4, 5)
    print("ember.ops.demo.smooth_clip:", torch.ops.demo.smooth_clip(x, 2.0))
    print("on meta:", torch.ops.demo.smooth_clip(x.to("meta"), 2.0).shape)


def numerics():
    section("a numerical program: least squares by gradient descent (no autograd yet)")
    torch.manual_seed(0)
    X = torch.randn(256, 3)
    true_w = torch.tensor([[2.0], [-1.0], [0.5]])
    y = X @ true_w + 0.01 * torch.randn(256, 1)
    w = torch.zeros(3, 1)
    t0 = time.perf_counter()
    for step in range(200):
        grad = 2 * X.t() @ (X @ w - y) / X.shape[0]
        w -= 0.1 * grad
    loss = torch.nn.functional.mse_loss(X @ w, y)
    print(f"fitted w = {w.flatten().tolist()} (true [2, -1, 0.5]); mse {loss.item():.2e}; "
          f"{(time.perf_counter() - t0) / 200 * 1e6:.0f} us per step")
    reference = np.linalg.lstsq(X.numpy(), y.numpy(), rcond=None)[0]
    print("NumPy lstsq agrees:", np.allclose(w.numpy(), reference, atol=1e-3))


if __name__ == "__main__":
    tensors()
    dispatcher()
    meta()
    user_ops()
    numerics()
    print("\nNext: `make test` runs the oracle suite against PyTorch 2.13; bench/eager_overhead.py measures the dispatcher.")
