#!/usr/bin/env bash
# Issue 17, CUDA host time: the foreach Adam and device-side index check tests (and the tests whose
# errors moved to the next sync), then the eager GPT-2 step against torch eager in one process,
# with one step's kernels and a cProfile of ember's step ($OUT/ember.pstats). TEST_S / BENCH_S
# bound each part (seconds); extra arguments go to the benchmark.
set -u
. "$(dirname "$0")/_device_python.sh"
export PYTHONPATH=$PWD OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-$PWD/.cupy_cache}
OUT=${OUT:-/tmp}
timeout "${TEST_S:-75}" $PY -m pytest -q -p no:warnings -p no:cacheprovider tests/cuda/test_cuda_adam_foreach.py \
  tests/cuda/test_cuda_device_checks.py tests/cuda/test_cuda_fused_adam.py tests/cuda/test_cuda_launch.py \
  tests/cuda/test_cuda_half_kernels.py "tests/cuda/test_compile_cuda.py::test_indexing_and_its_error" 2>&1 \
  | tee "$OUT/tests.log" | tail -60
timeout "${BENCH_S:-100}" $PY bench/gpt2_cuda.py --steps 4 --warmup 2 --kernel-profile ember --profile "$@" 2>&1 \
  | tee "$OUT/gpt2.log" | head -75
