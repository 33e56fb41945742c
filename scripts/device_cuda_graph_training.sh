#!/usr/bin/env bash
# Training under mode="reduce-overhead" on a machine with a GPU (the device tool): the CUDA-graph
# tests (tests/cuda/test_cuda_graph_training.py, tests/cuda/test_cuda_graphs.py), then the GPT-2
# step with the reduce-overhead columns (bench/gpt2_cuda.py --compiled --reduce-overhead; its
# header names the card). Extra arguments go to the bench. Logs under OUT (default /tmp).
set -u
. "$(dirname "$0")/_device_python.sh"
export PYTHONPATH=$PWD OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp}
timeout "${TEST_SECONDS:-110}" $PY -m pytest -p no:cacheprovider -o addopts="" -q -rf --tb=short \
  tests/cuda/test_cuda_graph_training.py tests/cuda/test_cuda_graphs.py 2>&1 | tee "$OUT/tests.log" | tail -n 60
if [ -n "${BENCH_SECONDS:-}" ]; then
  EMBER_LOGS=cudagraphs timeout "$BENCH_SECONDS" $PY bench/gpt2_cuda.py --compiled --reduce-overhead "$@" 2>&1 \
    | tee "$OUT/gpt2.log" | grep -v "^  " | tail -n 40
fi
