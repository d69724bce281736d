#!/usr/bin/env python3
"""What tritonops' backend costs on top of the engine, on CPU, through the lab's real tritonserver (issue #21).

The lab's Triton image (tritonserver 2.51 and its Python backend; made by `tritonops lab up`) runs in one
container on this machine's Docker engine, with the lab's stand-in vLLM (the wheel the lab's image build
installs; the V1 `AsyncLLM` shape) producing tokens as fast as its loop allows (TRITONOPS_LAB_TOKENS_PER_S
huge, no first-token delay), on a simulated H200. In that container, at each concurrency:
- the engine alone: bench/serving_load.py drives it in one process (as bench/real_gpu_serving.py does vLLM);
- through Triton: the same workload streamed through /generate_stream with the backend under test;
and, while Triton serves, :8002's tritonops_backend_loop_lag_seconds (how late the engine's loop ran) is read
every second. Prints the table (tok/s through Triton / alone, TTFT, inter-token, events per request, loop
lag). Traffic stays on the container's loopback; the container is removed at the end.

    python bench/backend_overhead.py [--levels 1,16,64,128,256,512] [--rounds 3] [--backend FILE]
                                     [--sender-threads N] [--cpus 2] [--tokens-per-s R --ttft-s S] [--replay]
                                     [--batching N] [--param KEY=VALUE ...] [--stand-in VERSION] [--keep]

--tokens-per-s / --ttft-s pace the stand-in per request like a GPU would (e.g. 40 tokens/s, 0.05 s to the
first token) instead of full speed: the engine's first-token time then stays put whatever the load, so what
Triton adds to it is the backend's and the server's own, apart from how a real engine batches prefills.
--replay: the backend keeps its per-request trace (TRACE_FILE), and after Triton the engine alone is sent
requests at the moments Triton's engine got them (`real_gpu_serving.py replay`, as on the H200); prints the
breakdown of a first token. Ends with each level within the H200 goal (bench/real_gpu_serving.py) or MISSED, and
what missed it; exits 1 when one missed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import docker  # noqa: E402

import real_gpu_serving  # noqa: E402
from goals import Goal, verdict  # noqa: E402


def goals(rows) -> list[Goal]:
    """real_gpu_serving.verdict's rows: each level within the H200 goal (tok/s, TTFT and ITL against the engine
    alone; no request failed; Triton's and vLLM's counters agree), what missed it named."""
    return [Goal(f"{c} streams: misses of the H200 goal", len(misses), 0, detail="; ".join(misses))
            for c, _, misses in rows]
from tritonops.image.build_script import BACKEND_DIR  # noqa: E402
from tritonops.lab.hub import tiny_model  # noqa: E402
from tritonops.lab.image_specs import TRITON_TAG  # noqa: E402
from tritonops.lab.profile_file import render_profile  # noqa: E402
from tritonops.lab.profiles import PROFILES  # noqa: E402
from tritonops.lab.wheelhouse import wheel_bytes  # noqa: E402
from tritonops.render.model_repository import RepositoryModel, render_model_repository  # noqa: E402

NAME = "tritonops-bench-overhead"
STOP_SERVER = """import os, signal, time
def servers():
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and open(f"/proc/{p}/comm").read().strip() == "tritonserver"]
for pid in servers():
    os.kill(pid, signal.SIGTERM)
deadline = time.monotonic() + 60
while servers() and time.monotonic() < deadline:
    time.sleep(0.2)
