"""The GPT-2 training step compiled for CUDA, checked without a GPU: AOT autograd's forward and
backward graphs of bench's GPT-2 under bf16 autocast, traced over fake CUDA tensors and lowered by
the fuser for "cuda" (tests/inductor/gpt2_fake_cuda.py), plus the pieces that made it lower: the
derivative formulas' CUDA kernels stay out of traces, 0-d host constants are inlined, a graph output
read inside the graph is stored once, integer arange is generated, and an extern's dtype is checked.
The device runs the same step for real against eager (scripts/device_gpt2.sh)."""
import re

import numpy as np
import pytest

import ember
from ember._functorch import make_fx
from ember._functorch.fake_tensor import FakeTensorMode
from ember._inductor.compile_fx import compile_fx, graph_key
from ember._inductor.wrapper import ExpectLayout
from gpt2_fake_cuda import gpt2_graphs, lower_for_cuda
from test_lowering import assert_same, extern_ops

F = ember.nn.functional
# what may stay eager inside the compiled GPT-2 step on the GPU: cuBLAS products, attention's
# kernels, views of the qkv split, the embedding gradient's scatter and the causal mask (the loss is
# generated: lowering_loss.py)
ALLOWED_EXTERNS = {"linear.default", "matmul.default", "scaled_dot_product_attention.default", "split.Tensor",
                   "index_add.default", "tril.default",
                   "_scaled_dot_product_flash_attention.default",
                   "_scaled_dot_product_flash_attention_backward.default"}
pytestmark = pytest.mark.usefixtures("strict_fuser")


def aten_ops(gm):
    return {getattr(n.target, "name", None) for n in gm.graph.nodes if n.op == "call_function"}


def externs(wrapper_code):
    # the wrapper calls them through bindings bound to the CUDA kernel, named aten_<op>__<overload>_on_cuda
    return {f"{op}.{overload}" for op, overload in
            re.findall(r"\baten_([a-z_0-9]+?)__([A-Za-z_0-9]+?)_on_cuda(?:_\d+)?\(", wrapper_code)}


@pytest.mark.parametrize("amp", [True, False])
def test_gpt2_step_traces_on_fake_cuda_and_lowers_both_graphs(amp):
    fw, fw_inputs, bw, bw_inputs = gpt2_graphs(amp=amp)
    # bf16 (autocast) attention takes the flash kernels; float32 the sdpa operator
    assert ("aten::_scaled_dot_product_flash_attention" if amp else "aten::scaled_dot_product_attention") \
        in aten_ops(fw)
    for gm, inputs in ((fw, fw_inputs), (bw, bw_inputs)):
        wrapper, source = lower_for_cuda(gm, inputs)
        assert "@triton.jit" in source
        assert externs(wrapper) <= ALLOWED_EXTERNS, externs(wrapper) - ALLOWED_EXTERNS


def test_gpt2_backward_computes_attention_gelu_and_loss_gradients_in_the_graph():
    # the CUDA fast paths of these formulas call CuPy kernels: on fakes (and in any trace) the formula
    # runs as ember ops instead, so the backward graph holds them rather than failing or missing them
    _, _, bw, _ = gpt2_graphs()
    ops = aten_ops(bw)
    assert {"aten::tanh", "aten::log_softmax.int", "aten::matmul", "aten::index_add"} <= ops
    assert "aten::one_hot" not in ops


def test_residual_stream_is_stored_where_it_is_computed():
    # each block's residual sum is saved for the backward and read by the next LayerNorm: stored once,
    # the LayerNorm kernels load it instead of recomputing the embedding lookup (and its index check)
    fw, fw_inputs, _, _ = gpt2_graphs(layers=3)
    _, source = lower_for_cuda(fw, fw_inputs)
    kernels = source.split("@triton.jit")[1:]
    from ember._inductor.codegen_c import ERROR_BIT
    checking = [k for k in kernels if re.search(rf"set_error\(err_flag, .*, {ERROR_BIT['embedding']}\)", k)]
    assert len(checking) == 1, f"{len(checking)} kernels look the embedding up"


