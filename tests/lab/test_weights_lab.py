"""Model weights on real lab hosts over SSH: the Hugging Face path through the lab's hub stand-in
(huggingface_hub unpacked into the hosts' python3, `runner: host`), a controller folder over SFTP,
a host path checked in place.

What is real and what is staged:
- the download is huggingface_hub's own HTTP code on the host against `tritonops.lab.hub` served
  from this machine on the lab network's gateway address;
- a cut download: the hub sends half of a shard, drops the connection and answers 503 for it
  (huggingface_hub's retry then fails), as a dying mirror would;
- a cut push: the SSH connection is closed under the SFTP copy after 1 MiB;
- not enough disk: a real 1 MiB tmpfs mounted on the host's models folder;
- a relay host killed mid-stream: its `receive` (the relay program's forced command) killed with SIGTERM on the
  host, as soon as the big file's `.part` appears in its staging folder.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import threading

import pytest
import yaml

from tritonops.deploy.weights_phase import weights_phase
from tritonops.facts.query_program import read_facts
from tritonops.inventory import load_inventory
from tritonops.lab.hub import TINY_REPO, tiny_model
from tritonops.lab.testing import FULL_2080TI, LIGHT_H200X2, LIGHT_NOGPU, lab_hub
from tritonops.planning.host_plan import HostDeployPlan, ModelInstancePlan
from tritonops.planning.relay import RelayPeer
from tritonops.planning.weights_spec import WeightsSpec
from tritonops.playbook.known_operations import operation_named
from tritonops.relay.run import RelayHost
from tritonops.transport.pool import open_transport
from tritonops.transport.sessions import SessionPool
from tritonops.weights import transfer
from tritonops.weights.operation import ModelWeightsArgs, ensure_weights, ensure_weights_on_hosts
from tritonops.weights.plan import WeightsRefused
from tritonops.weights.relay import relay_weights
from tritonops.weights.transfer import WeightsError

pytestmark = pytest.mark.lab

TOKEN = "hf_labTOKENnever_shown_0123456789"
MODEL = tiny_model()
TOTAL = sum(len(v) for v in MODEL.values())
SHARD2 = "model-00002-of-00002.safetensors"


@pytest.fixture(scope="module")
def hub(lab):
    saved = os.environ.get("HF_TOKEN")
    os.environ["HF_TOKEN"] = TOKEN
    with lab_hub(lab, (FULL_2080TI, LIGHT_H200X2), {TINY_REPO: MODEL}, token=TOKEN) as server:
        yield server
    if saved is None:
        os.environ.pop("HF_TOKEN", None)
    else:
        os.environ["HF_TOKEN"] = saved


@pytest.fixture
def session(lab):
    opened = []

    def open_(name):
        transport = open_transport(lab.connection(name))
        opened.append(transport)
        return transport

    yield open_
    for transport in opened:
        transport.close()


def hf_args(hub, deployment: str, **more) -> ModelWeightsArgs:
    return ModelWeightsArgs(source="huggingface", repo=TINY_REPO, deployment=deployment, endpoint=hub.endpoint,
                            runner="host", root="/opt/tritonops", **more)


def sh(lab_ssh, host, command) -> str:
    return lab_ssh(host, command).stdout


def host_sha256s(lab_ssh, host, folder) -> dict[str, str]:
    out = sh(lab_ssh, host, f"cd {shlex.quote(folder)} && sha256sum $(ls)")
    return {line.split()[1]: line.split()[0] for line in out.splitlines()}


def expected_sha256s() -> dict[str, str]:
    return {name: hashlib.sha256(data).hexdigest() for name, data in MODEL.items()}


def test_hub_download_is_verified_and_a_second_run_moves_nothing(hub, session, lab_ssh):
    host = session(FULL_2080TI)
    lab_ssh(FULL_2080TI, "rm -rf /opt/tritonops/wt-first")
    args = hf_args(hub, "wt-first")
    hub.reset_log()
    first = ensure_weights(host, args)
    assert first.changed and first.bytes_moved == TOTAL == hub.log.bytes_served
    assert first.model_id == "lab--tiny-llama@main" and first.commit == hub.repos[TINY_REPO].commit
    assert host_sha256s(lab_ssh, FULL_2080TI, first.final) == expected_sha256s()
    assert set(hub.log.authorizations) == {f"Bearer {TOKEN}"}  # the token reached the hub, only there
    assert all(TOKEN not in step for step in first.steps)

    hub.reset_log()
    second = ensure_weights(host, args)
    assert (second.changed, second.bytes_moved, hub.log.requests) == (False, 0, [])
    # the playbook engine's way: facts, then steps -> none, so the task is ok
    operation = operation_named("model_weights")
    assert list(operation.steps(args, read_facts(host, list(operation.facts(args))))) == []
    assert hub.log.requests == []


def test_a_cut_download_resumes_and_nothing_half_written_is_at_the_final_path(hub, session, lab_ssh):
    host = session(FULL_2080TI)
    lab_ssh(FULL_2080TI, "rm -rf /opt/tritonops/wt-cut")
    args = hf_args(hub, "wt-cut")
    hub.cut(SHARD2, (1 << 20) + (1 << 18))
    half = (1 << 20) + (1 << 18)  # what reached the disk: every byte that arrived before the cut
    with pytest.raises(WeightsError, match="kept .* and the next run resumes from them"):
        ensure_weights(host, args)
    models = "/opt/tritonops/wt-cut/models"
    assert lab_ssh(FULL_2080TI, f"test -e {models}/lab--tiny-llama@main", check=False).returncode == 1
    part = sh(lab_ssh, FULL_2080TI, f"stat -c %s '{models}/.lab--tiny-llama@main.partial/{SHARD2}.part'")
    assert int(part) == half

    hub.restore()
    hub.reset_log()
    done = ensure_weights(host, args)
    after = sum(len(data) for name, data in MODEL.items() if name > SHARD2)  # fetched in name order
    assert done.changed and done.bytes_moved == len(MODEL[SHARD2]) - half + after == hub.log.bytes_served
    assert ("GET", f"/{TINY_REPO}/resolve/{hub.repos[TINY_REPO].commit}/{SHARD2}", f"bytes={half}-") \
        in hub.log.requests
    assert host_sha256s(lab_ssh, FULL_2080TI, done.final) == expected_sha256s()


def test_a_hub_download_tells_the_bytes_in_its_staging_folder_as_it_goes(hub, session, lab_ssh):
    from tritonops.weights.transfer import HubFetch

    host = session(FULL_2080TI)
    lab_ssh(FULL_2080TI, "rm -rf /opt/tritonops/wt-progress")
    args = hf_args(hub, "wt-progress")
    operation = operation_named("model_weights")
    (fetch,) = [step for step in operation.steps(args, read_facts(host, list(operation.facts(args))))
                if isinstance(step, HubFetch)]
    heard = []
    hub.slow(1 << 18, 0.2)  # 256 KiB every 0.2 s: the 3 MB download lasts about 2.5 s
    try:
        fetch.run_with_progress(host, heard.append, every_s=0.1)
    finally:
        hub.slow(None)
    sizes = [event.done for event in heard]
    assert len(sizes) >= 3 and sizes == sorted(sizes) and 0 < sizes[-1] <= TOTAL, sizes
    assert {(e.host, e.what, e.note) for e in heard} == {(FULL_2080TI, "weights", f"downloading {TINY_REPO}")}


def test_a_corrupted_file_is_replaced(hub, session, lab_ssh):
    host = session(FULL_2080TI)
    lab_ssh(FULL_2080TI, "rm -rf /opt/tritonops/wt-corrupt")
    args = hf_args(hub, "wt-corrupt")
    first = ensure_weights(host, args)
    lab_ssh(FULL_2080TI, f"printf 'XXXX' | dd of='{first.final}/{SHARD2}' bs=1 seek=4096 conv=notrunc 2>/dev/null")
    hub.reset_log()
    again = ensure_weights(host, args)
    assert again.changed and again.bytes_moved == len(MODEL[SHARD2]) == hub.log.bytes_served
    assert "sha256 differs" in again.reason
    assert host_sha256s(lab_ssh, FULL_2080TI, again.final) == expected_sha256s()


def test_not_enough_disk_is_refused_before_any_byte_moves_and_other_hosts_go_on(hub, lab, lab_ssh):
    models = "/opt/tritonops/wt-disk/models"
    small_host, other = FULL_2080TI, LIGHT_H200X2  # a full host may mount (a light one lacks the capability)
    for name in (small_host, other):
        lab_ssh(name, f"umount {models} 2>/dev/null; rm -rf /opt/tritonops/wt-disk")
    lab_ssh(small_host, f"mkdir -p {models} && mount -t tmpfs -o size=1m tmpfs {models}")
    try:
        hub.reset_log()
        group = ensure_weights_on_hosts([lab.connection(small_host), lab.connection(other)], hf_args(hub, "wt-disk"))
        small, big = group[small_host], group[other]
        assert small.status == "failed" and "not enough disk" in small.msg and "nothing was fetched" in small.msg
        assert f"{TOTAL:,} bytes to fetch" in small.msg
        assert big.status == "changed" and big.payload.bytes_moved == TOTAL
        assert hub.log.bytes_served == TOTAL  # only the host with room fetched
        assert sh(lab_ssh, small_host, f"find {models} -type f | wc -l").strip() == "0"
    finally:
        lab_ssh(small_host, f"umount {models}; rm -rf /opt/tritonops/wt-disk", check=False)


def test_modelscope_without_its_library_says_so(hub, session, lab_ssh):
    args = ModelWeightsArgs(source="modelscope", repo="Qwen/Qwen2.5-0.5B-Instruct", deployment="wt-ms",
                            runner="host")
    with pytest.raises(WeightsError, match="modelscope is not installed in the host's python3"):
        ensure_weights(session(FULL_2080TI), args)


@pytest.fixture
def model_folder(tmp_path):
    folder = tmp_path / "tiny"
    folder.mkdir()
    for name, data in MODEL.items():
        (folder / name).write_bytes(data)
    return folder


def test_a_controller_folder_is_pushed_over_sftp_resumed_after_a_cut_and_then_left_alone(
        model_folder, session, lab_ssh, monkeypatch):
    lab_ssh(LIGHT_NOGPU, "rm -rf /opt/tritonops/wt-push")
    args = ModelWeightsArgs(source="controller_dir", path=str(model_folder), deployment="wt-push")
    host = session(LIGHT_NOGPU)
    copy = transfer._copy

    def cut_copy(source, write, offset, size):  # the connection dies after 1 MiB of the first shard
        if size > (1 << 20):
            copy(source, write, offset, offset + (1 << 20))
            host.ssh_client.get_transport().close()
            raise OSError("connection closed")
        return copy(source, write, offset, size)

    monkeypatch.setattr(transfer, "_copy", cut_copy)
    with pytest.raises(Exception):
        ensure_weights(host, args)
    monkeypatch.setattr(transfer, "_copy", copy)
    host = session(LIGHT_NOGPU)
    models = "/opt/tritonops/wt-push/models"
    assert sh(lab_ssh, LIGHT_NOGPU, f"ls -A {models}").split() == [".tiny@" + done_id(model_folder) + ".partial"]
    shard1 = "model-00001-of-00002.safetensors"
    part = int(sh(lab_ssh, LIGHT_NOGPU, f"stat -c %s {models}/.tiny@*.partial/{shard1}.part"))
    assert 0 < part <= (1 << 20)
    done = ensure_weights(host, args)
    before = sum(len(v) for k, v in MODEL.items() if k < shard1)  # copied in name order, complete before the cut
    assert done.changed and done.bytes_moved == TOTAL - before - part
    assert host_sha256s(lab_ssh, LIGHT_NOGPU, done.final) == expected_sha256s()
    again = ensure_weights(host, args)
    assert (again.changed, again.bytes_moved) == (False, 0)


def done_id(folder) -> str:
    from tritonops.weights_source.local import local_manifest

    return local_manifest(str(folder))[0].content_sha256()[:12]


def test_a_host_path_is_checked_and_linked(model_folder, session, lab_ssh):
    lab_ssh(LIGHT_NOGPU, "rm -rf /srv/models/tiny /opt/tritonops/wt-path && mkdir -p /srv/models/tiny")
    tar = subprocess.run(["tar", "-C", str(model_folder), "-cf", "-", "."], capture_output=True, check=True).stdout
    host = session(LIGHT_NOGPU)
    assert host.run("tar -xf - -C /srv/models/tiny", stdin=tar).ok
    args = ModelWeightsArgs(source="host_path", path="/srv/models/tiny", deployment="wt-path")
    done = ensure_weights(host, args)
    assert done.changed and done.bytes_moved == 0
    assert sh(lab_ssh, LIGHT_NOGPU, f"readlink '{done.final}'").strip() == "/srv/models/tiny"
    assert not ensure_weights(host, args).changed
    lab_ssh(LIGHT_NOGPU, f"rm /srv/models/tiny/{SHARD2}")
    with pytest.raises(WeightsRefused, match=f"names {SHARD2}, not in /srv/models/tiny"):
        ensure_weights(host, args)


# ---- a controller folder host to host (issue #29) -------------------------------------------------------------

RELAY_HOSTS = (FULL_2080TI, LIGHT_H200X2, LIGHT_NOGPU)


def relay_members(lab, session) -> list[RelayHost]:
    """The hosts as the relay sees them: the controller's session, and where the others reach their sshd."""
    return [RelayHost(name, session(name), RelayPeer(name, lab.host(name).network_address, 22, "root"))
            for name in RELAY_HOSTS]


