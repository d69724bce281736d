#!/usr/bin/env bash
# On the lent H200 (the device tool's `run`), from the checkout's root: the same streaming load through
# vLLM 0.25.0 driven directly and through the real tritonserver 2.51 with tritonops' backend
# (bench/real_gpu_serving.py; the model repository bench/real_gpu_repo.py renders), one after the other in
# the same call, then the comparison with issue #21's goal ($OUT/compare.txt).
#
#   here:    bash ../shared/gpu-kit/prepare && python bench/real_gpu_repo.py .gpukit-cache/tritonops-repo
#   device:  run(carry=[".gpukit-cache/kit", ".gpukit-cache/chunks/gpukit.tar.xz.part00"],
#                command="bash bench/real_gpu_serving.sh")                    # then part01 (stash only)
#            run(carry=[".gpukit-cache/kit", ".gpukit-cache/chunks/gpukit.tar.xz.part02",
#                       ".gpukit-cache/tritonops-repo/qwen7b"], command="bash bench/real_gpu_serving.sh")
#   args:    [MODEL (qwen7b)] [LEVELS (1,16,64,128,256,512)] [PATHS (direct,triton)] [BACKEND (the tree's)]
#            [PARAMS]
#            PATHS may also name `replay` (after `triton`): the engine alone is sent requests at the moments the
#            Triton run's engine got them (from the backend's trace: the Triton run keeps one when replay is
#            asked for), then runs its own closed loop (direct.json), on one engine; breakdown.txt sets them
#            side by side. A later warm call can replay the last Triton run (kept in .gpukit-cache/last).
#   env:     BATCHING=N: the Triton run's config.pbtxt gets max_batch_size N and dynamic_batching (figures in
#            triton-batching-N.json); TRACE=1: the backend keeps its trace without a replay. PROFILE=ROUNDS:
#            the Triton run goes level by level (ROUNDS x c timed requests each) with py-spy (carried as
#            .gpukit-cache/py-spy, from PyPI's py-spy wheel) recording the backend's stub twice per level, 8 s of
#            every thread and 8 s of whichever holds the GIL (spy.tgz).
#            DIRECT_TIMEOUT_S=S: the direct path's limit, engine start included (300).
#            THINK_MS=M: the direct path's closed-loop clients wait M ms after each request before the next (as
#            an answer over HTTP and the next request take a few ms to travel; direct clients otherwise send at once).
#            BACKEND: another model.py to serve with (e.g. an older backend carried under .gpukit-cache/),
#            its figures go to triton-<name of its folder>.json. PARAMS: KEY=VALUE[,KEY=VALUE] added to the
#            model's config.pbtxt parameters (e.g. SENDER_THREADS=1); the figures go to triton-KEY-VALUE.json.
set -uo pipefail
MODEL=${1:-qwen7b}
LEVELS=${2:-1,16,64,128,256,512}
PATHS=${3:-direct,triton}
BACKEND=${4:-tritonops/image/assets/vllm_backend_model.py.txt}
PARAMS=${5:-}
KIT=.gpukit-cache/kit
W=${GPUKIT_WORK:-/tmp/gpukit}
R=$W/root
TS=$R/triton/pytriton/tritonserver
OUT=${OUT:-$W/out}
mkdir -p "$OUT"
say() { echo "[serving $(date +%T) +${SECONDS}s] $*" | tee -a "$OUT/serving.txt"; }

OUT=$OUT/kit bash "$KIT/device-run" || exit $?   # stash this call's part; unpack once all are there
[ -d "$R/site/vllm" ] || exit 0                 # still waiting for parts
rm -rf "$OUT/kit"
REPO=.gpukit-cache/tritonops-repo/$MODEL
VERSION=$REPO/$MODEL/1
[ -f "$VERSION/model.json" ] || { say "no $VERSION/model.json: carry .gpukit-cache/tritonops-repo/$MODEL"; exit 2; }
export PYTHONUNBUFFERED=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
  VLLM_USE_FLASHINFER_SAMPLER=0 VLLM_WORKER_MULTIPROC_METHOD=spawn NCCL_NVLS_ENABLE=0 \
  TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
PY=$(command -v python3)
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  cat "$VERSION/model.json"
  echo "levels $LEVELS; backend $BACKEND sha256 $(sha256sum "$BACKEND" | cut -c1-16)"
} | tee -a "$OUT/serving.txt"

