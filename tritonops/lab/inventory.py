"""Render the lab's Ansible-compatible inventory and known_hosts. Pure."""

from __future__ import annotations

import yaml

from tritonops.lab.state import LabState


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
    }


def render_inventory(state: LabState) -> str:
    groups: dict[str, dict] = {"lab_full": {"hosts": {}}, "lab_light": {"hosts": {}}}
    builder = build_host(state)
    if builder:
        groups["lab_full"]["vars"] = image_vars(builder)
    for host in state.hosts:
        groups[f"lab_{host.kind}"]["hosts"][host.name] = {
            "ansible_host": host.address,
            "ansible_port": host.port,
            "lab_gpu_profile": host.profile,
            "lab_kind": host.kind,
        }
    doc = {"all": {
        "vars": {
            "ansible_user": "root",
            "ansible_ssh_private_key_file": str(state.key_file),
            "ansible_ssh_common_args":
                f"-o UserKnownHostsFile={state.known_hosts_file} -o StrictHostKeyChecking=yes",
        },
        "children": {"lab": {"children": {name: g for name, g in groups.items() if g["hosts"]}}},
    }}
    header = f"# Written by `tritonops lab up` ({state.prefix}); `tritonops lab down` removes it.\n"
    return header + yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)


def render_known_hosts(entries: list[tuple[str, int, str]]) -> str:
    """(address, port, 'ssh-ed25519 AAAA...') → known_hosts lines."""
    return "".join(f"[{addr}]:{port} {key.strip()}\n" for addr, port, key in entries)
