"""The autograd recording and engine fast paths (a per-op recording plan, hook containers made on
first use, node numbers from a counter, tensor attributes read from class defaults) give PyTorch's
results and errors: each program runs in ember and PyTorch and the gradients, hook calls and
exception types are compared."""
import numpy as np
import pytest
import torch

import ember


def _leaves(lib, *arrays):
    return [lib.tensor(a, requires_grad=True) for a in arrays]


def _grads(lib, program, *arrays):
    leaves = _leaves(lib, *arrays)
    program(lib, *leaves).backward()
    return [None if t.grad is None else t.grad.detach().numpy() for t in leaves]


def _same_grads(program, *arrays):
    got, want = _grads(ember, program, *arrays), _grads(torch, program, *arrays)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if g is not None:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


A = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.5]], dtype=np.float32)
B = np.array([[0.3, 0.2, -0.7], [1.1, -0.4, 2.0]], dtype=np.float32)
ROW = np.array([0.5, -1.0, 2.0], dtype=np.float32)


@pytest.mark.parametrize("program", [
    lambda lib, a, b, r: (a * b + r).sum(),                                    # broadcast: sum_to
    lambda lib, a, b, r: lib.cat([a, b * 2, r.unsqueeze(0)]).pow(2).sum(),      # a Tensor[] argument
    lambda lib, a, b, r: lib.stack([a.exp(), b.exp()]).sum(),                   # formulas reading the result
    lambda lib, a, b, r: lib.nn.functional.linear(a, b, None).sum() + r.sum(),  # an optional tensor: None
    lambda lib, a, b, r: lib.nn.functional.linear(a, b, r[:2]).sum(),
    lambda lib, a, b, r: a.sum([0, 1]) + b.sum((1,), keepdim=True).sum() + r.sum(0),   # int-list overloads
    lambda lib, a, b, r: (a * 2).expand(3, 2, 3).sum() + lib.trace(b[:, :2]) + r.double().sum(),
    lambda lib, a, b, r: lib.where(a > 0, a, b).sum() + (r * r).mean(),         # an input with no gradient
])
def test_gradients_match_pytorch(program):
    _same_grads(program, A, B, ROW)


def test_an_inplace_op_on_a_non_leaf_saves_the_old_value():
    def program(lib, a, b, r):
        y = a * 1
        y.mul_(b)           # the formula reads y's old value, saved before the write
        y.exp_()            # reads its result
        return y.sum() + r.sum()
    _same_grads(program, A, B, ROW)


def test_double_backward_through_result_saving_formulas():
    for lib in (ember, torch):
        x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        (g,) = lib.autograd.grad((x.exp() * x.sigmoid()).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        if lib is ember:
            got = gg.numpy()
        else:
            np.testing.assert_allclose(got, gg.numpy(), rtol=1e-5)


def test_modifying_a_saved_tensor_is_the_same_error():
    errors = []
    for lib in (ember, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 1
        z = y * y
        y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation") as info:
            z.sum().backward()
        errors.append(type(info.value))
    assert errors[0] is errors[1]


def test_backward_twice_without_retain_graph_is_the_same_error():
    for lib in (ember, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        z = (x * x).sum()
        z.backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            z.backward()


def _hook_log(lib):
    log = []
    x, w = _leaves(lib, ROW, ROW * 2)
    y = x * w
    z = y.exp()
    y.register_hook(lambda g: log.append(("y", g.tolist())))
    z.grad_fn.register_prehook(lambda gs: log.append(("z pre", gs[0].tolist())))
    z.grad_fn.register_hook(lambda gi, go: log.append(("z post", gi[0].tolist())))
    y.retain_grad()
    x.register_hook(lambda g: log.append(("x", g.tolist())))
    z.sum().backward()
    return log, y.grad.tolist()


def test_hooks_registered_after_recording_run_in_pytorch_order():
    got, want = _hook_log(ember), _hook_log(torch)
    assert [name for name, _ in got[0]] == [name for name, _ in want[0]]
    for (_, g), (_, w) in zip(got[0], want[0]):
        np.testing.assert_allclose(g, w, rtol=1e-5)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5)


def test_a_node_without_hooks_has_empty_containers_and_its_own_metadata():
    for lib in (ember, torch):
        x = lib.tensor([1.0], requires_grad=True)
        a, b = x * 2, x * 3
        assert a.grad_fn.metadata == {} and b.grad_fn.metadata == {}
        a.grad_fn.metadata["k"] = 1
        assert b.grad_fn.metadata == {} and a.grad_fn.metadata == {"k": 1}
        with pytest.raises(AttributeError):
            a.grad_fn.no_such_attribute


def test_nodes_run_newest_first_across_branches():
    # two branches from one input: PyTorch runs the most recently created ready node first
    def order(lib):
        seen = []
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        first, second = x.sin(), x.cos()
        first.register_hook(lambda g: seen.append("sin"))
        second.register_hook(lambda g: seen.append("cos"))
        (first + second).sum().backward()
        return seen
    assert order(ember) == order(torch)


def test_a_missing_tensor_attribute_is_an_attribute_error_naming_it():
    for lib in (ember, torch):
        t = lib.ones(2)
        assert not hasattr(t, "no_such_attribute")
        with pytest.raises(AttributeError, match="no_such_attribute"):
            t.no_such_attribute
    t = ember.ones(2)
    assert t._autograd is None and t._version_counter is None and t._wrapped_number is None
    t._autograd = "x"
    assert ember.ones(2)._autograd is None     # a tensor's own value, not the class's


@pytest.mark.parametrize("dims", [[0, 1], (1,), [np.int64(0)], [True], [0.5], ["a"]])
def test_int_list_overloads_choose_as_pytorch(dims):
    outcomes = []
    for lib in (ember, torch):
        try:
            outcomes.append(lib.ones(2, 3).sum(dims).tolist())
        except Exception as e:      # compared: the same exception type as PyTorch
            outcomes.append(type(e))
    assert outcomes[0] == outcomes[1]
