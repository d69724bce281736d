"""Who builds, and who sends what to whom (pure).

A host that already holds the exact image ID gets no bytes; at most a tag. Sources are hosts
holding the image, taken in turn so reads spread over them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Mapping, Sequence

from tritonops.errors import InputError


@dataclass(frozen=True)
class HostImage:
    """What one host holds of the wanted image."""

    host: str
    has_id: bool  # the exact image ID is present (tagged or not)
    content_tag_id: str | None = None  # the ID the content tag points at
    moving_tag_id: str | None = None  # the ID the moving tag points at


@dataclass(frozen=True)
class Transfer:
    source: str
    target: str
    method: Literal["stream", "registry"] = "stream"


@dataclass(frozen=True)
class DistributionPlan:
    image_id: str
    transfers: tuple[Transfer, ...] = ()
    retag: tuple[str, ...] = ()  # have the image, one of its tags is missing or elsewhere
    up_to_date: tuple[str, ...] = ()

    @property
    def no_op(self) -> bool:
        return not self.transfers and not self.retag


def plan_distribution(image_id: str, hosts: Sequence[HostImage], *, prefer: Sequence[str] = (),
                      registry: str | None = None) -> DistributionPlan:
    holders = [h.host for h in hosts if h.has_id]
    sources = [name for name in prefer if name in holders] + [name for name in holders if name not in prefer]
    transfers: list[Transfer] = []
    retag: list[str] = []
    up_to_date: list[str] = []
    method = "registry" if registry else "stream"
    turn = 0
    for h in hosts:
        if h.has_id:
            if h.content_tag_id == image_id and h.moving_tag_id == image_id:
                up_to_date.append(h.host)
            else:
                retag.append(h.host)
        elif sources:
            transfers.append(Transfer(sources[turn % len(sources)], h.host, method))
            turn += 1
        else:
            raise InputError(f"no host holds image {image_id[:19]}: nothing to distribute it from")
    return DistributionPlan(image_id, tuple(transfers), tuple(retag), tuple(up_to_date))


def choose_build_host(eligible: Sequence[str], has_base: Mapping[str, bool], configured: str | None = None,
                      refused: Mapping[str, str] | None = None) -> str:
    """The configured build host, else the first eligible host holding the base image, else the
    first eligible host (it pulls the base)."""
    if configured:
        if configured in eligible:
            return configured
        if refused and configured in refused:
            raise InputError(f"build host {configured} was refused: {refused[configured]}", "tritonops_build_host")
        raise InputError(f"build host {configured} is not among the hosts of this run "
                         f"({', '.join(eligible) or 'none'})", "tritonops_build_host")
    if not eligible:
        raise InputError("no host can build the image (every host was refused or failed)")
    for name in eligible:
        if has_base.get(name):
            return name
    return eligible[0]
