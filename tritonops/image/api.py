"""`image build` and `image status` over an inventory: sessions, preflight, build, distribution.

Results are data (one `HostResult` per host): ok (nothing to do), changed (built, received or
re-tagged), failed (reason), skipped (preflight refused, reason), unreachable. The deploy work
calls `build_images` the same way the CLI does.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from tritonops.errors import TritonopsError
from tritonops.facts.model import HostFacts
from tritonops.facts.probe import read_facts
from tritonops.image import ngc
from tritonops.image.build import BuildFailed, build, existing, held, resolve_base, spec_for
from tritonops.image.distribute import stream_image
from tritonops.image.engine import ByteCounter, Cancelled, EngineError, HostEngine, ImageInfo, StreamFilter
from tritonops.image.ids import short_image_id
from tritonops.image.plan import HostImage, Transfer, choose_build_host, plan_distribution
from tritonops.image.preflight import EngineFacts, ImageNeeds, check
from tritonops.image.relay import relay_image
from tritonops.image.settings import image_config
from tritonops.image.spec import (LABEL_BASE_DIGEST, LABEL_CONTENT, LABEL_VLLM, MOVING_TAG, REPOSITORY, ImageConfig,
                                  ImageSpec)
from tritonops.planning.relay import DEFAULT_FANOUT, RelayPeer, is_loopback
from tritonops.relay.run import RelayHost, RelayReport
from tritonops.relay.settings import relay_fanout, relay_peer
from tritonops.results import GroupResult, HostResult, Progress
from tritonops.transport.base import Transport, Unreachable
from tritonops.transport.sessions import SessionPool


RELAY_BASE_TIMEOUT_S = 600
RELAY_SLOWEST_BYTES_PER_S = 10_000_000  # a relay's streams end within base + size at this rate, or fail


@dataclass
class Session:
    host: Any  # inventory Host
    config: ImageConfig
    transport: Transport
    engine: HostEngine
    engine_facts: EngineFacts
    facts: HostFacts | None
    facts_error: str | None = None

    @property
    def name(self) -> str:
        return self.host.name


@dataclass
class BuildReport:
    results: GroupResult
    images: list[dict] = field(default_factory=list)  # one per distinct image: id, tag, built_on, bytes
    bytes_out: int = 0  # bytes that left the controller towards hosts
    bytes_by_host: dict[str, int] = field(default_factory=dict)  # of those, per receiving host
    relayed_by_host: dict[str, int] = field(default_factory=dict)  # bytes a host received from another host


@dataclass
class _Run:
    forks: int
    cancel: threading.Event
    counter: ByteCounter
    stream_filter: StreamFilter | None
    pool: SessionPool | None = None
    builders: dict = field(default_factory=dict)  # build hosts outside the run, by name: inventory Hosts
    on_progress: Callable[[Progress], None] | None = None  # each host's build or stream as it goes
    sizes: dict[str, int] = field(default_factory=dict)  # what each target is being sent, for its progress
    results: dict[str, HostResult] = field(default_factory=dict)
    started: dict[str, float] = field(default_factory=dict)
    peers: dict[str, RelayPeer] = field(default_factory=dict)  # where the hosts reach each other's sshd
    fanout: int = DEFAULT_FANOUT
    relayed: dict[str, int] = field(default_factory=dict)  # bytes each host received from another host

    def progress(self, name: str, what: str, done: int = 0, total: int | None = None, note: str = "",
                 finished: bool = False) -> None:
        if self.on_progress is not None:
            self.on_progress(Progress(name, what, done, total, note, finished))

    def streamed(self, target: str, so_far: int) -> None:
        self.progress(target, "receive", so_far, self.sizes.get(target))

    def done(self, name: str, status: str, msg: str, **data) -> None:
        elapsed = time.monotonic() - self.started.get(name, time.monotonic())
        self.results[name] = HostResult(name, status, msg, data or None, elapsed_s=round(elapsed, 3))

    def parallel(self, items: Sequence, work: Callable) -> None:
        """Run work(item) for each item, bounded; Ctrl-C stops the streams and is re-raised."""
        if not items:
            return
        with ThreadPoolExecutor(max_workers=max(1, min(self.forks, len(items))), thread_name_prefix="image") as pool:
            futures = [pool.submit(work, item) for item in items]
            try:
                for future in futures:
                    future.result()
            except BaseException:
                self.cancel.set()
                raise


def _open_session(host, config: ImageConfig, pool: SessionPool) -> Session:
    """The image work's view of a host: its pooled SSH session, the docker client riding it (kept in
    the pooled session, so later phases of the same run reuse it) and the probe's facts."""
    pooled = pool.session(host.name)
    engine = pooled.docker
    if engine is None:
        engine = pooled.docker = HostEngine(host.name, pooled.transport)
    engine_facts = engine.facts()
    facts, facts_error = pooled.facts, None
    if facts is None:
        try:
            facts = pooled.facts = read_facts(pooled.transport)
        except TritonopsError as exc:
            facts_error = str(exc)
        except Exception as exc:  # the probe is advisory here; its absence is reported as a note
            facts_error = f"{type(exc).__name__}: {exc}"
    return Session(host, config, pooled.transport, engine, engine_facts, facts, facts_error)


