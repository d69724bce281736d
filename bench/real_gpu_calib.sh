#!/usr/bin/env bash
# On the lent H200 (the device tool's `run`), from the checkout's root: start vLLM 0.25.0 (gpu-kit bundle)
# for the runs of one batch of tests/fixtures/real/calib-h200/plan.json, each up to the end of its start-up,
# and leave each run's log in $OUT/<id>.log (bench/real_gpu_calib.py).
#
#   here:    bash ../shared/gpu-kit/prepare
#   device:  run(carry=[".gpukit-cache/kit", ".gpukit-cache/chunks/gpukit.tar.xz.partNN"],
#                command="bash bench/real_gpu_calib.sh A 560")   for parts 00, 01, 02 back to back;
#            then, warm:  run(carry=[".gpukit-cache/kit"], command="bash bench/real_gpu_calib.sh B 560")
#   BATCH: A, B, C (or A,B); SECONDS: no new run starts after this many seconds of the call.
set -uo pipefail
BATCH=${1:?batch}
BUDGET=${2:-560}
DEADLINE=$(( $(date +%s) + BUDGET ))
KIT=.gpukit-cache/kit
R=${GPUKIT_WORK:-/tmp/gpukit}/root
RET=${OUT:-/tmp/calib-ret}; OUT=/tmp/calib-runs/$BATCH; mkdir -p "$OUT" "$RET"
OUT=$RET bash "$KIT/device-run" || exit $?             # stash this call's part; unpack once all are there
[ -d "$R/site/vllm" ] || exit 0               # still waiting for parts
export PYTHONPATH=$R/site PYTHONUNBUFFERED=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 \
  TRANSFORMERS_OFFLINE=1 VLLM_USE_FLASHINFER_SAMPLER=0 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1
{
  nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv
  python3 -c 'import torch, vllm; print("torch", torch.__version__, "vllm", vllm.__version__)' 2>&1 | tail -1
} | tee "$OUT/env-$BATCH.txt"
python3 bench/real_gpu_calib.py drive tests/fixtures/real/calib-h200/plan.json "$BATCH" "$OUT" "$DEADLINE"
tar -czf "$RET/calib-runs.tgz" -C "$OUT" .   # one file back ($OUT returns at most 8)
