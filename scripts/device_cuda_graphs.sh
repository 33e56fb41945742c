#!/usr/bin/env bash
# CUDA graphs on a machine with a GPU (the device tool): tests/cuda/test_cuda_graphs.py, then
# bench/cuda_graphs.py (its table names the card). OUT (default /tmp) keeps the bench's JSON.
set -u
. "$(dirname "$0")/_device_python.sh"
export PYTHONPATH=$PWD OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
$PY -m pytest -p no:cacheprovider -o addopts="" -q -rf --tb=short tests/cuda/test_cuda_graphs.py "$@" 2>&1 | tail -n 40
$PY bench/cuda_graphs.py --json "${OUT:-/tmp}/cuda_graphs.json"