def build_images(hosts: Sequence, *, forks: int = 10, build_host: str | None = None, parallel_build: bool = False,
                 accept_new_host_keys: bool = False, stream_filter: StreamFilter | None = None,
                 cancel: threading.Event | None = None, pool: SessionPool | None = None,
                 builders: Mapping[str, Any] | None = None,
                 on_progress: Callable[[Progress], None] | None = None) -> BuildReport:
    """Build (or pull) the image once per distinct configuration and bring it to every host. With
    `pool`, the run's sessions are used (and left open for later phases); else a pool of its own.
    `builders`: build hosts outside `hosts` (settings.outside_build_hosts), asked only for the hosts that do
    not already hold the image their settings make; `pool` must know their connections. `on_progress` hears
    each build start and end and each target's bytes as they stream (from worker threads)."""
    configs = {host.name: image_config(host) for host in hosts}  # bad input fails before any connection
    builders = dict(builders or {})
    peers = {host.name: relay_peer(host) for host in [*hosts, *builders.values()]}
    fanout = relay_fanout(hosts)
    if pool is None:
        with SessionPool([host.connection for host in [*hosts, *builders.values()]], forks=forks,
                         accept_new_host_keys=accept_new_host_keys) as own:
            return build_images(hosts, forks=forks, build_host=build_host, parallel_build=parallel_build,
                                stream_filter=stream_filter, cancel=cancel, pool=own, builders=builders,
                                on_progress=on_progress)
    run = _Run(forks, cancel or threading.Event(), ByteCounter(), stream_filter, pool, builders, on_progress,
               peers=peers, fanout=fanout)
    run.counter.listener = run.streamed
    sessions: dict[str, Session] = {}
    lock = threading.Lock()
    now = time.monotonic()
    for host in hosts:
        run.started[host.name] = now

    def connect(host) -> None:
        try:
            session = _open_session(host, configs[host.name], pool)
        except Unreachable as exc:
            run.done(host.name, "unreachable", str(exc))
            return
        except Exception as exc:
            run.done(host.name, "failed", f"{type(exc).__name__}: {exc}")
            return
        with lock:
            sessions[host.name] = session

    report_images: list[dict] = []
    run.parallel(list(hosts), connect)
    groups: list[list[Session]] = []
    for host in hosts:
        session = sessions.get(host.name)
        if session is None:
            continue
        for group in groups:
            if group[0].config.same_build(session.config):
                group.append(session)
                break
        else:
            groups.append([session])
    for group in groups:
        if group[0].config.mode == "official":
            _official(run, group)
        else:
            summary = _committed(run, group, build_host, parallel_build)
            if summary:
                report_images.append(summary)
    results = GroupResult.of(run.results[host.name] for host in hosts)
    by_host = dict(run.counter.by_target)
    return BuildReport(results, report_images, sum(by_host.values()), by_host, dict(run.relayed))


def _preflight(run: _Run, session: Session, needs: ImageNeeds) -> bool:
    needs = replace(needs, frontend=session.config.frontend)  # each host's own serving mode
    verdict = check(session.facts, session.engine_facts, needs)
    if verdict.ok:
        return True
    notes = [session.facts_error] if session.facts_error else []
    run.done(session.name, "skipped", "preflight refused: " + "; ".join(list(verdict.refusals) + notes),
             refusals=list(verdict.refusals))
    return False


