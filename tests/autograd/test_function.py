"""Custom autograd.Function: the same Function class body run in ember and PyTorch."""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
import torch

import ember
from _both import both, raises, arr


def define(T):
    """Custom Functions written once against the library T."""
    class MulAdd(T.autograd.Function):      # non-tensor args, needs_input_grad, saved tensors
        @staticmethod
        def forward(ctx, x, y, k, tag):
            ctx.save_for_backward(x, y)
            ctx.k = k
            ctx.flags = ctx.needs_input_grad
            return x * y * k

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            gx = g * y * ctx.k if ctx.needs_input_grad[0] else None
            gy = g * x * ctx.k if ctx.needs_input_grad[1] else None
            return gx, gy, None, None

    class SplitExp(T.autograd.Function):    # several outputs, one non-differentiable, saves an output
        @staticmethod
        def forward(ctx, x):
            e = x.exp()
            idx = (x > 1).to(T.int64)
            mask = x * 0
            ctx.mark_non_differentiable(mask)
            ctx.save_for_backward(e)
            return e, e * 2, idx, mask

        @staticmethod
        def backward(ctx, g1, g2, g_idx, g_mask):
            e, = ctx.saved_tensors
            return g1 * e + g2 * 2 * e

    class Lazy(T.autograd.Function):        # set_materialize_grads(False): None grads arrive as None
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            out = 0
            if g1 is not None:
                out = out + g1 * 2
            if g2 is not None:
                out = out + g2 * 3
            return out

    class AddOneInPlace(T.autograd.Function):   # mark_dirty
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    class Identity(T.autograd.Function):    # returns its input unchanged
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    class Cube(T.autograd.Function):        # differentiable backward: double backward works
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 3 * x * x
    return MulAdd, SplitExp, Lazy, AddOneInPlace, Identity, Cube


def test_save_for_backward_non_tensor_args_needs_input_grad():
    def prog(T, x, y):
        MulAdd = define(T)[0]
        c = y.detach()
        out = MulAdd.apply(x, c, 3.0, "tag")
        node = out.grad_fn
        out.sum().backward()
        return [type(node).__name__, len(node.next_functions), node.next_functions[1], node.flags, x.grad,
                out.requires_grad, MulAdd.apply(x.detach(), c, 2.0, None).requires_grad]
    both(prog, arr(3), arr(3, seed=1))


def test_multiple_outputs_and_non_differentiable():
    def prog(T, x):
        SplitExp = define(T)[1]
        e, e2, idx, mask = SplitExp.apply(x)
        flags = [e.requires_grad, e2.requires_grad, idx.requires_grad, mask.requires_grad, idx.dtype == T.int64,
                 e.grad_fn is e2.grad_fn, e.output_nr, e2.output_nr]
        (e.sum() + e2.sum()).backward(retain_graph=True)
        g1 = x.grad.clone()
        x.grad = None
        e2.sum().backward()          # the other output's grad is materialised as zeros
        return flags + [g1, x.grad]
    both(prog, arr(3))


def test_materialize_grads_false():
    def prog(T, x):
        a, b = define(T)[2].apply(x)
        b.sum().backward()
        return x.grad
    both(prog, arr(3))


def test_mark_dirty():
    def prog(T, x):
        y = x * 1
        z = define(T)[3].apply(y)
        n = type(z.grad_fn).__name__
        (z * z).sum().backward()
        return [z is y, n, y._version > 0, x.grad]
    both(prog, arr(3))
    raises(lambda T, x: define(T)[3].apply(x), arr(3), match="leaf Variable")


def test_input_returned_as_is():
    def prog(T, x):
        y = define(T)[4].apply(x)
        n = type(y.grad_fn).__name__
        y.sum().backward()
        return [y is x, n, x.grad, x.is_leaf]
    both(prog, arr(3))


def test_double_backward_through_custom_function():
    def prog(T, x):
        y = define(T)[5].apply(x).sum()
        g, = T.autograd.grad(y, x, create_graph=True)
        gg, = T.autograd.grad(g.sum(), x)
        return [g, gg]
    both(prog, arr(3))


def test_saved_tensor_checked_and_freed():
    def modified(T, x):
        y = x * 1
        out = define(T)[5].apply(y)
        y.mul_(2)
        out.sum().backward()
    raises(modified, arr(3), match="modified by an inplace operation")

    def twice(T, x):
        out = define(T)[5].apply(x * 1).sum()
        out.backward()
        out.backward()
    raises(twice, arr(3))


def test_wrong_number_of_grads_and_bad_shape():
    for lib in (ember, torch):
        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * y

            @staticmethod
            def backward(ctx, g):
                return g

        class BadShape(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g[:2]
        x = lib.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="incorrect number of gradients"):
            Bad.apply(x, x).sum().backward()
        with pytest.raises(RuntimeError, match="invalid gradient"):
            BadShape.apply(x).sum().backward()


def test_broadcast_grad_is_summed_and_cast():
    def prog(T, x):
        class Wide(T.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return g.expand(4, 3) * 1.0      # expandable to the input's shape: summed back
        Wide.apply(x).sum().backward()
        return x.grad
    both(prog, arr(3))


def test_no_reference_cycle_when_saving_outputs():
    MulAdd, SplitExp = define(ember)[:2]
    gc.disable()
    try:
        x = ember.ones(3, requires_grad=True)
        e, e2, idx, mask = SplitExp.apply(x)   # saves its own output
        node, ref = weakref.ref(e.grad_fn), weakref.ref(e)
        del e, e2, idx, mask
        assert node() is None and ref() is None
    finally:
        gc.enable()


def test_once_differentiable_and_ctx_is_node():
    def prog(T, x):
        class Sq(T.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(a)
                return a * a

            @staticmethod
            @T.autograd.function.once_differentiable
            def backward(ctx, g):
                a, = ctx.saved_tensors
                return g * 2 * a
        y = Sq.apply(x)
        saved = y.grad_fn.saved_tensors[0] is x
        y.sum().backward()
        return [saved, x.grad]
    both(prog, arr(3))
