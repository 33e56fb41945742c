"""A compiled graph's large outputs reuse the previous call's array only when nothing can reach it
any more (wrapper.Alloc): every way a user or autograd keeps the memory reachable must keep it
from being overwritten. Oracle: eager ember on the same inputs, and copies taken at the time."""
import gc
import threading

import numpy as np
import pytest

import ember
from ember._inductor import config
from ember._inductor.compile_fx import compile_fx
from ember._functorch import make_fx

ROWS, COLS = 512, 512          # 1 MiB of float32: at config.output_reuse_min_bytes


def fn(x):
    return (x * 2 + 1).sigmoid()


def compiled_for(f, *inputs):
    return compile_fx(make_fx(f)(*inputs), list(inputs))


def inputs(n, seed=0):
    g = np.random.default_rng(seed)
    return [ember.from_numpy(g.standard_normal((ROWS, COLS), dtype=np.float32)) for _ in range(n)]


def test_a_dead_output_is_reused_and_correct():
    x1, x2 = inputs(2)
    f = compiled_for(fn, x1)
    ptr = f(x1).data_ptr()                   # the tensor dies at once
    y = f(x2)
    assert y.data_ptr() == ptr               # the memory came back (no page faults)
    np.testing.assert_allclose(y.numpy(), fn(x2).numpy(), rtol=1e-6, atol=1e-7)


def test_a_loop_holding_the_last_result_alternates_two_arrays(monkeypatch):
    from ember._inductor import wrapper
    x1, x2 = inputs(2, seed=4)
    f = compiled_for(fn, x1)
    fresh = []
    real_empty = np.empty
    monkeypatch.setattr(wrapper.np, "empty", lambda *a, **k: fresh.append(a) or real_empty(*a, **k))
    y, held = f(x1), []
    for i in range(6):                       # `y = f(x)`: the last result is alive during the call
        held.append((y, y.numpy().copy()))
        y = f(x2 if i % 2 else x1)
        np.testing.assert_allclose(y.numpy(), fn(x2 if i % 2 else x1).numpy(), rtol=1e-6, atol=1e-7)
        old, want = held.pop(0)
        np.testing.assert_array_equal(old.numpy(), want)     # the result held during the call: intact
        del old
    assert len([a for a in fresh if a[0] == (ROWS, COLS)]) == 2     # the first two calls' arrays only


# each keeps the first output's memory reachable in its own way: name -> (keep(y), read(kept), expect(values))
KEEPERS = {
    "tensor": (lambda y: y, lambda k: k.numpy(), lambda w: w),
    "view": (lambda y: y[3], lambda k: k.numpy(), lambda w: w[3]),
    "strided view": (lambda y: y.t()[::2], lambda k: k.numpy(), lambda w: w.T[::2]),
    "reshape": (lambda y: y.reshape(-1), lambda k: k.numpy(), lambda w: w.reshape(-1)),
    "detach": (lambda y: y.detach(), lambda k: k.numpy(), lambda w: w),
    "as_strided": (lambda y: ember.as_strided(y, (4,), (COLS,)), lambda k: k.numpy(), lambda w: w[:4, 0]),
    "unbind": (lambda y: list(y.unbind(0)), lambda k: np.stack([t.numpy() for t in k]), lambda w: w),
    "numpy": (lambda y: y.numpy(), lambda k: k, lambda w: w),
    "numpy view": (lambda y: y.numpy()[1:, ::3], lambda k: k, lambda w: w[1:, ::3]),
    "memoryview": (lambda y: memoryview(y.numpy()), np.asarray, lambda w: w),
    "np.frombuffer": (lambda y: np.frombuffer(y.numpy(), np.float32), lambda k: k, lambda w: w.reshape(-1)),
    "np.from_dlpack": (lambda y: np.from_dlpack(y.numpy()), lambda k: k, lambda w: w),
    "torch.from_dlpack": (lambda y: __import__("torch").from_dlpack(y.numpy()), lambda k: k.numpy(), lambda w: w),
}


@pytest.mark.parametrize("how", sorted(KEEPERS))
def test_a_reachable_output_is_never_overwritten(how):
    keep, read, expect = KEEPERS[how]
    x1, x2 = inputs(2, seed=1)
    f = compiled_for(fn, x1)
    y = f(x1)
    want = expect(y.numpy().copy())
    kept = keep(y)
    del y
    gc.collect()
    for _ in range(3):                       # later calls: the second call's array is dead and reused
        y2 = f(x2)
        np.testing.assert_allclose(y2.numpy(), fn(x2).numpy(), rtol=1e-6, atol=1e-7)
        del y2
    np.testing.assert_array_equal(read(kept), want)


