"""A controller folder's weights leave the controller once (issue #29): the hosts pass them on to each other.

For one `controller_dir` source and the hosts that need it:
  1. each host's weights fact, planned as a push (weights/plan.py): a host holding the verified manifest is a
     holder; free disk is checked for every other host before any byte moves (a refusal is that host's result);
  2. where no host holds it, the first host that needs it gets it from the controller as today (SFTP, resumed,
     verified) and becomes the holder;
  3. the others get it host to host (relay/run.py with the folder as its cargo): the holders send a tar of the
     files that at least one receiver of the round lacks complete, every receiver writes them into its staging
     folder (`<name>.part`, renamed when complete) and passes the stream on; each copy is then verified against
     the manifest and renamed into place (weights `finalize`, as a push is); a host still lacking it gets a second
     round from the hosts that now hold it;
  4. a host the relay did not reach (or whose address is loopback) gets it from the controller, that host alone,
     and its result says so and why; the push resumes from the complete files the relay left in its staging folder.
Every host's result says where its weights came from and how many bytes reached it; the report says how many
bytes of weights left the controller.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable, Literal, Sequence

from tritonops.errors import InputError, TritonopsError
from tritonops.planning.relay import DEFAULT_FANOUT, RelayPlan, files_someone_lacks, is_loopback
from tritonops.relay.run import Delivery, RelayHost, SendOrder, each, relay
from tritonops.results import Progress
from tritonops.weights.facts import Layout, read_weights_fact
from tritonops.weights.operation import ModelWeightsArgs, ensure_weights, layout_of
from tritonops.weights.plan import WeightsPlan, WeightsRefused, plan_push
from tritonops.weights.transfer import Finalize, PushFiles, WeightsError, finalize
from tritonops.weights_source.local import local_manifest
from tritonops.weights_source.manifest import Manifest

SEND_BASE_TIMEOUT_S = 120
SLOWEST_BYTES_PER_S = 10_000_000  # a round's streams end within base + size at this rate, or fail

How = Literal["held", "controller", "relayed", "fallback", "refused", "failed"]


@dataclass(frozen=True)
class WeightsArrival:
    """Where one host's weights came from: `held` (verified already, nothing moved), `controller` (the first
    host, pushed from the controller), `relayed` (from `source`, another host), `fallback` (from the controller,
    the relay did not reach it: `msg` says why), `refused` (not enough disk: nothing moved) or `failed`."""

    host: str
    model_id: str
    how: How
    source: str | None = None  # the host it came from; "controller" for a push
    bytes_received: int = 0
    bytes_from_controller: int = 0
    relay_round: int = 0
    msg: str = ""

    @property
    def status(self) -> str:
        if self.how in ("refused", "failed"):
            return "failed"
        return "ok" if self.how == "held" else "changed"


@dataclass
class WeightsRelayReport:
    model_id: str
    size_bytes: int  # the folder's files
    arrivals: dict[str, WeightsArrival] = field(default_factory=dict)
    plans: list[RelayPlan] = field(default_factory=list)  # the relay's rounds
    left_out: list[int] = field(default_factory=list)  # per round: files every receiver held complete already
    cleanup_errors: dict[str, str] = field(default_factory=dict)

    @property
    def bytes_out(self) -> int:
        """Bytes of weights that left the controller (the first host's push and the fallbacks)."""
        return sum(a.bytes_from_controller for a in self.arrivals.values())


@dataclass(frozen=True)
class FolderCargo:
    """A verified model folder as a relay's cargo: the roots send a tar of its files from their final folder,
    receivers write them into their staging folder, and each is verified against the manifest and renamed into
    place (weights `finalize`)."""

    manifest: Manifest
    layout: Layout

    def order(self, receivers: Sequence[RelayHost]) -> SendOrder:
        staged: list[dict[str, int]] = [{} for _ in receivers]

        def one(index: int) -> None:
            try:
                staged[index] = dict(read_weights_fact(receivers[index].transport, self.layout).staging_files)
            except Exception:  # it does not say what it holds: it gets every file
                staged[index] = {}

        each(list(range(len(receivers))), one)
        wanted = set(files_someone_lacks([(f.path, f.size) for f in self.manifest.files], staged))
        files = [{"path": f.path, "size": f.size} for f in self.manifest.files if f.path in wanted]
        return SendOrder({"kind": "folder", "root": self.layout.final, "files": files},
                         len(self.manifest.files) - len(files))

    def sink(self, host: RelayHost) -> dict:
        return {"kind": "folder", "staging": self.layout.staging,
                "files": {f.path: f.size for f in self.manifest.files}}

    def verify(self, host: RelayHost) -> str:
        try:
            finalize(host.transport, self.layout.staging, self.layout.final, self.manifest)
        except WeightsError as exc:
            return str(exc)
        return ""


def relay_weights(args: ModelWeightsArgs, hosts: Sequence[RelayHost], *, fanout: int = DEFAULT_FANOUT,
                  cancel: threading.Event | None = None,
                  on_progress: Callable[[Progress], None] | None = None) -> WeightsRelayReport:
    """The controller folder of `args` on every host of `hosts`, verified, leaving the controller about once."""
    if args.source != "controller_dir":
        raise InputError(f"only a controller folder is relayed host to host, not source {args.source}")
    manifest, paths = local_manifest(args.path, "path")
    layout = layout_of(args, manifest)
    report = WeightsRelayReport(layout.model_id, manifest.total_size)
    plans = _plans(args, layout, manifest, paths, hosts, report)
    holders = [h for h in hosts if h.name in report.arrivals and report.arrivals[h.name].how == "held"]
    needers = [h for h in hosts if h.name in plans]
    relayable = [h for h in needers if not is_loopback(h.peer.address)]
    if relayable and not holders:
        holders = _seed(args, relayable, report)
    receivers = [h for h in relayable if h.name not in report.arrivals and _restaged(h, plans[h.name], report)]
    why: dict[str, str] = {h.name: f"its address {h.peer.address} is loopback: set tritonops_relay_address"
                           for h in needers if h not in relayable}
    if receivers and holders:
        cargo = FolderCargo(manifest, layout)
        timeout = SEND_BASE_TIMEOUT_S + manifest.total_size / SLOWEST_BYTES_PER_S

        def delivered(delivery: Delivery) -> None:
            report.arrivals[delivery.host] = WeightsArrival(
                delivery.host, layout.model_id, "relayed", delivery.source, delivery.bytes_received, 0,
                delivery.round, f"{layout.model_id} from {delivery.source} (host to host): "
                                f"{delivery.bytes_received:,} bytes, verified against its manifest")
            if on_progress is not None:
                on_progress(Progress(delivery.host, "weights", delivery.bytes_received, delivery.bytes_received,
                                     f"from {delivery.source}", finished=True))

        relayed = relay(cargo, holders, receivers, fanout=fanout, send_timeout_s=timeout, cancel=cancel,
                        on_delivery=delivered)
        report.plans, report.left_out, report.cleanup_errors = relayed.plans, relayed.left_out, relayed.cleanup_errors
        why.update({name: relayed.deliveries[name].error for name in relayed.missing})
    elif receivers:
        why.update({h.name: "no host holds it to pass it on" for h in receivers})
    _fallback(args, [h for h in needers if h.name not in report.arrivals], why, report)
    return report


def _plans(args: ModelWeightsArgs, layout: Layout, manifest: Manifest, paths: dict[str, str],
           hosts: Sequence[RelayHost], report: WeightsRelayReport) -> dict[str, WeightsPlan]:
    """Each host's push plan, read now: none for a holder (its arrival is `held`), a refusal is `refused`."""
    source = args.checked_source()
    plans: dict[str, WeightsPlan] = {}

    def one(host: RelayHost) -> None:
        try:
            fact = read_weights_fact(host.transport, layout, verify=args.verify)
            plan = plan_push(source, layout, fact, manifest, paths)
        except WeightsRefused as exc:
            report.arrivals[host.name] = WeightsArrival(host.name, layout.model_id, "refused", msg=str(exc))
            return
        except (TritonopsError, OSError) as exc:
            report.arrivals[host.name] = WeightsArrival(host.name, layout.model_id, "failed", msg=str(exc))
            return
        if plan.steps:
            plans[host.name] = plan
        else:
            report.arrivals[host.name] = WeightsArrival(host.name, layout.model_id, "held", msg=plan.reason)

    each(list(hosts), one)
    return plans


def _seed(args: ModelWeightsArgs, candidates: Sequence[RelayHost], report: WeightsRelayReport) -> list[RelayHost]:
    """No host holds the folder: the first candidate that can gets it from the controller, as a push does."""
    for host in candidates:
        arrival = _push(args, host, report.model_id, "controller", "from the controller (the first host)")
        report.arrivals[host.name] = arrival
        if arrival.how == "controller":
            return [host]
    return []


def _restaged(host: RelayHost, plan: WeightsPlan, report: WeightsRelayReport) -> bool:
    """The plan's steps that leave a staging folder to receive into (reopen a bad final folder, remove what is in
    the way, discard bad files), run now: the relay then fills the folder, and `finalize` checks it."""
    try:
        for step in plan.steps:
            if not isinstance(step, (PushFiles, Finalize)):
                step.run_on(host.transport)
    except (TritonopsError, OSError) as exc:
        report.arrivals[host.name] = WeightsArrival(host.name, report.model_id, "failed",
                                                    msg=f"preparing its staging folder: {exc}")
        return False
    return True


def _fallback(args: ModelWeightsArgs, hosts: Sequence[RelayHost], why: dict[str, str],
              report: WeightsRelayReport) -> None:
    def one(host: RelayHost) -> None:
        reason = why.get(host.name) or "the relay did not reach it"
        report.arrivals[host.name] = _push(args, host, report.model_id, "fallback",
                                           f"from the controller (fallback: {reason})")

    each(list(hosts), one)


def _push(args: ModelWeightsArgs, host: RelayHost, model_id: str, how: How, said: str) -> WeightsArrival:
    """The ordinary push over the controller's session (resumed, verified, renamed into place)."""
    try:
        outcome = ensure_weights(host.transport, args)
    except WeightsRefused as exc:
        return WeightsArrival(host.name, model_id, "refused", msg=str(exc))
    except (TritonopsError, OSError) as exc:
        return WeightsArrival(host.name, model_id, "failed", msg=f"{said}: {exc}")
    return WeightsArrival(host.name, model_id, how, "controller", outcome.bytes_moved, outcome.bytes_moved,
                          msg=f"{model_id} {said}: {outcome.bytes_moved:,} bytes, verified against its manifest")
