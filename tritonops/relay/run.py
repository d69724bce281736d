"""One relay run (issue #29): hosts pass a stream on to each other, the controller moves only small commands.

Every host taking part prepares a folder of its own for the run (host_programs/relay.py) with a key pair made
there; each receiver authorizes its upstream's public key for one forced command (`receive`: the stream into the
cargo's sink here and on to its own children); the tree comes from planning/relay.py. The roots send the cargo
into the tree, every receiver passes bytes on as they arrive (pipelined: depth costs latency, not a copy per
level). Then the cargo verifies each receiver (an image by its ID, a folder against its manifest); a host still
lacking it gets another round from the hosts that now hold it (a cut stream restarts from an upstream, not from
the controller). Whatever is left is the caller's to send through the controller. The run's keys, authorized
lines and folders are removed on every host in a `finally`, whatever happened; the private keys never leave the
host that made them, so nothing secret passes the controller or reaches an output.

What moves is a `Cargo`: what the roots send in a round, what a receiver does with the stream, and how a
receiver is verified. image/relay.py carries an image, weights/relay.py a folder of model weights.
"""

from __future__ import annotations

import json
import secrets
import shlex
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Mapping, Protocol, Sequence

from tritonops import host_programs
from tritonops.planning.relay import DEFAULT_FANOUT, RelayPeer, RelayPlan, plan_relay
from tritonops.transport.base import CommandTimeout, Transport
from tritonops.text import printable

PROGRAM = "relay"
ROUNDS = 2
STEP_TIMEOUT_S = 60
PARALLEL = 16  # at most this many hosts prepared, wired or cleaned at once


class RelayStepFailed(Exception):
    """A relay command failed on a host; the message names the host and says why."""


@dataclass
class RelayHost:
    """A host taking part: how the controller reaches it, and where the others reach it."""

    name: str
    transport: Transport
    peer: RelayPeer


@dataclass(frozen=True)
class SendOrder:
    """What the roots of one round send (host_programs/relay.py's ORDER) and how many items of the cargo it leaves
    out because every receiver of the round holds them (layers of an image, files of a folder)."""

    request: dict
    left_out: int = 0


class Cargo(Protocol):
    """What a relay carries."""

    def order(self, receivers: Sequence[RelayHost]) -> SendOrder:
        """What the roots send to this round's receivers."""

    def sink(self, host: RelayHost) -> dict:
        """What `host` does with the stream it receives (host_programs/relay.py's SINK)."""

    def verify(self, host: RelayHost) -> str:
        """'' when `host` now holds the cargo, verified; else why not (one line)."""


@dataclass(frozen=True)
class Delivery:
    """What one receiver got: verified means it holds the cargo now, checked by the cargo."""

    host: str
    verified: bool
    source: str | None = None  # the upstream it came from
    bytes_received: int = 0
    round: int = 0  # the relay round that brought it (1 first), 0 when none did
    error: str = ""


@dataclass
class RelayReport:
    run_id: str
    deliveries: dict[str, Delivery] = field(default_factory=dict)
    plans: list[RelayPlan] = field(default_factory=list)  # one per round
    left_out: list[int] = field(default_factory=list)  # per round: items every receiver held already
    cleanup_errors: dict[str, str] = field(default_factory=dict)  # host -> why its cleanup failed

    @property
    def missing(self) -> list[str]:
        return [name for name, d in self.deliveries.items() if not d.verified]


def relay(cargo: Cargo, holders: Sequence[RelayHost], needers: Sequence[RelayHost], *,
          fanout: int = DEFAULT_FANOUT, send_timeout_s: float = 3600, rounds: int = ROUNDS,
          cancel: threading.Event | None = None,
          on_round: Callable[[int, RelayPlan], None] | None = None,
          on_delivery: Callable[[Delivery], None] | None = None) -> RelayReport:
    """Bring `cargo` from `holders` to `needers` over the hosts' own network; every receiver verified by the
    cargo. Hosts not reached after `rounds` rounds are in `report.missing` (for the caller's fallback)."""
    cancel = cancel or threading.Event()
    hosts = {h.name: h for h in [*holders, *needers]}
    report = RelayReport(secrets.token_hex(16))
    errors: dict[str, str] = {}
    try:
        keys = _prepare(report.run_id, list(hosts.values()), errors)
        have = [h.name for h in holders if h.name in keys]
        for number in range(1, rounds + 1):
            waiting = [n.name for n in needers if n.name not in report.deliveries and n.name in keys]
            if not waiting or not have or cancel.is_set():
                break
            for name in waiting:  # this round's outcome is its own
                errors.pop(name, None)
            plan = plan_relay(have, waiting, fanout)
            report.plans.append(plan)
            if on_round is not None:
                on_round(number, plan)
            order = cargo.order([hosts[name] for name in waiting])
            report.left_out.append(order.left_out)
            _wire(report.run_id, plan, hosts, keys, errors, cargo, order.request)
            _send(report.run_id, plan, hosts, send_timeout_s, errors)
            checked: dict[str, Delivery] = {}  # verified in parallel: a folder's check hashes every file

            def verify(name: str) -> None:
                checked[name] = _verify(report.run_id, cargo, hosts[name], plan.upstream(name), number, errors)

            each(waiting, verify)
            for name in waiting:
                delivery = checked[name]
                if delivery.verified:
                    report.deliveries[name] = delivery
                    have.append(name)
                    if on_delivery is not None:
                        on_delivery(delivery)
        unsent = "no host holding it could take part: " + "; ".join(
            errors.get(h.name, "") for h in holders) if not any(h.name in keys for h in holders) else "not reached"
        for n in needers:
            if n.name not in report.deliveries:
                report.deliveries[n.name] = Delivery(n.name, False, error=errors.get(n.name, unsent))
    finally:
        report.cleanup_errors = _cleanup(report.run_id, list(hosts.values()))
    return report


