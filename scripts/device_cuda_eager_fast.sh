#!/usr/bin/env bash
# The direct CUDA launches (ember/_cuda/elementwise.py, blas.mm2d, _cuda/views.py) on the device
# machine in one call: tests/cuda (their own tests and every CUDA test beside them) and, at the same
# time, the op oracle files of the ops they route differently with every tensor on the GPU (and the
# same files in the tree at BASELINE, when given: the failures only one side has are printed); then,
# alone on the card, bench/cuda_eager.py (with a cProfile of each tiny op when PROFILE=N).
# GPT2=1 adds bench/gpt2_cuda.py (GPT2_ARGS). Each step has a time limit (TT, TB, TG seconds) so
# that the call stays inside the device budget; a suite stopped at its limit still prints its summary.
set -u
. "$(dirname "$0")/_device_python.sh"
export OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-$PWD/.cupy_cache}
LOG=${OUT:-/tmp}
HERE=$PWD
PYTEST="$PY -m pytest -p no:cacheprovider -o addopts= -q -rf --tb=short"
ORACLE_FILES="tests/ops/test_pointwise.py tests/ops/test_activation.py tests/ops/test_shape.py
  tests/ops/test_inplace_alpha_fma.py tests/ops/test_linalg.py tests/ops/test_reduction.py"
PYTHONPATH=$HERE timeout -s INT ${TT:-100} $PYTEST -n ${JOBS:-4} tests/cuda > $LOG/tests_cuda.log 2>&1 &
PYTHONPATH=$HERE EMBER_ORACLE_DEVICE=cuda timeout -s INT ${TT:-100} $PYTEST -n ${JOBS:-5} --tb=line $ORACLE_FILES \
  > $LOG/op_oracle.log 2>&1 &
if [ -n "${BASELINE:-}" ]; then
  (cd "$BASELINE" && PYTHONPATH=$PWD EMBER_ORACLE_DEVICE=cuda timeout -s INT ${TT:-100} $PYTEST -n ${JOBS:-5} \
    --tb=line $ORACLE_FILES > $LOG/op_oracle_baseline.log 2>&1) &
fi
wait
echo "== tests/cuda"; grep -E "^(FAILED|ERROR)" $LOG/tests_cuda.log | head -n ${LINES_SHOWN:-30}; tail -n 1 $LOG/tests_cuda.log
echo "== op oracle on cuda"; tail -n 1 $LOG/op_oracle.log
failed() { grep -E "^FAILED" "$1" | sed 's/ - .*//' | sort; }
if [ -n "${BASELINE:-}" ]; then
  echo "== op oracle on cuda at BASELINE"; tail -n 1 $LOG/op_oracle_baseline.log
  echo "-- failing only here:"; comm -23 <(failed $LOG/op_oracle.log) <(failed $LOG/op_oracle_baseline.log)
  echo "-- failing only at BASELINE:"; comm -13 <(failed $LOG/op_oracle.log) <(failed $LOG/op_oracle_baseline.log)
else
  failed $LOG/op_oracle.log | head -n ${LINES_SHOWN:-30}
fi
export PYTHONPATH=$HERE
timeout ${TB:-60} $PY bench/cuda_eager.py --rounds ${ROUNDS:-5} --number ${NUMBER:-300} --profile ${PROFILE:-0} \
  ${BENCH_ARGS:-} 2>&1 | tee $LOG/cuda_eager.log
if [ -n "${GPT2:-}" ]; then
  timeout ${TG:-90} $PY bench/gpt2_cuda.py ${GPT2_ARGS:---layers 2 --seq 256 --batch 4 --steps 5 --warmup 2} 2>&1 | tail -n 25
fi
true
