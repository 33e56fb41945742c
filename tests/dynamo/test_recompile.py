"""Guards: a change of shape, dtype, requires_grad, strides, a global, a closure value, a module
attribute (training flag, a float), a container's length or keys, a Python argument, or the grad
mode recompiles; values that only change data never do; nothing stale is ever served. Also the
cache_size_limit warning with eager fallback, fullgraph=True errors, and explain().

Each scenario is a list of steps run under torch.compile(dynamic=False) -- ember's shapes are
static by default -- and ember.compile: after every call the compiled result equals eager's and
the running frame count equals torch's."""
import inspect
import logging
import os
import re
import warnings

import numpy as np
import pytest
import torch

import ember
from dynamo_harness import assert_close, rand, seeded_params

# DYNAMO_TESTS_TORCH_ONLY=1 checks the scenarios' expectations against torch alone
LIBS = (torch,) if os.environ.get("DYNAMO_TESTS_TORCH_ONLY") else (torch, ember)


def run_steps(fn, steps, *, env=None, expect_frames=None):
    """steps: callables step(lib, env) -> args (they may mutate env objects between calls).
    env(lib) -> dict built once per library. Returns {lib name: [frame_count after each call]}."""
    frames = {}
    for lib in LIBS:
        lib._dynamo.reset()
        counter = lib._dynamo.testing.CompileCounter()
        compiled = lib.compile(fn, backend=counter, dynamic=False)
        state = env(lib) if env else {}
        seq = []
        for i, step in enumerate(steps):
            args = step(lib, state)
            expected = fn(lib, *args)
            got = compiled(lib, *args)
            assert_close(got, expected, f"{lib.__name__} step {i}: compiled result (stale?)")
            seq.append(counter.frame_count)
        frames[lib.__name__] = seq
    assert frames.get("ember", frames["torch"]) == frames["torch"], f"frame counts after each call: {frames}"
    if expect_frames is not None:
        assert frames["torch"] == expect_frames
    return frames


def T(*shape, dtype="float32", seed=0, requires_grad=False):
    def make(lib, rng_seed=seed):
        t = rand(lib, np.random.default_rng(rng_seed), *shape, dtype=dtype)
        return t.requires_grad_(True) if requires_grad else t
    return make


def args(*makers):
    """A step passing fresh tensors made by the makers."""
    return lambda lib, env: tuple(m(lib) for m in makers)


def double_plus_one(lib, a):
    return a * 2 + 1


# ---- tensor properties --------------------------------------------------------------------------
def test_shape_change_recompiles_and_old_entry_reused():
    run_steps(double_plus_one, [args(T(3)), args(T(4)), args(T(3, seed=5)), args(T(4, seed=6))],
              expect_frames=[1, 2, 2, 2])


def test_ndim_change_recompiles():
    run_steps(double_plus_one, [args(T(4)), args(T(2, 2)), args(T(1, 2, 2))], expect_frames=[1, 2, 3])


def test_dtype_change_recompiles():
    run_steps(double_plus_one, [args(T(4)), args(T(4, dtype="float64")), args(T(4, dtype="int64")),
                                args(T(4, seed=3))], expect_frames=[1, 2, 3, 3])


def test_requires_grad_change_recompiles():
    def fn(lib, a):
        return (a * 3).sum()
    run_steps(fn, [args(T(4)), args(T(4, requires_grad=True)), args(T(4, seed=2))], expect_frames=[1, 2, 2])


def test_stride_change_recompiles():
    def fn(lib, a):
        return a.sum(0) + a[0]

    def transposed(lib, env):
        return (rand(lib, np.random.default_rng(1), 3, 3).t(),)
    run_steps(fn, [args(T(3, 3)), transposed, args(T(3, 3, seed=4))], expect_frames=[1, 2, 2])


def test_new_values_same_shape_never_recompile():
    run_steps(double_plus_one, [args(T(5, seed=s)) for s in range(5)], expect_frames=[1, 1, 1, 1, 1])


# ---- Python values ----------------------------------------------------------------------------
def scaled(lib, a, k):
    return a * k


def test_python_int_argument_change_recompiles():
    run_steps(scaled, [lambda lib, env: (T(3)(lib), 2), lambda lib, env: (T(3)(lib), 3),
                       lambda lib, env: (T(3)(lib), 2)], expect_frames=[1, 2, 2])


