#!/usr/bin/env bash
# GPT-2 small on the device machine: bench/gpt2_cuda.py (ember vs torch), then a profile of ember's
# step with CUDA_LAUNCH_BLOCKING=1 (each op's host time then includes its kernels' time).
# CUPY_CACHE_DIR defaults to .cupy_cache here, packed into $OUT/cupy_cache.tgz when OUT is set, so the next machine skips the compiles.
# COMPILED=1: the ember.compile / torch.compile columns (--compiled); SMALL=1 first checks ember.compile's
# losses against ember eager's on a 2-layer model (--check-loss: a mismatch stops the script, rc 1).
# T=0 skips the full-size bench. CUDA_TESTS=1 first runs tests/cuda/test_compile_cuda.py. EMBER_CACHE_DIR (Triton kernels) defaults to
# /tmp/ember_gpt2_cache: a warm machine's next call reuses the compiled kernels.
set -u
PY=/opt/torch/.venv/bin/python3; [ -x $PY ] || PY=python3
export PYTHONPATH=$PWD OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-$PWD/.cupy_cache}
export EMBER_CACHE_DIR=${EMBER_CACHE_DIR:-/tmp/ember_gpt2_cache}
T=${T:-150}
if [ -n "${CUDA_TESTS:-}" ]; then
  timeout ${TT:-90} $PY -m pytest -q -x -p no:cacheprovider tests/cuda/test_compile_cuda.py 2>&1 | tail -15
fi
if [ -n "${SMALL:-}" ]; then
  timeout ${TS:-90} $PY bench/gpt2_cuda.py --only-ember --compiled --check-loss --layers 2 --seq 256 --batch 4 \
    --steps 8 --warmup 1 2>&1 | tee ${OUT:-/tmp}/gpt2_small.log | tail -${LINES_SHOWN:-40}
  [ ${PIPESTATUS[0]} -eq 0 ] || { echo "SMALL check failed"; exit 1; }
fi
COMPILE_ARGS=""; [ -n "${COMPILED:-}" ] && COMPILE_ARGS="--compiled --check-loss"
[ "$T" = 0 ] || timeout $T $PY bench/gpt2_cuda.py $COMPILE_ARGS ${BENCH_ARGS:-} 2>&1 | tee ${OUT:-/tmp}/gpt2.log | grep -v "^ *[0-9].*{built-in" | head -${LINES_SHOWN:-120}
if [ -n "${BLOCKING:-}" ]; then
  CUDA_LAUNCH_BLOCKING=1 timeout ${TB:-60} $PY bench/gpt2_cuda.py --only-ember --steps 1 --warmup 1 --profile \
    ${BENCH_ARGS:-} > ${OUT:-/tmp}/gpt2_blocking.log 2>&1; tail -50 ${OUT:-/tmp}/gpt2_blocking.log
fi
[ -n "${OUT:-}" ] && tar czf $OUT/cupy_cache.tgz -C $CUPY_CACHE_DIR . 2>/dev/null
true
