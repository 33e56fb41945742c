"""The fuser's differential fuzzer on the GPU (issue 18): the CPU fuzzer's random programs
(tests/fuzz_programs.py) on CUDA inputs, compiled to Triton kernels by compile_fx, against eager
ember on the same card. Every graph must compile (no fallback) and agree with eager."""
import os

import pytest

if os.environ.get("TRITON_INTERPRET") == "1":
    pytest.skip("TRITON_INTERPRET=1: Triton's interpreter, not the GPU", allow_module_level=True)
pytest.importorskip("triton", reason="triton is not installed (pip install ember[gpu])")

import ember  # noqa: E402
from ember._inductor import config  # noqa: E402
from fuzz_programs import fuzz  # noqa: E402


def _has_triton_kernels(compiled):
    assert compiled.current is not None, "the graph fell back to eager"
    assert "ember_k" in compiled.current.code, "no generated kernel in the compiled graph"


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int64])
def test_differential_fuzzer_on_the_gpu(dtype, monkeypatch):
    monkeypatch.setattr(config, "strict", True)      # a lowering error fails the test instead of falling back
    assert fuzz(dtype, "cuda", check=_has_triton_kernels) == []
