#!/usr/bin/env python3
"""On the lent H200, beside bench/real_gpu_serve.sh: once Triton is ready, keep the engine busy with
CONCURRENT long generate requests and read :8002/metrics every half second, to see the KV-cache gauge
that tritonops' backend feeds from vLLM's own stat logger (vllm:kv_cache_usage_perc) move on the real
engine. Standard library only (it runs with the image's python3, outside the kit's venv).

    python3 bench/real_gpu_kv_sampler.py MODEL OUT_FILE [--concurrent 16] [--max-tokens 2048] [--seconds 30]

Writes OUT_FILE: one block per sample (seconds since the first request, then every metrics line
that names kv_cache, gpu_cache or num_requests_running), then each request's HTTP status. Ends by
itself; the server's stop ends whatever is still in flight.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import urllib.error
import urllib.request

HTTP = "http://127.0.0.1:8000"
METRICS = "http://127.0.0.1:8002/metrics"
WANTED = ("kv_cache", "gpu_cache", "num_requests_running")


def fetch(url: str, body: dict | None = None, timeout: float = 600) -> tuple[int | None, str]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, answer.read().decode(errors="replace")
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(errors="replace")
    except OSError as err:
        return None, str(err)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("out")
    parser.add_argument("--concurrent", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=2048)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--ready-timeout", type=float, default=420)
    args = parser.parse_args()
    deadline = time.monotonic() + args.ready_timeout
    while fetch(f"{HTTP}/v2/health/ready", timeout=2)[0] != 200:
        if time.monotonic() > deadline:
            open(args.out, "w").write("never ready\n")
            return 1
        time.sleep(0.5)
    statuses: list[str] = []
    body = {"text_input": "Count slowly from one to ten thousand:",
            "parameters": {"max_tokens": args.max_tokens, "ignore_eos": True, "temperature": 0}}

    def one(index: int) -> None:
        code, text = fetch(f"{HTTP}/v2/models/{args.model}/generate", body)
        statuses.append(f"request {index}: {code} {len(text)} bytes {text[:120]!r}")

    for index in range(args.concurrent):
        threading.Thread(target=one, args=(index,), daemon=True).start()
    started = time.monotonic()
    with open(args.out, "w") as out:
        out.write(f"{args.concurrent} requests of {args.max_tokens} tokens (ignore_eos) to {args.model}\n")
        while time.monotonic() - started < args.seconds:
            code, text = fetch(METRICS, timeout=5)
            lines = [line for line in text.splitlines() if not line.startswith("#") and any(w in line for w in WANTED)]
            out.write(f"--- t={time.monotonic() - started:.1f}s metrics {code}\n" + "\n".join(lines) + "\n")
            out.flush()
            if len(statuses) == args.concurrent:
                break
            time.sleep(0.5)
        out.write("\n".join(statuses) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
