#!/usr/bin/env bash
# On the device machine: the CUDA kernels of issue 17's GPT-2 work (fused LayerNorm, leading-dim
# sums, autocast's weight-cast cache) against PyTorch CUDA, the op and gradient oracles of sum and
# layer_norm on the GPU, then bench/gpt2_cuda.py (STEPS timed steps) and scripts/gpt2_diagnose.py
# (dispatcher calls and host uploads of one step); PROFILE=1 adds cProfile's top host functions of
# an ember step and the profiler's per-op CUDA times (full output in $OUT/profile.log). Each part
# prints its summary.
set -u
. "$(dirname "$0")/_device_python.sh"
export PYTHONPATH=$PWD OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-$PWD/.cupy_cache}
OUT=${OUT:-/tmp}
t() { timeout -s INT "$@"; }
pytest_q() { $PY -m pytest -p no:cacheprovider -o addopts="" -q -rf --tb=short "$@" 2>&1 | tail -n ${TAIL:-25}; }
t 110 bash -c "$(declare -f pytest_q); PY=$PY pytest_q -n 4 tests/cuda/test_cuda_layer_norm.py tests/cuda/test_cuda_column_sums.py \
  tests/cuda/test_cuda_half_kernels.py tests/cuda/test_cuda_training.py tests/cuda/test_cuda_grad_accumulation.py" \
  > $OUT/kernels.log &
EMBER_ORACLE_DEVICE=cuda t 110 bash -c "$(declare -f pytest_q); PY=$PY pytest_q -n 4 tests/ops tests/autograd/test_grad_reduction.py \
  tests/autograd/test_grad_nn.py -k 'sum or layer_norm'" > $OUT/oracles.log &
wait
echo "## kernel tests vs PyTorch CUDA"; cat $OUT/kernels.log
echo "## op and gradient oracles of sum and layer_norm on the GPU"; cat $OUT/oracles.log
t 90 $PY bench/gpt2_cuda.py --steps ${STEPS:-5} --warmup 2 2>&1 | tail -8
[ -n "${DIAGNOSE-1}" ] && t 60 $PY scripts/gpt2_diagnose.py 2>&1 | tail -60
if [ -n "${PROFILE:-}" ]; then
  t 90 $PY bench/gpt2_cuda.py --only-ember --steps 2 --warmup 2 --profile > $OUT/profile.log 2>&1
  grep -A 32 "ncalls" $OUT/profile.log | head -34 | cut -c1-150
  grep -A 30 "## ember.profiler" $OUT/profile.log | cut -c1-160
fi
true
