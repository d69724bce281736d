#!/usr/bin/env bash
# On the lent GPU (the device tool's `run`), from the checkout's root (issue #44): two Triton replicas (tritonops'
# backend, real vLLM 0.25.0, dummy weights) on the one GPU, Debian's HAProxy 2.6 (carried as packages, `dpkg -x`)
# in front with the configuration tritonops renders, and bench/real_gpu_prefix.py's open-loop shared-prefix load
# through each arm (leastconn, prefix with balance factor 150, prefix with 0, an oracle), cell after cell.
#
#   here:    bash ../shared/gpu-kit/prepare && python bench/real_gpu_repo.py .gpukit-cache/tritonops-repo
#            (cd .gpukit-cache/haproxy-debs && apt-get download haproxy liblua5.3-0 libopentracing-c-wrapper0 \
#             libopentracing1)
#   device:  run(carry=[".gpukit-cache/kit", ".gpukit-cache/chunks/gpukit.tar.xz.partNN"],
#                command="bash bench/real_gpu_prefix.sh")          # each part but the last: stashed only
#            run(carry=[".gpukit-cache/kit", <the last part>, ".gpukit-cache/tritonops-repo/qwen7b",
#                       ".gpukit-cache/haproxy-debs"], command="bash bench/real_gpu_prefix.sh CELLS")
#   args:    [CELLS (1.6x,0.6x)] [ARMS (leastconn,prefix150,prefix0,oracle; prefixN: balance factor N)] [REPEAT (0)]
#   env:     RATE_<cell>=R (requests/s; 1.6x and skewed share 1.6x's) skips that cell's calibration;
#            SECONDS_PER_ARM (30), WARMUP_S (10), BLOCKS (2048: num_gpu_blocks_override per replica),
#            MAX_NUM_SEQS (32), PREFIX_TOKENS (2048)
#
# Cells: 1.6x (tenants whose prefixes fill 1.6 times one replica's KV blocks: more than one holds, less than both),
# 0.6x (a control that fits one), skewed (1.6x's tenants, one of them half the requests). Each cell's rate is 80% of
# what leastconn's replicas finish in a closed loop of 2 x MAX_NUM_SEQS streams (`calibrate`).
# $OUT: summary.txt, table.md, calibrate-*.json, load-*.json, logs.tgz.
set -uo pipefail
CELLS=${1:-1.6x,0.6x}
ARMS=${2:-leastconn,prefix150,prefix0,oracle}
REPEAT=${3:-0}
KIT=.gpukit-cache/kit
W=${GPUKIT_WORK:-/tmp/gpukit}
R=$W/root
TS=$R/triton/pytriton/tritonserver
OUT=${OUT:-$W/out}
MODEL=qwen7b
BLOCKS=${BLOCKS:-2048}
MAX_NUM_SEQS=${MAX_NUM_SEQS:-32}
PREFIX_TOKENS=${PREFIX_TOKENS:-2048}
SECONDS_PER_ARM=${SECONDS_PER_ARM:-30}
WARMUP_S=${WARMUP_S:-10}
DOOR=9000
mkdir -p "$OUT" "$W/logs"
say() { echo "[prefix $(date -u +%T) +${SECONDS}s] $*" | tee -a "$OUT/summary.txt"; }
up() { "$PY" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$1" 2>/dev/null; }
finish() {
  [ -n "$(ls "$OUT"/load-*.json 2>/dev/null)" ] && PYTHONPATH=$R/site "$PY" bench/real_gpu_prefix.py table "$OUT" --goals \
    >"$OUT/table.md" 2>&1
  cat "$OUT/table.md" 2>/dev/null | tee -a "$OUT/summary.txt"
  (cd "$W/logs" && tar -czf "$OUT/logs.tgz" . 2>/dev/null)
}

OUT=$OUT/kit bash "$KIT/device-run" || exit $?   # stash this call's part; unpack once all are there
[ -d "$R/site/vllm" ] || exit 0                 # still waiting for parts
rm -rf "$OUT/kit"
SRC=.gpukit-cache/tritonops-repo/$MODEL
[ -f "$SRC/$MODEL/1/model.json" ] || { say "no $SRC: carry .gpukit-cache/tritonops-repo/$MODEL"; exit 2; }
export PYTHONUNBUFFERED=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
  VLLM_USE_FLASHINFER_SAMPLER=0 VLLM_WORKER_MULTIPROC_METHOD=spawn NCCL_NVLS_ENABLE=0 \
  TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
PY=$(command -v python3)

# HAProxy: Debian's package and the libraries this machine lacks, unpacked, not installed
HX=$W/haproxy
if [ ! -x "$HX/usr/sbin/haproxy" ]; then
  for deb in .gpukit-cache/haproxy-debs/*.deb; do dpkg -x "$deb" "$HX" || { say "dpkg -x $deb failed"; exit 2; }; done
fi
haproxy() { LD_LIBRARY_PATH=$HX/usr/lib/x86_64-linux-gnu "$HX/usr/sbin/haproxy" "$@"; }
haproxy -v | head -n 1 | tee -a "$OUT/summary.txt" || { say "haproxy does not run here"; exit 2; }

source bench/gpu_stub_python.sh
stub_python || exit 2
mkdir -p "$TS/backends/vllm"
cp tritonops/image/assets/vllm_backend_model.py.txt "$TS/backends/vllm/model.py"

# Two repositories: the rendered one with a fixed KV cache (num_gpu_blocks_override) and a capped max_num_seqs, so
# the prefix working set is known; 0.40 of the GPU each
PIDS=()
stop_all() {
  [ -f "$W/haproxy.pid" ] && kill "$(cat "$W/haproxy.pid")" 2>/dev/null
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for _ in $(seq 60); do
    alive=0; for pid in "${PIDS[@]}"; do kill -0 -- -"$pid" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break; sleep 1
  done
  for pid in "${PIDS[@]}"; do kill -KILL -- -"$pid" 2>/dev/null; done
}
trap 'stop_all; finish' EXIT
for i in 0 1; do
  REPO=$W/repo$i
  rm -rf "$REPO" && cp -r "$SRC" "$REPO"
  "$PY" - "$REPO/$MODEL/1/model.json" "$BLOCKS" "$MAX_NUM_SEQS" <<'EOF'
import json, sys
path, blocks, seqs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
config = json.load(open(path))
config.update(gpu_memory_utilization=0.40, num_gpu_blocks_override=blocks, max_num_seqs=seqs, max_model_len=8192,
              enable_prefix_caching=True)
json.dump(config, open(path, "w"), indent=1)
EOF
  [ $i = 0 ] && say "model.json: $(tr -d '\n ' <"$REPO/$MODEL/1/model.json")"
  set -m
  PATH=$V/bin:$PATH LD_LIBRARY_PATH=$R/triton/nvidia_pytriton.libs:$LIBPYDIR \
    "$TS/bin/tritonserver" --model-repository="$REPO" --backend-directory="$TS/backends" \
    --cache-directory="$TS/caches" --http-port=$((8100 + 10 * i)) --grpc-port=$((8101 + 10 * i)) \
    --metrics-port=$((8102 + 10 * i)) >"$W/logs/replica$i.log" 2>&1 &
  PIDS+=($!)
  set +m
  say "replica $i: tritonserver pid ${PIDS[-1]} on :$((8100 + 10 * i))"
  sleep 20  # the first one's weights in place before the second measures free memory
done
for i in 0 1; do
  ready=0
  for _ in $(seq 300); do
    up "http://127.0.0.1:$((8100 + 10 * i))/v2/health/ready" && { ready=1; break; }
    kill -0 "${PIDS[$i]}" 2>/dev/null || break
    sleep 1
  done
  [ $ready = 1 ] || { say "replica $i not ready"; tail -n 30 "$W/logs/replica$i.log"; exit 3; }
  say "replica $i ready: $(grep -oE 'GPU KV cache size: [0-9,]+ tokens|num_gpu_blocks_override=[0-9]+' \
    "$W/logs/replica$i.log" | tr '\n' ' ')"
done
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv,noheader | tee -a "$OUT/summary.txt"
TOKENIZER=$SRC/$MODEL/1/tokenizer
METRICS=http://127.0.0.1:8102/metrics,http://127.0.0.1:8112/metrics
SOCK=$W/haproxy.sock

door() {  # door ARM [FACTOR]: the arm's HAProxy, alone
  [ -f "$W/haproxy.pid" ] && { kill "$(cat "$W/haproxy.pid")" 2>/dev/null; sleep 1; }
  PYTHONPATH=$R/site "$PY" bench/real_gpu_prefix.py render "$1" --servers 127.0.0.1:8100,127.0.0.1:8110 --maxconn "$MAX_NUM_SEQS" \
    --port $DOOR --socket "$SOCK" --lua-dir "$W/lua" --factor "${2:-150}" --out "$W/door" || return 1
  haproxy -c -f "$W/door" >"$W/logs/check-$1.log" 2>&1 || { cat "$W/logs/check-$1.log"; return 1; }
  haproxy -W -D -f "$W/door" -p "$W/haproxy.pid" >>"$W/logs/haproxy.log" 2>&1 || return 1
  for _ in $(seq 50); do
    up "http://127.0.0.1:$DOOR/v2/health/ready" && return 0
    [ "$1" = oracle ] && up "http://127.0.0.1:$((DOOR + 1))/v2/health/ready" && return 0
    sleep 0.2
  done
  return 1
}

cell_args() {  # the cell's workload
  case $1 in
    1.6x) echo "--tenants $(( (16 * BLOCKS * 16 / 10 + PREFIX_TOKENS - 1) / PREFIX_TOKENS )) --prefix-tokens $PREFIX_TOKENS" ;;
    0.6x) echo "--tenants $(( (6 * BLOCKS * 16 / 10 + PREFIX_TOKENS - 1) / PREFIX_TOKENS )) --prefix-tokens $PREFIX_TOKENS" ;;
    skewed) echo "--tenants $(( (16 * BLOCKS * 16 / 10 + PREFIX_TOKENS - 1) / PREFIX_TOKENS )) --prefix-tokens $PREFIX_TOKENS --skew 0.5" ;;
  esac
}

for cell in ${CELLS//,/ }; do
  base=$cell; [ "$cell" = skewed ] && base=1.6x
  var=RATE_${base//./_}; rate=${!var:-}
  if [ -z "$rate" ]; then
    door leastconn || { say "leastconn door did not start"; exit 4; }
    say "$cell: calibrating (closed loop, $((2 * MAX_NUM_SEQS)) streams, 25 s)"
    # shellcheck disable=SC2046
    PYTHONPATH=$R/site "$PY" bench/real_gpu_prefix.py calibrate --cell "$base" --door http://127.0.0.1:$DOOR \
      --tokenizer "$TOKENIZER" $(cell_args "$base") --seconds 25 --concurrency $((2 * MAX_NUM_SEQS)) \
      --out "$OUT/calibrate-$base.json" >>"$W/logs/calibrate.log" 2>&1 || { say "calibration failed"; exit 5; }
    rate=$("$PY" -c 'import json, sys; print(round(0.8 * json.load(open(sys.argv[1]))["rate"], 2))' \
      "$OUT/calibrate-$base.json")
    printf -v "$var" '%s' "$rate"
    say "$cell: $(cat "$OUT/calibrate-$base.json" | tr -d '\n') -> offered $rate/s"
  fi
  for arm in ${ARMS//,/ }; do
    case $arm in
      leastconn) door leastconn ;; prefix*) door prefix "${arm#prefix}" ;; oracle) door oracle ;;
    esac || { say "$arm: the door did not start"; continue; }
    oracle=""; [ "$arm" = oracle ] && oracle="--oracle http://127.0.0.1:$((DOOR + 1)),http://127.0.0.1:$((DOOR + 2))"
    say "$cell/$arm: $rate/s for $WARMUP_S + $SECONDS_PER_ARM s"
    # shellcheck disable=SC2046,SC2086
    PYTHONPATH=$R/site timeout $((SECONDS_PER_ARM + WARMUP_S + 120)) "$PY" bench/real_gpu_prefix.py load \
      --cell "$cell" --arm "$arm" --repeat "$REPEAT" --door http://127.0.0.1:$DOOR $oracle --socket "$SOCK" \
      --metrics "$METRICS" --tokenizer "$TOKENIZER" $(cell_args "$cell") --rate "$rate" --warmup-s "$WARMUP_S" \
      --seconds "$SECONDS_PER_ARM" --out "$OUT/load-$cell-$arm-$REPEAT.json" 2>>"$W/logs/load.log" |
      cut -c1-600 | tee -a "$OUT/summary.txt"
  done
done
say "done"
