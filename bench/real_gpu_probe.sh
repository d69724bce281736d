#!/usr/bin/env bash
# Run the probe on a real GPU machine (no SSH: the same program `tritonops probe`
# sends over SSH, run locally) and keep what it printed, next to what nvidia-smi
# and CUDA say, so tests/fixtures/real/ can pin the parser to real hardware.
# Usage: OUT=/some/dir bench/real_gpu_probe.sh   (needs python3; wheels in .whl/ if
# tritonops' dependencies are not installed)
set -u
OUT=${OUT:-/tmp/real-gpu-probe}; mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
raw_probe() {  # exactly what the controller sends: bootstrap command + bundle on stdin
  python3 -c 'import sys; from tritonops.facts import probe_payload as p; sys.stdout.buffer.write(p.bundle())' > /tmp/bundle.b64
  sh -c "$(python3 -c 'from tritonops.facts import probe_payload as p; print(p.command("/opt/tritonops"))')" < /tmp/bundle.b64
}
{
  nvidia-smi -L
  nvidia-smi --query-gpu=index,name,memory.total,memory.free,compute_cap,driver_version --format=csv > "$OUT/smi-csv.txt"
  nvidia-smi topo -m > "$OUT/topo.txt"
  raw_probe > "$OUT/probe-raw-idle.json"; echo "raw probe rc=$?"
  python3 -m tritonops probe --local --json > "$OUT/probe-local-idle.json"; echo "probe --local --json rc=$?"
  python3 -m tritonops probe --local | tee "$OUT/probe-local-idle.txt"
  python3 - > "$OUT/cuda-meminfo.txt" <<'PY'
import torch
for i in range(torch.cuda.device_count()):
    free, total = torch.cuda.mem_get_info(i)
    print(f"cuda:{i} {torch.cuda.get_device_name(i)} mem_get_info free={free} total={total}")
PY
  # A process holding 20 GiB on GPU 0: the probe must list it and the free memory must drop.
  python3 -c "import torch,time; x=torch.empty(20*2**30,dtype=torch.uint8,device='cuda:0'); print('holding', flush=True); time.sleep(90)" &
  holder=$!
  for _ in $(seq 60); do nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -q . && break; sleep 1; done
  sleep 3
  raw_probe > "$OUT/probe-raw-busy.json"; echo "busy raw probe rc=$?"
  python3 -m tritonops probe --local | tee -a "$OUT/probe-local-idle.txt"
  kill $holder
} > "$OUT/log.txt" 2>&1
cat "$OUT/log.txt"
