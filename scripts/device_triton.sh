#!/usr/bin/env bash
# The GPU code generator on a machine with a GPU (through the `device` tool): the compiled-CUDA
# tests, then bench/fused_cuda.py (arguments after the script go to the benchmark; none: skipped).
#   bash scripts/device_triton.sh                      # tests only
#   bash scripts/device_triton.sh --sizes 20,24,27 --png $OUT/fused_cuda.png
#   COMPILE_TIME=1 SKIP_TESTS=1 bash scripts/device_triton.sh   # bench/compile_time_cuda.py only
#   COMPILE_TIME=1 SKIP_TESTS=1 PROFILE_DIR=$OUT COMPILE_ARGS="--runs 2" bash scripts/device_triton.sh
#       # + a cProfile and an importtime of the warm process's first compiled step, under $OUT, first
#   TESTS=tests/cuda/test_triton_binaries.py COMPILE_TIME=1 bash scripts/device_triton.sh   # other test files
set -u
NEEDS="numpy pytest torch cupy triton" . "$(dirname "$0")/_device_python.sh"
export PYTHONPATH=$PWD OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
export EMBER_CACHE_DIR=${EMBER_CACHE_DIR:-/tmp/ember_cache_$$}
$PY -c "import ember, torch, triton; print('card:', ember.cuda.get_device_name(), '| torch', torch.__version__, '| triton', triton.__version__)" || exit 1
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  $PY -m pytest -p no:cacheprovider -o addopts="" -q -rf --tb=short ${TESTS:-tests/cuda/test_compile_cuda.py} 2>&1 | tail -n 40
fi
if [ "${COMPILE_TIME:-0}" = 1 ]; then
  if [ -n "${PROFILE_DIR:-}" ]; then
    $PY bench/compile_time_cuda.py --profile "$PROFILE_DIR"
  fi
  $PY bench/compile_time_cuda.py ${COMPILE_ARGS:-}
fi
if [ $# -gt 0 ]; then
  $PY bench/fused_cuda.py "$@"
fi
