"""Hosts pass an image on to each other (issue #29): the controller moves no image bytes, only small commands.

One run: every host taking part prepares a folder of its own for the run (host_programs/image_relay.py) with a
key pair made there; each receiver authorizes its upstream's public key for one forced command (`receive`: the
stream into `docker load` and on to its own children); the tree comes from planning/relay.py. The roots run
`docker save` into the tree, every receiver passes bytes on as they arrive (pipelined: depth costs latency, not a
copy per level). Then each receiver is verified by image ID through its engine; a host still lacking the image
gets a second round from the hosts that now hold it (a cut stream restarts from an upstream, not from the
controller). Whatever is left is the caller's to send through the controller. The run's keys, authorized lines
and folders are removed on every host in a `finally`, whatever happened; the private keys never leave the host
that made them, so nothing secret passes the controller or reaches an output.
"""

from __future__ import annotations

import json
import re
import secrets
import shlex
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from tritonops import host_programs
from tritonops.image.engine import HostEngine
from tritonops.planning.relay import (DEFAULT_FANOUT, RelayPeer, RelayPlan, layer_chains, layers_everyone_has,
                                      plan_relay)
from tritonops.transport.base import CommandTimeout, Transport
from tritonops.text import printable

PROGRAM = "image_relay"
IMAGE_ID = re.compile(r"sha256:[0-9a-f]{64}")
ROUNDS = 2
STEP_TIMEOUT_S = 60
PARALLEL = 16  # at most this many hosts prepared, wired or cleaned at once


class RelayStepFailed(Exception):
    """A relay command failed on a host; the message names the host and says why."""


@dataclass
class RelayHost:
    """A host taking part: how the controller reaches it, its engine, and where the others reach it."""

    name: str
    transport: Transport
    engine: HostEngine
    peer: RelayPeer


@dataclass(frozen=True)
class Delivery:
    """What one receiver got: verified means its engine holds the exact image ID."""

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
    layers_left_out: list[int] = field(default_factory=list)  # per round: layers every receiver held already
    cleanup_errors: dict[str, str] = field(default_factory=dict)  # host -> why its cleanup failed

    @property
    def missing(self) -> list[str]:
        return [name for name, d in self.deliveries.items() if not d.verified]


def relay_image(image_id: str, holders: Sequence[RelayHost], needers: Sequence[RelayHost], *,
                fanout: int = DEFAULT_FANOUT, send_timeout_s: float = 3600, rounds: int = ROUNDS,
                cancel: threading.Event | None = None,
                on_round: Callable[[int, RelayPlan], None] | None = None,
                on_delivery: Callable[[Delivery], None] | None = None) -> RelayReport:
    """Bring `image_id` from `holders` to `needers` over the hosts' own network; every host verified by image ID.
    Hosts not reached after `rounds` rounds are in `report.missing` (for the caller's fallback)."""
    if not IMAGE_ID.fullmatch(image_id):
        raise ValueError(f"not an image ID (sha256:<64 hex>): {image_id!r}")
    cancel = cancel or threading.Event()
    hosts = {h.name: h for h in [*holders, *needers]}
    report = RelayReport(secrets.token_hex(16))
    errors: dict[str, str] = {}
    try:
        keys = _prepare(report.run_id, list(hosts.values()), errors)
        have = [h.name for h in holders if h.name in keys]
        layers = _layers(image_id, holders)
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
            skip = _held_by_all(layers, [hosts[name] for name in waiting])
            report.layers_left_out.append(len(skip))
            _wire(report.run_id, plan, hosts, keys, errors, skip)
            _send(report.run_id, image_id, plan, hosts, send_timeout_s, errors)
            for name in waiting:
                delivery = _verify(report.run_id, image_id, hosts[name], plan.upstream(name), number, errors)
                if delivery.verified:
                    report.deliveries[name] = delivery
                    have.append(name)
                    if on_delivery is not None:
                        on_delivery(delivery)
        unsent = "no host holding the image could take part: " + "; ".join(
            errors.get(h.name, "") for h in holders) if not any(h.name in keys for h in holders) else "not reached"
        for n in needers:
            if n.name not in report.deliveries:
                report.deliveries[n.name] = Delivery(n.name, False, error=errors.get(n.name, unsent))
    finally:
        report.cleanup_errors = _cleanup(report.run_id, list(hosts.values()))
    return report


