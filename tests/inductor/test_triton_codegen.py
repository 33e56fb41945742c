"""The Triton code generator (codegen_triton) without a GPU: graphs compiled through the same
lowering and scheduler as the C path, the generated kernels run by Triton's interpreter
(TRITON_INTERPRET=1, buffers handed over as torch.from_numpy views), compared with eager ember.
Pointwise chains on every layout, 0-d and empty tensors, every reduction kind persistent and
looped, softmax / layer_norm / var_mean rows, cat/pad, gather/embedding with their index checks,
16-bit floats, and the source codegen_source returns for "cuda" specs."""
import os
import sys

import numpy as np
import pytest

if os.environ.get("EMBER_TRITON_INTERPRETER_RUN") != "1":
    # Triton's interpreter mode is chosen per process when functions are decorated: this file runs
    # in a process of its own, started by test_triton_interpreter_process.py
    pytest.skip("run in its own process by tests/inductor/test_triton_interpreter_process.py",
                allow_module_level=True)
os.environ["TRITON_INTERPRET"] = "1"       # before triton is imported (triton.jit reads it per function)
triton = pytest.importorskip("triton", reason="triton is not installed (pip install ember[test])")
pytest.importorskip("torch", reason="Triton's interpreter takes torch tensors")

import ember  # noqa: E402
from ember._functorch import make_fx  # noqa: E402
from ember._inductor import codegen_source, codegen_triton, config  # noqa: E402
from ember._inductor.compile_fx import compile_fx  # noqa: E402
from test_lowering import assert_same, extern_ops, layouts  # noqa: E402

F = ember.nn.functional


@pytest.fixture(autouse=True)
def _triton_on_cpu(monkeypatch):
    # another test of this process may have restored os.environ since collection: triton.jit reads
    # TRITON_INTERPRET per decorated function, so the helpers are decorated again if they were not
    # made for the interpreter
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    helpers = sys.modules.get("ember._inductor.triton_helpers")
    if helpers is not None and type(helpers.set_error).__name__ != "InterpretedFunction":
        import importlib
        importlib.reload(helpers)
    monkeypatch.setattr(config, "cpu_codegen", "triton")
    monkeypatch.setattr(config, "strict", True)        # a graph that cannot be generated fails the test