def relay_leftovers(lab_ssh) -> dict[str, str]:
    """What of a relay run's trust is left on each host: authorized lines, run folders, receivers running."""
    found = {}
    for name in RELAY_HOSTS:
        out = sh(lab_ssh, name, "grep -h tritonops-relay- /root/.ssh/authorized_keys; ls -d /run/tritonops-relay-*; "
                                "pgrep -af 'relay[.]py receive'; true 2>/dev/null")
        if out.strip():
            found[name] = out.strip()
    return found


def test_a_controller_folder_leaves_the_controller_once_and_every_host_holds_it_verified(
        model_folder, session, lab, lab_ssh):
    for name in RELAY_HOSTS:
        lab_ssh(name, "rm -rf /opt/tritonops/wt-relay")
    args = ModelWeightsArgs(source="controller_dir", path=str(model_folder), deployment="wt-relay")
    report = relay_weights(args, relay_members(lab, session), fanout=1)  # a chain: the first host passes it on
    arrivals = report.arrivals
    assert [arrivals[n].how for n in RELAY_HOSTS] == ["controller", "relayed", "relayed"], arrivals
    assert (arrivals[LIGHT_H200X2].source, arrivals[LIGHT_NOGPU].source) == (FULL_2080TI, LIGHT_H200X2)
    assert report.bytes_out == report.size_bytes == TOTAL  # the folder left the controller once
    assert arrivals[FULL_2080TI].bytes_from_controller == TOTAL
    for name in (LIGHT_H200X2, LIGHT_NOGPU):
        assert arrivals[name].bytes_from_controller == 0 and TOTAL < arrivals[name].bytes_received < TOTAL * 1.01
    for name in RELAY_HOSTS:
        final = f"/opt/tritonops/wt-relay/models/{report.model_id}"
        assert host_sha256s(lab_ssh, name, final) == expected_sha256s(), name
    assert relay_leftovers(lab_ssh) == {}

    again = relay_weights(args, relay_members(lab, session))
    assert {n: a.how for n, a in again.arrivals.items()} == {n: "held" for n in RELAY_HOSTS}
    assert again.bytes_out == 0 and again.plans == []


