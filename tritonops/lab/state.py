"""The lab as it stands: hosts with their address, port and credentials (data for tests and CLI)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tritonops.results import GroupResult
from tritonops.transport.spec import ConnectionSpec


@dataclass(frozen=True)
class LabHost:
    name: str
    profile: str
    kind: str  # full | light | bastion | balancer
    port: int
    container: str
    address: str = "127.0.0.1"
    running: bool = True
    healthy: bool = False  # sshd answered with an SSH banner
    # the container's IP address on the lab network: where the other lab containers reach its published
    # ports (a balancer its replicas), and where this machine reaches them too (it routes to that network)
    network_address: str | None = None


@dataclass(frozen=True)
class LabState:
    prefix: str
    state_dir: Path
    inventory_file: Path
    hosts: tuple[LabHost, ...] = ()
    results: GroupResult = field(default_factory=GroupResult)
    notes: tuple[str, ...] = ()  # what was done besides hosts: engine started, images built (with times)

    @property
    def key_file(self) -> Path:
        return self.state_dir / "id_ed25519"

    @property
    def known_hosts_file(self) -> Path:
        return self.state_dir / "known_hosts"

    @property
    def changed(self) -> bool:
        return any(r.changed for r in self.results)

    def host(self, name: str) -> LabHost:
        for h in self.hosts:
            if h.name == name:
                return h
        raise KeyError(name)

    def connection(self, name: str) -> ConnectionSpec:
        """How tritonops's own transport reaches a lab host (strict host-key checking)."""
        h = self.host(name)
        return ConnectionSpec(name=h.name, host=h.address, port=h.port, user="root",
                              key_files=(str(self.key_file),), known_hosts_file=str(self.known_hosts_file))

    def connection_behind(self, name: str, bastion: str) -> ConnectionSpec:
        """How to reach a lab host through the bastion only: by its container name on the lab network."""
        h, b = self.host(name), self.host(bastion)
        return ConnectionSpec(name=h.name, host=h.container, port=22, user="root", key_files=(str(self.key_file),),
                              known_hosts_file=str(self.known_hosts_file), proxy_jump=f"root@{b.address}:{b.port}")

    def ssh_argv(self, name: str, *command: str) -> list[str]:
        """`ssh` arguments that reach a lab host, ignoring the user's ~/.ssh/config."""
        h = self.host(name)
        return ["ssh", "-F", "/dev/null", "-i", str(self.key_file), "-o", f"UserKnownHostsFile={self.known_hosts_file}",
                "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
                "-p", str(h.port), f"root@{h.address}", *command]

    def to_json(self) -> dict:
        return {
            "prefix": self.prefix,
            "state_dir": str(self.state_dir),
            "inventory": str(self.inventory_file),
            "key_file": str(self.key_file),
            "known_hosts": str(self.known_hosts_file),
            "hosts": [asdict(h) for h in self.hosts],
            "results": [{"host": r.host, "status": r.status, "msg": r.msg, "elapsed_s": round(r.elapsed_s, 2)}
                        for r in self.results],
            "notes": list(self.notes),
        }


def ports_file(state_dir: Path) -> Path:
    return state_dir / "ports.json"


def read_ports(state_dir: Path) -> dict[str, int]:
    """Ports recorded per host name; they outlive `lab down` so a host comes back on its port."""
    try:
        return {k: int(v) for k, v in json.loads(ports_file(state_dir).read_text()).items()}
    except (FileNotFoundError, ValueError):
        return {}


def write_ports(state_dir: Path, ports: dict[str, int]) -> None:
    ports_file(state_dir).write_text(json.dumps(dict(sorted(ports.items())), indent=1) + "\n")
