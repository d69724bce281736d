"""The vllm_env image against real Docker engines inside lab hosts (over SSH, strict host keys).

One build host and two targets (full lab hosts, each with its own dockerd and the lab's Triton
image). The lab's package index runs on the build host's loopback; the inventory points pip at
it with the ordinary mirror variables. The official mode has no registry in the lab: only its
"pull fails -> clear error" path runs here.

Fault simulations (what is real, what is staged):
- missing pin, dead index: real pip against the real index / a closed port.
- disk full during load: a real 16 MiB tmpfs mounted over the target's /var/lib/docker/tmp,
  where dockerd stages a `docker load`; the engine itself fails with ENOSPC.
- interruption: a stream filter raises KeyboardInterrupt after 2 MiB of one target's stream,
  as Ctrl-C would in the middle of a distribution.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.support.result_schema import SCHEMA as RESULT_SCHEMA
from tritonops.image.api import build_images, image_status
from tritonops.image.engine import HostEngine
from tritonops.inventory import load_inventory
from tritonops.lab import api as lab_api
from tritonops.lab.testing import test_lab_port_base, test_lab_prefix
from tritonops.lab.request import HostSpec, LabRequest
from tritonops.lab.wheelhouse import LAB_VLLM_VERSION, serve_on_host
from tritonops.transport.pool import open_transport
from tritonops.tarball import tar_bytes

pytestmark = pytest.mark.lab

PREFIX = os.environ.get("TRITONOPS_IMAGE_LAB_PREFIX", test_lab_prefix("image"))
PORT_BASE = int(os.environ.get("TRITONOPS_IMAGE_LAB_PORT_BASE", test_lab_port_base(120)))
INDEX_PORT = 18431
BUILDER, T1, T2 = "img-build", "img-t1", "img-t2"
LAB_TRITON = "nvcr.io/nvidia/tritonserver:24.10-py3"
# The lab's Triton image has no pip (Debian's python3 without python3-pip); until it does, the
# tests derive a base with pip from it, on the build host only.
PIP_BASE = "tritonops-labtest/tritonserver:24.10-py3-pip"


def _pip_wheel(cache: Path) -> Path:
    found = sorted(cache.glob("pip-*.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(cache), "pip"],
                       check=True, timeout=120)
        found = sorted(cache.glob("pip-*.whl"))
    return found[-1]


def _base_with_pip(engine: HostEngine, wheel: Path) -> str:
    if engine.image(PIP_BASE) is not None:
        return PIP_BASE
    dockerfile = (f"FROM {LAB_TRITON}\nCOPY {wheel.name} /tmp/\n"
                  f"RUN python3 /tmp/{wheel.name}/pip install --no-index --no-cache-dir --break-system-packages "
                  f"/tmp/{wheel.name} && rm /tmp/{wheel.name}\n")
    buf = io.BytesIO(tar_bytes({"Dockerfile": dockerfile.encode(), wheel.name: wheel.read_bytes()}))
    for _ in engine.api.build(fileobj=buf, custom_context=True, tag=PIP_BASE, rm=True, forcerm=True, decode=True):
        pass
    assert engine.image(PIP_BASE) is not None, "could not derive the pip base image"
    return PIP_BASE


@pytest.fixture(scope="module")
def image_lab(tmp_path_factory):
    state_dir = Path(os.environ.get("TRITONOPS_IMAGE_LAB_STATE", Path(tempfile.gettempdir()) / PREFIX))
    request = LabRequest((HostSpec(BUILDER, "4090", "full"), HostSpec(T1, "2080ti", "full"),
                          HostSpec(T2, "t4", "full")))
    state = lab_api.up(request, state_dir=state_dir, name_prefix=PREFIX, port_base=PORT_BASE)
    if state.results.failed:
        pytest.fail("lab up failed: " + "; ".join(f"{r.host}: {r.msg}" for r in state.results.failed))
    transport = open_transport(state.connection(BUILDER))
    try:
        index_url = serve_on_host(transport, INDEX_PORT, versions=(LAB_VLLM_VERSION,))
        base = _base_with_pip(HostEngine(BUILDER, transport), _pip_wheel(state_dir / "pip-cache"))
    finally:
        transport.close()
    yield state, index_url, base
    if not os.environ.get("TRITONOPS_LAB_KEEP"):
        lab_api.down(state_dir=state_dir, name_prefix=PREFIX)


def write_inventory(state, path: Path, base: str, index_url: str, **overrides) -> Path:
    hosts = {h.name: {"ansible_host": h.address, "ansible_port": h.port} for h in state.hosts}
    variables = {
        "ansible_user": "root", "ansible_ssh_private_key_file": str(state.key_file),
        "tritonops_known_hosts_file": str(state.known_hosts_file),
        "tritonops_image_mode": "committed", "tritonops_triton_image": base,
        "tritonops_vllm_version": LAB_VLLM_VERSION, "tritonops_build_host": BUILDER,
        "tritonops_pip_index_url": index_url, "tritonops_pip_trusted_host": "127.0.0.1",
        "tritonops_pip_extra_args": "--retries 1 --timeout 5",
        **overrides,
    }
    path.write_text(yaml.safe_dump({"all": {"vars": variables, "hosts": hosts}}, sort_keys=False))
    return path


@pytest.fixture
def inventory(image_lab, tmp_path):
    state, index_url, base = image_lab

    def make(**overrides):
        return load_inventory([str(write_inventory(state, tmp_path / "inv.yml", base, index_url, **overrides))])
    return make


def ssh(state, host: str, command: str, check: bool = True) -> str:
    proc = subprocess.run(state.ssh_argv(host, command), capture_output=True, text=True, timeout=120)
    if check and proc.returncode:
        raise AssertionError(f"{host}: {command}: {proc.stderr}")
    return proc.stdout


def image_ids(state, host: str) -> dict[str, str]:
    out = ssh(state, host, "docker images --no-trunc --format '{{.Repository}}:{{.Tag}} {{.ID}}'")
    return dict(line.split() for line in out.splitlines() if line.strip())


def vllm_env_tags(state, host: str) -> dict[str, str]:
    return {t: i for t, i in image_ids(state, host).items() if t.startswith("tritonserver:vllm_env")}


def drop_vllm_env(state, host: str) -> None:
    ssh(state, host, "docker images -q --no-trunc 'tritonserver' | sort -u | xargs -r docker rmi -f >/dev/null; true")


def build_containers(state, host: str) -> str:
    return ssh(state, host, "docker ps -a -q --filter label=tritonops.vllm_env.build").strip()


def test_build_once_distribute_then_nothing_to_do(image_lab, inventory):
    state, _, _ = image_lab
    for name in (BUILDER, T1, T2):
        drop_vllm_env(state, name)
    hosts = inventory().select(None)
    first = build_images(hosts)
    by = {r.host: r for r in first.results}
    assert by[BUILDER].status == "changed" and by[BUILDER].payload["action"] == "build", by[BUILDER].msg
    for target in (T1, T2):
        assert by[target].status == "changed" and by[target].payload["action"] == "receive", by[target].msg
        assert by[target].payload["bytes_received"] > 0
    ids = {r.payload["image_id"] for r in first.results}
    assert len(ids) == 1
    (image_id,) = ids
    for name in (BUILDER, T1, T2):  # the same ID under both tags, on every engine
        tags = vllm_env_tags(state, name)
        assert set(tags.values()) == {image_id} and "tritonserver:vllm_env" in tags and len(tags) == 2
    assert first.bytes_out == sum(by[t].payload["bytes_received"] for t in (T1, T2))
    size = first.images[0]["size_bytes"]
    assert all(first.bytes_by_host[t] >= size * 0.5 for t in (T1, T2))

    second = build_images(hosts)
    assert [r.status for r in second.results] == ["ok", "ok", "ok"], [r.msg for r in second.results]
    assert second.bytes_out == 0 and second.images[0]["built_on"] is None

    status = {r.host: r for r in image_status(hosts)}
    for name in (BUILDER, T1, T2):
        data = status[name].payload
        assert data["image_id"] == image_id and data["vllm_version"] == LAB_VLLM_VERSION
        assert data["base_digest"].startswith("sha256:")
    # What the build put in the image: the pinned stand-in and the backend code, the base's CMD kept.
    out = ssh(state, T2, "docker run --rm tritonserver:vllm_env python3 -c "
                         "'import vllm; print(vllm.__version__)' && docker run --rm tritonserver:vllm_env "
                         "ls /opt/tritonserver/backends/vllm && docker inspect -f '{{json .Config.Cmd}}' "
                         "tritonserver:vllm_env " + LAB_TRITON)
    assert out.split() == [LAB_VLLM_VERSION, "model.py", '["/bin/bash"]', '["/bin/bash"]']


def test_cli_status_shows_labels(image_lab, inventory, tmp_path, capsys):
    from tritonops.cli.main import main

    inventory()  # writes inv.yml
    build = main(["image", "build", "-i", str(tmp_path / "inv.yml"), "--json"])
    built = json.loads(capsys.readouterr().out)
    jsonschema.validate(built, RESULT_SCHEMA)
    assert build == 0 and {h["status"] for h in built["results"]} <= {"ok", "changed"}
    assert main(["image", "status", "-i", str(tmp_path / "inv.yml"), "--json"]) == 0
    rows = [row["payload"] for row in json.loads(capsys.readouterr().out)["results"]]
    assert {r["vllm_version"] for r in rows} == {LAB_VLLM_VERSION}
    assert len({r["image_id"] for r in rows}) == 1
    assert all(r["labels"]["tritonops.vllm_env.base_digest"].startswith("sha256:") for r in rows)


def test_a_pin_that_does_not_exist(image_lab, inventory):
    state, _, _ = image_lab
    before = vllm_env_tags(state, BUILDER)
    report = build_images(inventory(tritonops_vllm_version="9.9.9").select(BUILDER))
    (result,) = report.results
    assert result.status == "failed"
    assert "exit 1" in result.msg and "No matching distribution found for vllm==9.9.9" in result.msg
    assert vllm_env_tags(state, BUILDER) == before  # no tag moved
    assert build_containers(state, BUILDER) == ""  # the build container is gone


def test_an_index_that_does_not_answer(image_lab, inventory):
    state, _, _ = image_lab
    before = vllm_env_tags(state, BUILDER)
    report = build_images(inventory(tritonops_pip_index_url="http://127.0.0.1:9/simple").select(BUILDER))
    (result,) = report.results
    assert result.status == "failed"
    assert "pip's output" in result.msg and "127.0.0.1:9" in result.msg
    assert "Connection refused" in result.msg or "No matching distribution" in result.msg
    assert vllm_env_tags(state, BUILDER) == before and build_containers(state, BUILDER) == ""


def test_a_target_whose_disk_fills_during_load(image_lab, inventory):
    state, _, _ = image_lab
    hosts = inventory().select(None)
    build_images(hosts)  # everyone has it
    drop_vllm_env(state, T1)
    drop_vllm_env(state, T2)
    before = image_ids(state, T1)
    ssh(state, T1, "mkdir -p /var/lib/docker/tmp && mount -t tmpfs -o size=16m tmpfs /var/lib/docker/tmp")
    try:
        report = build_images(hosts)
        by = {r.host: r for r in report.results}
        assert by[T1].status == "failed" and "no space left on device" in by[T1].msg.lower(), by[T1].msg
        assert by[T2].status == "changed" and by[BUILDER].status == "ok"
        assert image_ids(state, T1) == before  # its previous images are intact, nothing half-tagged
    finally:
        ssh(state, T1, "umount /var/lib/docker/tmp", check=False)
    again = {r.host: r for r in build_images(hosts).results}
    assert again[T1].status == "changed" and again[T2].status == "ok"
    assert vllm_env_tags(state, T1) == vllm_env_tags(state, BUILDER)


def test_interrupted_distribution_leaves_no_half_tagged_image(image_lab, inventory):
    state, _, _ = image_lab
    hosts = inventory().select(None)
    build_images(hosts)
    expected = vllm_env_tags(state, BUILDER)
    drop_vllm_env(state, T1)
    drop_vllm_env(state, T2)

    def cut(target, chunks):
        sent = 0
        for chunk in chunks:
            sent += len(chunk)
            if target == T1 and sent > 2 << 20:
                raise KeyboardInterrupt
            yield chunk

    with pytest.raises(KeyboardInterrupt):
        build_images(hosts, stream_filter=cut, forks=1)
    for target in (T1, T2):
        tags = vllm_env_tags(state, target)
        assert tags in ({}, expected), tags  # nothing, or the whole verified image: never a partial one
    rerun = {r.host: r for r in build_images(hosts).results}
    assert all(r.status in ("ok", "changed") for r in rerun.values()), [r.msg for r in rerun.values()]
    for target in (T1, T2):
        assert vllm_env_tags(state, target) == expected


def test_a_limited_run_keeps_the_image_a_host_holds_and_asks_the_build_host_outside_it_only_for_one_lacking_it(
        image_lab, inventory):
    from dataclasses import replace

    from tritonops.image.settings import outside_build_hosts

    state, _, _ = image_lab
    every = inventory()
    build_images(every.select(None))  # every host holds the image
    expected = vllm_env_tags(state, BUILDER)
    limited = every.select(T1)  # --limit img-t1: the build host img-build is outside the run
    builders = outside_build_hosts(limited, every)
    assert list(builders) == [BUILDER]
    builder = builders[BUILDER]
    gone = {BUILDER: replace(builder, connection=replace(builder.connection, port=1, connect_timeout_s=2))}

    kept = build_images(limited, builders=gone)  # held here: the build host is never dialled (it cannot be)
    (result,) = kept.results
    assert result.status == "ok" and result.payload["action"] == "none", result.msg
    assert f"build host {BUILDER} not needed" in result.msg and kept.bytes_out == 0
    assert result.payload["image_id"] == expected["tritonserver:vllm_env"]

    drop_vllm_env(state, T1)
    refused = build_images(limited, builders=gone)
    (result,) = refused.results
    assert result.status == "failed" and f"build host {BUILDER} (outside this run) cannot be reached" in result.msg
    assert vllm_env_tags(state, T1) == {}

    sent = build_images(limited, builders=builders)  # lacking it: the build host outside the run sends it
    (result,) = sent.results
    assert result.status == "changed" and result.payload["action"] == "receive", result.msg
    assert result.payload["source"] == BUILDER and sent.bytes_out == result.payload["bytes_received"] > 0
    assert sent.images[0]["built_on"] is None  # found on the build host, not rebuilt
    assert vllm_env_tags(state, T1) == expected


def test_image_build_reports_each_targets_bytes_as_they_stream(image_lab, inventory):
    state, _, _ = image_lab
    hosts = inventory().select(None)
    build_images(hosts)
    drop_vllm_env(state, T2)
    events = []
    report = build_images(hosts, on_progress=events.append)
    received = [e for e in events if e.what == "receive"]
    assert {e.host for e in received} == {T2}  # the others hold it: no stream, no row
    assert (received[0].done, received[0].note) == (0, f"from {BUILDER}")
    assert received[0].total == report.images[0]["size_bytes"] > 0
    sizes = [e.done for e in received]
    assert sizes == sorted(sizes) and len(sizes) > 10  # running totals, many of them while it streams
    assert received[-1].finished and received[-1].done == report.bytes_by_host[T2] == report.bytes_out


def test_official_mode_without_a_registry_fails_clearly(image_lab, inventory):
    report = build_images(inventory(tritonops_image_mode="official",
                                    tritonops_triton_image="nvcr.io/nvidia/tritonserver:24.10-vllm-python-py3")
                          .select(T2))
    (result,) = report.results
    assert result.status == "failed"
    assert result.msg.startswith("docker pull nvcr.io/nvidia/tritonserver:24.10-vllm-python-py3 failed:")


# ---- host to host (issue #29) ----------------------------------------------------------------------------------

def relay_inventory(image_lab, inventory, tmp_path, **per_host):
    """The lab's hosts reaching each other on the lab network, passing the image along a chain (fan-out 1):
    img-build -> img-t1 -> img-t2, so img-t1 relays."""
    state, index_url, base = image_lab
    path = write_inventory(state, tmp_path / "relay.yml", base, index_url, tritonops_relay_fanout=1)
    doc = yaml.safe_load(path.read_text())
    for h in state.hosts:
        doc["all"]["hosts"][h.name]["tritonops_relay_address"] = per_host.get(h.name, h.network_address)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return load_inventory([str(path)]).select(None)


def relay_leftovers(state) -> dict[str, str]:
    """What of a relay run's trust is left on each host: authorized lines, run folders, receivers running."""
    found = {}
    for h in state.hosts:
        out = ssh(state, h.name, "grep -h tritonops-relay- /root/.ssh/authorized_keys; ls -d /run/tritonops-relay-*; "
                                 "pgrep -af '[r]elay[.]py'; true").strip()
        if out:
            found[h.name] = out
    return found


