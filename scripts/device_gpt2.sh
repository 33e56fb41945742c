#!/usr/bin/env bash
# GPT-2 small on the device machine: bench/gpt2_cuda.py (ember vs torch), then a profile of ember's
# step with CUDA_LAUNCH_BLOCKING=1 (each op's host time then includes its kernels' time).
# CUPY_CACHE_DIR defaults to .cupy_cache here, packed into $OUT/cupy_cache.tgz when OUT is set, so the next machine skips the compiles.
set -u
PY=/opt/torch/.venv/bin/python3; [ -x $PY ] || PY=python3
export PYTHONPATH=$PWD OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-$PWD/.cupy_cache}
T=${T:-150}
timeout $T $PY bench/gpt2_cuda.py ${BENCH_ARGS:-} 2>&1 | tee ${OUT:-/tmp}/gpt2.log | grep -v "^ *[0-9].*{built-in" | head -${LINES_SHOWN:-120}
if [ -n "${BLOCKING:-}" ]; then
  CUDA_LAUNCH_BLOCKING=1 timeout ${TB:-60} $PY bench/gpt2_cuda.py --only-ember --steps 1 --warmup 1 --profile \
    ${BENCH_ARGS:-} > ${OUT:-/tmp}/gpt2_blocking.log 2>&1; tail -50 ${OUT:-/tmp}/gpt2_blocking.log
fi
[ -n "${OUT:-}" ] && tar czf $OUT/cupy_cache.tgz -C $CUPY_CACHE_DIR . 2>/dev/null
true
