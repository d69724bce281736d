#!/usr/bin/env python3
"""Start vLLM 0.25.0 on the lent H200 for each configuration of a calibration plan, up to the end
of its start-up (profile, KV cache, CUDA graphs), and keep what it printed.

Runs ON the device (bench/real_gpu_calib.sh calls it) with the gpu-kit's vLLM on sys.path:

    python3 bench/real_gpu_calib.py drive PLAN.json BATCH OUT_DIR DEADLINE_EPOCH

One process per run (`one` mode): it imports vLLM, then waits for the GPU lock, so the next run's
imports overlap the current run. The engine core runs in-process (VLLM_ENABLE_V1_MULTIPROCESSING=0)
so that the run can also print the worker's exact byte counts (the log rounds to 0.01 GiB); the
memory arithmetic is the same as in vLLM's engine-core process. Each run writes OUT/<id>.log (vLLM's
DEBUG log and one `CALIB_RESULT {json}` line) and nothing else.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time

LOCK = "/tmp/calib-gpu.lock"
RUN_LIMIT_S = 240


def _gpu_idle(limit_s: float = 60.0) -> bool:
    end = time.time() + limit_s
    while time.time() < end:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip()
        if not out:
            return True
        time.sleep(0.5)
    return False


def _worker(llm):
    core = llm.llm_engine.engine_core          # InprocClient
    core = getattr(core, "engine_core", core)  # EngineCore
    return core.model_executor.driver_worker.worker


def one(spec: dict, model_root: str, deadline: float) -> None:
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    from vllm import LLM  # the imports overlap the previous run
    lock = open(LOCK, "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    rec: dict = {"id": spec["id"], "spec": spec}
    need = (45 if spec["enforce_eager"] else 90) + (30 if "moe" in spec["model"] or "a3b" in spec["model"] else 0)
    if time.time() + need > deadline:
        rec["skipped"] = "deadline"
        print("CALIB_RESULT " + json.dumps(rec), flush=True)
        os._exit(0)
    rec["gpu_idle_at_start"] = _gpu_idle()
    signal.alarm(RUN_LIMIT_S)
    import torch
    args = dict(model=os.path.join(model_root, spec["model"]), load_format="dummy", skip_tokenizer_init=True,
                seed=0, dtype="bfloat16", gpu_memory_utilization=spec["gpu_memory_utilization"],
                max_model_len=spec["max_model_len"], max_num_seqs=spec["max_num_seqs"],
                max_num_batched_tokens=spec["max_num_batched_tokens"], enforce_eager=spec["enforce_eager"],
                disable_log_stats=True)
    rec["llm_args"] = args
    print("CALIB_ARGS " + json.dumps(args), flush=True)
    t0 = time.time()
    try:
        llm = LLM(**args)
        rec["ok"] = True
    except BaseException as exc:  # the refusal is a result too
        rec["ok"] = False
        rec["error"] = f"{type(exc).__name__}: {exc}"[:6000]
        llm = None
    rec["start_s"] = round(time.time() - t0, 2)
    try:
        if llm is not None:
            w = _worker(llm)
            snap = w.init_snapshot
            rec["worker"] = {
                "total_memory": int(snap.total_memory), "init_free_memory": int(snap.free_memory),
                "requested_memory": int(w.requested_memory),
                "weights": int(w.model_runner.model_memory_usage),
                "peak_activation": int(w.peak_activation_memory), "non_torch": int(w.non_torch_memory),
                "cudagraph_estimate": int(getattr(w, "cudagraph_memory_estimate", 0) or 0),
                "available_kv": int(w.available_kv_cache_memory_bytes),
                "v2_runner": bool(getattr(w, "use_v2_model_runner", False)),
            }
            cfg = llm.llm_engine.vllm_config
            rec["num_gpu_blocks"] = cfg.cache_config.num_gpu_blocks
            rec["block_size"] = cfg.cache_config.block_size
            rec["cudagraph_capture_sizes"] = list(cfg.compilation_config.cudagraph_capture_sizes or [])
        free, total = torch.cuda.mem_get_info()
        rec["after_start"] = {"free": int(free), "total": int(total),
                              "torch_reserved": int(torch.cuda.memory_reserved()),
                              "torch_max_reserved": int(torch.cuda.max_memory_reserved())}
    except BaseException as exc:
        rec["inspect_error"] = f"{type(exc).__name__}: {exc}"[:2000]
    print("CALIB_RESULT " + json.dumps(rec), flush=True)
    sys.stdout.flush()
    os._exit(0)  # the process's end frees the GPU; the next run waits for that


def drive(plan_path: str, batch: str, out: str, deadline: float) -> int:
    plan = [r for r in json.load(open(plan_path)) if r["batch"] in batch.split(",") or r["id"] in batch.split(",")]
    model_root = os.path.join(os.path.dirname(os.path.abspath(plan_path)), "models")
    env = {**os.environ, "VLLM_LOGGING_LEVEL": "DEBUG"}
    os.makedirs(out, exist_ok=True)
    running: list[tuple[str, subprocess.Popen, object]] = []
    queue = list(plan)
    t0 = time.time()
    while queue or running:
        while queue and len(running) < 2:
            spec = queue.pop(0)
            log = open(os.path.join(out, spec["id"] + ".log"), "w")
            cmd = [sys.executable, os.path.abspath(__file__), "one", json.dumps(spec), model_root, str(deadline)]
            log.write("COMMAND " + json.dumps(cmd) + "\n")
            log.flush()
            running.append((spec["id"], subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env), log))
        rid, proc, log = running[0]
        proc.wait()
        log.close()
        running.pop(0)
        text = open(os.path.join(out, rid + ".log")).read()
        line = next((x for x in text.splitlines() if x.startswith("CALIB_RESULT ")), "")
        rec = json.loads(line[len("CALIB_RESULT "):]) if line else {}
        kv = next((x for x in text.splitlines() if "GPU KV cache size" in x), "")
        print(f"[{time.time() - t0:6.1f}s] {rid} rc={proc.returncode} ok={rec.get('ok')} "
              f"skip={rec.get('skipped')} start={rec.get('start_s')}s {kv[-60:]} "
              f"{(rec.get('error') or '')[:200]}", flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "one":
        one(json.loads(sys.argv[2]), sys.argv[3], float(sys.argv[4]))
    else:
        sys.exit(drive(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])))
