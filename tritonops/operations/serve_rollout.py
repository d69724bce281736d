"""A release rolled out over a host's replicas from the controller (issue #42): the steps serving.replica_rollout
planned, carried out over the host's session one at a time — each container action a `docker` argument list
(serving.container_commands), each replica's gate one SSH command (host_programs/replica_gate.py: it waits on the
host however long the model loads), the release folder's changes another (host_programs/release_folder.py), a
pipeline member's Ray node a third (host_programs/ray_member.py). The door's drain and ready are the `door`'s
(a `ReplicaDoor`: the deploy's balancers, reached on their own sessions), each replica in its turn.

A replica whose gate fails: its new container kept aside as `<replica>--<release>-failed` and its previous one back
and gated (the plan's `on_failure`); the replicas switched before it are put back too (their `undo`). `current`
names the release once every replica passed; what nothing serves any more is stopped last (the plan's surplus).
"""

from __future__ import annotations

import json
import re
import shlex
import time
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any, ContextManager, Protocol

from tritonops import host_programs
from tritonops.errors import TritonopsError
from tritonops.logs.shipping import LOCAL_FALLBACK
from tritonops.serving import container_commands as commands
from tritonops.serving.container import ServeSpec, run_argv
from tritonops.serving.outcome import ServeOutcome, failure_reason
from tritonops.serving.replica_rollout import ReplicaPlan, RolloutPlan, Step as PlanStep, replica_index
from tritonops.serving.verdict import KV_PATTERNS
from tritonops.transport.base import CommandResult, Transport

DOCKER_TIMEOUT_S = 120
FOUND_RUNNING_GATE_S = 60   # a replica found running the release: gated again within this (a restart otherwise)


class ReplicaDoor(Protocol):
    """What the rollout asks of the door in front of the host's replicas (by replica index)."""

    def turn(self, index: int) -> ContextManager[None]:
        """Held while the replica may be out of the door (drained, restarting): waits for its turn."""

    def drain(self, index: int) -> None: ...

    def ready(self, index: int, at: tuple[int, int | None] | None = None) -> None:
        """The replica's servers ready; with `at` (its HTTP door port, its gRPC port), sent there first: the
        container answering for it now runs on its other slot."""


class NoDoor:
    """No balancer in front: nothing to drain, no turn to wait for."""

    def turn(self, index: int) -> ContextManager[None]:
        return nullcontext()

    def drain(self, index: int) -> None:
        pass

    def ready(self, index: int, at: tuple[int, int | None] | None = None) -> None:
        pass


@dataclass(frozen=True)
class ReplicaLaunch:
    """How one replica starts and is asked: its container (serving.container's spec, on the slot the rollout boots
    it on) and the ports it answers on, in its serving mode's order."""

    index: int
    spec: ServeSpec
    ports: tuple[int, ...]

    @property
    def container(self) -> str:
        return self.spec.container

    def run_argv(self, name: str | None = None, *, fallback: bool = False) -> tuple[str, ...]:
        """Its `docker run`, under `name` when it boots beside the replica's container (the replica's own name when
        None); `fallback`: with the host's local logs, when the log driver cannot start."""
        spec = replace(self.spec, name=name) if name and name != self.spec.container else self.spec
        return run_argv(spec, log=LOCAL_FALLBACK if fallback else None)

    def endpoints(self, ports: tuple[int, ...] | None = None) -> dict[str, int]:
        """The serving mode's ports on the host by role: its own, or `ports` (its previous container's)."""
        return self.spec.mode.endpoints(ports or self.ports)

    def door_ports(self, ports: tuple[int, ...]) -> tuple[int, int | None]:
        """Where the balancers send to a container on `ports`: the HTTP door's port, the gRPC door's."""
        endpoints = self.endpoints(ports)
        return endpoints[self.spec.mode.http_door_role], endpoints.get("grpc")


@dataclass(frozen=True)
class Rollout:
    """Everything the rollout of a release on one host needs, made by the serve task from its arguments and the
    host's facts (operations/serve.py). Data."""

    root: str
    deployment: str
    release: str
    plan: RolloutPlan
    launches: Mapping[int, ReplicaLaunch]
    restarts: Mapping[int, ReplicaPlan]  # an unchanged replica whose gate fails: how it restarts instead
    deadline_s: int
    address: str                         # where the gate asks the replicas on the host
    requests: Mapping[str, Any]          # the serving mode's requests (modes.base.ServingMode.host_requests)
    models: tuple[str, ...]
    predicted_kv_tokens: int
    keep: int
    prepare: Mapping[str, Any]           # the release folder program's `prepare` (admin key, container logger)
    log_driver: str
    log_collector: str | None
    ray: Mapping[str, Any] | None = None  # a pipeline member's Ray node (serving.ray_member's program input)

    @property
    def named_replicas(self) -> bool:
        """More than one replica: each gate on record names its replica."""
        return len(self.launches) > 1


