"""Relaying the image host to host (issue #29): the tree (pure), the relay settings, and the host program's
pieces that decide what a host trusts and runs."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from tests.support.host_programs import run_program
from tritonops.errors import InputError
from tritonops.host_programs import relay as image_relay
from tritonops.relay.settings import relay_fanout, relay_peer
from tritonops.inventory import load_inventory
from tritonops.planning.relay import (Hop, RelayPeer, is_loopback, layer_chains, layers_everyone_has,
                                      plan_relay)

RUN = "0123456789abcdef0123456789abcdef"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDh0cml0b25vcHMtcmVsYXktdGVzdC1rZXktYnl0ZXM="


def test_one_holder_fans_out_breadth_first_and_no_host_sends_to_more_than_the_bound():
    plan = plan_relay(["build"], [f"t{i}" for i in range(1, 9)], fanout=2)
    assert plan.hops == (Hop("build", "t1"), Hop("build", "t2"), Hop("t1", "t3"), Hop("t1", "t4"),
                         Hop("t2", "t5"), Hop("t2", "t6"), Hop("t3", "t7"), Hop("t3", "t8"))
    assert plan.roots == ("build",) and plan.senders == ("build", "t1", "t2", "t3")
    assert plan.children("t1") == ("t3", "t4") and plan.upstream("t8") == "t3" and plan.upstream("build") is None


def test_a_fanout_of_one_is_a_chain():
    assert plan_relay(["a"], ["b", "c", "d"], fanout=1).hops == (Hop("a", "b"), Hop("b", "c"), Hop("c", "d"))


def test_every_holder_sends_before_any_receiver_does_and_holders_get_nothing():
    plan = plan_relay(["a", "b"], ["b", "t1", "t2", "t3", "t1"], fanout=1)
    assert plan.hops == (Hop("a", "t1"), Hop("b", "t2"), Hop("t1", "t3"))
    assert plan.roots == ("a", "b")


def test_nothing_to_send_is_an_empty_plan_and_nothing_to_send_from_is_an_error():
    assert plan_relay(["a"], [], fanout=3).hops == ()
    assert plan_relay([], [], fanout=3).hops == ()
    with pytest.raises(InputError, match="no host holds the image"):
        plan_relay([], ["t1"])


@pytest.mark.parametrize("fanout", [0, -1, 17, 2.5, True, "2"])
def test_a_fanout_outside_1_to_16_is_refused(fanout):
    with pytest.raises(InputError, match="fan-out must be a whole number from 1 to 16"):
        plan_relay(["a"], ["b"], fanout=fanout)


def test_loopback_addresses_cannot_be_reached_from_another_host():
    assert [is_loopback(a) for a in ("127.0.0.1", "127.1.2.3", "localhost", "::1", "10.0.0.1", "gpu-1")] == \
        [True, True, True, True, False, False]


def _inventory(tmp_path, **host_vars):
    lines = ["all:", "  hosts:", "    gpu-1:", "      ansible_host: 10.1.2.3", "      ansible_port: 2201",
             "      ansible_user: deploy"] + [f"      {k}: {v}" for k, v in host_vars.items()]
    path = tmp_path / "inv.yml"
    path.write_text("\n".join(lines) + "\n")
    return load_inventory([str(path)]).select(None)


def test_a_host_is_reached_where_the_controller_reaches_it_unless_it_says_otherwise(tmp_path):
    (host,) = _inventory(tmp_path)
    assert relay_peer(host) == RelayPeer("gpu-1", "10.1.2.3", 2201, "deploy")
    (host,) = _inventory(tmp_path, tritonops_relay_address="172.19.0.4")
    assert relay_peer(host) == RelayPeer("gpu-1", "172.19.0.4", 22, "deploy")
    (host,) = _inventory(tmp_path, tritonops_relay_address="gpu-1.internal:2222")
    assert relay_peer(host) == RelayPeer("gpu-1", "gpu-1.internal", 2222, "deploy")
    (host,) = _inventory(tmp_path, tritonops_relay_address="fd00::4")
    assert relay_peer(host).address == "fd00::4"


@pytest.mark.parametrize("value, message", [("'x;reboot'", "is not a host name or IP address"),
                                            ("'-oProxyCommand=x'", "is not a host name or IP address"),
                                            ("10.0.0.1:99999", "port"), ("'10.0.0.1:ssh'", "port")])
def test_a_hostile_relay_address_is_refused_at_its_line(tmp_path, value, message):
    (host,) = _inventory(tmp_path, tritonops_relay_address=value)
    with pytest.raises(InputError, match=message) as err:
        relay_peer(host)
    assert err.value.where.startswith(f"{tmp_path / 'inv.yml'}:7")


def test_the_fanout_is_the_smallest_one_set_and_2_by_default(tmp_path):
    assert relay_fanout(_inventory(tmp_path)) == 2
    assert relay_fanout(_inventory(tmp_path, tritonops_relay_fanout=5)) == 5
    with pytest.raises(InputError, match="fan-out") as err:
        relay_fanout(_inventory(tmp_path, tritonops_relay_fanout=0))
    assert ":7" in err.value.where


# ---- the host program ----------------------------------------------------------------------------------------

def test_an_upstream_key_may_run_this_runs_receive_and_nothing_else():
    assert image_relay.authorized_line(RUN, KEY) == (
        f'restrict,command="python3 /run/tritonops-relay-{RUN}/relay.py receive {RUN}" {KEY} tritonops-relay-{RUN}')


@pytest.mark.parametrize("key", ["ssh-rsa AAAA", KEY + " comment", KEY + '" ,command="sh', "", None,
                                 'ssh-ed25519 AAAA\nssh-ed25519 BBBB'])
def test_anything_but_one_ed25519_key_is_refused(key):
    with pytest.raises(SystemExit) as exit_:
        image_relay.authorized_line(RUN, key)
    assert exit_.value.code == 2


@pytest.mark.parametrize("run_id", ["", "0123", "../../etc", RUN.upper(), RUN + "/x", None])
def test_a_run_id_is_lowercase_hex(run_id):
    with pytest.raises(SystemExit) as exit_:
        image_relay.run_dir(run_id)
    assert exit_.value.code == 2


def test_a_child_is_dialled_with_the_runs_key_and_known_hosts_only():
    child = image_relay.checked_child({"name": "t1", "address": "172.19.0.3", "port": 22, "user": "root",
                                       "host_keys": ["ssh-ed25519 AAAAC3Nza"]})
    folder = f"/run/tritonops-relay-{RUN}"
    assert image_relay.hop_argv(folder, child) == [
        "ssh", "-F", "/dev/null", "-i", f"{folder}/key", "-o", "IdentitiesOnly=yes",
        "-o", f"UserKnownHostsFile={folder}/known_hosts", "-o", "GlobalKnownHostsFile=/dev/null",
        "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
        "-o", "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3",
        "-c", "aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com",
        "-p", "22", "-l", "root", "172.19.0.3",
        "receive"]
    assert image_relay.known_hosts_lines("172.19.0.3", 22, ["ssh-ed25519 AAAA"]) == ["172.19.0.3 ssh-ed25519 AAAA"]
    assert image_relay.known_hosts_lines("h", 2222, ["ssh-ed25519 AAAA", "ecdsa-sha2-nistp256 BBBB"]) == [
        "[h]:2222 ssh-ed25519 AAAA", "[h]:2222 ecdsa-sha2-nistp256 BBBB"]


@pytest.mark.parametrize("child", [
    {"name": "t1", "address": "-oProxyCommand=sh", "port": 22, "user": "root", "host_keys": ["ssh-ed25519 A"]},
    {"name": "t1", "address": "h", "port": 0, "user": "root", "host_keys": ["ssh-ed25519 A"]},
    {"name": "t1", "address": "h", "port": 22, "user": "-lroot", "host_keys": ["ssh-ed25519 A"]},
    {"name": "t1", "address": "h", "port": 22, "user": "root", "host_keys": []},
    {"name": "t1", "address": "h", "port": 22, "user": "root", "host_keys": ["ssh-ed25519 A\n* ssh-rsa B"]},
    {"name": "../t1", "address": "h", "port": 22, "user": "root", "host_keys": ["ssh-ed25519 A"]},
])
def test_a_hostile_child_is_refused(child):
    with pytest.raises(SystemExit) as exit_:
        image_relay.checked_child(child)
    assert exit_.value.code == 2


def test_the_stream_reaches_every_sink_and_one_that_stops_early_does_not_stop_the_others(tmp_path):
    data = bytes(range(256)) * (20 << 12)  # 20 MiB: 20 chunks, one progress mark
    sinks = {name: subprocess.Popen(["sh", "-c", f"cat > {tmp_path / name}"], stdin=subprocess.PIPE)
             for name in ("a", "b")}
    sinks["short"] = subprocess.Popen(["head", "-c", "10"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    everyone = dict(sinks)
    total, dropped = image_relay.pump(io.BytesIO(data), sinks, str(tmp_path / "progress"))
    codes = image_relay.wait_all(everyone)
    assert total == len(data) and dropped == ["short"]
    assert codes == {"a": 0, "b": 0, "short": 0}
    assert (tmp_path / "a").read_bytes() == data == (tmp_path / "b").read_bytes()
    assert int((tmp_path / "progress").read_text()) == image_relay.PROGRESS_EVERY  # bytes so far, for `report`


def test_the_program_refuses_bad_input_in_one_line():
    for args in (("cleanup", "../x"), ("send", RUN, "latest"), ("nope", RUN), (), ("send", RUN)):
        result = run_program("relay", *args)
        assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, (args, result.stderr)
    result = run_program("relay", "wire", RUN, stdin="[]")
    assert result.returncode == 2 and "JSON object" in result.stderr


def test_the_packed_program_is_the_module():
    from tritonops import host_programs

    assert host_programs.argv("relay", "report", RUN) == (
        "python3", "-c", host_programs.source("relay"), "report", RUN)
    assert sys.modules["tritonops.host_programs.relay"] is image_relay


@pytest.mark.parametrize("image_id", ["latest", "sha256:abc", "sha256:" + "0" * 64 + " --help", ""])
def test_a_relay_refuses_anything_but_an_image_id_before_reaching_any_host(image_id):
    from tritonops.image.relay import relay_image

    with pytest.raises(ValueError, match="not an image ID"):
        relay_image(image_id, [], [], {})


# ---- layers a stream may leave out ---------------------------------------------------------------------------

def test_a_host_holds_every_stack_its_images_are_built_on():
    assert layer_chains([("a", "b", "c"), ("a", "x")]) == frozenset(
        {("a",), ("a", "b"), ("a", "b", "c"), ("a", "x")})
    assert layer_chains([]) == frozenset()


def test_only_the_lowest_layers_every_receiver_holds_the_same_way_are_left_out():
    image = ("base1", "base2", "pip", "vllm")
    on_the_base = layer_chains([("base1", "base2")])
    older_env = layer_chains([("base1", "base2", "pip", "old-vllm")])
    assert layers_everyone_has(image, [on_the_base, older_env]) == ("base1", "base2")
    assert layers_everyone_has(image, [older_env]) == ("base1", "base2", "pip")
    assert layers_everyone_has(image, [on_the_base, frozenset()]) == ()  # one bare receiver: the whole image
    # the same layer on other layers is another layer: "pip" on "other" is not "pip" on the base
    assert layers_everyone_has(image, [layer_chains([("other", "pip"), ("base1",)])]) == ("base1",)
    assert layers_everyone_has(image, []) == ()


def _saved_image(path, layers: dict[str, bytes]) -> list[str]:
    """A `docker save` tar as Docker 20.10 writes it: a folder per layer (VERSION, json, layer.tar), the config,
    then manifest.json naming each layer's file in the config's diff_ids order. Returns the diff IDs."""
    import hashlib
    import json
    import tarfile

    diff_ids = ["sha256:" + hashlib.sha256(data).hexdigest() for data in layers.values()]
    config = json.dumps({"rootfs": {"type": "layers", "diff_ids": diff_ids}}).encode()
    config_name = hashlib.sha256(config).hexdigest() + ".json"
    files = [(config_name, config)]
    for folder, data in layers.items():
        files += [(f"{folder}/VERSION", b"1.0"), (f"{folder}/json", b"{}"), (f"{folder}/layer.tar", data)]
    files.append(("manifest.json", json.dumps([{"Config": config_name, "RepoTags": None,
                                                "Layers": [f"{f}/layer.tar" for f in layers]}]).encode()))
    with tarfile.open(path, "w") as tar:
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return diff_ids


def test_a_root_streams_the_saved_image_without_the_layers_everyone_holds(tmp_path):
    import tarfile

    spool = tmp_path / "image.tar"
    base, top = b"B" * (3 << 20), b"T" * 1000
    diff_ids = _saved_image(spool, {"aaaa": base, "bbbb": top})
    sinks = {name: subprocess.Popen(["sh", "-c", f"cat > {tmp_path / name}.tar"], stdin=subprocess.PIPE)
             for name in ("t1", "t2")}
    everyone = dict(sinks)
    sent, left_out = image_relay.stream_without(str(spool), {diff_ids[0]}, sinks)
    assert image_relay.wait_all(everyone) == {"t1": 0, "t2": 0} and left_out == 1
    for name in ("t1", "t2"):
        with tarfile.open(tmp_path / f"{name}.tar") as got:
            names = got.getnames()
            assert "aaaa/layer.tar" not in names and "aaaa/json" in names and "manifest.json" in names
            assert got.extractfile("bbbb/layer.tar").read() == top
        assert (tmp_path / f"{name}.tar").stat().st_size == sent < len(base)