def test_host_scalar_constant_is_inlined_into_device_kernels():
    scale = ember.tensor(0.125)             # a 0-d CPU constant the graph copies to the device

    def fn(x):
        return (x * scale.to(x.device)).exp()
    with FakeTensorMode(allow_non_fake_inputs=True):
        x = ember.empty((4, 8), device="cuda")
    gm = make_fx(fn, tracing_mode="fake", _allow_non_fake_inputs=True)(x)
    assert any(n.op == "get_attr" for n in gm.graph.nodes)
    wrapper, source = lower_for_cuda(gm, [x])
    assert externs(wrapper) == set() and "0.125" in source
    # the value is part of the graph cache's key: another constant compiles another graph
    other = make_fx(lambda v: (v * ember.tensor(0.25).to(v.device)).exp(), tracing_mode="fake",
                    _allow_non_fake_inputs=True)(x)
    assert graph_key(gm, [x]) != graph_key(other, [x])


def test_graph_key_of_a_cpu_graph_keys_its_scalar_constants_values():
    x = ember.ones(3)
    a = make_fx(lambda v: v * ember.tensor(2.0))(x)
    b = make_fx(lambda v: v * ember.tensor(3.0))(x)
    assert a.code == b.code and graph_key(a, [x]) != graph_key(b, [x])
    for gm, k in ((a, 2.0), (b, 3.0)):
        assert_same(compile_fx(gm, [x])(x), x * k, None)


def test_cuda_derivative_fast_paths_are_off_for_fake_and_traced_tensors():
    from ember.ops import native
    with FakeTensorMode():
        f = ember.empty(4, device="cuda")
    with ember.no_grad():
        assert not native.plain_cuda_backward(f, f)
        assert not native.plain_backward(ember.ones(2), f)


def test_expect_layout_refuses_an_extern_result_of_another_dtype():
    check = ExpectLayout("extern3_0", (2, 3), (3, 1), ember.float32)
    t = ember.zeros(2, 3)
    assert check(t) is t
    copied = check(ember.zeros(3, 2).t())             # another layout: copied into the traced one
    assert copied.stride() == (3, 1)
    with pytest.raises(RuntimeError, match="extern3_0 returned ember.float64"):
        check(ember.zeros(2, 3, dtype=ember.float64))


@pytest.mark.parametrize("args", [(7,), (2, 9), (10, -3, -3), (0, 12, 5)])
@pytest.mark.parametrize("dtype", [ember.int64, ember.int32])
def test_integer_arange_is_generated(args, dtype):
    n = len(ember.arange(*args))
    x = ember.from_numpy(np.arange(n, dtype=np.int64) * 3)

    def fn(v):
        return v + ember.arange(*args, dtype=dtype)
    compiled = compile_fx(make_fx(fn)(x), [x])
    assert extern_ops(compiled) == []
    assert_same(compiled(x), fn(x), None)


def test_float_arange_stays_eager():
    x = ember.ones(5)
    compiled = compile_fx(make_fx(lambda v: v + ember.arange(0.0, 1.0, 0.2))(x), [x])
    assert extern_ops(compiled) == ["aten::arange.start_step"]
    assert_same(compiled(x), x + ember.arange(0.0, 1.0, 0.2), None)


@pytest.mark.parametrize("kwargs", [{}, {"ignore_index": 2}, {"reduction": "sum"}, {"reduction": "none"},
                                    {"label_smoothing": 0.1}, {"weight": "w"}])
