"""Render the lab's Ansible-compatible inventory and known_hosts. Pure."""

from __future__ import annotations

import yaml

from tritonops.lab.state import LabState


def render_inventory(state: LabState) -> str:
    groups: dict[str, dict] = {"lab_full": {"hosts": {}}, "lab_light": {"hosts": {}}}
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
