#!/usr/bin/env bash
# Host time of ember's eager CUDA step, before and after a change, in one device call (issue 17):
# BASE (default: the repository root the device tool runs in, i.e. main's tree) against HERE (the
# tree this script lives in; run it as `bash .cuda_wt_<name>/scripts/device_cuda_host.sh`).
#   1. tests/cuda in HERE (TT seconds at most; TT=0 skips; TESTS= narrows), summary and failures
#   2. results unchanged: 3 steps of a 2-layer GPT-2 (bf16 autocast, AdamW) in each tree, the
#      losses' bits and a hash of the parameters after them, printed side by side
#   3. bench/gpt2_cuda.py $GPT2_ARGS (default: 2 layers, 4 steps, 2 warm-up, --profile) in each
#      tree: ms/step and host ms; cProfile dumps under $OUT/base and $OUT/here
#   4. bench/cuda_eager.py tiny ops in each tree (no matmul table)
#   5. one output allocation: cupy.empty vs the ndarray constructor vs pool.malloc + ndarray(memptr)
# CUPY_CACHE_TGZ: a CuPy kernel cache to unpack first (kernels compiled by an earlier call).
# FP=0 skips 2, BENCH=0 skips 3-5 (to split the work over two calls); SIDES="here" runs 2 in HERE
# only, SIDES_BENCH="here" 3-4 (where an earlier call's base figures stand).
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
BASE=${BASE:-$PWD}
cd "$HERE"
. scripts/_device_python.sh
export OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-/tmp/cupy_cache_host}
mkdir -p "$CUPY_CACHE_DIR"
[ -n "${CUPY_CACHE_TGZ:-}" ] && tar xzf "$CUPY_CACHE_TGZ" -C "$CUPY_CACHE_DIR"
LOG=${OUT:-/tmp}
$PY -c "import torch; print('card:', torch.cuda.get_device_name())"

if [ "${TT:-90}" != 0 ]; then
  PYTHONPATH=$HERE timeout -s INT "${TT:-90}" $PY -m pytest -p no:cacheprovider -o addopts= -q -rf --tb=short \
    -n "${JOBS:-6}" ${TESTS:-tests/cuda} > "$LOG/tests_cuda.log" 2>&1
  echo "== tests/cuda (HERE)"; grep -E "^(FAILED|ERROR)" "$LOG/tests_cuda.log" | head -n 30; tail -n 1 "$LOG/tests_cuda.log"
fi

FINGERPRINT='
import hashlib, sys
import numpy as np
import ember
sys.path.insert(0, "bench")
from _gpt_modules import gpt2_classes
ember.manual_seed(0)
model = gpt2_classes(ember)(block_size=128, n_layer=2).to("cuda")
opt = ember.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
tokens = np.random.default_rng(0).integers(0, 50257, (4, 129))
x, y = ember.from_numpy(tokens[:, :-1]).cuda(), ember.from_numpy(tokens[:, 1:]).cuda()
losses = []
for _ in range(3):
    with ember.autocast("cuda", dtype=ember.bfloat16):
        loss = model(x, y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    losses.append(float(loss.item()).hex())
digest = hashlib.sha256()
for p in model.parameters():
    digest.update(p.detach().cpu().numpy().tobytes())
print(" ".join(losses), digest.hexdigest()[:16])
'
[ "${FP:-1}" != 0 ] && echo "== results: losses (hex) and parameter hash after 3 steps"
[ "${FP:-1}" != 0 ] && for side in ${SIDES:-base here}; do
  dir=$BASE; [ $side = here ] && dir=$HERE
  printf '%-5s ' $side; (cd "$dir" && PYTHONPATH=$dir timeout 60 $PY -c "$FINGERPRINT" 2>&1 | tail -n 1)
done

[ "${BENCH:-1}" = 0 ] && exit 0
for side in ${SIDES_BENCH:-base here}; do
  dir=$BASE; [ $side = here ] && dir=$HERE
  mkdir -p "$LOG/$side"
  (cd "$dir" && OUT=$LOG/$side PYTHONPATH=$dir timeout "${TG:-75}" $PY bench/gpt2_cuda.py \
    ${GPT2_ARGS:---layers 2 --steps 4 --warmup 2 --profile} > "$LOG/$side/gpt2.log" 2>&1)
  echo "== gpt2_cuda ($side)"; grep -E "^# card|ms/step|^ember |^torch " "$LOG/$side/gpt2.log"
  grep -A 14 "by tottime" "$LOG/$side/gpt2.log" | sed -n '1p;8,15p'
done

for side in ${SIDES_BENCH:-base here}; do
  dir=$BASE; [ $side = here ] && dir=$HERE
  echo "== cuda_eager ($side)"
  (cd "$dir" && PYTHONPATH=$dir timeout 60 $PY bench/cuda_eager.py --rounds 5 --number 300 --no-matmul 2>&1 \
    | grep -E "^(op|add|mul|relu|exp|sum|matmul|view)")
done

echo "== one output allocation, us per call"
$PY - <<'EOF'
import time
import cupy
import numpy
pool, nd = cupy.get_default_memory_pool(), cupy.ndarray
for shape, dtype in (((4,), numpy.float32), ((8192, 768), numpy.float32)):
    dt = numpy.dtype(dtype)
    nbytes = int(numpy.prod(shape)) * dt.itemsize
    ways = {"cupy.empty": lambda: cupy.empty(shape, dt), "cupy.ndarray(shape, dtype)": lambda: nd(shape, dt),
            "ndarray(memptr=pool.malloc)": lambda: nd(shape, dt, pool.malloc(nbytes))}
    for name, fn in ways.items():
        for _ in range(1000):
            fn()
        t0 = time.perf_counter()
        for _ in range(20000):
            fn()
        print(f"{str(shape):>12} {name:<28} {(time.perf_counter() - t0) / 20000 * 1e6:6.2f}")
EOF
true