def test_a_relay_host_killed_mid_stream_every_host_still_ends_verified_without_the_controller(
        tmp_path, session, lab, lab_ssh):
    folder = tmp_path / "big"
    folder.mkdir()
    for name, data in MODEL.items():
        (folder / name).write_bytes(data)
    (folder / "zz-shard.bin").write_bytes(os.urandom(96 << 20))  # last in the tar: the others complete before it
    size = TOTAL + (96 << 20)
    for name in RELAY_HOSTS:
        lab_ssh(name, "rm -rf /opt/tritonops/wt-relay-cut")
    killed = {}

    def kill_the_middle_receiver() -> None:  # on the middle host of the chain, as soon as the shard is arriving
        staged = "/opt/tritonops/wt-relay-cut/models/.*.partial/zz-shard.bin.part"
        killed["proc"] = lab_ssh(LIGHT_H200X2, f"for i in $(seq 6000); do for f in {staged}; "
                                               "do [ -s \"$f\" ] && pkill -f 'relay[.]py receive' && exit 0; done; "
                                               "sleep 0.01; done; exit 1", timeout=180, check=False)

    watcher = threading.Thread(target=kill_the_middle_receiver)
    watcher.start()
    args = ModelWeightsArgs(source="controller_dir", path=str(folder), deployment="wt-relay-cut")
    try:
        report = relay_weights(args, relay_members(lab, session), fanout=1)
    finally:
        watcher.join(timeout=200)
    assert killed["proc"].returncode == 0, "the middle host's receive was not caught mid-stream"
    arrivals = report.arrivals
    assert [arrivals[n].how for n in RELAY_HOSTS] == ["controller", "relayed", "relayed"], arrivals
    assert len(report.plans) == 2 and arrivals[LIGHT_H200X2].relay_round == 2  # restarted from a host
    assert report.left_out[1] == len(MODEL)  # the files complete before the cut were not sent again
    assert report.bytes_out == size  # the controller sent the folder once, to the first host
    shard = hashlib.sha256((folder / "zz-shard.bin").read_bytes()).hexdigest()
    expected = {**expected_sha256s(), "zz-shard.bin": shard}
    for name in RELAY_HOSTS:
        assert host_sha256s(lab_ssh, name, f"/opt/tritonops/wt-relay-cut/models/{report.model_id}") == expected, name
    assert relay_leftovers(lab_ssh) == {}
    for name in RELAY_HOSTS:
        lab_ssh(name, "rm -rf /opt/tritonops/wt-relay-cut")


