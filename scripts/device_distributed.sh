#!/usr/bin/env bash
# ember.distributed on the GPU machine (nvidia-h100-x2 / -x4, any number of GPUs): NCCL collectives
# against NumPy, all_reduce bus bandwidth against torch.distributed's NCCL, GPT-2 small DDP against one
# GPU with the doubled batch, and weak scaling with and without ember.compile.
#
# The device has python3 (torch, cupy-cuda13x; torch's nvidia-nccl wheel gives CuPy its NCCL) but no
# mpi4py/mpich: carry them as wheels. Here, once, in the repo root:
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#     -d .whl mpi4py==4.1.2 mpich==5.0.2
# then: run(command="bash scripts/device_distributed.sh", carry=[".whl"], kind="nvidia-h100-x2").
# Usage: [ONLY_GPT=1] bash scripts/device_distributed.sh [NGPUS]   (default: every GPU); results in $OUT (or /tmp/dist).
# Knobs for short device sessions: EQ_STEPS (section 3's steps, default 50; 0 skips it), WS_STEPS
# (section 4's, default 20), WS_MODES (default "eager compile"; the order they run in; also
# compile-nosplit: DDP's graph not cut at its buckets), WS_SIZES
# (default "1 2 4 8", those <= NGPUS).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1  # never NVLink multicast
export PYTHONPATH=$PWD OMP_NUM_THREADS=4 PYTHONUNBUFFERED=1
# the image may now bring mpi4py on its own Open MPI, whose mpiexec refuses root without these
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
NEEDS="numpy torch cupy" . "$(dirname "$0")/_device_python.sh"
if ! $PY -c "import mpi4py" 2>/dev/null; then
  if ls .whl/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=$PWD:/tmp/site PATH=/tmp/site/bin:$PATH
    # the image has an Open MPI of its own: without these, mpi4py's wheel loads that libmpi and
    # each rank started by mpich's mpiexec sees itself as rank 0 of 1
    # (pip --target keeps the wheel's bin/ but not its lib/: take libmpi from the wheel itself)
    $PY -c "import zipfile, glob; zipfile.ZipFile(glob.glob('.whl/mpich-*.whl')[0]).extractall('/tmp/mpich')"
    LIBMPI=$(find /tmp/mpich -name libmpi.so.12 | head -1)
    export MPI4PY_MPIABI=mpich MPI4PY_LIBMPI=$LIBMPI LD_LIBRARY_PATH=$(dirname "$LIBMPI"):${LD_LIBRARY_PATH:-}
  else
    echo "mpi4py is missing: carry the wheels (see the top of this script)"; exit 2
  fi
fi
RESULTS=${OUT:-/tmp/dist}
mkdir -p "$RESULTS"
LOG=$RESULTS/results.jsonl
: > "$LOG"
N=${1:-$($PY -c "import cupy; print(cupy.cuda.runtime.getDeviceCount())")}
nvidia-smi -L
$PY -c "import sys, torch, cupy, mpi4py; from cupy.cuda import nccl; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cupy', cupy.__version__, 'mpi4py', mpi4py.__version__, 'nccl', nccl.available and nccl.get_version())"
RUN="$PY -m ember.distributed.run"
[ -x /tmp/site/bin/mpiexec ] && RUN="$RUN --mpiexec /tmp/site/bin/mpiexec"
TORCHRUN="$PY -m torch.distributed.run --standalone"

if [ -z "${ONLY_GPT:-}" ]; then   # ONLY_GPT=1: sections 3 and 4 only (device time)
echo "== 1. NCCL collectives on every dtype against NumPy, $N ranks"
mkdir -p /tmp/nccl_checks
$RUN --nproc-per-node "$N" tests/distributed/workers/collectives_worker.py /tmp/nccl_checks nccl
$PY - <<'EOF'
import json, glob
for path in sorted(glob.glob("/tmp/nccl_checks/rank*.json")):
    got = json.load(open(path))
    bad = {k: v.strip().splitlines()[-1] for k, v in got.items() if v != "ok"}
    print(path, len(got), "checks,", len(bad), "failed")
    for k, v in list(bad.items())[:20]:
        print("  ", k, v)
EOF

echo "== 2. all_reduce bus bandwidth, 1 GiB float32, $N GPUs: ember vs torch.distributed"
for i in 1 2 3; do
  $RUN --nproc-per-node "$N" bench/distributed_gpu.py allreduce --lib ember --out "$LOG"
  $TORCHRUN --nproc-per-node "$N" bench/distributed_gpu.py allreduce --lib torch --out "$LOG"
