#!/usr/bin/env python3
"""Chaos: N rolling deploys (serial 1) on the lab's full hosts, each hit by one fault, then a plain rerun
that must converge.

The faults come from a seed (tritonops/lab/faults.py, `plan_faults`): the kinds in turn — the SSH
connection cut (every host is reached through a relay this script owns), the host's dockerd killed
(SIGKILL), the Triton container killed, the lab collector stopped (logs are shipped to it by syslog),
the controller sent SIGINT or SIGKILL (each deploy runs as its own `tritonops deploy` process) — each
at a phase drawn at random: when the phase's line appears in the deploy's progress (lock, image,
weights, release, serve) plus a random delay. Each trial deploys a new release (a changed
tritonops_max_num_seqs). After the faulted run: on every host `current` still names a release that
passed its gate and its folder is intact. Then what the fault broke is healed (dockerd started, the
collector started, as a supervisor would) and the same deploy is run again, plain. Converged: the rerun
succeeds, every host is healthy (`tritonops status --json`) on the new release, `current`'s
release.json records a passed gate, the running container is that release, no lock is left. A rerun
refused by a lock is retried with --break-lock and counted as a manual step.

A deployment of its own (`chaos`, ports 19600-19602), removed at the end; the collector must be up
(`python -m tritonops.lab collector up`) for collector faults, which are skipped otherwise.

    tritonops lab up && python bench/chaos.py [-N 12] [--seed 13] [-i inventory/lab.yml]
Goal: convergence 100 %, no manual step.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tritonops.lab.faults import (PHASES, Fault, Injector, Relay, current_state, deployment_inventory,  # noqa: E402
                                  host_exec, plan_faults, relayed_known_hosts)
from tritonops.playbook.shipped import SHIPPED_PLAYBOOKS, SHIPPED_ROLES  # noqa: E402

ROOT = "/opt/tritonops"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def tritonops(*argv: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tritonops", *argv], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO)


class Trial:
    """One faulted deploy: the subprocess, its progress read line by line, the fault fired at its phase."""

    def __init__(self, argv: list[str], fault: Fault, injector: Injector):
        self.fault, self.injector = fault, injector
        self.lines: list[str] = []
        self.fired_at: float | None = None
        self.did = "not fired"
        self.started = time.monotonic()
        # SIGINT back to its default in the child: a bench started in the background (`nohup ... &`) inherits
        # SIGINT ignored, and a Python started so never turns it into KeyboardInterrupt
        self.process = subprocess.Popen([sys.executable, "-m", "tritonops", *argv], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, cwd=REPO,
                                        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self._timer: threading.Timer | None = None
        self._out: list[str] = []
        threading.Thread(target=lambda: self._out.append(self.process.stdout.read()), daemon=True).start()

    def _fire(self) -> None:
        self.fired_at = time.monotonic() - self.started
        self.did = self.injector.inject(self.fault, self.process)

    def wait(self, timeout_s: float = 900) -> int:
        marker = PHASES[self.fault.phase]
        for raw in self.process.stderr:
            line = ANSI.sub("", raw)
            self.lines.append(line)
            if self._timer is None and line.lstrip(" ").startswith(marker):
                self._timer = threading.Timer(self.fault.delay_s, self._fire)
                self._timer.start()
        try:
            code = self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        if self._timer is not None:
            self._timer.join()
        else:  # the phase never came (the run ended first): the fault hits after it, still before the rerun
            self._fire()
            self.did += " (after the run: its phase never came)"
        return code

    @property
    def output(self) -> str:
        return "".join(self.lines) + "".join(self._out)


def lock_refused(deploy_json: str) -> bool:
    """Whether a deploy's --json document has a host whose lock was refused (held by the cut-off run)."""
    try:
        rows = json.loads(deploy_json)["results"]
    except (ValueError, KeyError, TypeError):
        return False
    return any(row["task"] == "lock" and row["status"] == "failed" for row in rows)


def converged(inventory: str, containers: dict[str, str], deployment: str) -> list[str]:
    """Why the deployment has not converged (empty: it has): status, current, gate, container, lock."""
    why = []
    status = tritonops("status", "-i", inventory, "--json")
    try:
        hosts = {entry["host"]: entry for entry in json.loads(status.stdout)["results"]}
    except ValueError:
        return [f"status --json unreadable (exit {status.returncode}): {status.stderr.strip()[-300:]}"]
    for name, container in containers.items():
        entry = hosts.get(name) or {}
        serving = entry.get("payload") or {}
        if entry.get("status") != "ok":
            why.append(f"{name}: status {entry.get('status')}: {entry.get('msg')}")
        found = current_state(container, ROOT, deployment, f"tritonops-{deployment}")
        if not found["current"] or not found["gate_passed"]:
            why.append(f"{name}: current {found['current'] or '(none)'} has no passed gate in its release.json")
        if not found["running"] or found["serving"] != found["current"]:
            why.append(f"{name}: the container runs {found['serving'] or 'nothing'}, current is {found['current']}")
        if serving and serving.get("current") and serving["current"] != found["current"]:
            why.append(f"{name}: status says {serving['current']}, current is {found['current']}")
        if found["lock"]:
            why.append(f"{name}: lock left: {found['lock'][:120]}")
    return why