def run(fn, *inputs, lowered=True):
    want = fn(*inputs)
    compiled = compile_fx(make_fx(fn)(*inputs), list(inputs))
    assert compiled.current is not None and "ember_k" in compiled.current.code or not lowered
    got = compiled(*inputs)
    assert_same(got, want, None)
    if lowered:
        assert extern_ops(compiled) == [], extern_ops(compiled)
    return compiled


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "bool"])
def test_pointwise_on_every_layout(dtype):
    xs = [x for _, x in layouts((4, 6), dtype)]
    for x in xs:
        for y in xs:
            if dtype == "bool":
                run(lambda a, b: (a & b) | ~a, x, y)
            elif dtype.startswith("int"):
                run(lambda a, b: (a * 3 - b).abs() + a // (b.abs() + 1) + a % 4 - ember.maximum(a, b), x, y)
            else:
                run(lambda a, b: (a * 2 + 1).tanh() * b.sigmoid() - ember.maximum(a, b) / (b.abs() + 1), x, y)


def test_float_unary_and_binary_ops():
    x = ember.from_numpy(np.linspace(-0.9, 0.9, 24, dtype=np.float32).reshape(4, 6))
    y = ember.from_numpy(np.linspace(0.2, 2.0, 24, dtype=np.float32).reshape(4, 6))
    names = ["exp", "log1p", "expm1", "sin", "cos", "tan", "tanh", "erf", "erfc", "asin", "acos", "atan", "sinh",
             "cosh", "asinh", "atanh", "sigmoid", "floor", "ceil", "trunc", "round", "frac", "sign", "neg", "abs",
             "square", "relu"]
    for name in names:
        run(lambda a, n=name: getattr(ember, n)(a * 2), x)
    run(lambda a, b: (b.log() + b.sqrt() + b.rsqrt() + b.reciprocal() + b.log2() + b.log10() + b.acosh()), x, y)
    run(lambda a, b: a ** b + ember.atan2(a, b) + ember.copysign(b, a) + ember.fmod(a * 5, b) + ember.remainder(a * 5, b)
        + ember.floor_divide(a * 5, b) + ember.div(a * 5, b, rounding_mode="trunc"), x, y)
    run(lambda a: F.gelu(a) + F.gelu(a, approximate="tanh") + F.silu(a) + a.clamp(-0.5, 0.5), x)
    run(lambda a: ember.where(a > 0, a, a * 0.1) + a.isnan() + a.isfinite() + (a == a.t().t()), x)


def test_nan_propagates_through_max_min():
    x = ember.tensor([[1.0, float("nan"), 3.0], [float("-inf"), 2.0, float("nan")]])
    y = ember.tensor([[0.0, 5.0, float("nan")], [1.0, 1.0, 1.0]])
    run(lambda a, b: ember.maximum(a, b) + ember.minimum(a, b), x, y)
    run(lambda a: (a.amax(1), a.amin(1), a.argmax(1), a.argmin(1), a.max()), x)


def test_integer_division_by_zero_raises_as_eager():
    a, b = ember.tensor([5, -7, 9]), ember.tensor([2, 0, -4])
    with pytest.raises(RuntimeError):
        a // b
    compiled = compile_fx(make_fx(lambda p, q: p // q)(a, ember.tensor([2, 3, -4])), [a, b])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        compiled(a, b)
    run(lambda p, q: (p // q, p % q), a, ember.tensor([2, 3, -4]))


def test_zero_dim_and_empty_tensors():
    s, e = ember.tensor(2.5), ember.randn(0, 3)
    run(lambda a: a * 2 + 1, s)
    run(lambda a: (a.exp(), a.sum(0), a.sum(1), a.amax(0) if a.shape[0] else a.sum()), e)
    run(lambda a: a.sum() + 1, s)
    run(lambda a: a.mean(1), ember.randn(3, 0))


@pytest.mark.parametrize("cols", [7, 64, 10000])      # 10000: past PERSISTENT_LIMIT, the looped kernel
def test_every_reduction_persistent_and_looped(cols):
    rng = np.random.default_rng(cols)
    x = ember.from_numpy(rng.uniform(-2, 2, (3, cols)).astype(np.float32))
    i = ember.from_numpy(rng.integers(-9, 9, (3, cols)))
    run(lambda a: (a.sum(1), a.mean(1), a.amax(1), a.amin(1), a.argmax(1), a.argmin(1), a.sum()), x)
    run(lambda a: ((a / 2).exp().prod(1) if cols < 100 else a.sum(), (a > 1.9).any(1), (a > -1.99).all(1)), x)
    run(lambda a: (a.var(1), a.std(1, correction=0), ember.var_mean(a, 1), a.var()), x)
    run(lambda a: (a.sum(1), a.amax(1), a.argmin(1), a.amin()), i)
    run(lambda a: (a.t().sum(1), a[:, ::2].amax(1), a.sum(0)), x)


def test_var_is_exact_on_a_large_mean():
    x = ember.from_numpy((np.random.default_rng(0).standard_normal((2, 20000)) + 1e4).astype(np.float64))
    run(lambda a: (a.var(1), ember.var_mean(a, 1)), x)


@pytest.mark.parametrize("cols", [8, 100, 9000])
def test_softmax_layer_norm_rows(cols):
    x = ember.randn(5, cols)
    w, b = ember.randn(cols), ember.randn(cols)
    run(lambda a: a.softmax(-1), x)
    run(lambda a: (a.log_softmax(-1), ember.logsumexp(a, -1)), x)
    run(lambda a, p, q: F.layer_norm(a, (cols,), p, q), x, w, b)
    run(lambda a: a.softmax(0), x)                    # the reduced dim outermost


def test_softmax_keeps_exp_in_registers():
    _, src = codegen_source(lambda a: a.softmax(-1), [("cuda", ember.float32, (16, 1024))])
    assert src.count("tl.exp(") == 1 and src.count("tl.store(") == 1 and src.count("tl.load(") == 1, src
    _, src = codegen_source(lambda a: F.layer_norm(a, (1024,)), [("cuda", ember.float32, (16, 1024))])
    assert src.count("tl.load(") == 1, src           # x read once for the mean, the variance and the output


def test_cat_pad_gather_embedding_index():
    x, y = ember.randn(3, 4), ember.randn(2, 4)
    run(lambda a, b: ember.cat([a, b * 2], 0).exp(), x, y)
    run(lambda a: F.pad(a, (1, 2, 0, 1), value=-1.5), x)
    idx = ember.tensor([[0, 3, 1], [2, 2, 0], [1, 0, 3]])
    run(lambda a, i: a.gather(1, i) * 2, x, idx)
    w, tokens = ember.randn(10, 6), ember.tensor([[1, 9, 0], [4, 4, -10 + 10]])
    run(lambda e, t: F.embedding(t, e) + 1, w, tokens)
    run(lambda a, i: a[i] + a.index_select(0, i.abs()), x, ember.tensor([2, 0, -1]))


def test_bad_index_raises_as_eager_and_reads_nothing():
    w = ember.randn(10, 6)
    good, bad = ember.tensor([[1, 2]]), ember.tensor([[1, 12]])
    with pytest.raises(IndexError):
        F.embedding(bad, w)
    compiled = compile_fx(make_fx(lambda e, t: F.embedding(t, e) * 2)(w, good), [w, good])
    with pytest.raises(IndexError):
        compiled(w, bad)
    np.testing.assert_allclose(compiled(w, good).numpy(), (F.embedding(good, w) * 2).numpy())
    x, i = ember.randn(3, 4), ember.tensor([[0, 5]] * 3)
    compiled = compile_fx(make_fx(lambda a, j: a.gather(1, j))(x, ember.tensor([[0, 1]] * 3)), [x, i])
    with pytest.raises(RuntimeError):
        compiled(x, i)


@pytest.mark.parametrize("dtype", [ember.bfloat16, ember.float16])
def test_half_floats_computed_in_float32(dtype):
    x = ember.randn(4, 64).to(dtype)
    w = ember.randn(64).to(dtype)
    run(lambda a, b: (a * 2 + b).tanh() * 1.5, x, w)
    run(lambda a, b: (a.softmax(-1), F.layer_norm(a, (64,), b), a.sum(1), a.amax(1)), x, w)
    run(lambda a: a.float() * 3 + a.to(ember.float64), x)


def test_random_ops_and_scatter_run_eagerly_inside_the_graph():
    x = ember.randn(4, 5)
    compiled = run(lambda a: (a * 2).index_put((ember.tensor([0, 2]),), ember.ones(5), accumulate=True) + 1,
                   x, lowered=False)
    assert extern_ops(compiled) == ["aten::index_put"]


def test_codegen_source_cpu_and_cuda():
    fn = lambda a, b: (a * b).sum(-1) + 1             # noqa: E731
    wrapper, c_src = codegen_source(fn, [("cpu", ember.float32, (8, 32)), ("cpu", ember.float32, (32,))])
    assert "void ember_k0" in c_src and "ember_k0" in wrapper
    wrapper, t_src = codegen_source(fn, [("cuda", ember.float32, (8, 32)), ("cuda", ember.float32, (32,))])
    assert "@triton.jit" in t_src and "tl.sum(" in t_src and "ember_k0" in wrapper
    _, t_src = codegen_source(lambda a: a.relu() * 2, [("cuda", ember.bfloat16, (1000,))])
    assert ".to(tl.float32)" in t_src and ".to(tl.bfloat16)" in t_src and "XBLOCK" in t_src
    with pytest.raises(ValueError, match="one device"):
        codegen_source(fn, [("cpu", ember.float32, (8, 32)), ("cuda", ember.float32, (32,))])


def test_output_code_log_prints_the_triton_source(capsys):
    from ember import _logging
    _logging.set_logs(output_code=True)
    try:
        run(lambda a: a.exp() + 1, ember.randn(5))
    finally:
        _logging.set_logs(output_code=False)
    assert "@triton.jit" in capsys.readouterr().err


def test_unsupported_group_is_refused_not_miscompiled(monkeypatch):
    def refuse(*args, **kwargs):
        raise codegen_triton.Unsupported("test")
    monkeypatch.setattr(codegen_triton, "generate_kernel", refuse)
    monkeypatch.setattr(config, "strict", False)
    x = ember.randn(4)
    compiled = compile_fx(make_fx(lambda a: a * 2)(x), [x])
    assert compiled.current is None                   # runs eagerly
    np.testing.assert_allclose(compiled(x).numpy(), (x * 2).numpy())


def test_long_reductions_over_few_outputs_are_split():
    from ember._inductor import lowering_split
    x = ember.randn(300, 300)
    i = ember.from_numpy(np.random.default_rng(1).integers(-50, 50, (70000,)))
    run(lambda a: ((a * a).sum(), a.amax(), a.amin(), (a > 3).any(), (a > -5).all(), a.sum(1).amax()), x)
    run(lambda a: (a.sum(), a.amax(), a.amin()), i)
    run(lambda a: (a.sum(0), a.mean()), ember.rand(70000, 2))   # positive: no cancellation in the sum
    _, src = codegen_source(lambda a: (a * a).sum(), [("cuda", ember.float32, (512, 1024))])
    assert src.count("@triton.jit") == 2 and lowering_split.SPLIT_MIN <= 512 * 1024, src


@pytest.mark.parametrize("dtype, contiguous", [(ember.float32, False), (ember.float64, False), (ember.int64, False),
                                              (ember.float64, True)])    # (one contiguous run: CI's time)
def test_differential_fuzzer_through_the_triton_generator(dtype, contiguous):
    """The CPU fuzzer's random programs (tests/fuzz_programs.py) through codegen_triton: it found a
    row's scalar member broadcast along the lanes of the reduction before it, and an index of a
    one-lane range written as `(0).to(...)`. With contiguous inputs (as the GPU run gets them) it found
    a column kernel's pointwise member storing through a size-1 inner variable it never defined."""
    from fuzz_programs import fuzz
    assert fuzz(dtype, "cpu", contiguous=contiguous) == []


def test_looped_row_recomputes_a_member_read_only_at_its_own_element():
    # rows longer than PERSISTENT_LIMIT: y (realized: costly and read three times) is read by both
    # reductions and the last member at its own element, so each loop recomputes it instead of
    # storing the whole row and reading it back three times
    rows, cols = 128, 8300          # FEW_ROWS rows (one kernel), past PERSISTENT_LIMIT (looped)
    x = ember.from_numpy(np.random.default_rng(2).uniform(0.5, 2, (rows, cols)).astype(np.float32))
    t = ember.from_numpy(np.random.default_rng(3).integers(0, cols, (rows,)))

    def fn(a, idx):
        y = (ember.arange(cols, device=a.device) == idx[:, None]).float() * 2 + (a * 0.5).exp().tanh().sin().cos() * a
        return (y - y.amax(1, keepdim=True)).exp() / y.sum(1, keepdim=True)
    run(fn, x, t)
    _, src = codegen_source(fn, [("cuda", ember.float32, (rows, cols)), ("cuda", ember.int64, (rows,))])
    (kernel,) = src.split("@triton.jit")[1:]
    # the max and the sum are independent: one loop computes both (codegen_triton_reduction._place_loop)
    assert kernel.count("tl.store(") == 1 and kernel.count("for ") == 2 and "debug_barrier" not in kernel, kernel
