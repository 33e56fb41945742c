#!/usr/bin/env bash
# The compiled graph's extern calls on CUDA (wrapper.py's bound kernels, _inductor/extern_cublas.py)
# and the odd-N GEMMs' padding, on the device machine in one call:
#   MODE=gemm   scripts/device_externs_gemm.py: the tied LM head's three GEMMs, ember vs torch.mm vs padded
#   MODE=check  that, then the CUDA tests of the externs and padding, then bench/gpt2_cuda.py (compiled,
#               2 layers) in BASE (the tree before, default: the repo root) and here, one after the other
# Run from the tree under test (e.g. cd .cuda_wt_externs); TT/TB seconds limit the tests / each bench.
set -u
. "$(dirname "$0")/_device_python.sh"
export PYTHONPATH=$PWD OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
BASE=${BASE:-..}
$PY scripts/device_externs_gemm.py
[ "${MODE:-gemm}" = gemm ] && exit 0
timeout -s INT "${TT:-60}" $PY -m pytest -p no:cacheprovider -o addopts="" -q -x -rf --tb=short \
  tests/cuda/test_cuda_externs.py tests/cuda/test_compile_cuda.py 2>&1 | tail -n 15
for tree in "$BASE" "$PWD"; do
  echo "== bench/gpt2_cuda.py in $tree"
  (cd "$tree" && PYTHONPATH=$PWD timeout -s INT "${TB:-60}" $PY bench/gpt2_cuda.py --compiled --only-ember \
     --layers 2 --steps 4 --warmup 2 2>&1 | grep -v Warning | head -n 12)
done