done

fi

EQ_STEPS=${EQ_STEPS:-50}
WS_STEPS=${WS_STEPS:-20}
echo "== 4. weak scaling (batch 8 per GPU, $WS_STEPS steps): ${WS_MODES:-eager compile}"
for mode in ${WS_MODES:-eager compile}; do
  c=""; [ "$mode" = compile ] && c="--compile"
  [ "$mode" = compile-nosplit ] && c="--compile --no-optimize-ddp"    # one graph inside DDP
  for n in ${WS_SIZES:-1 2 4 8}; do
    [ "$n" -le "$N" ] || continue
    [ "$mode" = compile-nosplit ] && [ "$n" = 1 ] && continue    # no DDP on 1 GPU: the compile row
    start=$(date +%s)
    $RUN --nproc-per-node "$n" bench/distributed_gpu.py gpt --steps "$WS_STEPS" --batch-per-rank 8 $c --out "$LOG"
    echo "   ($mode, $n GPUs: $(( $(date +%s) - start )) s)"
  done
done

if [ "$EQ_STEPS" -gt 0 ]; then
echo "== 3. GPT-2 small: DDP on $N GPUs (batch 4 each) vs 1 GPU with batch 4*$N, $EQ_STEPS steps"
# with 2 GPUs the reference is section 4's eager 1-GPU run (batch 8, the same tokens) when it ran as long
if [ $((4 * N)) -ne 8 ] || [ "$EQ_STEPS" -gt "$WS_STEPS" ] || ! echo " ${WS_MODES:-eager compile} " | grep -q " eager "; then
  $RUN --nproc-per-node 1 bench/distributed_gpu.py gpt --steps "$EQ_STEPS" --batch-per-rank $((4 * N)) --out "$LOG"
fi
$RUN --nproc-per-node "$N" bench/distributed_gpu.py gpt --steps "$EQ_STEPS" --batch-per-rank 4 --out "$LOG"
fi

echo "== summary"
$PY - "$LOG" "$N" <<'EOF'
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
n = int(sys.argv[2])
bw = {lib: [r["busbw_GBps"] for r in rows if r["bench"] == "allreduce" and r["lib"] == lib] for lib in ("ember", "torch")}
if bw["ember"] and bw["torch"]:
    e, t = statistics.median(bw["ember"]), statistics.median(bw["torch"])
    print(f"all_reduce 1 GiB, {n} GPUs: ember {e:.1f} GB/s, torch {t:.1f} GB/s, ratio {e / t:.3f} (goal >= 0.95)")
gpt = [r for r in rows if r["bench"] == "gpt"]
one = next((r for r in gpt if r["world"] == 1 and r["batch_per_rank"] == 4 * n and not r["compile"]), None)
ddp = next((r for r in gpt if r["world"] == n and r["batch_per_rank"] == 4 and not r["compile"]), None)
if one and ddp:
    diff = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(ddp["losses"], one["losses"]))
    print(f"GPT-2 small DDP {n} GPUs vs 1 GPU doubled batch, {len(one['losses'])} steps: max relative loss difference {diff:.2e}; "
          f"final losses {ddp['losses'][-1]:.5f} / {one['losses'][-1]:.5f}")
for compiled in (False, True):
    base = next((r for r in gpt if r["world"] == 1 and r["batch_per_rank"] == 8 and r["compile"] == compiled), None)
    for r in gpt:
        if base and r["batch_per_rank"] == 8 and r["compile"] == compiled and r["world"] > 1:
            eff = r["tokens_per_s_per_rank"] / base["tokens_per_s_per_rank"]
            print(f"   step seconds, 1 GPU: {base['step_seconds']}\n   {r['world']} GPUs: {r['step_seconds']} "
                  f"(pieces per graph: {r.get('ddp_pieces')})\n   host seconds, 1 GPU: {base.get('host_seconds')}"
                  f"\n   {r['world']} GPUs: {r.get('host_seconds')}")
            print(f"weak scaling {'compiled' if compiled else 'eager'}{'' if r.get('optimize_ddp', True) else ' (no cut)'}: {r['world']} GPUs "
                  f"{r['tokens_per_s_per_rank']:.0f} tokens/s per GPU vs {base['tokens_per_s_per_rank']:.0f} on 1: "
                  f"efficiency {eff:.3f} (goal >= 0.9)")
EOF
