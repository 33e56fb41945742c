"""The generated Autograd kernels (ember/autograd/kernel_codegen.py) record what the planning kernel
records: each program runs twice in ember (the first call of an op plans and swaps the generated
kernel in, later calls run it) and once in PyTorch, comparing outputs, grad_fn names, gradients
and errors. Also: calls past the binding, ops that keep their planning kernel, start-up imports."""
import subprocess
import sys

import numpy as np
import pytest
import torch

import ember
from ember._core.dispatch import DispatchKey
from ember.ops.registry import OPERATORS

from _both import both

A = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.5]], dtype=np.float32)
B = np.array([[0.3, 0.2, -0.7], [1.1, -0.4, 2.0]], dtype=np.float32)
W = np.array([[0.2, -0.1, 0.4], [0.7, 0.3, -0.5], [-0.6, 0.9, 0.1], [0.05, -0.3, 0.8]], dtype=np.float32)
ROW = np.array([0.5, -1.0, 2.0], dtype=np.float32)


def _run(T, program, arrays):
    leaves = [T.tensor(a, requires_grad=True) for a in arrays]
    out = program(T, *leaves)
    names = [out.grad_fn.name() if out.grad_fn is not None else None]
    out.sum().backward()
    return [out, names, [t.grad for t in leaves]]


PROGRAMS = {
    "unary": lambda T, a, b, w, r: (a.sigmoid() + b.tanh().exp()).relu(),
    "scalar-operand": lambda T, a, b, w, r: a * 0.5 - 2 / (b.abs() + 1) + (1 - a),      # rsub: named by args
    "broadcast": lambda T, a, b, w, r: a * r + b,
    "linear": lambda T, a, b, w, r: T.nn.functional.linear(a, w, None) + T.nn.functional.linear(b, w, w[:, 0]),
    "matmul-by-rank": lambda T, a, b, w, r: T.matmul(a, w.t()).sum(1) + T.matmul(r, b.t()),    # names by ranks
    "views": lambda T, a, b, w, r: a.view(3, 2).t() * b.reshape(3, 2).t() + a[:, 1:].flatten().sum(),
    "reductions": lambda T, a, b, w, r: a.sum(0) + b.mean(1, keepdim=True).sum(0) + a.amax(0) + b.std(0),
    "no-grad-input": lambda T, a, b, w, r: T.where(a > 0, a, b.detach()) * (r > 0),
    "pow-softmax": lambda T, a, b, w, r: T.softmax(a.pow(2), 1) + T.log_softmax(b, 0) + a.pow(b),
    "dtype-cast": lambda T, a, b, w, r: (a.double() * b.double()).float() + a.to(T.float64).sum(0).float(),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_first_and_later_calls_match_pytorch(name):
    program = PROGRAMS[name]
    for _ in range(2):      # the first call of each op plans and swaps; the second runs the generated kernel
        both(lambda T: _run(T, program, (A, B, W, ROW)), rtol=1e-5, atol=1e-6)


def test_common_ops_run_the_generated_kernel_and_batch_norm_keeps_its_own():
    x = ember.tensor(A, requires_grad=True)
    (x * x).sigmoid().sum()
    for name in ("aten::mul.Tensor", "aten::sigmoid"):
        kernel = OPERATORS[name].table[DispatchKey.Autograd]
        assert kernel.__code__.co_filename.startswith("<ember autograd kernel"), name
    bn = ember.nn.BatchNorm1d(3)
    for _ in range(3):      # batch_norm's kernel picks the training or eval planning kernel per call
        bn(ember.tensor(A, requires_grad=True)).sum().backward()
    assert OPERATORS["aten::batch_norm"].table[DispatchKey.Autograd].__name__ == "autograd_batch_norm"


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradients_after_repeated_calls(training):
    def program(T):
        T.manual_seed(0)
        bn = T.nn.BatchNorm1d(3)
        bn.train(training)
        out = []
        for _ in range(3):
            x = T.tensor(A * 2, requires_grad=True)
            bn(x).pow(2).sum().backward()
            out += [x.grad, bn.weight.grad, bn.running_mean]
        return out
    both(program, rtol=1e-4, atol=1e-5)


def test_a_call_past_the_binding_with_fewer_arguments_records_like_a_full_one():
    op = OPERATORS["aten::_to_copy"]
    x = ember.tensor(A, requires_grad=True)
    x.double().sum().backward()         # a full call: the generated kernel from here on
    x.grad = None
    y = op.call(x._keys, x, ember.float64)      # layout, device, ... left to their defaults
    assert y.grad_fn.name() == "ToCopyBackward0" and y.dtype is ember.float64
    (y * ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64)).sum().backward()
    t = torch.tensor(A, requires_grad=True)
    (t.double() * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
    assert x.grad.dtype is ember.float32
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("modify", ["output", "input"])
def test_saved_tensor_modified_in_place_raises_as_pytorch(modify):
    errors = []
    for T in (ember, torch):
        a = T.tensor(A, requires_grad=True)
        for _ in range(2):
            h = a * 2                       # MulBackward0 produces h
            y = h.exp() if modify == "output" else h.sin()    # exp saves its result, sin its input
            (y if modify == "output" else h).add_(1)
            with pytest.raises(RuntimeError) as info:
                y.sum().backward()
        errors.append(str(info.value))
    # (the versions; the way the tensor and its producer are named differs from PyTorch's already)
    versions = [m.split("is at version")[1].split("instead")[0] for m in errors]
    assert versions[0] == versions[1] and "modified by an inplace operation" in errors[0]


def test_in_place_on_a_view_of_a_leaf_and_view_grad_fns_as_pytorch():
    def program(T):
        a = T.tensor(A, requires_grad=True)
        v = a.view(6)
        w = (a * 1).view(3, 2)
        return [v.grad_fn.name(), w.grad_fn.name(), w.is_leaf, v.requires_grad]
    both(program)
    for T in (ember, torch):
        a = T.tensor(A, requires_grad=True)
        with pytest.raises(RuntimeError):
            a.view(6).mul_(2)


def test_import_does_not_load_the_generator():
    code = "import sys, ember; print('ember.autograd.kernel_codegen' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
