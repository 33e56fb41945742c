#!/usr/bin/env bash
# The op oracle's CUDA failures on the device machine: the test ids of scripts/cuda_oracle_ids.txt
# (the failing ids of the last full run, issue 17) plus the dtypes of the ops in the CUDA refusal
# table (ember/ops/table/__init__.py), every tensor on the GPU against PyTorch CUDA; then pytest's
# summary line and the failures. PROBE=1 first prints what PyTorch CUDA and ember CUDA do for the
# cases still open (exception types, result dtypes and shapes). Extra arguments go to pytest.
set -u
. "$(dirname "$0")/_device_python.sh"
export PYTHONPATH=$PWD OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-$PWD/.cupy_cache}
LOG=${OUT:-/tmp}/cuda_oracle.log
if [ -n "${PROBE:-}" ]; then
  timeout 60 $PY - <<'PY'
import torch, ember, numpy as np
print("card:", torch.cuda.get_device_name(), "| torch", torch.__version__)
def show(label, fn):
    for lib in (torch, ember):
        try:
            r = fn(lib)
            rs = r if isinstance(r, tuple) else (r,)
            print(f"{label} {lib.__name__}: " + " ".join(f"{tuple(x.shape)} {x.dtype}" for x in rs))
        except Exception as e:  # noqa: BLE001 - printed
            print(f"{label} {lib.__name__}: {type(e).__name__}: {str(e)[:90]}")
for dt in ("float16", "bfloat16"):
    x = lambda L: L.arange(20, device="cuda").reshape(4, 5).to(getattr(L, dt)) - 8
    show(f"histc {dt}", lambda L: L.histc(x(L)))
    show(f"trace {dt}", lambda L: L.trace(x(L)))
    for name in ("relu", "relu6", "hardtanh"):
        show(f"{name} {dt}", lambda L: getattr(L.nn.functional, name)(x(L)))
    show(f"hardtanh(-2.5,3.7) {dt}", lambda L: L.nn.functional.hardtanh(x(L), -2.5, 3.7))
    show(f"hardtanh(2,2) {dt}", lambda L: L.nn.functional.hardtanh(x(L), 2, 2))
    show(f"threshold(1.5,7.5) {dt}", lambda L: L.threshold(x(L), 1.5, 7.5))
    show(f"threshold(2,-1) {dt}", lambda L: L.threshold(x(L), 2, -1))
show("gelu 0-d", lambda L: L.nn.functional.gelu(L.tensor(0.5, device="cuda")))
show("gelu meta 0-d", lambda L: L.nn.functional.gelu(L.tensor(0.5, device="cuda").to("meta")))
def u8(L):
    d = L.zeros(3, dtype=L.uint8, device="cuda")
    d.copy_(L.from_numpy(np.array([-1.5, -2.5, 3.0])))
    return d
for lib in (torch, ember):
    print("copy_ float64 cpu -> uint8 cuda", lib.__name__, u8(lib).cpu().tolist() if lib is torch else u8(lib).tolist())
PY
fi
IDS=$(grep -v '^#' "$(dirname "$0")/cuda_oracle_ids.txt")
EMBER_ORACLE_DEVICE=cuda timeout -s INT ${TT:-80} $PY -m pytest -p no:cacheprovider -o addopts= -q -n ${JOBS:-4} \
  -rf --tb=${TB:-line} $IDS tests/ops/test_histc.py::test_histc tests/ops/test_linalg.py::test_trace "$@" > $LOG 2>&1
echo "== op oracle on cuda, the ids of scripts/cuda_oracle_ids.txt"; tail -n 1 $LOG
grep -E "^FAILED" $LOG | head -n ${LINES_SHOWN:-70}
true
