"""`python -m tritonops.lab generate -i INVENTORY [PROMPT]`: one generate request to every replica of every
host's current release (on the host itself, over SSH: the lab's Triton ports are inside the lab hosts),
printing each answer. A lab helper for ./lab-demo; exits 1 unless every replica answered with text."""

from __future__ import annotations

import argparse
import json
import posixpath
import shlex

from tritonops import host_programs
from tritonops.modes.choice import MODES
from tritonops.planning.door import balancers_among, serving_hosts
from tritonops.planning.bind import local_address, replica_bind
from tritonops.planning.deployment import deployment_of
from tritonops.results import HostResult
from tritonops.transport.sessions import HostSession, SessionPool

PROGRAM = host_programs.source("lab_generate")  # host_programs/lab_generate.py


def main(argv: list[str]) -> int:
    from tritonops.inventory import load_inventory

    parser = argparse.ArgumentParser(prog="python -m tritonops.lab generate")
    parser.add_argument("-i", "--inventory", action="append", required=True, metavar="PATH")
    parser.add_argument("--model", default="vllm_model")
    parser.add_argument("prompt", nargs="?", default="The capital of France is")
    args = parser.parse_args(argv)
    inventory = load_inventory(args.inventory).hosts
    hosts = serving_hosts(inventory)
    by_name = {host.name: host for host in hosts}
    behind = bool(balancers_among(inventory))  # the replicas bound to the hosts' private addresses
    addresses = {host.name: local_address(replica_bind(host, behind)) for host in hosts}

    def ask(session: HostSession) -> HostResult:
        host = by_name[session.name]
        port = int(host.vars.get("tritonops_http_port", 8000))
        root, deployment = deployment_of(host)
        release = posixpath.join(root, deployment, "current", "release.json")
        command = shlex.join(("python3", "-c", PROGRAM, release, str(port), args.model, args.prompt,
                              addresses[session.name], modes_document(args.model, args.prompt)))
        result = session.transport.run(command, timeout=300)
        text = result.stdout.strip()
        return HostResult(session.name, "ok" if result.ok and text else "failed", text or result.tail(2))

    with SessionPool([host.connection for host in hosts]) as pool:
        results = pool.run(ask)
    return print_answers(results)


def modes_document(model: str, prompt: str, max_tokens: int = 12) -> str:
    """What each serving mode asks a replica for the lab's request (the host program picks the release's)."""
    return json.dumps({name: {"ports": list(mode.port_roles), "generate": mode.generate(model, prompt, max_tokens)[0]
                              .document()} for name, mode in MODES.items()}, separators=(",", ":"))


def print_answers(results) -> int:
    """Each host's answer lines, prefixed with the host (FAILED where it failed); the exit code: 0 when every host
    answered. A lab helper prints, like a command."""
    for result in results:
        for answer in result.msg.splitlines() or [""]:
            print(f"{result.host} {answer}" if result.ok else f"{result.host}: FAILED {answer}")
    return 0 if results.all_ok else 1
