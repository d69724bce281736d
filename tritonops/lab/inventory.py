"""Render the lab's Ansible-compatible inventory and known_hosts. Pure."""

from __future__ import annotations

from pathlib import Path

import yaml

from tritonops.lab.state import LabHost, LabState
from tritonops.planning.door import ADDRESS_VAR, BALANCERS_GROUP, BIND_VAR, KEYS_VAR
from tritonops.transport.host_keys import known_hosts_name


WHEELHOUSE_PORT = 18431


def build_host(state: LabState) -> str | None:
    """The full host that builds the vllm_env image and serves the lab's package index."""
    full = sorted(h.name for h in state.hosts if h.kind == "full")
    return full[0] if full else None


def image_vars(builder: str) -> dict:
    """What a user of a mirror would set: the lab's index is that mirror (on the build host's loopback;
    the build container shares the host's network)."""
    from tritonops.lab.image_specs import TRITON_TAG
    from tritonops.lab.wheelhouse import LAB_VLLM_VERSION, index_url

    return {
        "tritonops_image_mode": "committed",
        "tritonops_triton_image": TRITON_TAG,
        "tritonops_vllm_version": LAB_VLLM_VERSION,
        "tritonops_build_host": builder,
        "tritonops_pip_index_url": index_url(WHEELHOUSE_PORT),
        "tritonops_pip_trusted_host": "127.0.0.1",
        # a lab host is a container without CAP_SYS_RESOURCE (docs/lab.md): it cannot raise memlock/stack
        "tritonops_ulimits": [],
        # Triton's GPU metrics (DCGM over the lab's libnvidia-ml) never finish starting: the server would
        # hang after its model table, before HTTP
        "tritonops_triton_args": ["--allow-gpu-metrics=false"],
    }


def constraints_path(state_dir: Path) -> Path:
    return Path(state_dir) / "vllm-constraints.txt"


def constraints_text() -> str:
    """A pip constraints file naming the stand-in vllm wheel's sha256: the image's content hash covers the
    constraints, so a changed stand-in makes a new image (the pin alone would not)."""
    import hashlib

    from tritonops.lab.wheelhouse import LAB_VLLM_VERSION
    from tritonops.lab.wheelhouse.wheel import wheel_bytes

    return (f"# the lab's stand-in vllm {LAB_VLLM_VERSION} wheel, sha256 "
            f"{hashlib.sha256(wheel_bytes(LAB_VLLM_VERSION)).hexdigest()}\n")


# Every GPU of the lab's multi-GPU full hosts serves (issue #22): the A100 host a replica per GPU, the H200 host
# four at tensor parallel 2 on NVLinked pairs.
LAB_KEYS_FILE = "/etc/tritonops/lab-door.keys"  # a balancer's API keys (made on first use, 0600)

REPLICA_VARS = {"a100x4": {"tritonops_replicas": "auto"},
                "h200x8": {"tritonops_replicas": 4, "tritonops_tensor_parallel_size": 2}}