if [[ ,$PATHS, == *,direct,* ]]; then
  say "direct: vLLM's AsyncLLM in one process"
  PYTHONPATH=$R/site timeout "${DIRECT_TIMEOUT_S:-300}" "$PY" bench/real_gpu_serving.py direct "$VERSION" "$OUT/direct.json" \
    --levels "$LEVELS" ${ROUNDS:+--rounds "$ROUNDS"} ${THINK_MS:+--think-ms "$THINK_MS"} >"$OUT/direct.log" 2>&1
  say "direct: exit $?"
  grep -E '^direct|GPU KV cache size|Traceback|Error' "$OUT/direct.log" | cut -c1-300 | tee -a "$OUT/serving.txt"
fi

if [[ ,$PATHS, == *,triton,* ]]; then
  # The stub's Python (bench/gpu_stub_python.sh): V, LIBPYDIR
  source bench/gpu_stub_python.sh
  stub_python || exit 2
  mkdir -p "$TS/backends/vllm"
  cp "$BACKEND" "$TS/backends/vllm/model.py"
  NAME=triton
  [ "$BACKEND" = tritonops/image/assets/vllm_backend_model.py.txt ] || NAME=triton-$(basename "$(dirname "$BACKEND")")
  if [ -n "$PARAMS" ]; then  # a copy of the repository whose config.pbtxt has these parameters too
    rm -rf "$W/repo-params" && cp -r "$REPO" "$W/repo-params" && REPO=$W/repo-params
    "$PY" -c 'import sys
