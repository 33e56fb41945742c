#!/usr/bin/env bash
# On the device machine (issue 18, GPT-2's compiled step on the GPU): bench/gpt2_cuda.py's
# ember.compile column with one step's kernel profile (the loss's kernels, CuPy copies) and the loss
# against eager ember, then the GPU tests of the generated loss and the bias epilogue
# (tests/cuda/test_compile_cuda_loss_bias.py) with the compiled-CUDA and extern tests.
set -u
. "$(dirname "$0")/_device_python.sh"
export PYTHONPATH=$PWD OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-$PWD/.cupy_cache}
t() { timeout -s INT "$@"; }
nvidia-smi --query-gpu=name --format=csv,noheader
t ${BENCH_S:-130} $PY bench/gpt2_cuda.py --only-ember --compiled --steps ${STEPS:-3} --warmup 2 \
  --kernel-profile ember.compile 2>&1 | grep -v -i warn | tail -n 36
t ${TEST_S:-90} $PY -m pytest -p no:cacheprovider -o addopts="" -q -rf --tb=short -W ignore -n 4 \
  tests/cuda/test_compile_cuda_loss_bias.py tests/cuda/test_compile_cuda.py tests/cuda/test_cuda_externs.py 2>&1 | tail -n 60
true
