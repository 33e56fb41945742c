"""What autograd hooks may return: every kind of hook (tensor hooks on leaves and non-leaves,
node prehooks and post hooks, AccumulateGrad prehooks, post-accumulate-grad hooks, custom
Function backward) run in ember and PyTorch; a result of another shape, dtype, type or count
raises the same exception type in both, and valid replacements give the same gradients."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember


def _outcome(prog, lib):
    try:
        return "ok", prog(lib)
    except Exception as e:  # noqa: BLE001 - compared below
        return type(e), str(e)


def _same(prog, match=None):
    """prog(lib) in both libraries: same exception type (message containing `match`) or same
    gradients."""
    (ek, ev), (tk, tv) = _outcome(prog, ember), _outcome(prog, torch)
    assert ek is tk, f"ember: {ek} {ev!r}; torch: {tk} {tv!r}"
    if ek == "ok":
        ev, tv = [ev] if not isinstance(ev, (list, tuple)) else ev, [tv] if not isinstance(tv, (list, tuple)) else tv
        assert len(ev) == len(tv)
        for e, t in zip(ev, tv):
            assert (e is None) == (t is None)
            if t is not None:
                assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
                np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-6)
    elif match is not None:
        assert match in ev, ev


def _named(g):
    return g[:1]


class _Callable:
    def __call__(self, g):
        return g[:1]


# hook bodies: what a tensor hook returns given the gradient
TENSOR_HOOK_RESULTS = {
    "same": lambda g: g * 2,
    "none": lambda g: None,
    "in_place": lambda g: g.mul_(3),
    "smaller": lambda g: g[:2],
    "scalar": lambda g: g.sum(),
    "extra_dim": lambda g: g.unsqueeze(0),
    "broadcastable_bigger": lambda g: g.expand(2, 3),
    "float64": lambda g: g.double(),
    "int64": lambda g: g.long(),
    "float16": lambda g: g.half(),
    "python_float": lambda g: 1.0,
    "list": lambda g: [g],
    "tuple": lambda g: (g,),
    "ndarray": lambda g: np.ones(3, dtype=np.float32),
}


@pytest.mark.parametrize("where", ["leaf", "non_leaf", "leaf_through_grad", "non_leaf_through_grad"])
@pytest.mark.parametrize("result", sorted(TENSOR_HOOK_RESULTS))
def test_tensor_hook_result(where, result):
    body = TENSOR_HOOK_RESULTS[result]

    def prog(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        t = x if where.startswith("leaf") else x * 2
        t.register_hook(body)
        loss = (t * t).sum()
        if where.endswith("through_grad"):
            return lib.autograd.grad(loss, x)
        loss.backward()
        return x.grad
    _same(prog)


@pytest.mark.parametrize("hook,name", [(lambda g: g[:1], "<lambda>"), (_named, "_named"),
                                       (_Callable(), "<unknown>")])
def test_hook_name_in_message(hook, name):
    def prog(lib):
        x = lib.ones(3, requires_grad=True)
        x.register_hook(hook)
        (x * 2).sum().backward()
    _same(prog, match=f"hook '{name}' has changed the size of value")


def test_type_message_names_both_types():
    def prog(lib):
        x = lib.ones(3, requires_grad=True)
        x.register_hook(lambda g: g.double())
        x.sum().backward()
    match = r"changed the type of value \(was ember.FloatTensor got ember.DoubleTensor\)"
    with pytest.raises(RuntimeError, match=match):
        prog(ember)


def test_second_hook_sees_first_hooks_result_and_checks_it():
    def prog(lib):
        x = lib.ones(3, requires_grad=True)
        seen = []
        x.register_hook(lambda g: g * 2)
        x.register_hook(lambda g: seen.append(g.clone()))
        x.register_hook(lambda g: g + 1)
        (x * 3).sum().backward()
        return [x.grad, *seen]
    _same(prog)


NODE_RESULTS = {  # returned by a node post hook / prehook for a one-input node (exp)
    "same": lambda gs: tuple(g * 2 for g in gs),
    "none": lambda gs: None,
    "none_element": lambda gs: (None,),
    "too_many": lambda gs: tuple(gs) + tuple(gs),
    "too_few": lambda gs: (),
    "list": lambda gs: list(gs),
    "bare_tensor": lambda gs: gs[0],
    "smaller": lambda gs: (gs[0][:2],),
    "float64": lambda gs: (gs[0].double(),),
    "python_float": lambda gs: (1.0,),
}


@pytest.mark.parametrize("kind", ["post", "pre", "accumulate_pre"])
@pytest.mark.parametrize("result", sorted(NODE_RESULTS))
def test_node_hook_result(kind, result):
    body = NODE_RESULTS[result]

    def prog(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x.exp()
        if kind == "post":
            y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: body(grad_inputs))
        elif kind == "pre":
            y.grad_fn.register_prehook(lambda grad_outputs: body(grad_outputs))
        else:
            y.grad_fn.next_functions[0][0].register_prehook(lambda grad_outputs: body(grad_outputs))
        (y * 3).sum().backward()
        return x.grad
    _same(prog)


@pytest.mark.parametrize("result,match", [
    (lambda gi: (gi[0] * 2, None), None),                      # the None slot (the number 2) stays None
    (lambda gi: (gi[0], gi[0]), "can't replace a None gradient with a non-None value"),
    (lambda gi: (gi[0],), "incorrect number of values (got 1, but expected 2)"),
])
def test_post_hook_of_node_with_an_input_needing_no_grad(result, match):
    def prog(lib):
        x = lib.ones(3, requires_grad=True)
        y = x * lib.full((3,), 2.0)
        y.grad_fn.register_hook(lambda gi, go: result(gi))
        y.sum().backward()
        return x.grad
    _same(prog, match=match)


# post-accumulate-grad hooks ------------------------------------------------------------
def test_post_accumulate_grad_hook_sees_accumulated_grad_each_backward():
    def prog(lib):
        x = lib.ones(3, requires_grad=True)
        seen = []
        x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.clone()))
        (x * 2).sum().backward()
        (x * 3).sum().backward()
        return seen
    _same(prog)


@pytest.mark.parametrize("body", [
    lambda t: t.grad * 2,                       # must return None
    lambda t: setattr(t, "grad", t.grad[:2]),   # .grad setter checks the size
    lambda t: setattr(t, "grad", t.grad.double()),
    lambda t: t.grad.mul_(10),                  # in place is the way to change it (returns a tensor: error)
    lambda t: (t.grad.mul_(10), None)[1],
])
def test_post_accumulate_grad_hook_results(body):
    def prog(lib):
        x = lib.ones(3, requires_grad=True)
        x.register_post_accumulate_grad_hook(body)
        (x * 2).sum().backward()
        return x.grad
    _same(prog)


@pytest.mark.parametrize("make", [lambda lib: lib.ones(3, requires_grad=True) * 2, lambda lib: lib.ones(3)])
def test_post_accumulate_grad_hook_registration_errors(make):
    _same(lambda lib: make(lib).register_post_accumulate_grad_hook(lambda t: None))


def test_post_accumulate_grad_hook_not_run_by_autograd_grad_and_removable():
    def prog(lib):
        x = lib.ones(3, requires_grad=True)
        calls = []
        handle = x.register_post_accumulate_grad_hook(lambda t: calls.append(1))
        lib.autograd.grad((x * 2).sum(), x)
        (x * 2).sum().backward()
        handle.remove()
        (x * 2).sum().backward()
        return [lib.tensor(float(len(calls))), x.grad]
    _same(prog)


# custom Function backward results -------------------------------------------------------
BACKWARD_RESULTS = {
    "float": lambda g: 1.0,
    "int": lambda g: 1,
    "str": lambda g: "a",
    "list": lambda g: [g],
    "ndarray": lambda g: np.ones(3),
    "tuple_float": lambda g: (1.0, None),
    "grad_for_number": lambda g: (g, g),
    "float_for_number": lambda g: (g, 1.0),
    "too_many": lambda g: (g, None, g),
    "too_many_none": lambda g: (g, None, None),
    "smaller": lambda g: (g[:2], None),
    "scalar": lambda g: (g.sum(), None),
    "broadcast": lambda g: (g.expand(2, 3), None),
    "float64": lambda g: (g.double(), None),
    "int64": lambda g: (g.long(), None),
    "ok": lambda g: (g * 2, None),
}


@pytest.mark.parametrize("result", sorted(BACKWARD_RESULTS))
def test_custom_function_backward_result(result):
    body = BACKWARD_RESULTS[result]

    def prog(lib):
        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                return x * k

            @staticmethod
            def backward(ctx, g):
                return body(g)
        x = lib.ones(3, requires_grad=True)
        Scale.apply(x, 2.0).sum().backward()
        return x.grad
    _same(prog)