def test_python_string_argument_change_recompiles():
    def fn(lib, a, mode):
        return a.sum() if mode == "sum" else a.mean()
    run_steps(fn, [lambda lib, env: (T(3)(lib), "sum"), lambda lib, env: (T(3)(lib), "mean")],
              expect_frames=[1, 2])


def test_none_versus_tensor_argument_recompiles():
    def fn(lib, a, b):
        return a if b is None else a + b
    run_steps(fn, [lambda lib, env: (T(3)(lib), T(3, seed=1)(lib)), lambda lib, env: (T(3)(lib), None)],
              expect_frames=[1, 1])  # the second call has no tensor op: nothing compiled for it


def test_list_length_change_recompiles():
    def fn(lib, xs):
        out = xs[0]
        for x in xs[1:]:
            out = out + x
        return out
    two = lambda lib, env: ([T(2, seed=i)(lib) for i in range(2)],)  # noqa: E731
    three = lambda lib, env: ([T(2, seed=i)(lib) for i in range(3)],)  # noqa: E731
    run_steps(fn, [two, three, two], expect_frames=[1, 2, 2])


def test_dict_keys_change_recompiles():
    def fn(lib, d):
        return sum(v * len(k) for k, v in d.items()) if len(d) > 1 else d["a"] * 2
    ab = lambda lib, env: ({"a": T(2)(lib), "bb": T(2, seed=1)(lib)},)  # noqa: E731
    ac = lambda lib, env: ({"a": T(2)(lib), "ccc": T(2, seed=1)(lib)},)  # noqa: E731
    run_steps(fn, [ab, ac, ab])


# ---- globals, closures ---------------------------------------------------------------------------
FACTOR = 2.0
WEIGHT = {}


def uses_global_factor(lib, a):
    return a * FACTOR


def test_global_constant_change_recompiles_never_stale():
    global FACTOR

    def set_factor(value):
        def step(lib, env):
            global FACTOR
            FACTOR = value
            return (T(3)(lib),)
        return step
    try:
        run_steps(uses_global_factor, [set_factor(2.0), set_factor(3.0), set_factor(2.0), set_factor(3.0)],
                  expect_frames=[1, 2, 2, 2])
    finally:
        FACTOR = 2.0


def uses_global_tensor(lib, a):
    return a @ WEIGHT["w"]


def test_global_tensor_values_are_read_each_call():
    """A global tensor is an input of the graph, not a baked-in constant: changing its values (same shape)
    needs no recompile but must show in the result; a new shape recompiles."""
    def set_weight(rows, cols, seed):
        def step(lib, env):
            WEIGHT["w"] = rand(lib, np.random.default_rng(seed), rows, cols)
            return (T(2, rows)(lib),)
        return step
    try:
        run_steps(uses_global_tensor, [set_weight(3, 2, 0), set_weight(3, 2, 1), set_weight(3, 4, 2)])
    finally:
        WEIGHT.clear()


def test_global_tensor_mutated_in_place_is_not_stale():
    def step(lib, env):
        if "w" in WEIGHT and isinstance(WEIGHT["w"], (torch.Tensor, ember.Tensor)) and \
                isinstance(WEIGHT["w"], lib.Tensor):
            WEIGHT["w"].add_(1.0)
        else:
            WEIGHT["w"] = rand(lib, np.random.default_rng(0), 3, 2)
        return (T(2, 3)(lib),)
    try:
        run_steps(uses_global_tensor, [step, step, step], expect_frames=[1, 1, 1])
    finally:
        WEIGHT.clear()


def make_closure(k):
    def fn(lib, a):
        return a * k + 1
    return fn


def test_closure_cell_value_change_recompiles_never_stale():
    fns = {}

    def set_cell(value):
        def step(lib, env):
            env["fn"].__closure__[0].cell_contents = value
            return (T(3)(lib),)
        return step

    def env(lib):
        return {"fn": fns[lib.__name__]}

    # one closure per library, so the cell each one compiles against is its own
    for name in ("torch", "ember"):
        fns[name] = make_closure(1.0)
    frames = {}
    for lib in LIBS:
        lib._dynamo.reset()
        fn = fns[lib.__name__]
        counter = lib._dynamo.testing.CompileCounter()
        compiled = lib.compile(fn, backend=counter, dynamic=False)
        seq = []
        for value in (1.0, 5.0, 1.0, -2.0):
            fn.__closure__[0].cell_contents = value
            a = T(3)(lib)
            assert_close(compiled(lib, a), fn(lib, a), f"{lib.__name__} k={value}")
            seq.append(counter.frame_count)
        frames[lib.__name__] = seq
    assert frames.get("ember", frames["torch"]) == frames["torch"], frames


