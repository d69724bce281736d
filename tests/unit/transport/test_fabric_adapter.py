"""The fabric adapter against the real fabric package (its Connection and Group, its SSH config loading): fabric's
settings become the ConnectionSpec tritonops works with, hosts are named as the fabfile named them, a failed open
says why in the SSH transport's words and leaves fabric's AutoAddPolicy replaced by tritonops' own. Real sshd:
tests/lab/test_fabric_lab.py."""

import pytest
from fabric import Config, Connection, SerialGroup, ThreadingGroup
from paramiko import AutoAddPolicy

from tests.support.network import closed_port
from tritonops import api
from tritonops.errors import InputError
from tritonops.transport.base import Unreachable
from tritonops.transport.fabric_adapter import FabricOpener, fabric_spec, named_connections
from tritonops.transport.host_keys import AcceptNewHostKey, RefuseUnknownHostKey
from tritonops.transport.sessions import SessionPool


def config_with(tmp_path, text: str) -> Config:
    path = tmp_path / "ssh_config"
    path.write_text(text)
    return Config(runtime_ssh_path=str(path))


def test_a_connections_settings_become_the_spec_tritonops_reaches_the_host_with(tmp_path):
    config = config_with(tmp_path, "Host gpu1\n  HostName 10.0.0.5\n  Port 2222\n  User ubuntu\n"
                                   "  UserKnownHostsFile /srv/fleet/known_hosts /etc/ssh/other\n")
    connection = Connection("gpu1", config=config, connect_timeout=7,
                            connect_kwargs={"key_filename": ["/keys/a", "/keys/b"], "password": "hunter2"})
    spec = fabric_spec("gpu1", connection)
    assert (spec.name, spec.host, spec.port, spec.user) == ("gpu1", "10.0.0.5", 2222, "ubuntu")
    assert spec.key_files == ("/keys/a", "/keys/b") and spec.password is None  # fabric authenticates, not tritonops
    assert spec.known_hosts_file == "/srv/fleet/known_hosts" and spec.strict_host_key_checking == "yes"
    assert spec.connect_timeout_s == 7.0
    assert isinstance(spec.opener, FabricOpener) and spec.opener.connection is connection
    assert fabric_spec("gpu1", connection, known_hosts_file="/mine").known_hosts_file == "/mine"


@pytest.mark.parametrize("written, policy", [("accept-new", "accept-new"), ("no", "yes"), ("ask", "yes")])
def test_host_key_checking_is_never_laxer_than_accept_new(tmp_path, written, policy):
    config = config_with(tmp_path, f"Host gpu1\n  StrictHostKeyChecking {written}\n")
    assert fabric_spec("gpu1", Connection("gpu1", config=config)).strict_host_key_checking == policy


def test_a_group_is_named_as_the_fabfile_named_its_hosts_and_a_shared_address_by_its_port():
    group = ThreadingGroup("gpu1", "ubuntu@10.0.0.5:2201", "10.0.0.5:2202")
    assert list(named_connections(group)) == ["gpu1", "10.0.0.5:2201", "10.0.0.5:2202"]
    assert list(named_connections(SerialGroup("gpu1", "gpu2"))) == ["gpu1", "gpu2"]
    one = Connection("gpu1")
    assert named_connections(one) == {"gpu1": one}
    assert named_connections({"chat-a": one}) == {"chat-a": one}
    with pytest.raises(InputError, match="two fabric connections to 10.0.0.5:22"):
        named_connections([Connection("10.0.0.5"), Connection("root@10.0.0.5")])
    with pytest.raises(InputError, match="not a fabric Connection: str"):
        named_connections({"gpu1": "10.0.0.5"})


def test_a_fabric_group_through_the_api_is_an_inventory_whose_hosts_open_their_connections():
    group = ThreadingGroup("ubuntu@10.0.0.5:2201", "gpu2", connect_kwargs={"key_filename": "/keys/fleet"})
    inventory = api._inventory(None, group, {"tritonops_model": "/models/tiny"}, {})
    first, second = inventory.hosts
    assert (first.name, first.vars["ansible_host"], first.vars["ansible_port"], first.vars["ansible_user"]) == \
        ("10.0.0.5", "10.0.0.5", 2201, "ubuntu")
    assert first.vars["tritonops_model"] == second.vars["tritonops_model"] == "/models/tiny"
    assert [host.connection.opener.connection for host in inventory.hosts] == list(group)
    assert second.connection.key_files == ("/keys/fleet",)


def test_a_host_that_cannot_be_reached_is_unreachable_in_the_transports_words_and_keeps_tritonops_policy():
    port = closed_port()
    connection = Connection("127.0.0.1", user="root", port=port, connect_timeout=2)
    assert isinstance(connection.client._policy, AutoAddPolicy)  # fabric's own default
    spec = fabric_spec("gpu1", connection)
    with pytest.raises(Unreachable, match=f"cannot connect to root@127.0.0.1:{port}"):
        spec.opener(spec)
    assert isinstance(connection.client._policy, RefuseUnknownHostKey)
    assert not connection.is_connected

    with pytest.raises(Unreachable):
        spec.opener(spec, accept_new_host_keys=True)
    assert isinstance(connection.client._policy, AcceptNewHostKey)  # --accept-new-host-keys: record, never AutoAdd


def test_the_session_pool_reports_a_fabric_host_it_cannot_reach_and_goes_on():
    specs = [fabric_spec("down", Connection("127.0.0.1", port=closed_port(), connect_timeout=2))]
    with SessionPool(specs) as pool:
        (result,) = pool.run(lambda session: None, task="facts")
    assert (result.host, result.status) == ("down", "unreachable") and "cannot connect to" in result.msg