def _official(run: _Run, group: list[Session]) -> None:
    config = group[0].config
    release = ngc.lookup(config.release)
    needs = ImageNeeds(release, release.size_bytes if release else None)

    def one(session: Session) -> None:
        have = session.engine.image(config.image)
        if have is not None:
            run.done(session.name, "ok", f"{config.image} present", mode="official", image=config.image,
                     image_id=have.id, action="none")
            return
        if not _preflight(run, session, needs):
            return
        try:
            info = session.engine.pull(config.image)
        except EngineError as exc:
            run.done(session.name, "failed", str(exc), mode="official", image=config.image, action="pull")
            return
        run.done(session.name, "changed", f"pulled {config.image}", mode="official", image=config.image,
                 image_id=info.id, action="pull")

    run.parallel(group, one)


def _committed(run: _Run, group: list[Session], build_host: str | None, parallel_build: bool) -> dict | None:
    """The committed image on every host of a group that shares its settings: found or built once,
    then tagged or streamed to the others (or, with parallel_build, built on each)."""
    config = group[0].config
    release = ngc.lookup(config.release)
    eligible = [s for s in group if _preflight(run, s, ImageNeeds(release, None))]
    if not eligible:
        return None
    if parallel_build:
        run.parallel(eligible, lambda s: _build_here(run, s))
        return {"content_tag": None, "parallel_build": True, "hosts": [s.name for s in eligible]}
    wanted = build_host or config.build_host
    if wanted and wanted not in {s.name for s in group} and wanted in run.builders:
        return _outside_builder(run, eligible, wanted, release)
    chosen = _builder(run, group, eligible, wanted, release)
    if chosen is None:
        return None
    builder, base = chosen
    spec = spec_for(config, base)
    summary = {"content_tag": spec.content_tag, "content_hash": spec.content_hash, "image_id": None,
               "built_on": None, "source_hosts": [], "size_bytes": None}
    targets = [s for s in eligible if s.name not in run.results]
    found = _found_or_built(run, spec, base, builder, targets)
    if found is None:
        return summary
    holder, image, built = found
    summary.update(built_on=builder.name if built else None, image_id=image.id, size_bytes=image.size_bytes)
    summary["source_hosts"] = _distribute(run, spec, release, image, holder, built, targets, config.registry)
    return summary


def _outside_builder(run: _Run, eligible: list[Session], wanted: str,
                     release: ngc.NgcRelease | None) -> dict:
    """The build host is outside this run (--limit left it out). A host whose moving tag already points at the
    image its settings make keeps it, and the build host is not asked; only for the others is it reached, to
    find or build the image there and send it."""
    config = eligible[0].config
    summary: dict = {"content_tag": None, "content_hash": None, "image_id": None, "built_on": None,
                     "source_hosts": [], "size_bytes": None, "build_host": wanted}
    lacking = []
    for session in eligible:
        found = held(session.engine, config)
        if found is None:
            lacking.append(session)
            continue
        spec, image = found
        summary.update(content_tag=spec.content_tag, content_hash=spec.content_hash, image_id=image.id,
                       size_bytes=image.size_bytes)
        common = {"mode": "committed", "image": spec.moving_tag, "content_tag": spec.content_tag,
                  "image_id": image.id, "bytes_received": 0}
        short = short_image_id(image.id)
        if session.engine.tag_id(spec.content_tag) == image.id:
            run.done(session.name, "ok", f"{spec.content_tag} present ({short}); build host {wanted} not needed",
                     action="none", **common)
            continue
        try:
            _tag(session.engine, image.id, spec)
        except EngineError as exc:
            run.done(session.name, "failed", str(exc), action="tag", **common)
            continue
        run.done(session.name, "changed", f"tagged {spec.content_tag} ({short}), no bytes moved", action="tag",
                 **common)
    if not lacking:
        return summary

    def fail_lacking(why: str) -> None:
        for session in lacking:
            if session.name not in run.results:
                run.done(session.name, "failed", f"no {REPOSITORY}:{MOVING_TAG} built from this host's settings "
                         f"here, and build host {wanted} (outside this run) {why}", mode="committed")

    try:
        builder = _open_session(run.builders[wanted], config, run.pool)
    except Exception as exc:  # Unreachable, or its engine does not answer
        fail_lacking(f"cannot be reached: {exc}")
        return summary
    if not _preflight(run, builder, ImageNeeds(release, None)):
        fail_lacking(f"was refused: {run.results[wanted].msg}")
        return summary
    chosen = _builder(run, [builder], [builder], wanted, release)
    if chosen is None:
        fail_lacking(f"failed: {run.results[wanted].msg}")
        return summary
    builder, base = chosen
    spec = spec_for(config, base)
    summary.update(content_tag=spec.content_tag, content_hash=spec.content_hash)
    found = _found_or_built(run, spec, base, builder, lacking)
    if found is None:
        return summary
    holder, image, built = found
    summary.update(built_on=builder.name if built else None, image_id=image.id, size_bytes=image.size_bytes)
    summary["source_hosts"] = _distribute(run, spec, release, image, holder, built, lacking, config.registry)
    return summary


