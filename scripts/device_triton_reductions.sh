#!/usr/bin/env bash
# Issue 18's reductions on a GPU (through the `device` tool), in one batch: the column-kernel
# tests against eager, the reduction micro-benchmark (bench/triton_reductions_cuda.py: ember's
# kernels under each generator config vs torch.compile), then bench/fused_cuda.py's bf16 sum.
#   bash scripts/device_triton_reductions.sh [benchmark configs, default "default,row"]
set -u
NEEDS="numpy pytest torch cupy triton" . "$(dirname "$0")/_device_python.sh"
export PYTHONPATH=$PWD OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
export EMBER_CACHE_DIR=${EMBER_CACHE_DIR:-/tmp/ember_cache_$$}
$PY -m pytest -p no:cacheprovider -o addopts="" -q -rf --tb=short tests/cuda/test_compile_cuda_columns.py 2>&1 | tail -n 30
$PY bench/triton_reductions_cuda.py --configs "${1:-default,row}" --rounds 3
if [ "${FUSED:-1}" = 1 ]; then
  $PY bench/fused_cuda.py --sizes 27 --dtypes bfloat16 --rounds 3 ${FUSED_ONLY:+--only $FUSED_ONLY}
fi
