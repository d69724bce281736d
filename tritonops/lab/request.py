"""What the user asks the lab for: hosts with a GPU profile and a kind. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tritonops.errors import InputError
from tritonops.lab.profile_file import GpuFaults
from tritonops.lab.profiles import PROFILES, get_profile

BALANCER_PROFILE = "nogpu"
KINDS = ("full", "light", "bastion", "balancer")
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,40}$")


@dataclass(frozen=True)
class HostSpec:
    name: str
    profile: str
    kind: str = "full"  # full: sshd + its own Docker engine; light: sshd + GPUs + python3;
    # bastion: a light host that forwards SSH to the others (ProxyJump), not a GPU host itself;
    # balancer: sshd + python3 + Debian's haproxy, no GPU: the front door (issue #31), group tritonops_balancers
    faults: GpuFaults = field(default_factory=GpuFaults)

    def __post_init__(self):
        if not _NAME.match(self.name):
            raise InputError(f"lab host name '{self.name}' must be lowercase letters, digits and '-'", "--hosts")
        if self.kind not in KINDS:
            raise InputError(f"lab host kind '{self.kind}' must be one of {', '.join(KINDS)}", "--hosts")
        get_profile(self.profile)
        if self.kind == "balancer" and self.profile != BALANCER_PROFILE:
            raise InputError(f"lab balancer '{self.name}' has no GPU: its profile is {BALANCER_PROFILE}, "
                             f"not {self.profile}", "--hosts")


@dataclass(frozen=True)
class LabRequest:
    hosts: tuple[HostSpec, ...]
    behind_bastion: bool = False  # the inventory reaches the hosts through the bastion host only

    def __post_init__(self):
        names = [h.name for h in self.hosts]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise InputError(f"lab host named twice: {', '.join(dupes)}", "--hosts")
        bastions = [h.name for h in self.hosts if h.kind == "bastion"]
        if len(bastions) > 1:
            raise InputError(f"a lab has at most one bastion, not {', '.join(bastions)}", "--hosts")
        if self.behind_bastion and not bastions:
            raise InputError("hosts behind a bastion need a host of kind bastion", "--bastion")

    @property
    def needs_full_hosts(self) -> bool:
        return any(h.kind == "full" for h in self.hosts)

    @property
    def needs_balancer_hosts(self) -> bool:
        return any(h.kind == "balancer" for h in self.hosts)

    @property
    def balancers(self) -> tuple[str, ...]:
        """The balancer hosts' names (the inventory's tritonops_balancers)."""
        return tuple(h.name for h in self.hosts if h.kind == "balancer")

    @property
    def bastion(self) -> str | None:
        """The bastion host's name, if one is requested (at most one)."""
        names = [h.name for h in self.hosts if h.kind == "bastion"]
        return names[0] if names else None


DEFAULT_HOSTS = (
    HostSpec("ws-2080ti", "2080ti", "full"),
    HostSpec("node-a100x4", "a100x4", "full"),
    HostSpec("node-h200x8", "h200x8", "full"),
)


def parse_hosts(text: str) -> tuple[HostSpec, ...]:
    """`NAME=PROFILE[:full|light|bastion|balancer],...` as given to `lab up --hosts`."""
    hosts = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, rest = item.partition("=")
        if not sep or not rest:
            raise InputError(f"'{item}' is not NAME=PROFILE[:full|light|bastion|balancer]; "
                             f"profiles: {', '.join(sorted(PROFILES))}", "--hosts")
        profile, _, kind = rest.partition(":")
        hosts.append(HostSpec(name.strip(), profile.strip(), kind.strip() or "full"))
    return tuple(hosts)


def light_hosts(count: int, profile: str = "h200x8") -> tuple[HostSpec, ...]:
    if count < 0:
        raise InputError("must not be negative", "--light")
    width = max(2, len(str(count)))
    return tuple(HostSpec(f"light-{i:0{width}d}", profile, "light") for i in range(1, count + 1))


def balancer_hosts(count: int) -> tuple[HostSpec, ...]:
    """`balancer-1..N`: opt-in front-door hosts (none unless asked for, so existing labs stay as they are)."""
    if count < 0:
        raise InputError("must not be negative", "--balancers")
    return tuple(HostSpec(f"balancer-{i}", BALANCER_PROFILE, "balancer") for i in range(1, count + 1))


DEFAULT_BASTION = HostSpec("bastion", "nogpu", "bastion")


def build_request(hosts: str | None = None, light: int = 0, light_profile: str = "h200x8",
                  bastion: bool = False, balancers: int = 0) -> LabRequest:
    """With `bastion`, a host `bastion` is added (unless one is named) and the others sit behind it. With
    `balancers` N, hosts `balancer-1..N` (kind balancer) are added beside the GPU hosts."""
    chosen = parse_hosts(hosts) if hosts else (DEFAULT_HOSTS if not light else ())
    chosen += light_hosts(light, light_profile)
    chosen += balancer_hosts(balancers)
    if bastion and not any(h.kind == "bastion" for h in chosen):
        chosen += (DEFAULT_BASTION,)
    return LabRequest(chosen, behind_bastion=bastion)