def _builder(run: _Run, group: list[Session], eligible: list[Session], wanted: str | None,
             release: ngc.NgcRelease | None) -> tuple[Session, ImageInfo] | None:
    """The host that builds, and the base image it resolved: the configured one, else the chosen host
    and then the others (those holding the base first) until one can get the base and hold it. None,
    with each host's failure recorded, when none can."""
    config = group[0].config
    by_name = {s.name: s for s in eligible}
    refused = {s.name: run.results[s.name].msg for s in group if s.name in run.results}
    has_base = {s.name: s.engine.image(config.image) is not None for s in eligible}
    try:
        first = choose_build_host(list(by_name), has_base, wanted, refused)
    except TritonopsError as exc:
        for s in eligible:
            run.done(s.name, "failed", f"no build host: {exc}", mode="committed")
        return None
    candidates = [first] + ([] if wanted else [n for n in by_name if n != first and has_base[n]]
                            + [n for n in by_name if n != first and not has_base[n]])
    errors = []
    for name in candidates:
        try:
            base = resolve_base(by_name[name].engine, config)
        except BuildFailed as exc:
            errors.append(str(exc))
            continue
        if _preflight(run, by_name[name], ImageNeeds(release, base.size_bytes)):
            return by_name[name], base
    reason = "; ".join(errors) or "no host could hold the base image"
    for s in eligible:
        if s.name not in run.results:
            run.done(s.name, "failed", f"cannot build {REPOSITORY}:{MOVING_TAG}: {reason}", mode="committed")
    return None


def _found_or_built(run: _Run, spec: ImageSpec, base: ImageInfo, builder: Session,
                    targets: list[Session]) -> tuple[Session, ImageInfo, bool] | None:
    """(the host holding the image, the image, whether it was built now): a host (the builder first)
    that already holds this content, else a build on the builder. None, recorded for every target,
    when the build failed."""
    for s in [builder] + [t for t in targets if t is not builder]:
        found = existing(s.engine, spec)
        if found is not None:
            return s, found, False
    run.progress(builder.name, "build", note=spec.content_tag)
    try:
        image = build(builder.engine, spec, base).image
        run.progress(builder.name, "build", note=spec.content_tag, finished=True)
        return builder, image, True
    except (BuildFailed, EngineError) as exc:
        run.progress(builder.name, "build", note="failed", finished=True)
        run.done(builder.name, "failed", str(exc), mode="committed", content_tag=spec.content_tag, action="build")
        for s in targets:
            if s is not builder:
                run.done(s.name, "failed", f"not built: the build on {builder.name} failed",
                         mode="committed", content_tag=spec.content_tag)
        return None


