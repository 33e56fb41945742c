#!/usr/bin/env bash
# The direct CUDA launches (ember/_cuda/elementwise.py, blas.mm2d, _cuda/views.py) on the device
# machine in one call: tests/cuda (their own tests and every CUDA test beside them) and, at the same
# time, the op oracle files of the ops they route differently with every tensor on the GPU; then,
# alone on the card, bench/cuda_eager.py (with a cProfile of each tiny op when PROFILE=N).
# GPT2=1 adds bench/gpt2_cuda.py (GPT2_ARGS). Each step has a time limit (TT, TO, TB, TG seconds)
# so that the call stays inside the device budget; a suite stopped at its limit still prints its summary.
set -u
. "$(dirname "$0")/_device_python.sh"
export PYTHONPATH=$PWD OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-$PWD/.cupy_cache}
LOG=${OUT:-/tmp}
PYTEST="$PY -m pytest -p no:cacheprovider -o addopts= -q -rf --tb=short"
timeout -s INT ${TT:-100} $PYTEST -n ${JOBS:-6} tests/cuda > $LOG/tests_cuda.log 2>&1 &
EMBER_ORACLE_DEVICE=cuda timeout -s INT ${TO:-100} $PYTEST -n ${JOBS:-6} --tb=line tests/ops/test_pointwise.py \
  tests/ops/test_activation.py tests/ops/test_shape.py tests/ops/test_inplace_alpha_fma.py tests/ops/test_linalg.py \
  tests/ops/test_reduction.py > $LOG/op_oracle.log 2>&1 &
wait
echo "== tests/cuda"; grep -E "^(FAILED|ERROR)|Error|error" $LOG/tests_cuda.log | head -n ${LINES_SHOWN:-30}; tail -n 1 $LOG/tests_cuda.log
echo "== op oracle on cuda"; grep -E "^(FAILED|ERROR)" $LOG/op_oracle.log | head -n ${LINES_SHOWN:-30}; tail -n 1 $LOG/op_oracle.log
timeout ${TB:-60} $PY bench/cuda_eager.py --rounds ${ROUNDS:-5} --number ${NUMBER:-300} --profile ${PROFILE:-0} \
  ${BENCH_ARGS:-} 2>&1 | tee $LOG/cuda_eager.log
if [ -n "${GPT2:-}" ]; then
  timeout ${TG:-90} $PY bench/gpt2_cuda.py ${GPT2_ARGS:---steps 5 --warmup 2} 2>&1 | tail -n 25
fi
true