def test_closure_tensor_values_not_stale():
    for lib in LIBS:
        lib._dynamo.reset()
        w = rand(lib, np.random.default_rng(0), 3)

        def fn(a):
            return a * w

        compiled = lib.compile(fn, backend="eager", dynamic=False)
        a = rand(lib, np.random.default_rng(1), 3)
        assert_close(compiled(a), fn(a), "first")
        w.mul_(-3.0)
        assert_close(compiled(a), fn(a), "after mutating the captured tensor")


# ---- module attributes --------------------------------------------------------------------------
def make_module(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 3)
            self.factor = 1.5

        def forward(self, x):
            y = self.lin(x) * self.factor
            return y.relu() if self.training else y.tanh()
    return seeded_params(Net(), np.random.default_rng(0))


def call_net(lib, net, x):
    return net(x)


def module_env(lib):
    return {"net": make_module(lib)}


def test_module_training_flag_recompiles():
    def step(train):
        def s(lib, env):
            env["net"].train(train)
            return env["net"], T(2, 3)(lib)
        return s
    run_steps(call_net, [step(True), step(False), step(True), step(False)], env=module_env)


def test_module_float_attribute_change_recompiles_never_stale():
    def step(value):
        def s(lib, env):
            env["net"].factor = value
            return env["net"], T(2, 3)(lib)
        return s
    run_steps(call_net, [step(1.5), step(2.5), step(1.5)], env=module_env)


def test_module_parameter_update_in_place_not_stale():
    """An optimizer-like in-place update of a parameter changes the next result without a recompile."""
    def step(lib, env):
        net = env["net"]
        with lib.no_grad():
            net.lin.weight.mul_(0.5).add_(0.1)
        return net, T(2, 3)(lib)
    run_steps(call_net, [step, step, step], env=module_env)


def test_module_parameter_replaced_not_stale():
    def step(seed):
        def s(lib, env):
            net = env["net"]
            net.lin.weight = lib.nn.Parameter(rand(lib, np.random.default_rng(seed), 3, 3))
            return net, T(2, 3)(lib)
        return s
    for lib in LIBS:
        lib._dynamo.reset()
        state = module_env(lib)
        compiled = lib.compile(call_net, backend="eager", dynamic=False)
        for seed in range(3):
            net, x = step(seed)(lib, state)
            assert_close(compiled(lib, net, x), call_net(lib, net, x), f"{lib.__name__} weight {seed}")


def test_user_object_attribute_change_recompiles():
    class Cfg:
        scale = 2.0

    def fn(lib, cfg, a):
        return a * cfg.scale

    def step(value):
        def s(lib, env):
            env["cfg"].scale = value
            return env["cfg"], T(3)(lib)
        return s
    run_steps(fn, [step(2.0), step(4.0), step(2.0)], env=lambda lib: {"cfg": Cfg()}, expect_frames=[1, 2, 2])


def test_grad_mode_change_recompiles():
    def fn(lib, w):
        return w * 2

    def step(grad):
        def s(lib, env):
            lib.set_grad_enabled(grad)
            return (T(3, requires_grad=True)(lib),)
        return s
    try:
        frames = {}
        for lib in LIBS:
            lib._dynamo.reset()
            counter = lib._dynamo.testing.CompileCounter()
            compiled = lib.compile(fn, backend=counter, dynamic=False)
            seq = []
            for grad in (True, False, True):
                with lib.set_grad_enabled(grad):
                    w = T(3, requires_grad=True)(lib)
                    got, expected = compiled(lib, w), fn(lib, w)
                assert_close(got, expected, f"{lib.__name__} grad={grad}")
                seq.append(counter.frame_count)
            frames[lib.__name__] = seq
        assert frames.get("ember", frames["torch"]) == frames["torch"], frames
    finally:
        torch.set_grad_enabled(True)
        ember.set_grad_enabled(True)


