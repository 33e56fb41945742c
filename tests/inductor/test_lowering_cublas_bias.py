"""A half linear's bias on CUDA (lowering_cublas.linear): the GEMM writes the product alone and the
kernel that reads it adds the bias (eager's half linear first broadcasts the bias into the output for
the GEMM to add: a copy as large as the output). Checked on the CPU with lowering_cublas run on
float32 graphs, NumPy's BLAS standing in for cuBLAS (small integers: every sum exact, so the two
roundings of the fused form cannot hide a wrong bias), and on GPT-2's fake-CUDA graphs: no eager
linear is left in the forward. tests/cuda/test_compile_cuda_loss_bias.py runs it on the GPU."""
import numpy as np
import pytest

import ember
from ember._functorch import make_fx
from ember._inductor import extern_blas, extern_cublas, lowering_blas, lowering_cublas
from ember._inductor.compile_fx import compile_fx
from gpt2_fake_cuda import gpt2_graphs, lower_for_cuda
from test_lowering import extern_ops

F = ember.nn.functional
pytestmark = pytest.mark.usefixtures("strict_fuser")


@pytest.fixture
def cuda_linear_on_cpu(monkeypatch):
    """CPU float32 linears lowered by lowering_cublas as it lowers half ones, multiplied by NumPy."""
    monkeypatch.setattr(lowering_cublas, "_HALF", (ember.float32,))
    monkeypatch.setattr(lowering_cublas, "_CUBLAS", (ember.float32,))
    monkeypatch.setattr(extern_cublas, "matmul", extern_blas.matmul)
    from ember._inductor.lowering import EXTERN_LOWERINGS
    monkeypatch.setitem(EXTERN_LOWERINGS, "linear.default", lowering_cublas.linear)
    monkeypatch.setitem(EXTERN_LOWERINGS, "matmul.default", lowering_cublas.matmul)


def rand(*shape, seed=0):
    return ember.from_numpy(np.random.default_rng(seed).integers(-3, 4, shape).astype(np.float32))


PROGRAMS = {
    "alone (an output)": lambda x, w, b: F.linear(x, w, b),
    "residual add": lambda x, w, b: x + F.linear(x, w, b),
    "relu epilogue, product read twice": lambda x, w, b: (lambda y: (y.relu() * 2, y.sum(-1)))(F.linear(x, w, b)),
    "3-d input": lambda x, w, b: F.linear(x.reshape(2, 3, 6), w, b) * 3,
    "transposed input": lambda x, w, b: F.linear(x.t().contiguous().t(), w, b) - 1,
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_bias_added_after_the_product_matches_eager(cuda_linear_on_cpu, name):
    fn = PROGRAMS[name]
    x, w, b = rand(6, 6), rand(6, 6, seed=1), rand(6, seed=2)
    compiled = compile_fx(make_fx(fn)(x, w, b), [x, w, b])
    assert "aten::linear" not in extern_ops(compiled), extern_ops(compiled)
    got, want = compiled(x, w, b), fn(x, w, b)
    for g, e in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert tuple(g.shape) == tuple(e.shape) and g.dtype == e.dtype
        np.testing.assert_array_equal(g.numpy(), e.numpy())


def test_bias_of_another_dtype_or_shape_stays_eager(cuda_linear_on_cpu):
    x, w = rand(4, 6), rand(5, 6, seed=1)
    b64 = rand(5, seed=2).double()
    with pytest.raises(RuntimeError):
        F.linear(x, w, b64)                        # eager refuses mixed dtypes: so does the trace
    b2 = rand(4, 5, seed=3)                        # a 2-d bias broadcasts in eager's addmm
    fn = lambda a, c, d: F.linear(a, c, d)         # noqa: E731
    compiled = compile_fx(make_fx(fn)(x, w, b2), [x, w, b2])
    np.testing.assert_array_equal(compiled(x, w, b2).numpy(), fn(x, w, b2).numpy())


def test_gpt2_forward_runs_no_eager_linear():
    # every block's four biased linears: cuBLAS products with the bias in the next kernel
    fw, fw_inputs, _, _ = gpt2_graphs(layers=2)
    wrapper, source = lower_for_cuda(fw, fw_inputs)
    import re
    assert len(re.findall(r"= aten_linear__default_on_cuda\w*\(", wrapper)) == 1     # the LM head: no bias
    assert wrapper.count("extern_cublas.matmul(") == 4 * 2
