"""Grad-mode context managers inside compiled functions: ``with no_grad()`` / ``enable_grad()`` /
``set_grad_enabled(b)`` blocks (nested, returning from inside, as a plain call, as a decorator),
backward through a graph with a no_grad region, a graph break inside a block, and the grad mode
left behind when the compiled body raises. Compiled vs eager vs torch 2.13 (dynamo_harness)."""
import operator

import numpy as np
import pytest
import torch

import ember
from dynamo_harness import check_program, rand


def leaves(*shapes):
    """Inputs: one random leaf tensor that requires grad per shape (results' requires_grad matter)."""
    def make(lib, rng):
        return tuple(rand(lib, rng, *shape).requires_grad_(True) for shape in shapes)
    return make


def with_flag(flag, *shapes):
    """Inputs: leaves, then a Python bool (the mode for set_grad_enabled)."""
    def make(lib, rng):
        return (*leaves(*shapes)(lib, rng), flag)
    return make


# ---- programs ------------------------------------------------------------------------------------
def no_grad_block(lib, x, w):
    y = x * 2
    with lib.no_grad():
        z = y @ w
    return (z + 1).sum() + y.sum(), z


def enable_grad_inside_no_grad(lib, x, w):
    with lib.no_grad():
        a = x * 2
        with lib.enable_grad():
            b = a @ w + x
        c = b * 3
    return a, b, c, x + 1


def set_grad_enabled_false(lib, x, w):
    with lib.set_grad_enabled(False):
        z = x @ w
    return z, z.requires_grad, x * 2


def set_grad_enabled_true(lib, x, w):
    with lib.set_grad_enabled(True):   # already on: torch records no switch
        z = x @ w
    with lib.no_grad():
        with lib.set_grad_enabled(True):
            u = z * 2
        v = u + 1
    return z, u, v


def set_grad_enabled_flag(lib, x, w, flag):
    with lib.set_grad_enabled(flag):
        z = x @ w
    return z + 1, lib.is_grad_enabled()


def nested_blocks(lib, x, w):
    with lib.no_grad():
        with lib.no_grad():
            a = x * w
        b = a + x
        with lib.enable_grad():
            with lib.no_grad():
                c = b * 2
            d = c + x
    return a, b, c, d, lib.is_grad_enabled()


def return_inside_block(lib, x, w):
    y = x + w
    with lib.no_grad():
        z = y * 2
        return z.sum(), z, lib.is_grad_enabled()


def grad_enabled_query_inside(lib, x):
    with lib.no_grad():
        if lib.is_grad_enabled():
            y = x * 2
        else:
            y = x * 3
    return y


def plain_set_grad_enabled_calls(lib, x, w):
    lib.set_grad_enabled(False)
    y = x @ w
    lib.set_grad_enabled(True)
    return y, y * 2


def _inner(x, w):
    return x @ w + 1


_DECORATED = {"torch": torch.no_grad()(_inner), "ember": ember.no_grad()(_inner)}


def decorated_helper(lib, x, w):
    y = _DECORATED[lib.__name__](x, w)
    return y * 2, x * 2


def graph_break_inside_block(lib, x, w):
    y = x * 2
    with lib.no_grad():
        z = y @ w
        s = z.sum().item()   # needs data: a graph break inside the block
        u = z * s
    return u.sum() + y, u


def graph_break_in_nested_blocks(lib, x, w):
    with lib.no_grad():
        a = x @ w
        with lib.enable_grad():
            b = a * x.sum()
            s = b.sum().item()   # break two blocks deep
            c = b * s
        d = c + 1
    return a, b, c, d, lib.is_grad_enabled()


def _helper_with_break(t):
    return t * float(t.sum())   # the break is inside this callee


def break_in_callee_inside_block(lib, x):
    with lib.no_grad():
        y = _helper_with_break(x * 2)
        z = y + x
    return z, y