def render_inventory(state: LabState, bastion: LabHost | None = None, proxy: str = "jump",
                     models: bool = True) -> str:
    """The lab's GPU hosts (a bastion is not one of them). With `bastion`, each host is named by its
    container name on the lab network, which only the bastion can reach: `proxy` "jump" routes
    through it with ProxyJump, "command" with a ProxyCommand running `ssh -W`. With `models`, the
    lab's models (tritonops.lab.models, under the state dir) as tritonops_model: the full hosts'
    group variable, and a host variable on hosts of a small-GPU profile (the 2080 Ti); and the multi-GPU full
    hosts' replicas (REPLICA_VARS). Balancer hosts form the group tritonops_balancers (with `lab_door_address`,
    their lab-network address, also their `tritonops_bind_address`: where HAProxy's exporter binds, for the lab's
    Prometheus to scrape); with one, each GPU host says where the balancer reaches its replicas
    (`tritonops_replica_address`, its lab-network address)."""
    from tritonops.lab.models import FULL_HOST_MODEL, host_model, model_path

    groups: dict[str, dict] = {"lab_full": {"hosts": {}}, "lab_light": {"hosts": {}}, BALANCERS_GROUP: {"hosts": {}}}
    # Only a lab with a balancer says where the replicas are reached: a lab without one is written as before.
    with_door = any(h.kind == "balancer" for h in state.hosts)
    builder = build_host(state)
    if builder:
        groups["lab_full"]["vars"] = image_vars(builder)
        groups["lab_full"]["vars"]["tritonops_pip_constraints"] = str(constraints_path(state.state_dir))
    if models and any(h.kind == "full" for h in state.hosts):
        groups["lab_full"].setdefault("vars", {})["tritonops_model"] = str(model_path(state.state_dir, FULL_HOST_MODEL))
    for host in state.hosts:
        if host.kind == "bastion":
            continue
        reach = {"ansible_host": host.container if bastion else host.address,
                 "ansible_port": 22 if bastion else host.port}
        if host.kind == "balancer":
            # the demo's door takes API keys: a key made on first use in this file on the balancer
            door = groups[BALANCERS_GROUP]["hosts"][host.name] = {**reach, "lab_kind": host.kind,
                                                                   KEYS_VAR: LAB_KEYS_FILE}
            if host.network_address:  # where this machine (tests, the demo) reaches the balancer's doors
                door["lab_door_address"] = host.network_address
                door["tritonops_door_address"] = host.network_address  # and `tritonops bench` (issue #24)
                # its private address: HAProxy's exporter binds there, where the lab's Prometheus scrapes it
                door[BIND_VAR] = host.network_address
            continue
        entry = groups[f"lab_{host.kind}"]["hosts"][host.name] = {
            **reach,
            "lab_gpu_profile": host.profile,
            "lab_kind": host.kind,
        }
        if host.kind == "full" and host.network_address:
            # the other full hosts pass it the vllm_env image here (image/relay.py), on the lab network
            entry["tritonops_relay_address"] = host.network_address
        if with_door and host.network_address:
            # the balancer container reaches the replicas' published ports at this host's lab-network address
            entry[ADDRESS_VAR] = host.network_address
        if models and host_model(host.profile):
            entry["tritonops_model"] = str(model_path(state.state_dir, host_model(host.profile)))
        if models and host.kind == "full":
            entry.update(REPLICA_VARS.get(host.profile, {}))
    ssh_args = f"-o UserKnownHostsFile={state.known_hosts_file} -o StrictHostKeyChecking=yes"
    if bastion:
        ssh_args += " " + bastion_ssh_option(state, bastion, proxy)
    doc = {"all": {
        "vars": {
            "ansible_user": "root",
            "ansible_ssh_private_key_file": str(state.key_file),
            "ansible_ssh_common_args": ssh_args,
        },
        "children": {"lab": {"children": {name: g for name, g in groups.items() if g["hosts"]}}},
    }}
    header = f"# Written by `tritonops lab up` ({state.prefix}); `tritonops lab down` removes it.\n"
    return header + yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)


def bastion_ssh_option(state: LabState, bastion: LabHost, proxy: str = "jump") -> str:
    """The ssh option that reaches a lab host through the bastion (for ansible_ssh_common_args)."""
    if proxy == "jump":
        return f"-o ProxyJump=root@{bastion.address}:{bastion.port}"
    if proxy == "command":
        # OpenSSH's own client does the hop; %h and %p are the inner host's container name and 22.
        return (f'-o ProxyCommand="ssh -F /dev/null -i {state.key_file} -o UserKnownHostsFile={state.known_hosts_file} '
                f'-o StrictHostKeyChecking=yes -o BatchMode=yes -p {bastion.port} -W %h:%p root@{bastion.address}"')
    raise ValueError(f"proxy must be 'jump' or 'command', not {proxy!r}")


def render_known_hosts(entries: list[tuple[str, int, str]]) -> str:
    """(address, port, 'ssh-ed25519 AAAA...') → known_hosts lines ('name' on port 22, else '[name]:port')."""
    return "".join(f"{known_hosts_name(addr, port)} {key.strip()}\n" for addr, port, key in entries)