def intact(containers: dict[str, str], deployment: str) -> list[str]:
    """After a faulted run, before anything is healed: `current` (where there is one) still names a
    release whose folder holds a release.json with a passed gate."""
    why = []
    for name, container in containers.items():
        found = current_state(container, ROOT, deployment, f"tritonops-{deployment}")
        if found["current"] and not (found["record"] and found["gate_passed"]):
            why.append(f"{name}: current {found['current']} is not a release that passed its gate")
    return why


def run_chaos(inventory: str, playbook: str, containers: dict[str, str], injector: Injector, faults: list[Fault], *,
              deployment: str = "chaos", say=print) -> list[dict]:
    base = ["-i", inventory, "--playbook", playbook, "--roles-path", str(SHIPPED_ROLES), "--audit-log", "none"]
    first = tritonops("deploy", *base, "-e", json.dumps({"tritonops_max_num_seqs": 99}))
    if first.returncode != 0:
        raise SystemExit("the first deploy failed:\n" + first.stderr[-3000:])
    records = []
    for fault in faults:
        extra = ["-e", json.dumps({"tritonops_max_num_seqs": 100 + fault.trial})]
        started = time.monotonic()
        trial = Trial(["deploy", *base, *extra], fault, injector)
        code = trial.wait()
        broken = intact(containers, deployment)
        healed = injector.heal()
        manual = []
        rerun = tritonops("deploy", *base, *extra, "--json")
        if rerun.returncode != 0 and lock_refused(rerun.stdout):
            manual.append("--break-lock")
            rerun = tritonops("deploy", *base, *extra, "--json", "--break-lock")
        problems = [] if rerun.returncode == 0 else [f"rerun exit {rerun.returncode}: " + " | ".join(
            line.strip() for line in rerun.stderr.splitlines() if " failed " in line or " unreachable " in line)[-600:]]
        problems += converged(inventory, containers, deployment)
        if problems:  # not converged: a second plain rerun, to start the next trial from a known state
            again = tritonops("deploy", *base, *extra, "--break-lock")
            manual.append(f"second rerun with --break-lock (exit {again.returncode})")
        record = {**asdict(fault), "label": fault.label, "did": trial.did, "fired_at_s": trial.fired_at,
                  "faulted_exit": code, "intact_after_fault": broken, "healed": healed, "rerun_exit": rerun.returncode,
                  "converged": not problems, "problems": problems, "manual": manual,
                  "seconds": round(time.monotonic() - started, 1), "faulted_tail": trial.output[-1500:]}
        records.append(record)
        say(f"trial {fault.trial + 1}/{len(faults)} {fault.label}: {trial.did}; faulted run exit {code}; "
            f"{'converged' if not problems else 'NOT converged: ' + '; '.join(problems)}"
            f"{'; manual: ' + ', '.join(manual) if manual else ''}"
            f"{'; current not intact after the fault: ' + '; '.join(broken) if broken else ''} ({record['seconds']} s)")
    return records


def summary(records: list[dict], say=print) -> None:
    n = len(records)
    ok = sum(r["converged"] for r in records)
    say(f"\nchaos: {n} trials, converged {ok}/{n} ({100 * ok / n:.0f} %)" if n else "chaos: no trials")
    if not n:
        return
    seconds = [r["seconds"] for r in records]
    say(f"time per trial (faulted run + heal + rerun + checks): mean {sum(seconds) / n:.1f} s, "
        f"min {min(seconds):.1f} s, max {max(seconds):.1f} s")
    by_kind = collections.Counter(r["kind"] for r in records)
    by_phase = collections.Counter(r["phase"] for r in records)
    pairs = collections.Counter((r["kind"], r["phase"]) for r in records)
    say("faults by kind:  " + ", ".join(f"{k} {v}" for k, v in sorted(by_kind.items())))
    say("faults by phase: " + ", ".join(f"{k} {v}" for k, v in sorted(by_phase.items())))
    say("kind x phase:    " + ", ".join(f"{k}@{p} {v}" for (k, p), v in sorted(pairs.items())))
    late = [r for r in records if "never came" in r["did"]]
    if late:
        say(f"fired after the run (phase not reached): {len(late)}")
    ignored = [r for r in records if r["kind"].startswith("controller") and r["faulted_exit"] == 0
               and "already finished" not in r["did"]]
    say(f"controller signals the run did not stop on: {len(ignored)}")
    for r in ignored:
        say(f"  trial {r['trial'] + 1} {r['label']}: exit 0 after {r['did']}")
    not_intact = [r for r in records if r["intact_after_fault"]]
    say(f"current not intact right after the fault: {len(not_intact)}")
    for r in not_intact:
        say(f"  trial {r['trial'] + 1} {r['label']}: {'; '.join(r['intact_after_fault'])}")
    manual = [r for r in records if r["manual"]]
    say(f"needed a manual step: {len(manual)}")
    for r in manual:
        say(f"  trial {r['trial'] + 1} {r['label']}: {', '.join(r['manual'])}")
    for r in records:
        if not r["converged"]:
            say(f"  NOT converged: trial {r['trial'] + 1} {r['label']}: {'; '.join(r['problems'])}")