@dataclass(frozen=True)
class GateAnswer:
    """What the gate program answered, parsed where it arrived."""

    passed: bool
    why: str = ""
    ready_s: float | None = None
    models_ready_at: float | None = None
    answers: Mapping[str, str] = field(default_factory=dict)
    log: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, text: str) -> "GateAnswer":
        doc = json.loads(text)
        return cls(bool(doc.get("passed")), str(doc.get("why") or ""), doc.get("ready_s"), doc.get("models_ready_at"),
                   dict(doc.get("answers") or {}), tuple(doc.get("log") or ()))


@dataclass(frozen=True)
class ReplicaDone:
    """One replica's part of the rollout."""

    index: int
    status: str                          # unchanged, switched, failed, rolled_back
    previous: str | None = None
    gate: GateAnswer | None = None
    why: str = ""
    kept_as: str | None = None
    rollback_why: str | None = None
    shipping: str = ""
    plan: ReplicaPlan | None = None      # the steps it took (its undo when a later replica fails)


def reported_kv_tokens(lines: tuple[str, ...] | list[str]) -> int | None:
    """vLLM's own KV-cache size from its log lines (a token count, else its block count x 16). Pure."""
    tokens_pattern, blocks_pattern = KV_PATTERNS
    found = None
    for line in lines:
        match = re.search(tokens_pattern, line)
        if match:
            found = int(match.group(1).replace(",", ""))
        elif found is None:
            match = re.search(blocks_pattern, line)
            if match:
                found = int(match.group(1)) * 16
    return found


def logging_driver_failed(err: str) -> bool:
    """docker run's error when the logging driver could not start (a collector down, unreachable). Pure."""
    return "logging driver" in err or ("logger" in err.lower() and "failed" in err.lower())


