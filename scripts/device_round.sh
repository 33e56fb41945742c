#!/usr/bin/env bash
# One device call for a round's merged tree: tests/cuda and the six op-oracle files on the GPU (in
# parallel), bench/cuda_eager.py, bench/gpt2_cuda.py with the compiled columns and the kernel profiles
# of ember's two columns, then a loss curve of ember eager vs ember.compile (LOSS_STEPS steps on a
# Markov token stream, CSV in $OUT; GRAD=1 adds the gradient oracle; LOSS_ARGS= adds the torch columns; TF=seconds adds bench/fused_cuda.py). Each stage has a time limit (TT, TB, TG, TL seconds); logs in $OUT.
set -u
. "$(dirname "$0")/_device_python.sh"
export PYTHONPATH=$PWD OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-$PWD/.cupy_cache}
export EMBER_CACHE_DIR=${EMBER_CACHE_DIR:-/tmp/ember_round_cache}
LOG=${OUT:-/tmp}
PYTEST="$PY -m pytest -p no:cacheprovider -o addopts= -q -rf --tb=short"
ORACLE_FILES=${ORACLE_FILES:-"tests/ops/test_pointwise.py tests/ops/test_activation.py tests/ops/test_shape.py
  tests/ops/test_inplace_alpha_fma.py tests/ops/test_linalg.py tests/ops/test_reduction.py"}   # ORACLE_FILES=tests/ops: the whole suite
if [ "${TT:-150}" != 0 ]; then
  timeout -s INT ${TT:-150} $PYTEST -n ${JOBS:-4} tests/cuda > $LOG/tests_cuda.log 2>&1 &
  EMBER_ORACLE_DEVICE=cuda timeout -s INT ${TT:-150} $PYTEST -n ${JOBS:-5} --tb=line $ORACLE_FILES > $LOG/op_oracle.log 2>&1 &
  [ -n "${GRAD:-}" ] && EMBER_ORACLE_DEVICE=cuda timeout -s INT ${TT:-150} $PYTEST -n 3 --tb=line \
    tests/autograd/test_grad_{reduction,shape,indexing,linalg,nn,conv}.py > $LOG/grad_oracle.log 2>&1 &
  wait
  [ -n "${GRAD:-}" ] && { echo "== gradient oracle on cuda"; grep -E "^FAILED" $LOG/grad_oracle.log | head -n 20; tail -n 1 $LOG/grad_oracle.log; }
  echo "== tests/cuda"; grep -E "^(FAILED|ERROR)" $LOG/tests_cuda.log | head -n 30; tail -n 1 $LOG/tests_cuda.log
  echo "== op oracle on cuda"; grep -E "^FAILED" $LOG/op_oracle.log | head -n 20; tail -n 1 $LOG/op_oracle.log
fi
[ "${TB:-60}" != 0 ] && timeout ${TB:-60} $PY bench/cuda_eager.py --rounds 5 --number 300 > $LOG/cuda_eager.log 2>&1
[ "${TB:-60}" != 0 ] && grep -A12 "per-op time" $LOG/cuda_eager.log | head -14; grep -A6 "TFLOP" $LOG/cuda_eager.log
if [ "${TG:-200}" != 0 ]; then
  timeout ${TG:-200} $PY bench/gpt2_cuda.py --compiled --check-loss --steps ${STEPS:-6} --warmup 2 \
    --kernel-profile ember ember.compile ${GPT2_ARGS:-} > $LOG/gpt2.log 2>&1
  grep -B1 -A10 "ms/step" $LOG/gpt2.log; grep -A3 "GPU kernels of one step" $LOG/gpt2.log
fi
if [ -n "${PAIRS:-}" ]; then   # issue 17's and 18's GPT-2 pairs, each in a process of its own (no four-column pool contention)
  timeout 150 $PY bench/gpt2_cuda.py --check-loss --steps ${STEPS:-8} --warmup 2 > $LOG/pair_eager.log 2>&1
  echo "eager pair rc $?"; grep -A4 "ms/step" $LOG/pair_eager.log
  timeout 200 $PY bench/gpt2_cuda.py --compiled --only-compiled --check-loss --steps ${STEPS:-8} --warmup 2 ${GPT2_ARGS:-} > $LOG/pair_compiled.log 2>&1
  echo "compiled pair rc $?"; grep -A4 "ms/step" $LOG/pair_compiled.log
fi
if [ -n "${HOSTPROF:-}" ]; then   # cProfile of ember eager's and ember.compile's steps (host time)
  timeout ${HOSTPROF} $PY bench/gpt2_cuda.py --only-ember --compiled --profile --steps 3 --warmup 2 ${GPT2_ARGS:-} > $LOG/hostprof.log 2>&1
  echo "host profile rc $?"; grep -A4 "ms/step" $LOG/hostprof.log
fi
if [ "${TL:-150}" != 0 ]; then
  timeout ${TL:-150} $PY bench/gpt2_cuda.py ${LOSS_ARGS---only-ember} --compiled --check-loss --loss-curve ${LOSS_STEPS:-200} \
    --loss-csv $LOG/gpt2_loss_curve.csv > $LOG/loss_curve.log 2>&1
  echo "loss curve rc $?"; tail -n 8 $LOG/loss_curve.log
fi
if [ "${TF:-0}" != 0 ]; then     # the fused programs at 2^20/2^24/2^27 (issue 18's table and chart)
  timeout ${TF} $PY bench/fused_cuda.py --sizes ${FUSED_SIZES:-20,24,27} --dtypes float32,bfloat16 --rounds 3 \
    --png $LOG/fused_cuda.png > $LOG/fused_cuda.log 2>&1
  echo "fused_cuda rc $?"; tail -n 45 $LOG/fused_cuda.log
fi
true