def test_the_image_goes_host_to_host_and_the_runs_trust_is_gone_after(image_lab, inventory, tmp_path):
    state, _, _ = image_lab
    hosts = inventory().select(None)
    build_images(hosts)  # the build host holds it
    expected = vllm_env_tags(state, BUILDER)
    before = {h.name: ssh(state, h.name, "cat /root/.ssh/authorized_keys") for h in state.hosts}
    drop_vllm_env(state, T1)
    drop_vllm_env(state, T2)
    report = build_images(relay_inventory(image_lab, inventory, tmp_path))
    by = {r.host: r for r in report.results}
    size = report.images[0]["size_bytes"]
    assert report.bytes_out == 0 and report.bytes_by_host == {}  # no image byte through the controller
    for target, upstream in ((T1, BUILDER), (T2, T1)):
        data = by[target].payload
        assert by[target].status == "changed" and data["relayed"] and not data["fallback"], by[target].msg
        assert data["source"] == upstream and f"from {upstream} (host to host)" in by[target].msg
        # the lab's Triton base is on every host: only the layers above it travel
        assert 0 < data["bytes_received"] == report.relayed_by_host[target] < size * 0.2
        assert vllm_env_tags(state, target) == expected  # verified by ID, then both tags
    assert relay_leftovers(state) == {}
    assert {h.name: ssh(state, h.name, "cat /root/.ssh/authorized_keys") for h in state.hosts} == before


