#!/usr/bin/env bash
# Issue 17, CUDA host time: the eager GPT-2 step against torch eager in one process, with one step's
# kernels and a cProfile of ember's step ($OUT/ember.pstats); then tests/cuda (TESTS overrides the
# selection) and the GPU op oracle's embedding / cross-entropy cases (their errors are reported at
# the next sync now). BENCH_S / TEST_S / ORACLE_S bound each part (seconds); extra arguments go to
# the benchmark.
set -u
. "$(dirname "$0")/_device_python.sh"
export PYTHONPATH=$PWD OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-$PWD/.cupy_cache}
OUT=${OUT:-/tmp}
timeout "${BENCH_S:-70}" $PY bench/gpt2_cuda.py --steps 4 --warmup 2 --kernel-profile ember --profile "$@" 2>&1 \
  | tee "$OUT/gpt2.log" | head -48
timeout "${TEST_S:-110}" $PY -m pytest -q -p no:warnings -p no:cacheprovider ${TESTS:-tests/cuda} 2>&1 \
  | tee "$OUT/tests.log" | grep -E "^(FAILED|ERROR)|passed|failed" | head -40
EMBER_ORACLE_DEVICE=cuda timeout "${ORACLE_S:-25}" $PY -m pytest -q -p no:warnings -p no:cacheprovider \
  tests/ops/test_indexing.py tests/ops/test_loss.py tests/ops/test_nn.py -k "embedding or cross_entropy or nll" 2>&1 \
  | tee "$OUT/oracle.log" | grep -E "^(FAILED|ERROR)|passed|failed" | head -20
