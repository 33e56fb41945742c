#!/usr/bin/env bash
# Runs the compiler-stack and load-safety tests (fx, jit, dynamo, security) under the device machine's Python 3.12.
# Used through the `device` tool: run(command="bash scripts/device_py312.sh").
# The device's python3 has numpy, pytest, xdist and a torch (the version may differ from 2.13).
set -u
PY=${PY:-python3}
for p in /opt/torch/.venv/bin/python3 python3; do
  if $p -c "import numpy, pytest, torch" 2>/dev/null; then PY=$p; break; fi
done
$PY -c "import sys, numpy, torch; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'torch', torch.__version__)"
export PYTHONPATH=$PWD OMP_NUM_THREADS=1
$PY -m pytest tests/fx tests/jit tests/dynamo tests/security -p no:cacheprovider -n 8 -o addopts="" -q 2>&1 | tail -40