@dataclass
class _Run:
    transport: Transport
    rollout: Rollout
    door: ReplicaDoor
    commands: int = 0

    # --- on the host -------------------------------------------------------------------------------------------

    def docker(self, argv: tuple[str, ...], timeout: float = DOCKER_TIMEOUT_S) -> CommandResult:
        self.commands += 1
        return self.transport.run(shlex.join(argv), timeout=timeout)

    def program(self, name: str, document: Mapping[str, Any], timeout: float) -> str:
        """A host program's answer (its stdout); TritonopsError when it did not answer."""
        self.commands += 1
        result = self.transport.run(shlex.join(host_programs.argv(name)), stdin=json.dumps(document).encode(),
                                    timeout=timeout)
        if not result.ok:
            raise TritonopsError(f"the {name} program failed (exit {result.exit_code}): {result.tail(3)}")
        return result.stdout

    def folder(self, action: str, **fields: Any) -> dict:
        return json.loads(self.program("release_folder", {"action": action, "root": self.rollout.root, **fields}, 120))

    def gate(self, container: str, release: str, index: int, deadline_s: float,
             ports: tuple[int, ...] | None = None) -> GateAnswer:
        launch = self.rollout.launches[index]
        document = {"container": container, "release": release, "deadline_s": deadline_s,
                    "endpoints": launch.endpoints(ports), "address": self.rollout.address,
                    "requests": self.rollout.requests, "models": list(self.rollout.models)}
        return GateAnswer.from_json(self.program("replica_gate", document, deadline_s + 120))

    def record(self, release: str, gate: GateAnswer, index: int, shipping: str = "", *, found_running: bool = False,
               if_none_passed: bool = False) -> None:
        record: dict[str, Any] = {
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "passed": gate.passed, "why": gate.why,
            "ready_s": gate.ready_s, "models_ready_at": gate.models_ready_at,
            **({"found_running": True} if found_running else {}),
            "kv_cache_tokens": {"predicted": self.rollout.predicted_kv_tokens,
                                "reported": reported_kv_tokens(gate.log)},
            "shipping": shipping or "ok", "log_tail": list(gate.log[-60:])}
        if self.rollout.named_replicas:
            record["replica"] = index
        self.folder("record", release=release, gate=record, if_none_passed=if_none_passed)

    def run(self, index: int, name: str) -> tuple[bool, str, str, tuple[str, ...]]:
        """The replica's `docker run` as `name`, with the host's local logs when the log driver cannot start:
        (started, why not, shipping degraded, docker's error lines)."""
        launch = self.rollout.launches[index]
        result = self.docker(launch.run_argv(name), timeout=600)
        shipping = ""
        if not result.ok and logging_driver_failed(result.stderr):
            last = result.stderr.strip().splitlines()[-1][-200:] if result.stderr.strip() else "?"
            shipping = (f"{self.rollout.log_driver} to {self.rollout.log_collector or 'the host'} failed ({last}); "
                        "logs kept on the host (json-file) for this release")
            self.docker(commands.remove(name, force=True))
            result = self.docker(launch.run_argv(name, fallback=True), timeout=600)
        if result.ok:
            return True, "", shipping, ()
        return False, "docker run failed: " + result.stderr.strip()[-300:], shipping, tuple(result.stderr.splitlines())

    # --- the plan's steps --------------------------------------------------------------------------------------

    def steps(self, index: int, steps: tuple[PlanStep, ...],
              deadline_s: float | None = None) -> tuple[GateAnswer | None, str, str]:
        """Carry out `steps` of replica `index` until a gate fails, each gate within `deadline_s` (the release's
        deadline when None): (the last gate's answer, why a step failed, shipping degraded)."""
        gate, shipping = None, ""
        for step in steps:
            if step.action == "drain":
                self.door.drain(index)
            elif step.action == "ready":
                self.door.ready(index, self.rollout.launches[index].door_ports(step.ports) if step.ports else None)
            elif step.action == "run":
                started, why, shipping, lines = self.run(index, step.container)
                if not started:
                    return GateAnswer(False, why, log=lines), why, shipping
            elif step.action == "gate":
                gate = self.gate(step.container, step.release or self.rollout.release, index,
                                 self.rollout.deadline_s if deadline_s is None else deadline_s, step.ports)
                if not gate.passed:
                    return gate, gate.why, shipping
            elif step.action == "record_gate":
                assert gate is not None
                self.record(self.rollout.release, gate, index, found_running=True, if_none_passed=True)
            elif step.action == "rename" and step.container.startswith(self.rollout.launches[index].container + "--") \
                    and step.to == self.rollout.launches[index].container:
                # a parked or booted container taking the replica's name: it must be there
                if not self.docker(step.argv() or ()).ok:
                    return None, f"its container {step.container} is gone", shipping
            else:
                argv = step.argv()
                assert argv is not None, step
                self.docker(argv, timeout=DOCKER_TIMEOUT_S + 60)
        return gate, "", shipping

    def replica(self, plan: ReplicaPlan) -> ReplicaDone:
        index = plan.index
        if plan.order == "unchanged":  # gated again (a gate recorded when none is), sooner than a new start
            gate, why, _ = self.steps(index, plan.steps, min(FOUND_RUNNING_GATE_S, self.rollout.deadline_s))
            if gate is not None and gate.passed and not why:
                return ReplicaDone(index, "unchanged", gate=gate, plan=plan)
            plan = self.rollout.restarts[index]  # it runs the release but does not answer: restarted
        with self.door.turn(index):
            gate, why, shipping = self.steps(index, plan.steps)
            if gate is not None and gate.passed and not why:
                self.record(self.rollout.release, gate, index, shipping)
                return ReplicaDone(index, "switched", plan.previous, gate, shipping=shipping, plan=plan)
            failed_gate = gate if gate is not None else GateAnswer(False, why)
            self.record(self.rollout.release, failed_gate, index, shipping)
            aside = next((i + 1 for i, s in enumerate(plan.on_failure) if s.action == "rename" and s.to
                          and s.to.endswith("-failed")), len(plan.on_failure))
            keep_aside, back = plan.on_failure[:aside], plan.on_failure[aside:]
            self.steps(index, keep_aside)
            kept_as = next((s.to for s in keep_aside if s.action == "rename"), None)
            if plan.order == "boot-first":  # the old container never stopped: it serves on
                return ReplicaDone(index, "rolled_back", plan.previous, failed_gate, why, kept_as, shipping=shipping,
                                   plan=plan)
            if plan.why_no_way_back or not back:
                return ReplicaDone(index, "failed", plan.previous, failed_gate, why, kept_as,
                                   plan.why_no_way_back, shipping, plan)
            back_gate, back_why, _ = self.steps(index, back)
            if back_gate is not None and back_gate.passed and not back_why:
                return ReplicaDone(index, "rolled_back", plan.previous, failed_gate, why, kept_as, shipping=shipping,
                                   plan=plan)
            return ReplicaDone(index, "failed", plan.previous, failed_gate, why, kept_as,
                               back_why or (back_gate.why if back_gate else "it did not come back"), shipping, plan)

    def undo(self, done: ReplicaDone) -> tuple[bool, str]:
        """A replica that switched while a later one failed: its previous container back, gated. (back, why)"""
        plan = done.plan
        if plan is None or not plan.undo:
            return False, "its previous container is gone" if done.previous else "it had no previous release"
        with self.door.turn(done.index):
            gate, why, _ = self.steps(done.index, plan.undo)
        if gate is not None and gate.passed and not why:
            return True, ""
        return False, why or "its previous release did not pass its gate"

    # --- the whole rollout -------------------------------------------------------------------------------------

    def __call__(self) -> ServeOutcome:
        rollout, plan = self.rollout, self.rollout.plan
        ray_restarted = False
        if rollout.ray is not None:
            said = json.loads(self.program("ray_member", {"root": rollout.root, "release": rollout.release,
                                                          "keep": rollout.keep, "ray": rollout.ray},
                                           rollout.ray["deadline_s"] + 180))
            ray_restarted = bool(said.get("restarted"))
            if said.get("failed"):
                return self._outcome("failed", why=said["failed"], ray_restarted=ray_restarted)
            if rollout.ray["role"] == "worker":
                changed = ray_restarted or said.get("was") != rollout.release
                return ServeOutcome("switched" if changed else "unchanged", rollout.release,
                                    previous=said.get("was") if said.get("was") != rollout.release else None,
                                    kv_predicted=rollout.predicted_kv_tokens, found_serving=not changed,
                                    ray_worker=True, ray_restarted=ray_restarted)
        if plan.refused:
            return self._outcome("refused", why="; ".join(plan.refusals))
        self.folder("prepare", **rollout.prepare)
        done: list[ReplicaDone] = []
        for replica in plan.replicas:
            result = self.replica(replica)
            if result.status in ("unchanged", "switched"):
                done.append(result)
                continue
            undone = [(d.index, self.undo(d)) for d in done if d.status == "switched"]
            rollback_why = result.rollback_why
            status = result.status
            if undone and not all(back for _, (back, _) in undone):
                status = "failed"
                rollback_why = "; ".join(f"replica {i}: {why}" for i, (back, why) in undone if not back)
            return self._outcome(status, why=result.why, log=result.gate.log if result.gate else (),
                                 previous=result.previous, kept_as=result.kept_as, rollback_why=rollback_why,
                                 shipping=result.shipping)
        switched = [d for d in done if d.status == "switched"]
        previous = next((d.previous for d in switched if d.previous), None)
        said = self.folder("switch", release=rollout.release, keep=rollout.keep if switched else 0,
                           previous=previous)
        self._remove_parked(said.get("pruned") or [])
        for step in plan.surplus:  # replicas the release no longer has
            index = replica_index(self.rollout.deployment, step.container) or 0
            if step.action == "drain":
                self.door.drain(index)
            elif (argv := step.argv()) is not None:
                self.docker(argv, timeout=DOCKER_TIMEOUT_S + 60)
        retired = bool(plan.surplus)
        if not switched:
            found = rollout.ray is not None and not ray_restarted and said.get("was") == rollout.release and not retired
            return ServeOutcome("unchanged", rollout.release, kv_predicted=rollout.predicted_kv_tokens,
                                found_serving=found, ray_restarted=ray_restarted)
        first = switched[0]
        gate = first.gate or GateAnswer(True)
        ready = [d.gate.ready_s for d in switched if d.gate is not None and d.gate.ready_s is not None]
        return ServeOutcome("switched", rollout.release, previous=previous, ready_s=max(ready) if ready else None,
                            kv_reported=reported_kv_tokens(gate.log), kv_predicted=rollout.predicted_kv_tokens,
                            shipping="; ".join(sorted({d.shipping for d in switched if d.shipping})),
                            ray_restarted=ray_restarted)

    def _remove_parked(self, pruned: list[str]) -> None:
        """The parked and kept-aside containers of the releases the folder program removed."""
        names = [f"{launch.container}--{release}{suffix}" for release in pruned
                 for launch in self.rollout.launches.values() for suffix in ("", "-failed")]
        if names:
            self.docker(("docker", "rm", "--force", *names))  # names that are not there: said on stderr, ignored

    def _outcome(self, status: str, *, why: str, log: tuple[str, ...] = (), previous: str | None = None,
                 kept_as: str | None = None, rollback_why: str | None = None, shipping: str = "",
                 ray_restarted: bool = False) -> ServeOutcome:
        reason, kind = failure_reason(log, why)
        return ServeOutcome(status, self.rollout.release, reason=reason, reason_kind=kind,  # type: ignore[arg-type]
                            previous=previous, kept_as=kept_as, rollback_why=rollback_why,
                            kv_reported=reported_kv_tokens(log), kv_predicted=self.rollout.predicted_kv_tokens,
                            shipping=shipping, ray_restarted=ray_restarted)


def run_rollout(transport: Transport, rollout: Rollout, door: ReplicaDoor | None = None) -> tuple[ServeOutcome, int]:
    """Carry out the rollout on the host: its outcome, and how many commands it ran there."""
    run = _Run(transport, rollout, door or NoDoor())
    outcome = run()
    return outcome, run.commands