def break_inside_block_inside_try(lib, x):
    try:
        with lib.no_grad():
            s = x.sum().item()   # a try block is open too: ember runs the frame eagerly
            y = x * s
    except ValueError:
        y = x
    return y + x


def two_breaks_in_block(lib, x, w):
    with lib.set_grad_enabled(False):
        a = x @ w
        s = a.sum().item()
        b = a * s
        t = b.mean().item()
        c = b - t
    return a, b, c, lib.is_grad_enabled()


def break_after_plain_set_grad_enabled(lib, x):
    lib.set_grad_enabled(False)
    y = x * 2
    s = y.sum().item()
    z = y * s
    lib.set_grad_enabled(True)
    return z + x, y


def context_object_made_first(lib, x):
    ctx = lib.no_grad()
    y = x + 1
    with ctx:
        z = y * 2
    return z, y


def block_in_loop_with_break(lib, x):
    for i in range(2):
        with lib.no_grad():
            x = x * float(x.sum() > 0) + i
    return x


def inference_block(lib, x, w):
    y = x * 2
    with lib.inference_mode():
        z = y @ w
    return z + 1, y


def inference_mode_false_inside_no_grad(lib, x):
    with lib.no_grad():
        with lib.inference_mode(False):
            y = x * 2
        z = y + 1
    return y, z


def break_inside_inference_block(lib, x):
    y = x + 1
    with lib.inference_mode():
        flag = lib.is_inference_mode_enabled()   # a graph break (both libraries)
        z = y * 2
    return z, flag, lib.is_inference_mode_enabled()


def other_context_manager(lib, x):
    import contextlib
    y = x * 2
    with contextlib.nullcontext():
        z = y + 1
    return z


PROGRAMS = [
    (no_grad_block, leaves((3, 4), (4, 2)), {}),
    (enable_grad_inside_no_grad, leaves((3, 4), (4, 4)), {}),
    (set_grad_enabled_false, leaves((3, 4), (4, 2)), {}),
    (set_grad_enabled_true, leaves((3, 4), (4, 2)), {}),
    (set_grad_enabled_flag, with_flag(False, (3, 4), (4, 2)), {}),
    (set_grad_enabled_flag, with_flag(True, (3, 4), (4, 2)), {}),
    (nested_blocks, leaves((3, 4), (3, 4)), {}),
    (return_inside_block, leaves((3, 4), (3, 4)), {}),
    (grad_enabled_query_inside, leaves((5,)), {}),
    (plain_set_grad_enabled_calls, leaves((3, 4), (4, 2)), {}),
    (decorated_helper, leaves((3, 4), (4, 2)), {}),
    # graph breaks inside blocks: both resume inside the block (re-entered by the resume function)
    (graph_break_inside_block, leaves((3, 4), (4, 2)), {}),
    (graph_break_in_nested_blocks, leaves((3, 4), (4, 4)), {}),
    (break_in_callee_inside_block, leaves((3, 4)), {}),
    (two_breaks_in_block, leaves((3, 4), (4, 2)), {}),
    (break_after_plain_set_grad_enabled, leaves((3, 4)), {}),
    (context_object_made_first, leaves((3, 4)), {}),
    (inference_block, leaves((3, 4), (4, 2)), {}),
    (inference_mode_false_inside_no_grad, leaves((3, 4)), {}),
    (break_inside_inference_block, leaves((3, 4)), {}),
    # a break inside a loop: torch and ember both run the frame eagerly
    (block_in_loop_with_break, leaves((3, 4)), {}),
    # torch captures around try blocks; ember runs such a frame eagerly: values only
    (break_inside_block_inside_try, leaves((3, 4)), {"counts": False}),
    # other context managers: a with block runs the frame eagerly (torch captures nullcontext)
    (other_context_manager, leaves((4,)), {"counts": False}),
]