"""  # the image has no pkill
STAND_IN = "0.25.0"  # the stand-in as vLLM 0.25: the V1 AsyncLLM, with its renderer (render_cmpl_async)
MODEL = "m"


def stage(folder: Path, backend: Path, sender_threads: int | None, trace: bool = False, batching: int = 0,
          stand_in: str = STAND_IN, parameters: tuple = ()) -> None:
    (folder / "out").mkdir(parents=True)
    (folder / f"vllm-{stand_in}-py3-none-any.whl").write_bytes(wheel_bytes(stand_in))
    tiny = folder / "tiny"
    tiny.mkdir()
    for name, data in tiny_model().items():
        (tiny / name).write_bytes(data)
    (folder / "h200.profile").write_text(render_profile(PROFILES["h200x8"], "bench"))
    model_json = {"model": "/bench/tiny", "tokenizer": "/bench/tiny", "max_num_seqs": 1024,
                  "gpu_memory_utilization": 0.9}
    files = render_model_repository([RepositoryModel(MODEL, 1, model_json)])
    for path, text in files.items():
        if path.endswith("config.pbtxt") and sender_threads:
            text += ('parameters: {\n  key: "SENDER_THREADS"\n  value: { string_value: "%d" }\n}\n'
                     % sender_threads)
        for key, value in parameters if path.endswith("config.pbtxt") else ():
            text += 'parameters: {\n  key: "%s"\n  value: { string_value: "%s" }\n}\n' % (key, value)
        if path.endswith("config.pbtxt") and batching:
            text += "max_batch_size: %d\ndynamic_batching { max_queue_delay_microseconds: 0 }\n" % batching
        if path.endswith("config.pbtxt") and trace:
            text += 'parameters: {\n  key: "TRACE_FILE"\n  value: { string_value: "/bench/out/trace.jsonl" }\n}\n'
        (folder / "repo" / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / "repo" / path).write_text(text)
    shutil.copy(backend, folder / "model.py")
    for name in ("serving_load.py", "real_gpu_serving.py"):
        shutil.copy(REPO / "bench" / name, folder / name)


def run(container, command: list, timeout_note: str = "") -> str:
    code, output = container.exec_run(command)
    text = output.decode(errors="replace")
    if code != 0:
        raise SystemExit(f"{' '.join(command)} exited {code}{timeout_note}:\n{text[-3000:]}")
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", default="1,16,64,128,256,512")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backend", default=str(REPO / "tritonops/image/assets/vllm_backend_model.py.txt"))
    parser.add_argument("--sender-threads", type=int)
    parser.add_argument("--cpus", type=float, help="CPUs the container may use (default: all)")
    parser.add_argument("--tokens-per-s", type=float, default=1e9, help="per request (default: as fast as it can)")
    parser.add_argument("--ttft-s", type=float, default=0.0, help="the stand-in's delay before a first token")
    parser.add_argument("--replay", action="store_true", help="trace, then the engine alone at Triton's arrivals")
    parser.add_argument("--batching", type=int, default=0, metavar="N",
                        help="max_batch_size N with dynamic_batching: Triton hands queued requests to one execute")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="a config.pbtxt parameter for the backend (e.g. TOKENIZE_ON_LOOP=true); repeatable")
    parser.add_argument("--stand-in", default=STAND_IN, metavar="VERSION",
                        help=f"the stand-in vLLM's version (default {STAND_IN}; before 0.25 it has no renderer)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (server.log, the JSON, the trace)")
    args = parser.parse_args()
    parameters = []
    for pair in args.param:
        key, sep, value = pair.partition("=")
        if not sep or not key.replace("_", "").isalnum() or not value.replace("_", "").replace(".", "").isalnum():
            parser.error(f"--param {pair!r}: expected KEY=VALUE, letters, digits, '_' and '.' only")
        parameters.append((key, value))
    client = docker.from_env()
    try:
        client.images.get(TRITON_TAG)
    except docker.errors.ImageNotFound:
        print(f"no {TRITON_TAG} here: run `tritonops lab up` once (it builds the lab's Triton image)", file=sys.stderr)
        return 5
    work = Path(tempfile.mkdtemp(prefix="tritonops-overhead-"))
    stage(work, Path(args.backend), args.sender_threads, args.replay, args.batching, args.stand_in, tuple(parameters))
    try:
        client.containers.get(NAME).remove(force=True)
    except docker.errors.NotFound:
        pass
    env = {"TRITONOPS_LAB_GPU_PROFILE": "/bench/h200.profile", "TRITONOPS_LAB_TOKENS_PER_S": str(args.tokens_per_s),
           "TRITONOPS_LAB_TTFT_S": str(args.ttft_s), "PYTHONUNBUFFERED": "1"}
    container = client.containers.run(TRITON_TAG, ["sleep", "infinity"], name=NAME, detach=True, environment=env,
                                      volumes={str(work): {"bind": "/bench", "mode": "rw"}}, network_mode="none",
                                      shm_size="1g", nano_cpus=int(args.cpus * 1e9) if args.cpus else None)
    rounds = ["--rounds", str(args.rounds), "--levels", args.levels]
    try:
        run(container, ["python3", "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--break-system-packages",
                        f"/bench/vllm-{args.stand_in}-py3-none-any.whl"])
        run(container, ["sh", "-c", f"mkdir -p {BACKEND_DIR} && cp /bench/model.py {BACKEND_DIR}/model.py"])
        print("engine alone ...", flush=True)
        print(run(container, ["python3", "/bench/real_gpu_serving.py", "direct", f"/bench/repo/{MODEL}/1",
                              "/bench/out/direct.json", *rounds]).strip().splitlines()[-1])
        container.exec_run(["sh", "-c", "tritonserver --model-repository=/bench/repo --allow-gpu-metrics=false "
                                        ">/bench/out/server.log 2>&1"], detach=True)
        run(container, ["python3", "-c", "import time,urllib.request\nfor _ in range(240):\n try:\n"
                                         "  urllib.request.urlopen('http://127.0.0.1:8000/v2/health/ready');break\n"
                                         " except Exception: time.sleep(0.5)\nelse: raise SystemExit(1)"],
            " (tritonserver not ready: see server.log)")
        print("through Triton ...", flush=True)
        run(container, ["python3", "/bench/real_gpu_serving.py", "triton", "http://127.0.0.1:8000",
                        "http://127.0.0.1:8002/metrics", MODEL, "/bench/tiny", "/bench/out/triton.json",
                        "--processes", "2", *rounds])
        if args.replay:  # the trace is complete once the backend's finalize ran
            run(container, ["python3", "-c", STOP_SERVER])
            print("engine alone, at Triton's arrivals ...", flush=True)
            breakdown = run(container, ["python3", "/bench/real_gpu_serving.py", "replay", f"/bench/repo/{MODEL}/1",
                                        "/bench/out/trace.jsonl", "/bench/out/triton.json", "/bench/out/replay.json"])
    finally:
        container.remove(force=True)
    direct = json.loads((work / "out/direct.json").read_text())
    triton = json.loads((work / "out/triton.json").read_text())
    rows = real_gpu_serving.verdict(direct, triton, triton["workload"])
    print(real_gpu_serving.table(rows).replace(" goal |", " vs the H200 goal |"))
    print()
    print(real_gpu_serving.diagnostics(triton, direct))  # its loop-lag columns: the backend's and the engine alone's
    if args.replay:
        print()
        print("\n".join(line for line in breakdown.splitlines() if line.startswith(("|", "(ms"))))
    if args.keep:
        print(f"kept: {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return verdict(goals(rows))


if __name__ == "__main__":
    sys.exit(main())
