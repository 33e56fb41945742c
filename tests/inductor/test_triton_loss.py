"""cross_entropy lowered for the GPU (ember/_inductor/lowering_loss.py), run by Triton's interpreter
(TRITON_INTERPRET=1) on the CPU and compared with eager ember and PyTorch: every reduction, ignored
targets (some, all), int32 targets, persistent and looped rows, a bf16 input cast to float32 inside
the graph (autocast's loss) read as bf16, strided inputs, targets out of range (IndexError as
eager's, from the kernel's error bit), and the cases left to eager's kernel (weights, label
smoothing, probability targets). Runs in its own process (test_triton_interpreter_process.py)."""
import os

import numpy as np
import pytest

if os.environ.get("EMBER_TRITON_INTERPRETER_RUN") != "1":
    pytest.skip("run in its own process by tests/inductor/test_triton_interpreter_process.py",
                allow_module_level=True)
os.environ["TRITON_INTERPRET"] = "1"
pytest.importorskip("triton", reason="triton is not installed (pip install ember[test])")
torch = pytest.importorskip("torch", reason="Triton's interpreter takes torch tensors")

import ember  # noqa: E402
from ember._functorch import make_fx  # noqa: E402
from ember._inductor.compile_fx import compile_fx  # noqa: E402
from test_lowering import assert_same, extern_ops  # noqa: E402
from test_triton_codegen import _triton_on_cpu  # noqa: E402,F401  (autouse: Triton's interpreter, strict)

F = ember.nn.functional


def logits(n, c, seed=0, dtype=np.float32, scale=3.0):
    return ember.from_numpy((np.random.default_rng(seed).standard_normal((n, c)) * scale).astype(dtype))


def targets(n, c, seed=1, ignored=(), dtype=np.int64):
    t = np.random.default_rng(seed).integers(0, c, n)
    t[list(ignored)] = -100
    return ember.from_numpy(t.astype(dtype))


def torch_loss(x, t, **kw):
    return torch.nn.functional.cross_entropy(torch.from_numpy(x.numpy()).double(),
                                             torch.from_numpy(t.numpy()).long(), **kw).numpy()


def compiled_loss(fn, x, t, lowered=True):
    compiled = compile_fx(make_fx(fn)(x, t), [x, t])
    assert (extern_ops(compiled) == []) == lowered, extern_ops(compiled)
    got = compiled(x, t)
    assert_same(got, fn(x, t), None)
    return got


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("c", [7, 100, 9000])          # persistent rows, and a looped one (> 8192)
def test_cross_entropy_matches_eager_and_torch(reduction, c):
    x, t = logits(6, c), targets(6, c, ignored=(2,))
    got = compiled_loss(lambda a, b: F.cross_entropy(a, b, reduction=reduction), x, t)
    np.testing.assert_allclose(got.numpy(), torch_loss(x, t, reduction=reduction), rtol=2e-5, atol=1e-5)


def test_every_target_ignored_gives_eagers_nan_and_zeros():
    x, t = logits(4, 9), targets(4, 9, ignored=range(4))
    assert np.isnan(compiled_loss(lambda a, b: F.cross_entropy(a, b), x, t).item())
    assert compiled_loss(lambda a, b: F.cross_entropy(a, b, reduction="sum"), x, t).item() == 0


def test_other_ignore_index_and_float64():
    x, t = logits(5, 11, dtype=np.float64), targets(5, 11)
    t[1] = 3
    compiled_loss(lambda a, b: F.cross_entropy(a, b, ignore_index=3), x, t)
    compiled_loss(lambda a, b: F.cross_entropy(a, b, reduction="none", ignore_index=3), x, t)


def test_bf16_logits_cast_inside_the_graph_are_read_as_bf16():
    # autocast's loss: x.float() is inlined into the row loads, never stored as float32
    x, t = logits(8, 300).to(ember.bfloat16), targets(8, 300, ignored=(0,))
    compiled_loss(lambda a, b: F.cross_entropy(a.float(), b), x, t)
    from ember._inductor import codegen_source
    wrapper, source = codegen_source(lambda a, b: F.cross_entropy(a.float(), b),
                                     [("cuda", ember.bfloat16, (8, 300)), ("cuda", ember.int64, (8,))])
    assert "aten_" not in wrapper, wrapper
    stores = [ln for ln in source.splitlines() if "tl.store(" in ln]
    assert stores and not any("r300" in ln for ln in stores), stores     # per-row results only


def test_strided_and_offset_logits():
    base = logits(12, 40)
    x, t = base.t()[:, 2:10].t(), targets(8, 40)          # (8, 40) with strides (1, 12), offset 24
    compiled_loss(lambda a, b: F.cross_entropy(a * 2, b), x, t)
    compiled_loss(lambda a, b: F.cross_entropy(a[::2], b[::2]), base[:8], t)


@pytest.mark.parametrize("bad", [40, -1, 1000])
def test_target_out_of_range_raises_eagers_index_error(bad):
    x, good = logits(4, 40), targets(4, 40)
    t = good.clone()
    t[2] = bad
    with pytest.raises(IndexError):
        F.cross_entropy(x, t)
    compiled = compile_fx(make_fx(lambda a, b: F.cross_entropy(a, b))(x, good), [x, good])
    with pytest.raises(IndexError, match="cross_entropy"):
        compiled(x, t)
    assert_same(compiled(x, good), F.cross_entropy(x, good), None)      # the error word is cleared


def test_weights_smoothing_and_probabilities_stay_eager():
    x, t = logits(4, 6), targets(4, 6)
    w = ember.from_numpy(np.linspace(0.5, 2, 6).astype(np.float32))
    compiled_loss(lambda a, b: F.cross_entropy(a, b, weight=w), x, t, lowered=False)
    compiled_loss(lambda a, b: F.cross_entropy(a, b, label_smoothing=0.1), x, t, lowered=False)
    p = F.softmax(logits(4, 6, seed=5), 1)
    compiled_loss(lambda a, b: F.cross_entropy(a, b), x, p, lowered=False)


def _loops_over(source, n):
    """The generated kernels reducing over rows of `n`, as (kernel text, number of loops)."""
    kernels = [k for k in source.split("@triton.jit")[1:] if f"r{n}" in k]
    return [(k, k.count("for ")) for k in kernels]


def test_looped_loss_row_is_read_in_two_passes():
    # the max, then the sum of exponentials and the picked logit in one pass (both need the max)
    _, source = codegen_source_of(lambda a, b: F.cross_entropy(a.float(), b),
                                  [("cuda", ember.bfloat16, (4, 9000)), ("cuda", ember.int64, (4,))])
    ((kernel, loops),) = _loops_over(source, 9000)
    assert loops == 2 and kernel.count("tl.load(arg0") == 2, kernel


def test_independent_reductions_share_a_loop_and_dependent_ones_do_not():
    x = logits(3, 9000, seed=4)

    def fn(a):      # sum(exp(a - max)) needs the max first; a.sum(1) and (a * a).amin(1) need nothing
        return (a - a.amax(1, keepdim=True)).exp().sum(1) + a.sum(1) * (a * a).amin(1)
    compiled = compile_fx(make_fx(fn)(x), [x])
    assert_same(compiled(x), fn(x), None)
    _, source = codegen_source_of(fn, [("cuda", ember.float32, (3, 9000))])
    ((kernel, loops),) = _loops_over(source, 9000)
    assert loops == 2, kernel


def codegen_source_of(fn, specs):
    from ember._inductor import codegen_source
    return codegen_source(fn, specs)