@pytest.mark.parametrize("prog,inputs,opts", PROGRAMS,
                         ids=[f"{p.__name__}{i}" if p is set_grad_enabled_flag else p.__name__
                              for i, (p, _, _) in enumerate(PROGRAMS)])
def test_grad_mode_program(prog, inputs, opts):
    check_program(prog, inputs, **opts)
    assert torch.is_grad_enabled() and ember.is_grad_enabled()


def _grads(lib, compiled):
    rng = np.random.default_rng(7)
    x, w = (rand(lib, rng, *s).requires_grad_(True) for s in ((3, 4), (4, 2)))
    loss, z = compiled(lib, x, w)
    (loss + (z * x.sum()).sum() + (w ** 2).sum()).backward()   # w's grad: 2w only
    return x.grad.numpy().copy(), w.grad.numpy().copy(), z.requires_grad


def test_backward_through_no_grad_region():
    """Gradients through a compiled graph whose middle runs under no_grad match eager and torch's
    (the no_grad matmul contributes nothing to w's gradient)."""
    results = {}
    for lib in (torch, ember):
        lib._dynamo.reset()
        counter = lib._dynamo.testing.CompileCounter()
        results[lib.__name__] = (_grads(lib, no_grad_block),
                                 _grads(lib, lib.compile(no_grad_block, backend=counter)))
        assert counter.frame_count == 1
    for name, (eager, compiled) in results.items():
        for e, c in zip(eager, compiled):
            np.testing.assert_allclose(c, e, rtol=1e-5, err_msg=name)
    for t, e in zip(results["torch"][1], results["ember"][1]):
        np.testing.assert_allclose(e, t, rtol=1e-4, atol=1e-5)


class _RaisingAtMatmul(ember.fx.Interpreter):
    def run_node(self, n):
        if n.target is operator.matmul:
            raise RuntimeError("boom inside the no_grad region")
        return super().run_node(n)


def test_grad_mode_restored_when_the_graph_raises():
    """The body raising inside a captured no_grad block leaves grad mode as eager does (on)."""
    def backend(gm, example_inputs):
        return lambda *args: _RaisingAtMatmul(gm).run(*args)

    compiled = ember.compile(no_grad_block, backend=backend)
    x, w = leaves((3, 4), (4, 2))(ember, np.random.default_rng(0))
    with pytest.raises(RuntimeError, match="boom"):
        compiled(ember, x, w)
    assert ember.is_grad_enabled()


def test_entry_grad_mode_is_guarded():
    """The graph bakes in the mode at entry (the exit switch restores it): called under no_grad, the
    function is captured again and the mode after the call is still off."""
    counter = ember._dynamo.testing.CompileCounter()
    compiled = ember.compile(no_grad_block, backend=counter)
    x, w = leaves((3, 4), (4, 2))(ember, np.random.default_rng(0))
    compiled(ember, x, w)
    with ember.no_grad():
        loss, z = compiled(ember, x, w)
        assert not ember.is_grad_enabled()
    assert counter.frame_count == 2 and not loss.requires_grad
    assert ember.is_grad_enabled()


def _raises_inside_block(lib, x):
    y = x * 2
    with lib.no_grad():
        z = y + 1
        float(z)   # a graph break whose instruction raises (more than one element)
    return z


def test_grad_mode_restored_when_the_break_instruction_raises():
    """The instruction at a break inside a no_grad block runs eagerly in the block's mode; when it
    raises, grad mode is left as eager leaves it (on), and the error is eager's."""
    for lib in (torch, ember):
        x = rand(lib, np.random.default_rng(0), 3).requires_grad_(True)
        with pytest.raises(Exception) as eager_error:
            _raises_inside_block(lib, x)
        lib._dynamo.reset()
        with pytest.raises(type(eager_error.value)):
            lib.compile(_raises_inside_block, backend=lib._dynamo.testing.CompileCounter())(lib, x)
        assert lib.is_grad_enabled()