def test_cross_entropy_gradient_matches_torch(kwargs):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 5)).astype(np.float32)
    t = np.array([0, 2, 4, 2, 1, 3])
    w = rng.uniform(0.5, 2, 5).astype(np.float32)
    grads = []
    for lib in (ember, torch):
        xi = lib.tensor(x, requires_grad=True)
        kw = {k: (lib.tensor(w) if v == "w" else v) for k, v in kwargs.items()}
        loss = lib.nn.functional.cross_entropy(xi, lib.tensor(t), **kw)
        loss.sum().backward()
        grads.append(np.asarray(xi.grad.detach().numpy() if lib is torch else xi.grad.numpy()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5, atol=1e-6)


def test_each_blocks_kernels_are_emitted_once():
    # the blocks' kernels differ only in their buffers: one function each, launched once per block
    counts = []
    for layers in (2, 4):
        fw, fw_inputs, bw, bw_inputs = gpt2_graphs(layers=layers)
        for gm, inputs in ((fw, fw_inputs), (bw, bw_inputs)):
            wrapper, source = lower_for_cuda(gm, inputs)
            launches = re.findall(r"= ember_k\d+_\w+\(", wrapper)
            counts.append((source.count("@triton.jit"), len(launches)))
    (fw2, fw2_launches), (bw2, bw2_launches), (fw4, fw4_launches), (bw4, bw4_launches) = counts
    assert (fw4, bw4) == (fw2, bw2)
    assert fw4_launches > fw2_launches > fw2 and bw4_launches > bw2_launches > bw2


def test_kernels_differing_in_a_constant_are_both_emitted():
    with FakeTensorMode():
        x, w = ember.empty((4, 8), device="cuda"), ember.empty((8, 8), device="cuda")
    # two pointwise kernels of one shape on either side of a cuBLAS product, 2 against 3
    gm = make_fx(lambda a, b: (((a * 2).exp() @ b) * 3).exp(), tracing_mode="fake")(x, w)
    wrapper, source = lower_for_cuda(gm, [x, w])
    assert source.count("@triton.jit") == 2 and "2.0" in source and "3.0" in source


def _kernels_by_grid(gm, inputs):
    from ember._inductor.compile_fx import lower_and_schedule
    from ember._inductor.compile_triton import generate_module
    _, groups, reads, _ = lower_and_schedule(gm, inputs, "cuda")
    source, _, launch = generate_module(groups, reads)
    bodies = {name: source[source.index(f"def {name}("):].split("@triton.jit")[0] for name in launch}
    return [(meta["grid"], bodies[name]) for name, meta in launch.items()]


def test_a_large_pointwise_consumer_of_a_scalar_reduction_gets_its_own_kernel():
    # x / x.sum(): fused after the total, 3.2M quotients would run in the total's single program
    with FakeTensorMode():
        x = ember.empty((64, 50000), device="cuda")
    gm = make_fx(lambda v: v / v.sum(), tracing_mode="fake")(x)
    kernels = _kernels_by_grid(gm, [x])
    assert all("div_rn" not in body for grid, body in kernels if grid < 128)
    assert any("div_rn" in body and "XBLOCK" in body for _, body in kernels)
    real = ember.from_numpy(np.random.default_rng(0).uniform(0.5, 1, (64, 500)).astype(np.float32))
    compiled = compile_fx(make_fx(lambda v: v / v.sum())(real), [real])
    assert_same(compiled(real), real / real.sum(), None)


def test_gpt2_loss_gradient_over_the_vocabulary_runs_in_parallel():
    # the count of non-ignored targets is one program; the [N, vocab] gradient must not join it
    _, _, bw, bw_inputs = gpt2_graphs(layers=1, d=64, seq=128, batch=8, vocab=50257)
    for grid, body in _kernels_by_grid(bw, bw_inputs):
        assert grid >= 128 or "50257" not in body, body


def test_gpt2_loss_reads_the_bf16_logits_in_one_row_kernel_each_way():
    # forward: the float32 copy autocast makes for the loss is inlined into one row kernel (no eager
    # cross_entropy, no [N, V] float32 buffer); the backward gets the bf16 logits and redoes the cast
    fw, fw_inputs, bw, bw_inputs = gpt2_graphs(layers=1, d=64, seq=128, batch=8, vocab=50257)
    outputs = [a.meta["val"] for a in fw.graph.find_nodes(op="output")[0].args[0] if hasattr(a, "meta")]
    logits = [v for v in outputs if v is not None and tuple(v.shape)[-1:] == (50257,)]
    assert logits and all(v.dtype == ember.bfloat16 for v in logits), [v.dtype for v in logits]
    assert all(v.dtype == ember.bfloat16 for v in bw_inputs if tuple(v.shape)[-1:] == (50257,))
    wrapper, source = lower_for_cuda(fw, fw_inputs)
    assert "cross_entropy" not in externs(wrapper)
    kernels = source.split("@triton.jit")[1:]
    rows = [k for k in kernels if "r50257" in k]                    # kernels reducing over the vocabulary
    assert len(rows) == 1, len(rows)
    wide_stores = [ln for k in kernels for ln in k.splitlines() if "tl.store(" in ln and "float32" in ln
                   and ("r50257" in ln or "xindex" in k and "50257" in k)]
    assert not wide_stores, wide_stores


def test_gpt2_loss_gradient_computes_its_row_coefficient_once_per_row():
    # the gradient's per-row coefficient (ignored? 0 : -grad / count) is stored once per row
    # (graph._broadcast_into_rows), not recomputed at each of the row's 50257 columns
    _, _, bw, bw_inputs = gpt2_graphs(layers=1, d=64, seq=128, batch=8, vocab=50257)
    _, source = lower_for_cuda(bw, bw_inputs)
    rows = [k for k in source.split("@triton.jit")[1:] if "r50257" in k]
    in_loops = [ln for k in rows for ln in k.splitlines() if ln.startswith(" " * 8)]    # (loop bodies)
    assert in_loops and not [ln for ln in in_loops if "div_rn" in ln or "-100" in ln], rows
