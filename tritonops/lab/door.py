"""`python -m tritonops.lab door -i INVENTORY [PROMPT]`: a generate request through every balancer's door (issue
#31), from this machine to the balancer's address on the lab network (`lab_door_address`): with the door's API key
(read from the balancer over SSH, never printed) and without it. A lab helper for ./lab-demo; exits 1 unless every
door answered the key with text and refused the keyless request with 401."""

from __future__ import annotations

import argparse
import json
import shlex
import time
import urllib.error
import urllib.request

from tritonops.planning.balancer import door, is_balancer
from tritonops.results import HostResult
from tritonops.transport.sessions import HostSession, SessionPool

READY_S = 60  # the door's first health checks (every 2 s, rise 2) after a deploy


def ask(address: str, port: int, model: str, prompt: str, key: str | None) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    body = json.dumps({"text_input": prompt, "parameters": {"max_tokens": 16}}).encode()
    request = urllib.request.Request(f"http://{address}:{port}/v2/models/{model}/generate", data=body,
                                     headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, json.loads(reply.read() or b"{}")
    except urllib.error.HTTPError as err:
        try:
            return err.code, json.loads(err.read() or b"{}")
        except ValueError:
            return err.code, {}
    except (OSError, ValueError) as err:
        return 0, {"error": str(err)}


def main(argv: list[str]) -> int:
    from tritonops.inventory import load_inventory

    parser = argparse.ArgumentParser(prog="python -m tritonops.lab door")
    parser.add_argument("-i", "--inventory", action="append", required=True, metavar="PATH")
    parser.add_argument("--model", default="vllm_model")
    parser.add_argument("prompt", nargs="?", default="The capital of France is")
    args = parser.parse_args(argv)
    balancers = [host for host in load_inventory(args.inventory).hosts if is_balancer(host)]
    if not balancers:
        print("no host in tritonops_balancers: no door to knock on")
        return 1
    by_name = {host.name: host for host in balancers}

    def knock(session: HostSession) -> HostResult:
        host = by_name[session.name]
        settings = door(host)
        address = str(host.vars.get("lab_door_address") or "")
        if not address:
            return HostResult(session.name, "failed", "no lab_door_address: not a lab balancer")
        key = None
        if settings.keys_file:
            found = session.transport.run(shlex.join(("head", "-n", "1", settings.keys_file)), timeout=30)
            key = found.stdout.strip() if found.ok else None
            if not key:
                return HostResult(session.name, "failed", f"no key in {settings.keys_file}")
        deadline = time.monotonic() + READY_S
        while True:
            status, answer = ask(address, settings.http_port, args.model, args.prompt, key)
            if status == 200 or time.monotonic() > deadline:
                break
            time.sleep(1)
        lines = [f"{address}:{settings.http_port} with its key: {status} {answer.get('text_output', answer)!r}"]
        ok = status == 200 and bool(answer.get("text_output"))
        if key:
            refused, why = ask(address, settings.http_port, args.model, args.prompt, None)
            lines.append(f"{address}:{settings.http_port} without a key: {refused} {why.get('reason', why)}")
            ok = ok and refused == 401
        return HostResult(session.name, "ok" if ok else "failed", "\n".join(lines))

    with SessionPool([host.connection for host in balancers]) as pool:
        results = pool.run(knock)
    for result in results:
        for line in result.msg.splitlines() or [""]:
            print(f"{result.host} {line}" if result.ok else f"{result.host}: FAILED {line}")
    return 0 if results.all_ok else 1
