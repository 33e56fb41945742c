#!/usr/bin/env bash
# The compiled graph's extern calls on CUDA (wrapper.py's bound kernels, _inductor/extern_cublas.py)
# and the odd-N GEMMs' padding (_cuda/gemm_padding.py), on the device machine in one call:
#   MODE=gemm   scripts/device_externs_gemm.py: the tied LM head's three GEMMs, unpadded vs torch.mm vs padded
#   MODE=tests  the CUDA tests only
#   MODE=check  the GEMMs, then the CUDA tests of the externs and padding, then bench/gpt2_cuda.py (compiled,
#               2 layers) in BASE (the tree before; default the repo root) and here, one after the other
# Run from the tree under test (cd .cuda_wt_externs). TT / TB: seconds for the tests / each bench.
# CUPY_TGZ: a CuPy kernel cache to start from (the GPT-2 run's, so eager's first step compiles nothing).
set -u
. "$(dirname "$0")/_device_python.sh"
export PYTHONPATH=$PWD OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-$PWD/.cupy_cache}
BASE=${BASE:-..}
if [ -n "${CUPY_TGZ:-}" ] && [ -f "$CUPY_TGZ" ]; then mkdir -p "$CUPY_CACHE_DIR" && tar xzf "$CUPY_TGZ" -C "$CUPY_CACHE_DIR"; fi
[ "${MODE:-gemm}" != tests ] && timeout -s INT "${TG:-30}" $PY scripts/device_externs_gemm.py
[ "${MODE:-gemm}" = gemm ] && exit 0
timeout -s INT "${TT:-60}" $PY -m pytest -p no:cacheprovider -o addopts="" -q -rf --tb=short \
  tests/cuda/test_cuda_externs.py "tests/cuda/test_compile_cuda.py::test_matmul_stays_extern_with_fused_epilogue" 2>&1 | tail -n 25
[ "${MODE:-gemm}" = tests ] && exit 0
for tree in "$BASE" "$PWD"; do
  echo "== bench/gpt2_cuda.py in $tree"
  (cd "$tree" && PYTHONPATH=$PWD timeout -s INT "${TB:-60}" $PY bench/gpt2_cuda.py --compiled --only-ember \
     --layers 2 --steps 4 --warmup 2 2>&1 | grep -v -i warn | head -n 14)
done
