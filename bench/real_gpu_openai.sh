#!/usr/bin/env bash
# On the lent GPU (the device tool's `run`), from the checkout's root (issue #43): vLLM 0.25.0's own OpenAI server
# started by the argv tritonops' `vllm` mode renders, asked by the official `openai` client, then the same
# closed-loop load on it and on Triton + tritonops' backend (bench/real_gpu_serving.sh), in one call.
#
#   here:    bash ../shared/gpu-kit/prepare && python bench/real_gpu_repo.py .gpukit-cache/tritonops-repo
#            pip download the wheels of ../shared/gpu-kit/serve-packages.txt into .gpukit-cache/serve-whl
#            (the kit's packages.txt already has openai 2.54.0, the official client)
#   device:  run(carry=[".gpukit-cache/kit", ".gpukit-cache/chunks/gpukit.tar.xz.partNN"],
#                command="bash bench/real_gpu_openai.sh")          # each part but the last: stashed only
#            run(carry=[".gpukit-cache/kit", <the last part>, ".gpukit-cache/tritonops-repo/qwen7b",
#                       ".gpukit-cache/serve-whl"], command="bash bench/real_gpu_openai.sh")
#   args:    [MODEL (qwen7b)] [LEVELS (1,16,64,256)] [PATHS (openai,triton)]
#
# $OUT (8 files): summary.txt, server-args.json (the server's argument list, from its own parser), argv.json
# (the mode's command line), client.json (the client's answers), openai.json and triton.json (the load's
# figures), table.md, logs.tgz.
set -uo pipefail
MODEL=${1:-qwen7b}
LEVELS=${2:-1,16,64,256}
PATHS=${3:-openai,triton}
KIT=.gpukit-cache/kit
W=${GPUKIT_WORK:-/tmp/gpukit}
R=$W/root
OUT=${OUT:-$W/out}
PORT=9000
mkdir -p "$OUT" "$W/logs"
say() { echo "[openai $(date -u +%T) +${SECONDS}s] $*" | tee -a "$OUT/summary.txt"; }

OUT=$OUT/kit bash "$KIT/device-run" || exit $?   # stash this call's part; unpack once all are there
[ -d "$R/site/vllm" ] || exit 0                 # still waiting for parts
rm -rf "$OUT/kit"
VERSION=.gpukit-cache/tritonops-repo/$MODEL/$MODEL/1
[ -f "$VERSION/model.json" ] || { say "no $VERSION/model.json: carry .gpukit-cache/tritonops-repo/$MODEL"; exit 2; }
export PYTHONUNBUFFERED=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
  VLLM_USE_FLASHINFER_SAMPLER=0 VLLM_WORKER_MULTIPROC_METHOD=spawn NCCL_NVLS_ENABLE=0 \
  TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
PY=$(command -v python3)
SERVE=$W/serve-site   # the OpenAI server's own imports beyond the kit (serve-packages.txt)
if [ ! -d "$SERVE" ]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SERVE" \
    .gpukit-cache/serve-whl/*.whl 2>&1 | grep -v WARNING || true
fi
export PYTHONPATH=$R/site:$SERVE
{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  echo "model.json: $(tr -d '\n ' <"$VERSION/model.json")"
  echo "levels $LEVELS; paths $PATHS"
} | tee -a "$OUT/summary.txt"

say "args: the server's argument list"
"$PY" bench/real_gpu_openai.py args "$OUT/server-args.json" 2>"$W/logs/args.log" | tee -a "$OUT/summary.txt" ||
  { tail -n 20 "$W/logs/args.log"; }
"$PY" bench/real_gpu_openai.py template "$VERSION/tokenizer"
say "argv: the vllm mode's command line"
"$PY" bench/real_gpu_openai.py argv "$VERSION" "$OUT/server-args.json" "$MODEL" "$PORT" "$OUT/argv.json" \
  2>&1 | tee -a "$OUT/summary.txt"
mapfile -t ARGV < <("$PY" -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1]))["argv"]))' "$OUT/argv.json")

pack() {  # the device tool brings back 8 files at most: the logs travel as one
  (cd "$W/logs" && tar -czf "$OUT/logs.tgz" .)
}
trap pack EXIT

if [[ ,$PATHS, == *,openai,* ]] && [ ${#ARGV[@]} -gt 0 ]; then
  say "openai: starting ${ARGV[*]:0:3} ..."
  ARGV[0]=$PY
  setsid "${ARGV[@]}" >"$W/logs/openai-server.log" 2>&1 &
  SPID=$!
  stop() {
    kill -TERM -- -"$SPID" 2>/dev/null
    for _ in $(seq 60); do kill -0 -- -"$SPID" 2>/dev/null || break; sleep 1; done
    kill -KILL -- -"$SPID" 2>/dev/null
    wait "$SPID" 2>/dev/null
  }
  ready=0
  for _ in $(seq 400); do
    "$PY" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
      "http://127.0.0.1:$PORT/health" 2>/dev/null && { ready=1; break; }
    kill -0 "$SPID" 2>/dev/null || break
    sleep 1
  done
  if [ $ready = 1 ]; then
    say "openai: /health answered"
    "$PY" bench/real_gpu_openai.py client "http://127.0.0.1:$PORT/v1" "$MODEL" "$OUT/client.json" \
      2>&1 | cut -c1-300 | tee -a "$OUT/summary.txt"
    say "openai: client exit ${PIPESTATUS[0]}"
    timeout 240 "$PY" bench/real_gpu_serving.py openai "http://127.0.0.1:$PORT" "http://127.0.0.1:$PORT/metrics" \
      "$MODEL" "$VERSION/tokenizer" "$OUT/openai.json" --levels "$LEVELS" >"$W/logs/openai-load.log" 2>&1
    say "openai: load exit $?"
    grep -E '^openai|Traceback|Error' "$W/logs/openai-load.log" | cut -c1-400 | tee -a "$OUT/summary.txt"
    "$PY" -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())' \
      "http://127.0.0.1:$PORT/metrics" >"$W/logs/openai-metrics.txt" 2>&1
  else
    say "openai: not ready"; tail -n 40 "$W/logs/openai-server.log" | cut -c1-300
  fi
  stop
  grep -E 'GPU KV cache size|Maximum concurrency|init engine|Traceback|Error' "$W/logs/openai-server.log" |
    cut -c1-300 | head -n 20 | tee -a "$OUT/summary.txt"
fi

if [[ ,$PATHS, == *,triton,* ]]; then
  if [ $SECONDS -gt 390 ]; then
    say "triton: skipped, ${SECONDS}s used of the call's 600"
  else
    say "triton: bench/real_gpu_serving.sh $MODEL $LEVELS triton"
    rm -rf "$W/tout"
    OUT=$W/tout timeout $((585 - SECONDS)) bash bench/real_gpu_serving.sh "$MODEL" "$LEVELS" triton >/dev/null 2>&1
    say "triton: exit $?"
    cat "$W/tout/serving.txt" >>"$OUT/summary.txt" 2>/dev/null
    cp "$W/tout/triton.json" "$OUT/triton.json" 2>/dev/null
    cp "$W/tout/logs.tgz" "$W/logs/triton-logs.tgz" 2>/dev/null
    cp "$W/tout/triton-metrics.txt" "$W/logs/" 2>/dev/null
  fi
fi
if [ -f "$OUT/openai.json" ] && [ -f "$OUT/triton.json" ]; then
  "$PY" bench/real_gpu_openai.py table "$OUT/openai.json" "$OUT/triton.json" | tee "$OUT/table.md"
fi
say "done"
