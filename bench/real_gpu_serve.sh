#!/usr/bin/env bash
# On the lent H200 (the device tool's `run`), from the checkout's root: serve the model repository
# tritonops rendered (bench/real_gpu_repo.py -> .gpukit-cache/tritonops-repo) with tritonops' own vLLM
# backend, one repository per model (tritonops/image/assets/vllm_backend_model.py.txt installed as backends/vllm/model.py, as the
# vllm_env image does) on the real tritonserver 2.51 and real vLLM 0.25.0 of ../shared/gpu-kit.
#
#   here:    bash ../shared/gpu-kit/prepare && python bench/real_gpu_repo.py .gpukit-cache/tritonops-repo
#   device:  run(carry=[".gpukit-cache/kit", ".gpukit-cache/chunks/gpukit.tar.xz.partNN",
#                       ".gpukit-cache/tritonops-repo"], command="bash bench/real_gpu_serve.sh qwen05")
#            for parts 00, 01, 02 back to back (the last one serves), then warm:
#            run(carry=[".gpukit-cache/kit", ".gpukit-cache/tritonops-repo"], command="bash bench/real_gpu_serve.sh qwen7b")
#   a second argument `kv` also runs bench/real_gpu_kv_sampler.py beside it: 16 concurrent long requests while
#   :8002/metrics is read every 0.5 s ($OUT/kv-samples.txt), and the gate's own request is a long one too, so the
#   server stays up while they run.
set -euo pipefail
MODEL=${1:?model name: qwen05 or qwen7b}
KIT=.gpukit-cache/kit
TS=${GPUKIT_WORK:-/tmp/gpukit}/root/triton/pytriton/tritonserver
bash "$KIT/device-run"                       # stash this call's part; unpack once all are there
[ -d "$TS/backends" ] || exit 0              # still waiting for parts
mkdir -p "$TS/backends/vllm"
cp tritonops/image/assets/vllm_backend_model.py.txt "$TS/backends/vllm/model.py"
if [ "${2:-}" != kv ]; then
  exec bash "$KIT/device-run" ".gpukit-cache/tritonops-repo/$MODEL" "$MODEL"
fi
python3 bench/real_gpu_kv_sampler.py "$MODEL" "$OUT/kv-samples.txt" &
SAMPLER=$!
REQ=${GPUKIT_WORK:-/tmp/gpukit}/long-request.json
echo '{"text_input": "The capital of France is", "parameters": {"stream": false, "max_tokens": 3000, "ignore_eos": true}}' >"$REQ"
rc=0
bash "$KIT/device-run" ".gpukit-cache/tritonops-repo/$MODEL" "$MODEL" "$REQ" || rc=$?
wait "$SAMPLER" || echo "kv sampler: exit $?"
exit "$rc"