def _distribute(run: _Run, spec: ImageSpec, release: ngc.NgcRelease | None, image: ImageInfo, holder: Session,
                built: bool, targets: list[Session], registry: str | None) -> list[str]:
    """Each target up to date, tagged where it has the image, or sent it: host to host (image/relay.py), and
    through the controller (save -> load) only for a host the relay did not reach; every copy verified by ID
    before tags are set. Returns the hosts the image was sent from."""
    by_target = {s.name: s for s in targets}
    sessions = targets if holder.name in by_target else [*targets, holder]  # a build host outside the run sends
    states = [HostImage(s.name, s.engine.image(image.id) is not None, s.engine.tag_id(spec.content_tag),
                        s.engine.tag_id(spec.moving_tag)) for s in sessions]
    plan = plan_distribution(image.id, states, prefer=[holder.name], registry=registry)
    by_target = {s.name: s for s in sessions}
    common = {"mode": "committed", "image": spec.moving_tag, "content_tag": spec.content_tag, "image_id": image.id}
    note = (f" (tritonops_registry {registry} is planning-only: streamed through the controller)"
            if registry else "")
    short = short_image_id(image.id)
    for name in plan.up_to_date:
        if name not in {s.name for s in targets}:
            continue
        if built and name == holder.name:
            run.done(name, "changed", f"built {spec.content_tag} ({short})", action="build", bytes_received=0,
                     **common)
        else:
            run.done(name, "ok", f"{spec.content_tag} present ({short})", action="none", bytes_received=0, **common)
    def tagged(name: str) -> bool:
        """The content and moving tags set on the image the host holds; a failure is that host's result."""
        try:
            _tag(by_target[name].engine, image.id, spec)
        except EngineError as exc:
            run.done(name, "failed", str(exc), action="tag", **common)
            return False
        return True

    for name in plan.retag:
        if name not in {s.name for s in targets}:
            continue
        if not tagged(name):
            continue
        run.done(name, "changed", f"tagged {spec.content_tag} ({short}), no bytes moved", action="tag",
                 bytes_received=0, **common)

    def send(transfer, why: str = "") -> None:
        """Through the controller: save on the source, load on the target (a host the relay did not reach)."""
        target = by_target[transfer.target]
        run.sizes[target.name] = image.size_bytes or 0
        run.progress(target.name, "receive", 0, run.sizes[target.name] or None, f"from {transfer.source}")
        fallback = {"relayed": False, "fallback": bool(why)}
        try:
            stream_image(by_target[transfer.source].engine, target.engine, image.id, run.counter, run.cancel,
                         run.stream_filter)
            _tag(target.engine, image.id, spec)
        except Cancelled:
            run.done(target.name, "failed", "interrupted; no tag set", action="receive", **fallback, **common)
            raise
        except (EngineError, TritonopsError) as exc:
            run.done(target.name, "failed", f"{exc}; its existing images are untouched{why}", action="receive",
                     bytes_received=run.counter.by_target.get(target.name, 0), source=transfer.source,
                     **fallback, **common)
            return
        received = run.counter.by_target.get(target.name, 0)
        run.progress(target.name, "receive", received, received, f"from {transfer.source}", finished=True)
        run.done(target.name, "changed", f"received {spec.content_tag} from {transfer.source} through the "
                 f"controller: {received} bytes, ID verified{note}{why}", action="receive", bytes_received=received,
                 source=transfer.source, **fallback, **common)

    ready = [t for t in plan.transfers if _preflight(run, by_target[t.target], ImageNeeds(release, image.size_bytes))]
    holders = list(dict.fromkeys([holder.name, *(t.source for t in plan.transfers)]))
    reachable = [t for t in ready if not is_loopback(run.peers[t.target].address)]
    report = _relay(run, image, [by_target[n] for n in holders], [by_target[t.target] for t in reachable])
    for name, delivery in report.deliveries.items():
        if not delivery.verified:
            continue
        if not tagged(name):
            continue
        run.relayed[name] = delivery.bytes_received
        run.done(name, "changed", f"received {spec.content_tag} from {delivery.source} (host to host): "
                 f"{delivery.bytes_received} bytes, ID verified", action="receive", relayed=True, fallback=False,
                 relay_round=delivery.round,
                 bytes_received=delivery.bytes_received, source=delivery.source, **common)
    rest = [t for t in ready if t.target not in run.results]
    reasons = {t.target: report.deliveries[t.target].error if t.target in report.deliveries else
               f"its address {run.peers[t.target].address} is loopback: set tritonops_relay_address" for t in rest}
    run.parallel(rest, lambda t: send(Transfer(holder.name, t.target, t.method),
                                      f" (fallback: the relay did not reach it: {reasons[t.target]})"))
    return sorted(({holder.name} if rest else set()) | {d.source for d in report.deliveries.values() if d.verified})


