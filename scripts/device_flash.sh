#!/usr/bin/env bash
# Flash attention on the device machine (issue 17): tests/cuda/test_flash_attention.py and the half
# kernels' sdpa tests against PyTorch CUDA, then bench/flash_attention.py (GPT-2's attention shape:
# ember flash vs the materialised path vs torch's flash, and the block-size candidates for head dim 64).
# GPT2=1 adds bench/gpt2_cuda.py --layers 2 --seq 1024 --batch 8 --steps 4 --warmup 2 --compiled --only-ember.
set -u
PY=/opt/torch/.venv/bin/python3; [ -x $PY ] || PY=python3
export PYTHONPATH=$PWD OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-$PWD/.cupy_cache}
export EMBER_CACHE_DIR=${EMBER_CACHE_DIR:-/tmp/ember_flash_cache}
nvidia-smi --query-gpu=name --format=csv,noheader
if [ "${TESTS:-1}" = 1 ]; then
  timeout ${TT:-100} $PY -m pytest -q -x -p no:cacheprovider ${TEST_ARGS:-tests/cuda/test_flash_attention.py \
    tests/cuda/test_cuda_half_kernels.py::test_sdpa_forward_and_backward_match_torch} 2>&1 | tail -25
fi
timeout ${TB:-60} $PY bench/flash_attention.py ${BENCH_ARGS:---sweep} 2>&1 | tee ${OUT:-/tmp}/flash_bench.log | tail -20
if [ -n "${GPT2:-}" ]; then
  timeout ${TG:-120} $PY bench/gpt2_cuda.py --layers 2 --seq 1024 --batch 8 --steps 4 --warmup 2 --compiled \
    ${GPT2_ARGS:-} 2>&1 | tee ${OUT:-/tmp}/gpt2_flash.log | head -${LINES_SHOWN:-40}
fi
true
