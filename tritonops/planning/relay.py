"""Who passes an image or a folder of weights to whom (pure): a tree over the hosts, rooted at the hosts that hold it.

Every host that needs the image gets exactly one upstream, a host that holds it or receives it earlier in the
same tree; no host sends to more than `fanout` others, so no host's uplink carries more than `fanout` copies.
Hosts are taken breadth first: the holders fill up first, then the first receivers, and so on, which keeps the
tree shallow (depth about log_fanout(N)). The streams of one tree are pipelined (each receiver passes bytes on
as they arrive), so depth costs latency, not a copy per level.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from tritonops.errors import InputError

DEFAULT_FANOUT = 2
MAX_FANOUT = 16


@dataclass(frozen=True)
class RelayPeer:
    """Where the other hosts reach one host's sshd (on their own network) and as whom."""

    name: str
    address: str
    port: int
    user: str


@dataclass(frozen=True)
class Hop:
    source: str
    target: str


@dataclass(frozen=True)
class RelayPlan:
    hops: tuple[Hop, ...] = ()

    def children(self, host: str) -> tuple[str, ...]:
        return tuple(h.target for h in self.hops if h.source == host)

    def upstream(self, host: str) -> str | None:
        return next((h.source for h in self.hops if h.target == host), None)

    @property
    def roots(self) -> tuple[str, ...]:
        """Holders that send: where a run starts its streams (`docker save`)."""
        targets = {h.target for h in self.hops}
        return tuple(dict.fromkeys(h.source for h in self.hops if h.source not in targets))

    @property
    def senders(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(h.source for h in self.hops))

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*self.senders, *(h.target for h in self.hops)]))


def is_loopback(address: str) -> bool:
    """An address that means "this machine" wherever it is dialled: another host cannot reach a host by it."""
    text = address.lower()
    return text == "localhost" or text.startswith("127.") or text in ("::1", "0:0:0:0:0:0:0:1")


def layer_chains(images: Iterable[Sequence[str]]) -> frozenset[tuple[str, ...]]:
    """Every stack of layers a host holds, from its images' layer lists (diff IDs, base first): each image holds
    each of its prefixes. A layer is only the same layer on top of the same layers below it."""
    return frozenset(tuple(layers[:i]) for layers in images for i in range(1, len(layers) + 1))


def layers_everyone_has(image_layers: Sequence[str], held: Sequence[frozenset[tuple[str, ...]]]) -> tuple[str, ...]:
    """The image's lowest layers that every receiver already holds, stacked the same way: a stream may leave them
    out (`docker load` uses the layer it has and never opens the missing file). Nothing without receivers."""
    if not held:
        return ()
    have = 0
    while have < len(image_layers) and all(tuple(image_layers[:have + 1]) in chains for chains in held):
        have += 1
    return tuple(image_layers[:have])


def check_fanout(fanout: int, where: str = "tritonops_relay_fanout") -> int:
    if isinstance(fanout, bool) or not isinstance(fanout, int) or not 1 <= fanout <= MAX_FANOUT:
        raise InputError(f"the relay fan-out must be a whole number from 1 to {MAX_FANOUT}, not {fanout!r}", where)
    return fanout


def plan_relay(holders: Sequence[str], needers: Sequence[str], fanout: int = DEFAULT_FANOUT) -> RelayPlan:
    """The tree that brings the image from `holders` to `needers` (in their order), at most `fanout` children
    per host. A host both holding and needing is a holder; a needer named twice is served once."""
    check_fanout(fanout)
    wanted = [n for n in dict.fromkeys(needers) if n not in set(holders)]
    if wanted and not holders:
        raise InputError("no host holds the image: nothing to relay it from")
    parents: deque[str] = deque(dict.fromkeys(holders))
    load: dict[str, int] = {}
    hops: list[Hop] = []
    for target in wanted:
        while load.get(parents[0], 0) >= fanout:
            parents.popleft()
        source = parents[0]
        load[source] = load.get(source, 0) + 1
        hops.append(Hop(source, target))
        parents.append(target)
    return RelayPlan(tuple(hops))


def files_someone_lacks(files: Sequence[tuple[str, int]], staged: Sequence[Mapping[str, int]]) -> tuple[str, ...]:
    """The files (path, size) of a folder that at least one receiver of a round lacks complete in its staging
    folder (path -> size of what is there): what the round's stream carries. A file every receiver holds complete
    is left out (it is verified with the rest on arrival); nothing without receivers."""
    if not staged:
        return ()
    return tuple(path for path, size in files if any(held.get(path) != size for held in staged))