def test_the_deploy_phase_relays_a_shared_folder_and_a_host_the_others_cannot_reach_gets_it_from_the_controller(
        model_folder, lab, lab_ssh, tmp_path):
    doc = yaml.safe_load(lab.inventory_file.read_text())
    light = doc["all"]["children"]["lab"]["children"]["lab_light"]["hosts"]
    light[LIGHT_H200X2]["tritonops_relay_address"] = lab.host(LIGHT_H200X2).network_address
    # LIGHT_NOGPU says nothing: the controller reaches it on a forwarded loopback port, which no other host can
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(doc))
    hosts = [h for h in load_inventory([str(tmp_path / "inventory.yml")], ssh_config_file=os.devnull).select(None)
             if h.name in RELAY_HOSTS]
    args = {"source": "controller_dir", "deployment": "wt-phase", "root": "/opt/tritonops", "path": str(model_folder)}
    plans = {h.name: HostDeployPlan(h.name, (ModelInstancePlan("m", 1, str(model_folder),
                                                               weights=WeightsSpec(args, "m", "/m", "/m/.m")),))
             for h in hosts}
    for name in RELAY_HOSTS:
        lab_ssh(name, "rm -rf /opt/tritonops/wt-phase")
    recorded = []
    with SessionPool([h.connection for h in hosts]) as pool:
        names, bytes_out = weights_phase(pool, hosts, [h.name for h in hosts], plans, recorded.append)
    by = {r.host: r for r in recorded}
    assert sorted(names) == sorted(RELAY_HOSTS) and {r.task for r in recorded} == {"weights"}
    assert (by[FULL_2080TI].payload.how, by[LIGHT_H200X2].payload.how) == ("controller", "relayed")
    assert by[LIGHT_H200X2].payload.source == FULL_2080TI and by[LIGHT_H200X2].status == "changed"
    fallback = by[LIGHT_NOGPU]
    assert fallback.payload.how == "fallback" and fallback.status == "changed"
    assert "fallback: its address 127.0.0.1 is loopback: set tritonops_relay_address" in fallback.msg
    assert bytes_out == 2 * TOTAL  # the first host's copy and the fallback's
    for name in RELAY_HOSTS:
        assert host_sha256s(lab_ssh, name, f"/opt/tritonops/wt-phase/models/{by[name].payload.model_id}") == \
            expected_sha256s(), name
        lab_ssh(name, "rm -rf /opt/tritonops/wt-phase")