def _relay(run: _Run, image: ImageInfo, holders: list[Session], needers: list[Session]) -> RelayReport:
    """The image from `holders` to `needers` host to host (image/relay.py); each delivery heard as progress."""
    if not needers:
        return RelayReport("")

    def member(session: Session) -> RelayHost:
        return RelayHost(session.name, session.transport, run.peers[session.name])

    def started(number: int, plan) -> None:
        for hop in plan.hops:
            run.sizes[hop.target] = image.size_bytes or 0
            run.progress(hop.target, "receive", 0, image.size_bytes or None, f"from {hop.source}")

    def delivered(delivery) -> None:
        run.progress(delivery.host, "receive", delivery.bytes_received, delivery.bytes_received,
                     f"from {delivery.source}", finished=True)

    timeout = RELAY_BASE_TIMEOUT_S + (image.size_bytes or 0) / RELAY_SLOWEST_BYTES_PER_S
    engines = {s.name: s.engine for s in [*holders, *needers]}
    return relay_image(image.id, [member(s) for s in holders], [member(s) for s in needers], engines, fanout=run.fanout,
                       send_timeout_s=timeout, cancel=run.cancel, on_round=started, on_delivery=delivered)


def _tag(engine: HostEngine, image_id: str, spec) -> None:
    """Content tag first, the moving tag last: a run cut in between leaves the old `vllm_env`."""
    if engine.tag_id(spec.content_tag) != image_id:
        engine.tag(image_id, spec.content_tag)
    if engine.tag_id(spec.moving_tag) != image_id:
        engine.tag(image_id, spec.moving_tag)


def _build_here(run: _Run, session: Session) -> None:
    config = session.config
    try:
        base = resolve_base(session.engine, config)
        if not _preflight(run, session, ImageNeeds(ngc.lookup(config.release), base.size_bytes)):
            return
        spec = spec_for(config, base)
        run.progress(session.name, "build", note=spec.content_tag)
        outcome = build(session.engine, spec, base)
        run.progress(session.name, "build", note=spec.content_tag, finished=True)
    except (BuildFailed, EngineError) as exc:
        run.progress(session.name, "build", note="failed", finished=True)
        run.done(session.name, "failed", str(exc), mode="committed", action="build")
        return
    data = {"mode": "committed", "image": outcome.spec.moving_tag, "content_tag": outcome.spec.content_tag,
            "image_id": outcome.image.id, "bytes_received": 0}
    if outcome.built:
        run.done(session.name, "changed", f"built {outcome.spec.content_tag} ({short_image_id(outcome.image.id)})",
                 action="build", **data)
    else:
        run.done(session.name, "ok", f"{outcome.spec.content_tag} present ({short_image_id(outcome.image.id)})",
                 action="none", **data)


# ---- status -------------------------------------------------------------------------------------

def image_status(hosts: Sequence, *, forks: int = 10, accept_new_host_keys: bool = False,
                 pool: SessionPool | None = None) -> GroupResult:
    """What each host has (read-only); over `pool`'s sessions when given."""
    from tritonops.transport.pool import run_on_hosts

    configs = {host.name: image_config(host) for host in hosts}

    def task(transport: Transport, spec) -> HostResult:
        config = configs[spec.name]
        engine = HostEngine(spec.name, transport)
        try:
            reference = config.image if config.mode == "official" else f"{REPOSITORY}:{MOVING_TAG}"
            facts = engine.facts()
            if not facts.answering:
                return HostResult(spec.name, "failed", f"the Docker engine does not answer: {facts.error}")
            info = engine.image(reference)
            if info is None:
                return HostResult(spec.name, "failed", f"no {reference} image",
                                  {"mode": config.mode, "image": reference, "image_id": None})
            release = ngc.lookup(config.release)
            if config.mode == "official":
                vllm = release.vllm if release else None
                base_digest = info.repo_digests[0].split("@", 1)[1] if info.repo_digests else None
            else:
                vllm = info.labels.get(LABEL_VLLM)
                base_digest = info.labels.get(LABEL_BASE_DIGEST)
            content_tags = [t for t in info.tags if t.startswith(f"{REPOSITORY}:{MOVING_TAG}-")]
            return HostResult(spec.name, "ok", "", {
                "mode": config.mode, "image": reference, "image_id": info.id, "vllm_version": vllm,
                "base_digest": base_digest, "content_tags": content_tags,
                "content_hash": info.labels.get(LABEL_CONTENT), "size_bytes": info.size_bytes,
                "labels": {k: v for k, v in info.labels.items() if k.startswith("tritonops.")},
            })
        finally:
            engine.close()

    if pool is not None:
        return pool.run(lambda session: task(session.transport, session.spec), [host.name for host in hosts])
    return run_on_hosts([host.connection for host in hosts], task, forks=forks,
                        accept_new_host_keys=accept_new_host_keys)