def _argv(command: str, run_id: str, *args: str) -> str:
    return shlex.join(host_programs.argv(PROGRAM, command, run_id, *args))


def _call(host: RelayHost, command: str, run_id: str, *args: str, stdin: dict | None = None,
          timeout: float = STEP_TIMEOUT_S) -> dict:
    try:
        result = host.transport.run(_argv(command, run_id, *args),
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


def _each(items: Sequence, work: Callable) -> None:
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

    _each(hosts, one)
    return made


def _layers(image_id: str, holders: Sequence[RelayHost]) -> tuple[str, ...]:
    for holder in holders:
        try:
            info = holder.engine.image(image_id)
        except Exception:  # its engine does not answer: another holder may
            continue
        if info is not None:
            return info.layers
    return ()


def _held_by_all(layers: tuple[str, ...], receivers: list[RelayHost]) -> tuple[str, ...]:
    """The image's lowest layers every receiver holds already (planning/relay.py), asked of their engines now;
    none when an engine does not answer (the whole image then goes)."""
    held: dict[str, frozenset] = {}

    def one(host: RelayHost) -> None:
        try:
            held[host.name] = layer_chains(host.engine.image_layers())
        except Exception:  # nothing is left out for a receiver whose engine did not say what it holds
            held[host.name] = frozenset()

    _each(receivers, one)
    return layers_everyone_has(layers, [held[r.name] for r in receivers])


def _wire(run_id: str, plan: RelayPlan, hosts: Mapping[str, RelayHost], keys: Mapping[str, dict],
          errors: dict[str, str], skip: tuple[str, ...] = ()) -> None:
    def one(name: str) -> None:
        upstream = plan.upstream(name)
        children = [{"name": c, "address": hosts[c].peer.address, "port": hosts[c].peer.port,
                     "user": hosts[c].peer.user, "host_keys": keys[c].get("host_keys") or []}
                    for c in plan.children(name)]
        request = {"authorize": [keys[upstream]["public_key"]] if upstream else [], "children": children,
                   "skip": list(skip) if name in plan.roots else []}
        try:
            _call(hosts[name], "wire", run_id, stdin=request)
        except RelayStepFailed as exc:
            errors[name] = str(exc)

    _each(list(plan.hosts), one)


def _send(run_id: str, image_id: str, plan: RelayPlan, hosts: Mapping[str, RelayHost], timeout_s: float,
          errors: dict[str, str]) -> None:
    def one(root: str) -> None:
        try:
            answer = _call(hosts[root], "send", run_id, image_id, timeout=timeout_s)
        except RelayStepFailed as exc:
            for child in plan.children(root):
                errors.setdefault(child, f"the stream from {root} failed: {exc}")
            return
        for child, code in (answer.get("children") or {}).items():
            if code:
                errors.setdefault(child, f"the stream from {root} ended with exit {code}")

    _each(list(plan.roots), one)


def _verify(run_id: str, image_id: str, host: RelayHost, upstream: str | None, number: int,
            errors: dict[str, str]) -> Delivery:
    """Whether the host's engine holds the exact image ID now, with what its receiver counted."""
    try:
        received = _call(host, "report", run_id)
    except RelayStepFailed as exc:
        received = {"load_error": str(exc)}
    try:
        holds = host.engine.image(image_id) is not None
    except Exception as exc:  # its engine does not answer
        holds, received["load_error"] = False, f"{type(exc).__name__}: {exc}"
    count = int(received.get("bytes") or 0)
    if holds:
        return Delivery(host.name, True, upstream, count, number)
    why = (received.get("load_error") or errors.get(host.name)
           or ("nothing arrived" if not count else f"{count} bytes arrived, no image"))
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

    _each(hosts, one)
    return failed