def test_a_relay_host_killed_mid_transfer_the_others_still_get_the_verified_image_and_no_trust_is_left(
        image_lab, inventory, tmp_path):
    """img-t1's receiver (img-build -> img-t1 -> img-t2) is killed once bytes flow through it: img-t1 and img-t2
    are left without the image; the second round restarts them from the build host, not from the controller."""
    import threading
    import time

    state, _, _ = image_lab
    hosts = inventory().select(None)
    build_images(hosts)
    expected = vllm_env_tags(state, BUILDER)
    base = HostEngine(BUILDER, open_transport(state.connection(BUILDER))).image(LAB_TRITON)
    for target in (T1, T2):  # every image, the base too: the whole image travels, long enough to be cut
        ssh(state, target, "docker images -aq | sort -u | xargs -r docker rmi -f >/dev/null; true")
    killed: list[int] = []
    finished = threading.Event()

    def kill_the_relay() -> None:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not killed and not finished.is_set():
            out = ssh(state, T1, "cd /run/tritonops-relay-* 2>/dev/null && test -s progress && "
                                 "kill -9 $(cat receive.pid) && cat progress", check=False).strip()
            if out.isdigit():
                killed.append(int(out))
            time.sleep(0.2)

    killer = threading.Thread(target=kill_the_relay, daemon=True)
    killer.start()
    try:
        report = build_images(relay_inventory(image_lab, inventory, tmp_path))
        finished.set()
        killer.join(timeout=30)
        size = report.images[0]["size_bytes"]
        assert killed and 0 < killed[0] < size, killed  # it was cut mid-stream
        by = {r.host: r for r in report.results}
        for target in (T1, T2):
            data = by[target].payload
            assert by[target].status == "changed" and data["relayed"] and data["relay_round"] == 2, by[target].msg
            assert data["bytes_received"] >= size * 0.9  # nothing held below it: the whole image
            assert vllm_env_tags(state, target) == expected
        assert report.bytes_out == 0  # restarted from an upstream, the controller not bothered
        assert relay_leftovers(state) == {}
    finally:
        restore_base(state, base)