def _argv(command: str, run_id: str) -> str:
    return shlex.join(host_programs.argv(PROGRAM, command, run_id))


def _call(host: RelayHost, command: str, run_id: str, *, stdin: dict | None = None,
          timeout: float = STEP_TIMEOUT_S) -> dict:
    try:
        result = host.transport.run(_argv(command, run_id),
                                    stdin=json.dumps(stdin).encode() if stdin is not None else None, timeout=timeout)
    except CommandTimeout as exc:
        raise RelayStepFailed(f"relay {command} on {host.name} did not finish within {timeout:g} s") from exc
    except Exception as exc:  # the session broke (host gone, connection reset)
        raise RelayStepFailed(f"relay {command} on {host.name}: {type(exc).__name__}: {exc}") from exc
    if not result.ok:
        raise RelayStepFailed(f"relay {command} on {host.name} failed (exit {result.exit_code}): "
                              f"{printable(result.tail(2))}")
    try:
        data = json.loads(result.stdout or "{}")
    except ValueError as exc:
        raise RelayStepFailed(f"relay {command} on {host.name} answered no JSON") from exc
    return data if isinstance(data, dict) else {}


def each(items: Sequence, work: Callable) -> None:
    """work(item) for every item, at most PARALLEL at once."""
    if items:
        with ThreadPoolExecutor(max_workers=min(PARALLEL, len(items)), thread_name_prefix="relay") as pool:
            list(pool.map(work, items))


def _prepare(run_id: str, hosts: list[RelayHost], errors: dict[str, str]) -> dict[str, dict]:
    """Each host's folder and key pair for the run; {host: {"public_key", "host_keys"}} for those that could."""
    made: dict[str, dict] = {}
    program = host_programs.source(PROGRAM)

    def one(host: RelayHost) -> None:
        try:
            made[host.name] = _call(host, "prepare", run_id, stdin={"program": program, "key": True})
        except RelayStepFailed as exc:
            errors[host.name] = str(exc)

    each(hosts, one)
    return made


def _wire(run_id: str, plan: RelayPlan, hosts: Mapping[str, RelayHost], keys: Mapping[str, dict],
          errors: dict[str, str], cargo: Cargo, order: dict) -> None:
    def one(name: str) -> None:
        upstream = plan.upstream(name)
        children = [{"name": c, "address": hosts[c].peer.address, "port": hosts[c].peer.port,
                     "user": hosts[c].peer.user, "host_keys": keys[c].get("host_keys") or []}
                    for c in plan.children(name)]
        request = {"authorize": [keys[upstream]["public_key"]] if upstream else [], "children": children,
                   "sink": cargo.sink(hosts[name]) if upstream else None,
                   "send": order if name in plan.roots else None}
        try:
            _call(hosts[name], "wire", run_id, stdin=request)
        except RelayStepFailed as exc:
            errors[name] = str(exc)

    each(list(plan.hosts), one)


def _send(run_id: str, plan: RelayPlan, hosts: Mapping[str, RelayHost], timeout_s: float,
          errors: dict[str, str]) -> None:
    def one(root: str) -> None:
        try:
            answer = _call(hosts[root], "send", run_id, timeout=timeout_s)
        except RelayStepFailed as exc:
            for child in plan.children(root):
                errors.setdefault(child, f"the stream from {root} failed: {exc}")
            return
        said = answer.get("child_errors") or {}
        for child, code in (answer.get("children") or {}).items():
            if code:
                why = f": {printable(str(said[child]))}" if said.get(child) else ""
                errors.setdefault(child, f"the stream from {root} ended with exit {code}{why}")

    each(list(plan.roots), one)


def _verify(run_id: str, cargo: Cargo, host: RelayHost, upstream: str | None, number: int,
            errors: dict[str, str]) -> Delivery:
    """Whether the host holds the cargo now (the cargo checks), with what its receiver counted."""
    try:
        received = _call(host, "report", run_id)
    except RelayStepFailed as exc:
        received = {"sink_error": str(exc)}
    count = int(received.get("bytes") or 0)
    try:
        problem = cargo.verify(host)
    except Exception as exc:  # the host does not answer
        problem = f"{type(exc).__name__}: {exc}"
    if not problem:
        return Delivery(host.name, True, upstream, count, number)
    why = received.get("sink_error") or errors.get(host.name) or f"{problem} ({count} bytes arrived)"
    errors[host.name] = f"from {upstream}: {printable(str(why))}"
    return Delivery(host.name, False, upstream, count, number, errors[host.name])


def _cleanup(run_id: str, hosts: list[RelayHost]) -> dict[str, str]:
    """The run's authorized lines, a receive still running, its key pair and folder gone from every host."""
    failed: dict[str, str] = {}

    def one(host: RelayHost) -> None:
        try:
            _call(host, "cleanup", run_id)
        except RelayStepFailed as exc:
            failed[host.name] = str(exc)

    each(hosts, one)
    return failed
