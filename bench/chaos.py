#!/usr/bin/env python3
"""Chaos: N rolling deploys (serial 1) on the lab's full hosts, each hit by one fault, then a plain rerun
that must converge.

The faults come from a seed (tritonops/lab/fault_plan.py, `plan_faults`): the kinds in turn — the SSH
connection cut (every host is reached through a relay this script owns), the host's dockerd killed
(SIGKILL), the Triton container killed, the lab collector stopped (logs are shipped to it by syslog),
the controller sent SIGINT or SIGKILL (each deploy runs as its own `tritonops deploy` process) — each
at a phase drawn at random (lock, image, weights, release, serve), when the phase's line appears in the
deploy's progress (plus a random delay within the serve phase, which lasts seconds), with the
controller paused while the fault is carried out. Each trial deploys a new release (a changed
tritonops_max_num_seqs). A trial counts only if its fault landed (tritonops/lab/fault_plan.py): carried
out while the run's own progress showed it in the fault's phase (on the fault's host), and it hit (SSH
connections cut, dockerd or Triton killed, the controller signalled while it ran; SIGKILL: the run
ended by it). The others are inert, reported apart with the reason (the phase was over first, the run
ended first, nothing to hit) and not counted as converged.

After the faulted run: on every host `current` still names a release that passed its gate and its
folder is intact. Then what the fault broke is healed (dockerd started, the collector started, as a
supervisor would) and the same deploy is run again, plain. Converged: the rerun
succeeds, every host is healthy (`tritonops status --json`) on the new release, `current`'s
release.json records a passed gate, the running container is that release, no lock is left. A rerun
refused by a lock is retried with --break-lock and counted as a manual step.

A deployment of its own (`chaos`, ports 19600-19602), removed at the end; the collector must be up
(`python -m tritonops.lab collector up`) for collector faults, which are skipped otherwise.

    tritonops lab up && python bench/chaos.py [-N 12] [--seed 13] [-i inventory/lab.yml] [--limit HOST] [-e VARS]
Goal: every landed fault converges, no manual step (exit 1 otherwise, or when no fault landed).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import select
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

from tritonops.lab.fault_plan import (Fault, Landing, Line, Shot, landing, next_fire_s, open_target,  # noqa: E402
                                      plan_faults)
from tritonops.lab.faults import (Injector, Relay, current_state, deployment_inventory, host_exec, paused,  # noqa: E402
                                  relayed_known_hosts)
from tritonops.playbook.shipped import SHIPPED_PLAYBOOKS, SHIPPED_ROLES  # noqa: E402

ROOT = "/opt/tritonops"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def tritonops(*argv: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tritonops", *argv], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO)


class Trial:
    """One faulted deploy: the subprocess, its progress read as it comes (each line with when it was read),
    the fault carried out in its phase.

    The fault is due `delay_s` after its phase's line (tritonops/lab/fault_plan.py: `next_fire_s`). When
    it is due, the controller is paused (SIGSTOP), whatever it printed before the pause is read, and the
    fault is carried out only if its phase is still open in that output (the controller is provably in
    it), then the controller goes on (SIGCONT). A phase that is over first, or a run that ends first,
    leaves the fault not fired: inert."""

    def __init__(self, command: list[str], fault: Fault, injector: Injector):
        self.fault, self.injector = fault, injector
        self.lines: list[Line] = []
        self.shot: Shot | None = None
        self.ended_s: float | None = None
        self._exited = False  # found gone when the fault was due
        self._partial = b""
        self.started = time.monotonic()
        # SIGINT back to its default in the child: a bench started in the background (`nohup ... &`) inherits
        # SIGINT ignored, and a Python started so never turns it into KeyboardInterrupt
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
                                        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self._out: list[bytes] = []
        threading.Thread(target=lambda: self._out.append(self.process.stdout.read()), daemon=True).start()

    def _now(self) -> float:
        return time.monotonic() - self.started

    def _read(self, fd: int) -> bool:
        """One read of the progress; False at its end."""
        chunk = os.read(fd, 65536)
        if not chunk:
            return False
        *whole, self._partial = (self._partial + chunk).split(b"\n")
        at = self._now()
        self.lines += [Line(at, ANSI.sub("", raw.decode(errors="replace")).rstrip()) for raw in whole]
        return True

    def _fire(self, fd: int) -> None:
        with paused(self.process) as still:
            if not still:
                self._exited = True
                return
            while select.select([fd], [], [], 0)[0] and self._read(fd):
                pass  # what it printed before the pause
            if open_target(self.fault, self.lines, self._now()) is None:
                return  # its phase was over before the pause
            started = self._now()
            effect = self.injector.inject(self.fault, self.process)
            self.shot = Shot(started, self._now(), effect)

    def wait(self, timeout_s: float = 900) -> int:
        fd = self.process.stderr.fileno()
        reading = True
        while reading and self._now() < timeout_s:
            due = None if self.shot is not None or self._exited else next_fire_s(self.fault, self.lines)
            if due is not None and due <= self._now():
                self._fire(fd)
                continue
            wait_s = min(timeout_s, due if due is not None else timeout_s) - self._now()
            if select.select([fd], [], [], max(wait_s, 0.0))[0]:
                reading = self._read(fd)
        if reading:  # past the timeout
            self.process.kill()
        code = self.process.wait()
        self.ended_s = self._now()
        return code

    def landing(self, code: int) -> Landing:
        return landing(self.fault, self.lines, self.ended_s, self.shot, code)

    @property
    def output(self) -> str:
        return "\n".join(line.text for line in self.lines) + "\n" + b"".join(self._out).decode(errors="replace")


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
              deployment: str = "chaos", say=print, extra_vars: tuple[str, ...] = ()) -> list[dict]:
    base = ["-i", inventory, "--playbook", playbook, "--roles-path", str(SHIPPED_ROLES), "--audit-log", "none",
            *(arg for value in extra_vars for arg in ("-e", value))]
    first = tritonops("deploy", *base, "-e", json.dumps({"tritonops_max_num_seqs": 99}))
    if first.returncode != 0:
        raise SystemExit("the first deploy failed:\n" + first.stderr[-3000:])
    records = []
    for fault in faults:
        extra = ["-e", json.dumps({"tritonops_max_num_seqs": 100 + fault.trial})]
        started = time.monotonic()
        trial = Trial([sys.executable, "-m", "tritonops", "deploy", *base, *extra], fault, injector)
        code = trial.wait()
        landed = trial.landing(code)
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
        did = trial.shot.effect.said if trial.shot else "not fired"
        record = {**asdict(fault), "label": fault.label, "did": did,
                  "fired_at_s": round(trial.shot.started_s, 2) if trial.shot else None,
                  "faulted_ended_s": round(trial.ended_s, 2),
                  "landed": landed.landed, "landing": landed.why,
                  "faulted_exit": code, "intact_after_fault": broken, "healed": healed, "rerun_exit": rerun.returncode,
                  "converged": not problems, "problems": problems, "manual": manual,
                  "seconds": round(time.monotonic() - started, 1), "faulted_tail": trial.output[-1500:],
                  "progress": [(round(line.at_s, 3), line.text) for line in trial.lines]}  # the landing's evidence
        records.append(record)
        say(f"trial {fault.trial + 1}/{len(faults)} {fault.label}: {'landed' if landed.landed else 'INERT'}: "
            f"{landed.why}; faulted run exit {code}; "
            f"{'converged' if not problems else 'NOT converged: ' + '; '.join(problems)}"
            f"{'; manual: ' + ', '.join(manual) if manual else ''}"
            f"{'; current not intact after the fault: ' + '; '.join(broken) if broken else ''} ({record['seconds']} s)")
    return records


def summary(records: list[dict], say=print) -> None:
    """Landed and inert trials apart: only a landed fault's rerun counts towards convergence."""
    n = len(records)
    if not n:
        say("chaos: no trials")
        return
    landed = [r for r in records if r["landed"]]
    inert = [r for r in records if not r["landed"]]
    ok = sum(r["converged"] for r in landed)
    say(f"\nchaos: {n} trials: {len(landed)} landed, {len(inert)} inert (not counted)")
    say(f"converged after a landed fault: {ok}/{len(landed)} ({100 * ok / len(landed):.0f} %)" if landed
        else "converged after a landed fault: no fault landed, nothing shown")
    seconds = [r["seconds"] for r in records]
    say(f"time per trial (faulted run + heal + rerun + checks): mean {sum(seconds) / n:.1f} s, "
        f"min {min(seconds):.1f} s, max {max(seconds):.1f} s")
    for title, rows in (("landed", landed), ("inert", inert)):
        if not rows:
            continue
        say(f"{title} by kind:  " + ", ".join(f"{k} {v}" for k, v in sorted(collections.Counter(
            r["kind"] for r in rows).items())))
        say(f"{title} by phase: " + ", ".join(f"{k} {v}" for k, v in sorted(collections.Counter(
            r["phase"] for r in rows).items())))
    for r in inert:
        say(f"  inert: trial {r['trial'] + 1} {r['label']}: {r['landing']}")
    ignored = [r for r in landed if r["kind"].startswith("controller") and r["faulted_exit"] == 0]
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
            say(f"  NOT converged: trial {r['trial'] + 1} {r['label']}{'' if r['landed'] else ' (inert)'}: "
                f"{'; '.join(r['problems'])}")


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
    parser.add_argument("-e", "--extra-vars", action="append", default=[],
                        help="passed to every deploy (e.g. '{\"tritonops_replicas\": 2}': spare GPUs, Kamal's order)")
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
            records = run_chaos(inventory, playbook, containers, injector, faults,
                                extra_vars=tuple(args.extra_vars))
        finally:
            injector.heal()
            clean(containers, "chaos")
            for relay in relays.values():
                relay.close()
    summary(records)
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=2))
    return 0 if any(r["landed"] for r in records) and all(r["converged"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
