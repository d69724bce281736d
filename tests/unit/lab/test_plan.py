"""Planning the lab: requests, ports, which hosts to create/keep/recreate/remove (no Docker)."""

import pytest

from tritonops.errors import InputError
from tritonops.lab.image_specs import (base_spec, host_balancer_spec, host_full_spec, host_light_spec,
                                       tritonserver_spec)
from tritonops.lab.plan import ExistingHost, assign_ports, plan_hosts, spec_hash
from tritonops.lab.request import (DEFAULT_HOSTS, HostSpec, LabRequest, balancer_hosts, build_request,
                                    parse_hosts)


def test_default_request_is_three_full_hosts():
    assert build_request().hosts == DEFAULT_HOSTS
    assert [(h.name, h.profile, h.kind) for h in DEFAULT_HOSTS] == [
        ("ws-2080ti", "2080ti", "full"), ("node-a100x4", "a100x4", "full"), ("node-h200x8", "h200x8", "full")]


def test_hosts_option_and_light_hosts():
    request = build_request("a=t4,b=h200x2:light", light=3, light_profile="l4")
    assert [(h.name, h.profile, h.kind) for h in request.hosts] == [
        ("a", "t4", "full"), ("b", "h200x2", "light"),
        ("light-01", "l4", "light"), ("light-02", "l4", "light"), ("light-03", "l4", "light")]
    assert [h.name for h in build_request(light=2).hosts] == ["light-01", "light-02"]
    assert build_request(light=100).hosts[0].name == "light-001"


def test_balancers_are_opt_in_hosts_without_a_gpu():
    assert build_request(balancers=0) == build_request()
    assert not build_request().needs_balancer_hosts and build_request().balancers == ()
    request = build_request(light=1, balancers=2)
    assert [(h.name, h.profile, h.kind) for h in request.hosts] == [
        ("light-01", "h200x8", "light"), ("balancer-1", "nogpu", "balancer"), ("balancer-2", "nogpu", "balancer")]
    assert request.needs_balancer_hosts and not request.needs_full_hosts
    assert request.balancers == ("balancer-1", "balancer-2")
    # the default GPU hosts stay when only balancers are added
    assert build_request(balancers=1).hosts == DEFAULT_HOSTS + balancer_hosts(1)
    assert parse_hosts("door=nogpu:balancer") == (HostSpec("door", "nogpu", "balancer"),)
    with pytest.raises(InputError, match="--balancers"):
        build_request(balancers=-1)


@pytest.mark.parametrize("text, message", [
    ("a", "is not NAME=PROFILE"),
    ("door=h200x8:balancer", "has no GPU: its profile is nogpu"),
    ("a=h9000", "unknown GPU profile 'h9000'"),
    ("a=t4:huge", "kind 'huge'"),
    ("A_B=t4", "lowercase"),
    ("a=t4,a=l4", "named twice"),
])
def test_bad_hosts_are_input_errors(text, message):
    with pytest.raises(InputError, match=message):
        LabRequest(parse_hosts(text))


def test_ports_are_stable_and_skip_taken_ones():
    assert assign_ports(["a", "b", "c"], {"b": 22200}, {22201}) == {"b": 22200, "a": 22202, "c": 22203}
    assert assign_ports(["x"], {}, set(), base=22300) == {"x": 22300}


def _existing(name, spec, running=True, port=22200):
    return ExistingHost(name, f"lab-{name}", spec_hash(spec, "img"), running, port)


def test_plan_keeps_starts_recreates_creates_and_removes():
    a, b, c, d = (HostSpec(n, "t4", "light") for n in "abcd")
    changed_c = HostSpec("c", "l4", "light")
    existing = [_existing("a", a), _existing("b", b, running=False), _existing("c", c), _existing("e", a)]
    request = LabRequest((a, b, changed_c, d))
    hashes = {h.name: spec_hash(h, "img") for h in request.hosts}
    ports = {"a": 22200, "b": 22200, "c": 22200, "d": 22201}
    actions = plan_hosts(request, existing, hashes, ports)
    assert [(x.host, x.action) for x in actions] == [
        ("a", "keep"), ("b", "start"), ("c", "recreate"), ("d", "create"), ("e", "remove")]


def test_same_request_plans_nothing_but_keeps():
    request = LabRequest(DEFAULT_HOSTS)
    existing = [_existing(h.name, h, port=22200 + i) for i, h in enumerate(DEFAULT_HOSTS)]
    hashes = {h.name: spec_hash(h, "img") for h in DEFAULT_HOSTS}
    ports = {h.name: 22200 + i for i, h in enumerate(DEFAULT_HOSTS)}
    assert {x.action for x in plan_hosts(request, existing, hashes, ports)} == {"keep"}


def test_a_new_image_recreates_the_host():
    spec = HostSpec("a", "t4", "light")
    assert spec_hash(spec, "img1") != spec_hash(spec, "img2")


def test_image_tags_follow_their_inputs():
    base = base_spec()
    light = host_light_spec(base, b"pynvml v1")
    assert light.tag == host_light_spec(base, b"pynvml v1").tag
    assert light.tag != host_light_spec(base, b"pynvml v2").tag
    assert host_full_spec(light).tag != host_full_spec(host_light_spec(base, b"pynvml v2")).tag
    triton = tritonserver_spec(base, "sha-of-wheel")
    assert triton.extra_tags == ("nvcr.io/nvidia/tritonserver:24.10-py3",)
    assert triton.labels["tritonops.lab.inputs"] == triton.inputs_hash
    assert f"FROM {base.tag}" in triton.dockerfile_text()


def test_the_balancer_image_is_a_light_host_with_debians_haproxy_and_follows_its_parent():
    base = base_spec()
    light = host_light_spec(base, b"pynvml v1")
    balancer = host_balancer_spec(light)
    assert balancer.role == "host-balancer" and balancer.repository == "tritonops-lab/host-balancer"
    assert balancer.tag == host_balancer_spec(host_light_spec(base, b"pynvml v1")).tag
    assert balancer.tag != host_balancer_spec(host_light_spec(base, b"pynvml v2")).tag
    assert balancer.inputs_hash not in {light.inputs_hash, host_full_spec(light).inputs_hash}
    assert balancer.labels == {"tritonops.lab.inputs": balancer.inputs_hash, "tritonops.lab.image": "host-balancer"}
    text = balancer.dockerfile_text()
    assert f"FROM {light.tag}" in text.splitlines()
    assert "apt-get install -y --no-install-recommends haproxy" in text and "docker.io" not in text