for pair in sys.argv[2].split(","):
    key, value = pair.split("=", 1)
    open(sys.argv[1], "a").write("parameters: {\n  key: \"%s\"\n  value: { string_value: \"%s\" }\n}\n" % (key, value))' \
      "$REPO/$MODEL/config.pbtxt" "$PARAMS"
    NAME=$NAME-$(echo "$PARAMS" | tr ',=' '--')
  fi
  if [ -n "${BATCHING:-}" ]; then  # Triton's dynamic batcher hands queued requests to one execute
    [ "$REPO" = "$W/repo-params" ] || { rm -rf "$W/repo-params" && cp -r "$REPO" "$W/repo-params" && REPO=$W/repo-params; }
    printf 'max_batch_size: %d\ndynamic_batching { max_queue_delay_microseconds: 0 }\n' "$BATCHING" >>"$REPO/$MODEL/config.pbtxt"
    NAME=$NAME-batching-$BATCHING
  fi
  if [[ ,$PATHS, == *,replay,* ]] || [ -n "${TRACE:-}" ]; then  # the backend's per-request trace
    [ "$REPO" = "$W/repo-params" ] || { rm -rf "$W/repo-params" && cp -r "$REPO" "$W/repo-params" && REPO=$W/repo-params; }
    rm -f "$OUT/$NAME-trace.jsonl"
    printf 'parameters: {\n  key: "TRACE_FILE"\n  value: { string_value: "%s" }\n}\n' "$(realpath -m "$OUT/$NAME-trace.jsonl")" \
      >>"$REPO/$MODEL/config.pbtxt"
  fi
  say "$NAME: tritonserver with $BACKEND"
  set -m
  PATH=$V/bin:$PATH LD_LIBRARY_PATH=$R/triton/nvidia_pytriton.libs:$LIBPYDIR \
    "$TS/bin/tritonserver" --model-repository="$REPO" --backend-directory="$TS/backends" \
    --cache-directory="$TS/caches" --http-port=8000 --grpc-port=8001 --metrics-port=8002 \
    >"$OUT/$NAME-server.log" 2>&1 &
  SPID=$!
  set +m
  stop() {
    kill -TERM "$SPID" 2>/dev/null
    for _ in $(seq 60); do kill -0 -- -"$SPID" 2>/dev/null || break; sleep 1; done
    kill -KILL -- -"$SPID" 2>/dev/null
    wait "$SPID" 2>/dev/null
  }
  trap stop EXIT
  ready=0
  for _ in $(seq 420); do
    "$PY" -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:8000/v2/health/ready", timeout=2)' \
      2>/dev/null && { ready=1; break; }
    kill -0 "$SPID" 2>/dev/null || break
    sleep 1
  done
  if [ $ready = 1 ] && [ -n "${PROFILE:-}" ]; then  # per level, py-spy on the backend's stub while it runs
    say "$NAME: ready; profiling each level ($(uname -m))"
    STUB=$(pgrep -f triton_python_backend_stub | head -n 1)
    for c in ${LEVELS//,/ }; do
      PYTHONPATH=$R/site timeout 300 "$PY" bench/real_gpu_serving.py triton http://127.0.0.1:8000 \
        http://127.0.0.1:8002/metrics "$MODEL" "$VERSION/tokenizer" "$OUT/$NAME-c$c.json" --levels "$c" \
        --rounds "$PROFILE" >"$OUT/$NAME-c$c.log" 2>&1 &
      BP=$!
      sleep 8  # the warm-up round and the first timed requests
      for how in all gil; do  # every thread, idle included; then only whichever holds the GIL
        flag=--idle; [ $how = gil ] && flag=--gil
        say "$NAME c=$c: py-spy $how"
        .gpukit-cache/py-spy record -p "$STUB" --threads $flag -r 200 -d 8 -f raw -o "$OUT/spy-c$c-$how.txt" \
          >>"$OUT/spy.log" 2>&1
      done
      wait $BP
      grep -E '^triton|Traceback|Error' "$OUT/$NAME-c$c.log" | cut -c1-300 | tee -a "$OUT/serving.txt"
    done
    (cd "$OUT" && tar -czf spy.tgz spy-*.txt spy.log "$NAME"-c*.json && rm -f spy-*.txt "$NAME"-c*.json)
  elif [ $ready = 1 ]; then
    say "$NAME: ready"
    PYTHONPATH=$R/site timeout 300 "$PY" bench/real_gpu_serving.py triton http://127.0.0.1:8000 \
      http://127.0.0.1:8002/metrics "$MODEL" "$VERSION/tokenizer" "$OUT/$NAME.json" --levels "$LEVELS" \
      ${ROUNDS:+--rounds "$ROUNDS"} >"$OUT/$NAME.log" 2>&1
    say "$NAME: exit $?"
    grep -E '^triton|Traceback|Error' "$OUT/$NAME.log" | cut -c1-400 | tee -a "$OUT/serving.txt"
    "$PY" -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:8002/metrics").read().decode())' \
      >"$OUT/$NAME-metrics.txt"
  else
    say "$NAME: not ready"; tail -n 40 "$OUT/$NAME-server.log"
  fi
  stop
  trap - EXIT
  grep -E 'GPU KV cache size|\[vllm\]|Traceback|Error' "$OUT/$NAME-server.log" | cut -c1-300 | head -n 20 |
    tee -a "$OUT/serving.txt"
  gzip -f "$OUT/$NAME-server.log"
  if [ -f "$OUT/direct.json" ] && [ -f "$OUT/$NAME.json" ]; then
    "$PY" bench/real_gpu_serving.py compare "$OUT/direct.json" "$OUT/$NAME.json" | tee "$OUT/compare-$NAME.txt"
  fi
  if [ -s "$OUT/$NAME-trace.jsonl" ]; then
    "$PY" bench/real_gpu_serving.py joined "$OUT/$NAME-trace.jsonl" "$OUT/$NAME.json" | tee "$OUT/joined-$NAME.txt"
    mkdir -p .gpukit-cache/last && cp "$OUT/$NAME.json" .gpukit-cache/last/triton.json &&
      cp "$OUT/$NAME-trace.jsonl" .gpukit-cache/last/triton-trace.jsonl
  fi
fi

if [[ ,$PATHS, == *,replay,* ]]; then
  FROM=.gpukit-cache/last
  [ -s "$FROM/triton-trace.jsonl" ] || { say "replay: no Triton run with a trace to replay"; exit 2; }
  say "replay: vLLM's AsyncLLM sent requests when the Triton run's engine got them, then its closed loop"
  PYTHONPATH=$R/site timeout $((585 - SECONDS)) "$PY" bench/real_gpu_serving.py replay "$VERSION" \
    "$FROM/triton-trace.jsonl" "$FROM/triton.json" "$OUT/replay.json" --direct "$OUT/direct.json" \
    >"$OUT/replay.log" 2>&1
  say "replay: exit $?"
  grep -E '^(replay|direct)|^\||Traceback|Error' "$OUT/replay.log" | cut -c1-300 | tee -a "$OUT/serving.txt"
  grep -E '^\||^\(ms' "$OUT/replay.log" >"$OUT/breakdown.txt"
  gzip -f "$OUT/replay.log"
fi
gzip -f "$OUT/direct.log" 2>/dev/null
say "done"
# the device tool brings back 8 files at most: the logs travel as one
LOGS=$(cd "$OUT" && ls -- *.log *.log.gz 2>/dev/null)
[ -n "$LOGS" ] && (cd "$OUT" && tar -czf logs.tgz $LOGS && rm -f $LOGS)