def restore_base(state, base) -> None:
    """The lab's Triton base back on the targets, by the same relay (no image byte through the controller)."""
    from tritonops.image.relay import relay_image
    from tritonops.planning.relay import RelayPeer
    from tritonops.relay.run import RelayHost

    members, engines = {}, {}
    for name in (BUILDER, T1, T2):
        transport = open_transport(state.connection(name))
        members[name] = RelayHost(name, transport, RelayPeer(name, state.host(name).network_address, 22, "root"))
        engines[name] = HostEngine(name, transport)
    try:
        assert not relay_image(base.id, [members[BUILDER]], [members[T1], members[T2]], engines).missing
        for name in (T1, T2):
            for tag in base.tags:
                engines[name].tag(base.id, tag)
            assert engines[name].image(LAB_TRITON).id == base.id
    finally:
        for member in members.values():
            member.transport.close()


def test_a_host_its_upstream_cannot_reach_falls_back_to_the_controller_alone_and_says_so(image_lab, inventory,
                                                                                          tmp_path):
    state, _, _ = image_lab
    hosts = inventory().select(None)
    build_images(hosts)
    expected = vllm_env_tags(state, BUILDER)
    drop_vllm_env(state, T1)
    drop_vllm_env(state, T2)
    closed = f"{state.host(T2).network_address}:9"  # nothing listens there: no host reaches img-t2
    report = build_images(relay_inventory(image_lab, inventory, tmp_path, **{T2: closed}))
    by = {r.host: r for r in report.results}
    assert by[T1].payload["relayed"] and by[T1].payload["source"] == BUILDER, by[T1].msg
    t2 = by[T2]
    assert t2.status == "changed" and t2.payload["fallback"] and not t2.payload["relayed"], t2.msg
    assert "through the controller" in t2.msg and "fallback: the relay did not reach it" in t2.msg
    assert report.bytes_out == report.bytes_by_host[T2] == t2.payload["bytes_received"] > 0  # that host alone
    assert vllm_env_tags(state, T1) == vllm_env_tags(state, T2) == expected
    assert relay_leftovers(state) == {}
