"""ember.accelerator / ember.cuda / ember.backends and the Tensor device predicates answer exactly as
PyTorch 2.13's CPU build does (the oracle is the installed torch, itself a CPU build)."""
import importlib
import subprocess
import sys

import pytest
import torch

import ember

assert not torch.cuda.is_available(), "these tests compare against a CPU build of PyTorch"


def outcome(fn):
    """('ok', value) or ('raise', exception type) of calling fn()."""
    try:
        return "ok", fn()
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return "raise", type(exc)


QUERIES = [
    lambda lib: lib.accelerator.current_accelerator(),
    lambda lib: lib.accelerator.current_accelerator(check_available=True),
    lambda lib: lib.accelerator.is_available(),
    lambda lib: lib.accelerator.device_count(),
    lambda lib: lib.accelerator.current_device_index(),
    lambda lib: lib.accelerator.set_device_index(0),
    lambda lib: lib.accelerator.synchronize(),
    lambda lib: lib.accelerator.empty_cache(),
    lambda lib: lib.cuda.is_available(),
    lambda lib: lib.cuda.device_count(),
    lambda lib: lib.cuda.is_initialized(),
    lambda lib: lib.cuda.manual_seed(3),
    lambda lib: lib.cuda.manual_seed_all(3),
    lambda lib: lib.cuda.seed(),
    lambda lib: lib.cuda.seed_all(),
    lambda lib: lib.cuda.synchronize(),
    lambda lib: lib.cuda.current_device(),
    lambda lib: lib.cuda.get_device_name(),
    lambda lib: lib.cuda.get_device_capability(),
    lambda lib: lib.cuda.empty_cache(),
    lambda lib: lib.cuda.is_bf16_supported(),
    lambda lib: lib.cuda.memory_allocated(),
    lambda lib: lib.cuda.max_memory_allocated(),
    lambda lib: lib.backends.cuda.is_built(),
    lambda lib: lib.backends.cuda.matmul.allow_tf32,
    lambda lib: lib.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
    lambda lib: lib.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
    lambda lib: lib.backends.cuda.matmul.no_such_flag,
    lambda lib: lib.backends.cuda.flash_sdp_enabled(),
    lambda lib: lib.backends.cuda.mem_efficient_sdp_enabled(),
    lambda lib: lib.backends.cuda.math_sdp_enabled(),
    lambda lib: lib.backends.cuda.is_flash_attention_available(),
    lambda lib: lib.backends.cudnn.is_available(),
    lambda lib: lib.backends.cudnn.version(),
    lambda lib: lib.backends.cudnn.enabled,
    lambda lib: lib.backends.cudnn.benchmark,
    lambda lib: lib.backends.cudnn.benchmark_limit,
    lambda lib: lib.backends.cudnn.deterministic,
    lambda lib: lib.backends.cudnn.allow_tf32,
    lambda lib: lib.backends.mps.is_available(),
    lambda lib: lib.backends.mps.is_built(),
    lambda lib: lib.backends.opt_einsum.is_available(),
    lambda lib: lib.backends.opt_einsum.enabled,
    lambda lib: lib.backends.opt_einsum.strategy,
    lambda lib: lib.backends.opt_einsum.get_opt_einsum(),
]


@pytest.mark.parametrize("query", QUERIES, ids=range(len(QUERIES)))
def test_answers_match_a_cpu_build(query):
    assert outcome(lambda: query(ember)) == outcome(lambda: query(torch))


def test_cuda_errors_name_the_missing_build():
    with pytest.raises(AssertionError, match="not compiled with CUDA enabled"):
        ember.cuda.synchronize()
    with pytest.raises(RuntimeError, match="none is available"):
        ember.accelerator.current_device_index()


@pytest.mark.parametrize("flag, value", [("allow_tf32", True), ("allow_fp16_reduced_precision_reduction", False)])
def test_matmul_flags_read_back_and_unknown_names_raise(flag, value):
    for lib in (ember, torch):
        saved = getattr(lib.backends.cuda.matmul, flag)
        try:
            setattr(lib.backends.cuda.matmul, flag, value)
            assert getattr(lib.backends.cuda.matmul, flag) == value
        finally:
            setattr(lib.backends.cuda.matmul, flag, saved)
        with pytest.raises(AttributeError, match="Unknown attribute"):
            lib.backends.cuda.matmul.allow_tf33 = True


def test_cudnn_flags_context_restores():
    for lib in (ember, torch):
        before = (lib.backends.cudnn.enabled, lib.backends.cudnn.benchmark, lib.backends.cudnn.deterministic)
        with lib.backends.cudnn.flags(enabled=False, benchmark=True, deterministic=True):
            inside = (lib.backends.cudnn.enabled, lib.backends.cudnn.benchmark, lib.backends.cudnn.deterministic)
        after = (lib.backends.cudnn.enabled, lib.backends.cudnn.benchmark, lib.backends.cudnn.deterministic)
        assert before == after and inside == (False, True, True)


def test_submodules_import_by_name():
    for name in ("ember.cuda", "ember.accelerator", "ember.backends", "ember.backends.cudnn",
                 "ember.backends.cuda", "ember.backends.mps", "ember.onnx", "ember.nn.parallel"):
        assert importlib.import_module(name) is not None


def test_import_ember_loads_none_of_them():
    code = ("import sys, ember; print(sorted(m for m in sys.modules if m.split('.')[:2] in "
            "(['ember','cuda'], ['ember','accelerator'], ['ember','backends'], ['ember','onnx'], "
            "['ember','_pickled_checkpoint'], ['ember','sparse']) or m.startswith('ember._core.legacy') or m == 'ember.nn.parallel'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


PREDICATES = ["is_cpu", "is_cuda", "is_xpu", "is_mps", "is_meta", "is_ipu", "is_xla", "is_mtia", "is_maia",
              "is_vulkan", "is_mkldnn", "is_sparse", "is_sparse_csr", "is_quantized", "is_nested"]


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("name", PREDICATES)
def test_device_predicates(name, device):
    assert getattr(ember.zeros(2, device=device), name) is getattr(torch.zeros(2, device=device), name)


PREAMBLE = """
device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else "cpu"
cuda_device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.backends.cudnn.benchmark = True
torch.backends.cudnn.deterministic = True
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
use_mps = torch.backends.mps.is_available()
torch.manual_seed(0)
torch.cuda.manual_seed_all(0)
if torch.cuda.is_available():
    torch.cuda.synchronize()
n_gpu = torch.cuda.device_count()
x = torch.ones(2, 3, device=device) * 2
result = (str(device), str(cuda_device), use_mps, n_gpu, x.is_cuda, x.is_xpu, x.device.type,
          torch.backends.cudnn.benchmark, torch.backends.cuda.matmul.allow_tf32, x.sum().item())
"""


def test_device_selection_preamble_runs_as_in_torch():
    results = []
    for lib in (ember, torch):
        saved = (lib.backends.cudnn.benchmark, lib.backends.cudnn.deterministic, lib.backends.cudnn.allow_tf32,
                 lib.backends.cuda.matmul.allow_tf32)
        namespace = {"torch": lib}
        try:
            exec(compile(PREAMBLE, "<preamble>", "exec"), namespace)
        finally:
            (lib.backends.cudnn.benchmark, lib.backends.cudnn.deterministic, lib.backends.cudnn.allow_tf32,
             lib.backends.cuda.matmul.allow_tf32) = saved
        results.append(namespace["result"])
    assert results[0] == results[1]
