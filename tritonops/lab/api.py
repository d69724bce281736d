"""`lab up | down | status` as functions returning data (LabState); the CLI and test fixtures call these."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from tritonops.errors import TritonopsError
from tritonops.lab import containers as ct
from tritonops.lab import engine, keys
from tritonops.lab.defaults import DEFAULT_PREFIX, PORT_BASE, default_cache_dir, default_state_dir
from tritonops.lab.health import sshd_answers, wait_for_sshd
from tritonops.lab.image_specs import TRITON_TAG
from tritonops.lab.images import ensure_images, saved_image
from tritonops.lab.inventory import constraints_path, constraints_text, render_inventory, render_known_hosts
from tritonops.lab.models import models_dir, remove_models, write_models
from tritonops.lab.plan import HostAction, assign_ports, plan_hosts, spec_hash
from tritonops.lab.profile_file import GpuFaults, render_profile
from tritonops.lab.profiles import get_profile
from tritonops.lab.request import LabRequest
from tritonops.lab.state import LabHost, LabState, read_ports, write_ports
from tritonops.results import GroupResult, HostResult

PARALLEL_HOSTS = 4


def _paths(state_dir: Path | str | None, inventory_out: Path | str | None) -> tuple[Path, Path]:
    if state_dir is None:
        sd = default_state_dir()
        inv = Path(inventory_out) if inventory_out else sd.parent / "inventory" / "lab.yml"
    else:
        sd = Path(state_dir)
        inv = Path(inventory_out) if inventory_out else sd / "inventory.yml"
    return sd.resolve(), inv.resolve()


def _write_if_changed(path: Path, text: str) -> bool:
    if path.exists() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return True


def _lab_hosts(client, prefix: str) -> list[LabHost]:
    hosts = []
    for c in ct.lab_containers(client, prefix):
        if ct.LABEL_HOST not in c.labels:
            continue
        port = ct.published_port(c) or 0
        running = c.status == "running"
        hosts.append(LabHost(c.labels[ct.LABEL_HOST], c.labels.get(ct.LABEL_PROFILE, "?"),
                             c.labels.get(ct.LABEL_KIND, "?"), port, c.name, running=running,
                             healthy=running and bool(port) and sshd_answers("127.0.0.1", port),
                             network_address=ct.network_address(c, prefix) if running else None))
    return sorted(hosts, key=lambda h: h.name)


def _ready(client, prefix: str, action: HostAction, created: bool, rekeyed: bool, triton,
           preload_tar: str | None) -> HostResult:
    """Wait for sshd (and the inner engine, with the Triton image) on one host."""
    started = time.monotonic()
    container = client.containers.get(ct.container_name(prefix, action.host))
    if not wait_for_sshd("127.0.0.1", action.port, 30.0):
        return HostResult(action.host, "failed", f"sshd did not answer on 127.0.0.1:{action.port} within 30 s")
    msg = {"create": "created", "recreate": f"recreated ({action.reason})", "start": "started"}.get(action.action, "")
    if rekeyed:
        msg = (msg + "; " if msg else "") + "added this lab folder's client key (the host came from another folder)"
    loaded = False
    if action.spec.kind == "full":
        version = ct.wait_inner_engine(container)
        if version is None:
            return HostResult(action.host, "failed", "the inner Docker engine did not answer within 90 s "
                                                     "(see /var/log/dockerd.log in the host)")
        try:
            loaded, _ = ct.preload_image(container, triton.image_id, preload_tar, (TRITON_TAG,))
        except RuntimeError as err:
            return HostResult(action.host, "failed", str(err))
        if loaded:
            msg = (msg + "; " if msg else "") + "loaded the Triton image into the inner engine"
    changed = created or rekeyed or loaded or action.action == "start"
    return HostResult(action.host, "changed" if changed else "ok", msg or "unchanged",
                      elapsed_s=time.monotonic() - started)


def up(request: LabRequest, state_dir: Path | str | None = None, name_prefix: str = DEFAULT_PREFIX,
       inventory_out: Path | str | None = None, cache_dir: Path | str | None = None,
       port_base: int = PORT_BASE) -> LabState:
    """Make the lab match `request`: hosts added, kept, recreated or removed; inventory written."""
    sd, inv = _paths(state_dir, inventory_out)
    sd.mkdir(parents=True, exist_ok=True)
    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    client, notes = engine.ensure_engine(sd)

    images = ensure_images(client, request.needs_full_hosts, cache, sd / "build.log",
                           need_balancer=request.needs_balancer_hosts)
    notes += [f"built image {r.tag} in {r.elapsed_s:.0f} s" for r in images.results if r.built]
    preload_tar = None
    if images.tritonserver is not None:
        preload_tar = saved_image(client, images.tritonserver, cache).name

    client_pub = keys.ensure_client_key(sd / "id_ed25519")
    network = ct.ensure_network(client, name_prefix)
    recorded = read_ports(sd)
    ports = assign_ports([h.name for h in request.hosts], recorded, ct.ports_of_other_labs(client, name_prefix),
                         port_base)
    write_ports(sd, {**recorded, **ports})
    image_of = {"full": images.host_full, "light": images.host_light, "bastion": images.host_light,
                "balancer": images.host_balancer}
    hashes = {h.name: spec_hash(h, image_of[h.kind].image_id) for h in request.hosts}
    actions = plan_hosts(request, ct.existing_hosts(client, name_prefix), hashes, ports)

    results: dict[str, HostResult] = {}
    to_ready: list[tuple[HostAction, bool, bool]] = []  # (action, created, re-keyed)
    for action in actions:
        started = time.monotonic()
        try:
            if action.action in ("remove", "recreate"):
                ct.remove_host(client, name_prefix, action.host)
            if action.action == "remove":
                results[action.host] = HostResult(action.host, "changed", "removed (not requested)",
                                                  elapsed_s=time.monotonic() - started)
            elif action.action in ("create", "recreate"):
                spec = action.spec
                ct.create_host(client, name_prefix, spec, image_of[spec.kind].image_id, action.port, network,
                               hashes[spec.name], client_pub, keys.new_host_key(spec.name),
                               render_profile(get_profile(spec.profile), spec.name, spec.faults),
                               cache / "images" if spec.kind == "full" else None)
                to_ready.append((action, True, False))
            else:
                container = client.containers.get(ct.container_name(name_prefix, action.host))
                if action.action == "start":
                    container.start()
                to_ready.append((action, False, ct.authorize_key(container, client_pub)))
        except Exception as err:  # one host's failure never hides the others
            results[action.host] = HostResult(action.host, "failed", f"{type(err).__name__}: {err}",
                                              elapsed_s=time.monotonic() - started)

    with ThreadPoolExecutor(PARALLEL_HOSTS) as pool:
        futures = {a.host: pool.submit(_ready, client, name_prefix, a, created, rekeyed, images.tritonserver,
                                       preload_tar)
                   for a, created, rekeyed in to_ready}
        for host, future in futures.items():
            try:
                results[host] = future.result()
            except Exception as err:
                results[host] = HostResult(host, "failed", f"{type(err).__name__}: {err}")

    hosts = tuple(h for h in _lab_hosts(client, name_prefix) if h.name in ports)
    state = LabState(name_prefix, sd, inv, hosts)
    # Each host by its loopback port, and by its container name on the lab network (port 22) as the
    # bastion reaches it.
    host_keys = [(h, client.containers.get(h.container).labels[ct.LABEL_HOSTKEY]) for h in hosts]
    known = render_known_hosts([(h.address, h.port, key) for h, key in host_keys] +
                               [(h.container, 22, key) for h, key in host_keys])
    bastion = next((h for h in hosts if h.name == request.bastion), None) if request.behind_bastion else None
    inventory = render_inventory(state, bastion)
    constraints = constraints_path(sd)
    if not constraints.exists() or constraints.read_text() != constraints_text():
        constraints.write_text(constraints_text())  # named by the inventory: image builds see the stand-in change
    models = write_models(sd)  # before the inventory that names them
    if models:
        notes.append(f"wrote the lab models under {models_dir(sd)} ({len(models)} file(s) changed)")
    files_changed = [str(p) for p, text in ((state.known_hosts_file, known), (inv, inventory))
                     if _write_if_changed(p, text)]
    if files_changed:
        notes.append("wrote " + ", ".join(files_changed))
    served, index_failure = _serve_wheelhouse(state)
    notes += served
    order = [a.host for a in actions]
    if index_failure is not None:
        results[index_failure.host] = with_failure(results.get(index_failure.host), index_failure)
        order += [index_failure.host] if index_failure.host not in order else []
    return LabState(name_prefix, sd, inv, hosts, GroupResult.of(results[h] for h in order), tuple(notes))


def _serve_wheelhouse(state: LabState) -> tuple[list[str], HostResult | None]:
    """Start the lab's package index on the build host unless the current one already answers there: (notes,
    None), or ([], the build host's failure). The lab's deploys build vllm_env from this index (`pip install
    vllm`), so an index that did not start is the build host's failure, not a note."""
    from tritonops.lab.inventory import WHEELHOUSE_PORT, build_host
    from tritonops.lab.wheelhouse import index_answers, serve_on_host
    from tritonops.lab.wheelhouse.index import index_is_current
    from tritonops.transport.ssh import SshTransport

    builder = build_host(state)
    if builder is None:
        return [], None
    try:
        transport = SshTransport.open(state.connection(builder))
    except Exception as err:
        return [], HostResult(builder, "failed", f"could not reach it to serve the lab package index: {err}")
    try:
        if index_answers(transport, WHEELHOUSE_PORT) and index_is_current(transport):
            return [], None
        return [f"serving the lab package index at {serve_on_host(transport, WHEELHOUSE_PORT)} on {builder}"], None
    except Exception as err:
        return [], HostResult(builder, "failed", f"the lab package index did not start: {err}")
    finally:
        transport.close()


def with_failure(result: HostResult | None, failure: HostResult) -> HostResult:
    """A host's result of `lab up` (None: it had none yet) after a later step on it failed."""
    if result is None:
        return failure
    return replace(result, status=failure.status, msg=f"{result.msg}; {failure.msg}" if result.msg else failure.msg)


def down(state_dir: Path | str | None = None, name_prefix: str = DEFAULT_PREFIX,
         inventory_out: Path | str | None = None, purge: bool = False) -> LabState:
    """Remove every container, volume and network labelled for this lab (and, with purge, its images)."""
    sd, inv = _paths(state_dir, inventory_out)
    client = engine.existing_client()
    notes: list[str] = []
    results = []
    from tritonops.lab import prometheus  # the lab's Prometheus is a process beside the lab: stopped first

    if prometheus.down(prometheus.lab_prometheus(sd)):
        notes.append("stopped the lab's Prometheus")
    if client is None:
        notes.append("no Docker engine answers: nothing to remove there")
    else:
        for c in ct.lab_containers(client, name_prefix):
            started = time.monotonic()
            host = c.labels.get(ct.LABEL_HOST, c.name)
            try:
                if ct.LABEL_HOST in c.labels:
                    ct.remove_host(client, name_prefix, host)
                else:  # a lab service (the collector), not a host
                    c.remove(force=True, v=True)
                results.append(HostResult(host, "changed", "removed", elapsed_s=time.monotonic() - started))
            except Exception as err:
                results.append(HostResult(host, "failed", f"{type(err).__name__}: {err}"))
        for volume in client.volumes.list(filters={"label": f"{ct.LABEL_LAB}={name_prefix}"}):
            volume.remove(force=True)
            notes.append(f"removed volume {volume.name}")
        for network in client.networks.list(filters={"label": f"{ct.LABEL_LAB}={name_prefix}"}):
            network.remove()
            notes.append(f"removed network {network.name}")
        if purge:
            notes += _purge_images(client)
    state = LabState(name_prefix, sd, inv)
    for path in (inv, state.known_hosts_file):
        if path.exists():
            path.unlink()
            notes.append(f"removed {path}")
    if remove_models(sd):
        notes.append(f"removed {models_dir(sd)}")
    return LabState(name_prefix, sd, inv, (), GroupResult.of(results), tuple(notes))


def _purge_images(client) -> list[str]:
    from tritonops.lab.image_specs import LABEL_ROLE, TRITON_TAG

    notes = []
    images = client.images.list(filters={"label": LABEL_ROLE})
    # Children before parents: full hosts before light hosts before the base.
    order = {"host-full": 0, "host-balancer": 0, "tritonserver": 0, "host-light": 1, "base": 2}
    for image in sorted(images, key=lambda i: order.get(i.labels.get(LABEL_ROLE), 0)):
        for tag in image.tags:
            if tag == TRITON_TAG or tag.startswith("tritonops-lab/"):
                client.images.remove(tag, force=False, noprune=False)
        notes.append(f"removed image {', '.join(image.tags) or image.short_id}")
    return notes


def status(state_dir: Path | str | None = None, name_prefix: str = DEFAULT_PREFIX,
           inventory_out: Path | str | None = None) -> LabState:
    sd, inv = _paths(state_dir, inventory_out)
    client = engine.existing_client()
    if client is None:
        return LabState(name_prefix, sd, inv, notes=("no Docker engine answers: the lab is down",))
    return LabState(name_prefix, sd, inv, tuple(_lab_hosts(client, name_prefix)))


def set_gpu_faults(state: LabState, host: str, faults: GpuFaults) -> None:
    """Rewrite a running host's GPU profile (e.g. make GPU 1 'lost'); GpuFaults() restores it."""
    client = engine.existing_client()
    if client is None:
        raise TritonopsError("no Docker engine answers: is the lab up?")
    h = state.host(host)
    container = client.containers.get(h.container)
    ct.put_profile(container, render_profile(get_profile(h.profile), h.name, faults))