def test_the_same_output_object_kept_by_a_dict_and_dropped_by_the_name():
    x1, x2 = inputs(2, seed=2)
    f = compiled_for(fn, x1)
    box = {"y": f(x1)}
    want = box["y"].numpy().copy()
    f(x2)
    np.testing.assert_array_equal(box["y"].numpy(), want)


def test_an_output_saved_for_backward_by_a_later_eager_op():
    x1, x2 = inputs(2, seed=3)
    w = ember.from_numpy(np.random.default_rng(9).standard_normal((ROWS, COLS), dtype=np.float32)).requires_grad_()
    f = compiled_for(fn, x1)
    y = f(x1)
    want_grad = y.numpy().copy()
    loss = (y * w).sum()                     # mul saves the compiled output for w's gradient
    del y
    f(x2)
    loss.backward()
    np.testing.assert_array_equal(w.grad.numpy(), want_grad)


def test_compiled_outputs_in_an_autograd_graph():
    """ember.compile with a requires-grad input: the forward graph's outputs include what the
    backward saves (softmax saves its result); dropping the user's output must not free them."""
    x1, x2 = [t.requires_grad_() for t in inputs(2, seed=4)]
    ex1 = x1.detach().clone().requires_grad_()

    def step(x):
        return ember.softmax(x * 3, -1)
    cf = ember.compile(step)
    g = ember.from_numpy(np.random.default_rng(5).standard_normal((ROWS, COLS), dtype=np.float32))
    loss1 = (cf(x1) * g).sum()
    loss2 = (cf(x2) * g).sum()               # the second call while the first's graph is alive
    loss1.backward()
    (step(ex1) * g).sum().backward()
    np.testing.assert_allclose(x1.grad.numpy(), ex1.grad.numpy(), rtol=1e-4, atol=1e-6)
    loss2.backward()
    ex2 = x2.detach().clone().requires_grad_()
    (step(ex2) * g).sum().backward()
    np.testing.assert_allclose(x2.grad.numpy(), ex2.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_the_previous_output_fed_back_as_the_input():
    x = inputs(1, seed=6)[0]
    f = compiled_for(fn, x)
    y = x
    want = x
    for _ in range(4):
        y = f(y)                             # the argument is the last output: alive during the call
        want = fn(want)
        np.testing.assert_allclose(y.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)


def test_two_outputs_and_a_view_output():
    x1, x2 = inputs(2, seed=7)

    def two(x):
        a = x * 2
        return a, a.t(), x + 1
    f = compiled_for(two, x1)
    a, at, b = f(x1)
    keep = (a.numpy().copy(), b.numpy().copy())
    del a, b                                 # at still reaches a's memory
    a2, at2, b2 = f(x2)
    np.testing.assert_array_equal(at.numpy(), keep[0].T)
    for got, want in zip((a2, at2, b2), two(x2)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_concurrent_calls_never_share_an_output():
    xs = inputs(4, seed=8)
    f = compiled_for(fn, xs[0])
    wants = [f(x).numpy().copy() for x in xs]      # one thread first: the values to expect
    errors = []

    def worker(k):
        try:
            for i in range(30):
                j = (k + i) % len(xs)
                y = f(xs[j])
                if not np.array_equal(y.numpy(), wants[j]):
                    errors.append((k, i))
                del y
        except Exception as e:       # reported below, with the thread's index
            errors.append((k, repr(e)))
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(next(n.target for n in f.current.graph.nodes if type(n.target).__name__ == "Alloc").spare) <= 4


@pytest.mark.parametrize("limit", [0, None, 1 << 40])
def test_reuse_off_or_above_the_limit_gives_fresh_arrays(monkeypatch, limit):
    monkeypatch.setattr(config, "output_reuse_min_bytes", limit)
    x1, x2 = inputs(2, seed=9)
    f = compiled_for(fn, x1)
    y = f(x1)
    ptr, fresh = y.data_ptr(), []
    del y
    fresh.append(f(x2))                      # kept, so the allocator cannot hand back the old block by chance
    assert all(n.target.reuses is False for n in f.current.graph.nodes if type(n.target).__name__ == "Alloc")
    np.testing.assert_allclose(fresh[0].numpy(), fn(x2).numpy(), rtol=1e-6, atol=1e-7)
    assert ptr is not None


def test_small_outputs_are_fresh():
    x = ember.randn(16, 16)
    f = compiled_for(fn, x)
    assert all(n.target.reuses is False for n in f.current.graph.nodes if type(n.target).__name__ == "Alloc")
    y = f(x)
    z = f(x)
    assert y.data_ptr() != z.data_ptr()
