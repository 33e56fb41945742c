#!/usr/bin/env bash
# The CUDA suites on a machine with a GPU (through the `device` tool: bash scripts/device_cuda.sh),
# each printing pytest's summary line:
#   tests/cuda                          device API, CUDA tensors, training vs PyTorch CUDA
#   tests/ops with EMBER_ORACLE_DEVICE  the op oracle suite with every tensor on the GPU, vs PyTorch CUDA
#   tests/autograd/... likewise         the gradient oracle on the GPU
# LOG_DIR (default: none) keeps each suite's full output. Extra arguments go to every pytest.
set -u
. "$(dirname "$0")/_device_python.sh"
export PYTHONPATH=$PWD OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
$PY -c "import ember, torch, cupy; print('card:', ember.cuda.get_device_name(), '| torch', torch.__version__, '| cupy', cupy.__version__)" || exit 1
LIMIT=${LIMIT:-0}   # seconds per suite (0: none); a suite stopped at its limit still prints its summary
suite() {   # suite NAME JOBS [pytest args...]: runs in the background, its summary line in the log's last line
  local name=$1 jobs=$2; shift 2
  local log=${LOG_DIR:-/tmp}/$(echo "$name" | tr -c 'a-zA-Z0-9\n' '_').log
  timeout -s INT "$LIMIT" $PY -m pytest -p no:cacheprovider -o addopts="" -q -n "$jobs" -rf --tb=line "$@" > "$log" 2>&1
  echo "$name: $(tail -n 1 "$log")"
}
# the three suites at once: they share the GPU, and CuPy's kernel compiles spread over the cores
suite "tests/cuda" 2 tests/cuda "$@" &
EMBER_ORACLE_DEVICE=cuda suite "op oracle on cuda (tests/ops)" 8 tests/ops "$@" &
EMBER_ORACLE_DEVICE=cuda suite "gradient oracle on cuda" 4 tests/autograd/test_grad_reduction.py \
  tests/autograd/test_grad_shape.py tests/autograd/test_grad_indexing.py tests/autograd/test_grad_linalg.py \
  tests/autograd/test_grad_nn.py tests/autograd/test_grad_conv.py "$@" &
wait