# ---- cache size limit ---------------------------------------------------------------------------
def test_cache_size_limit_warns_once_and_runs_eagerly(caplog):
    config = ember._dynamo.config
    old = config.cache_size_limit
    config.cache_size_limit = 2
    try:
        counter = ember._dynamo.testing.CompileCounter()
        compiled = ember.compile(double_plus_one, backend=counter)
        with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING):
            warnings.simplefilter("always")
            for n in range(2, 7):  # 5 distinct shapes
                a = T(n)(ember)
                assert_close(compiled(ember, a), double_plus_one(ember, a), f"shape {n}")
        assert counter.frame_count == 2, "past the limit nothing more is compiled"
        messages = [str(w.message) for w in caught] + [r.getMessage() for r in caplog.records]
        limit_messages = [m for m in messages if "cache_size_limit" in m]
        assert len(limit_messages) == 1, f"one warning naming cache_size_limit expected, got {messages}"
        assert re.search(r"tensor '(L\['a'\]|a)' size mismatch at index 0", limit_messages[0]), limit_messages[0]
        # the entries compiled before the limit still serve their shapes
        a = T(2, seed=9)(ember)
        assert_close(compiled(ember, a), double_plus_one(ember, a), "cached shape")
        assert counter.frame_count == 2
    finally:
        config.cache_size_limit = old


# ---- fullgraph=True ------------------------------------------------------------------------------
def toy_example(lib, a, b):
    x = a / (lib.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


def printing(lib, a):
    x = a + 1
    print("no graph here")
    return x


@pytest.mark.parametrize("fn,line", [(toy_example, "if b.sum() < 0:"), (printing, 'print("no graph here")')],
                         ids=["data_dependent_branch", "print"])
def test_fullgraph_graph_break_raises_with_reason_and_source_line(fn, line):
    """Both libraries raise the same exception type (Unsupported); ember's message names the source
    line, its file and line number."""
    def make_args(lib):
        return [rand(lib, np.random.default_rng(i), 3) for i in range(fn.__code__.co_argcount - 1)]
    with pytest.raises(Exception) as torch_err:
        torch.compile(fn, backend="eager", fullgraph=True)(torch, *make_args(torch))
    with pytest.raises(Exception) as err:
        ember.compile(fn, backend="eager", fullgraph=True)(ember, *make_args(ember))
    assert type(err.value).__name__ == type(torch_err.value).__name__
    message = str(err.value)
    lineno = fn.__code__.co_firstlineno + inspect.getsource(fn).splitlines().index("    " + line)
    assert line in message, f"source line missing from: {message}"
    assert "test_recompile.py" in message and str(lineno) in message, f"file/line {lineno} missing: {message}"


def test_fullgraph_without_break_is_fine():
    compiled = ember.compile(double_plus_one, backend="eager", fullgraph=True)
    a = ember.randn(4)
    assert_close(compiled(ember, a), double_plus_one(ember, a))


# ---- explain ------------------------------------------------------------------------------------
def test_explain_counts_match_torch():
    outs = {}
    for lib in LIBS:
        lib._dynamo.reset()
        a = rand(lib, np.random.default_rng(0), 10)
        b = rand(lib, np.random.default_rng(1), 10)
        outs[lib.__name__] = lib._dynamo.explain(toy_example)(lib, a, b)
    e, t = outs["ember"], outs["torch"]
    assert (e.graph_count, e.graph_break_count) == (t.graph_count, t.graph_break_count)
    assert [len(ops) for ops in e.ops_per_graph] == [len(ops) for ops in t.ops_per_graph]
    assert len(e.break_reasons) == len(t.break_reasons) == 1
    text = str(e)
    assert "Graph Count: 2" in text and "Graph Break Count: 1" in text, text
    assert "if b.sum() < 0" in text or "line" in text, text


def test_recompiles_log_names_the_failing_guard(capsys, caplog):
    compiled = ember.compile(double_plus_one, backend="eager")
    compiled(ember, T(3)(ember))
    ember._logging.set_logs(recompiles=True)
    try:
        with caplog.at_level(logging.DEBUG):
            compiled(ember, T(4)(ember))
    finally:
        ember._logging.set_logs()
    out = capsys.readouterr()
    text = out.out + out.err + "\n".join(r.getMessage() for r in caplog.records)
    assert "double_plus_one" in text, text
    # torch 2.13's wording (it names the local 'a'; L['a'] is accepted too)
    assert re.search(r"tensor '(L\['a'\]|a)' size mismatch at index 0. expected 3, actual 4", text), text
