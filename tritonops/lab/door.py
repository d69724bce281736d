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

from tritonops.lab.generate import print_answers
from tritonops.planning.door import balancers_among, door
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


def door_key(transport, keys_file: str | None) -> str | None:
    """The first key of the balancer's keys file (read over its session; never printed), None without one."""
    if not keys_file:
        return None
    found = transport.run(shlex.join(("head", "-n", "1", keys_file)), timeout=30)
    return (found.stdout.strip() or None) if found.ok else None


def main(argv: list[str]) -> int:
    from tritonops.inventory import load_inventory

    parser = argparse.ArgumentParser(prog="python -m tritonops.lab door")
    parser.add_argument("-i", "--inventory", action="append", required=True, metavar="PATH")
    parser.add_argument("--model", default="vllm_model")
    parser.add_argument("prompt", nargs="?", default="The capital of France is")
    args = parser.parse_args(argv)
    balancers = balancers_among(load_inventory(args.inventory).hosts)
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
        key = door_key(session.transport, settings.keys_file)
        if settings.keys_file and not key:
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
        return print_answers(pool.run(knock))