def setup(lab_inventory: dict, prefix: str, hosts: list[str] | None, tmp: Path, deployment: str, http_port: int,
          collector) -> tuple[str, str, dict[str, str], dict[str, Relay]]:
    """The relays, a known_hosts naming them, the inventory through them and a serial-1 playbook."""
    lab_full = lab_inventory["all"]["children"]["lab"]["children"]["lab_full"]["hosts"]
    chosen = [name for name in lab_full if hosts is None or name in hosts]
    relays = {name: Relay(("127.0.0.1", int(lab_full[name]["ansible_port"]))) for name in chosen}
    common = lab_inventory["all"]["vars"].get("ansible_ssh_common_args", "")
    known_file = re.search(r"UserKnownHostsFile=(\S+)", common)
    if not known_file:
        raise SystemExit("the lab inventory names no UserKnownHostsFile")
    known = tmp / "known_hosts"
    known.write_text("\n".join(relayed_known_hosts(Path(known_file.group(1)).read_text().splitlines(), {
        int(lab_full[name]["ansible_port"]): relay.port for name, relay in relays.items()})) + "\n")
    shipping = ({"tritonops_log_driver": "syslog", "tritonops_log_collector": collector.address}
                if collector is not None else {})
    data = deployment_inventory(lab_inventory, deployment, http_port, hosts=chosen, relays=relays,
                                known_hosts=str(known), extra_vars=shipping)
    inventory = tmp / "chaos.yml"
    inventory.write_text(yaml.safe_dump(data))
    playbook = tmp / "playbooks" / "deploy.yml"
    playbook.parent.mkdir(exist_ok=True)
    plays = yaml.safe_load((SHIPPED_PLAYBOOKS / "deploy.yml").read_text())
    plays[0]["serial"] = 1
    playbook.write_text(yaml.safe_dump(plays))
    containers = {name: f"{prefix}-{name}" for name in chosen}
    return str(inventory), str(playbook), containers, relays


def clean(containers: dict[str, str], deployment: str) -> None:
    for container in containers.values():
        host_exec(container, f"docker rm -f $(docker ps -aq --filter label=tritonops.deployment={deployment}) "
                             f">/dev/null 2>&1; rm -rf {ROOT}/{deployment}; true")


def lab_collector_if_up(state_dir: Path, prefix: str):
    import docker
    from tritonops.lab import collector as lab_collector

    found = lab_collector.lab_collector(state_dir, prefix)
    running = docker.from_env().containers.list(all=True, filters={"name": found.name})
    return found if running else None


def main() -> int:
    sys.stdout.reconfigure(line_buffering=True)  # progress as it happens, also into a file
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-N", "--trials", type=int, default=12)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("-i", "--inventory", default=str(REPO / "inventory" / "lab.yml"), help="the lab's inventory")
    parser.add_argument("--prefix", default="tritonops-lab", help="the lab's name prefix (host containers)")
    parser.add_argument("--state-dir", default=str(REPO / ".lab"), help="the lab's state dir (its collector)")
    parser.add_argument("--limit", default=None, help="comma-separated lab hosts (default: every full host)")
    parser.add_argument("--kinds", default=None, help="comma-separated fault kinds (default: all)")
    parser.add_argument("--json", default=None, help="also write every trial to this file")
    args = parser.parse_args()
    from tritonops.lab.faults import KINDS

    collector = lab_collector_if_up(Path(args.state_dir), args.prefix)
    kinds = tuple(args.kinds.split(",")) if args.kinds else KINDS
    if collector is None:
        kinds = tuple(k for k in kinds if k != "collector")
        print("the lab collector is not up: no collector faults (python -m tritonops.lab collector up)")
    lab = yaml.safe_load(Path(args.inventory).read_text())
    hosts = args.limit.split(",") if args.limit else None
    with tempfile.TemporaryDirectory(prefix="tritonops-chaos-") as tmp:
        inventory, playbook, containers, relays = setup(lab, args.prefix, hosts, Path(tmp), "chaos", 19600, collector)
        injector = Injector(containers, relays, collector, triton="tritonops-chaos")
        faults = plan_faults(args.seed, args.trials, list(containers), kinds)
        clean(containers, "chaos")
        try:
            records = run_chaos(inventory, playbook, containers, injector, faults)
        finally:
            injector.heal()
            clean(containers, "chaos")
            for relay in relays.values():
                relay.close()
    summary(records)
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=2))
    return 0 if all(r["converged"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
