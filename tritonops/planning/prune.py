"""What `tritonops prune` removes from a host, and why it keeps everything else. Pure: decided from what the host
holds (each indexed deployment's releases, the images, the containers), tested by equality.

Release folders are pruned for the deployments this run holds the lock of (`pruned`); every release of another
deployment on the host counts as kept (its own prune, under its own lock, removes them). Per pruned deployment,
newest first, a release is kept when it is
  current; previous (what a rollback goes back to); used by a running container; or one of the `keep` newest;
anything else is removed, with the stopped containers labelled with it (what the serve step parked for a
rollback to it). A `vllm_env` image is removed when nothing keeps it: no kept release of ANY deployment on the
host names it, no container that stays uses it (running or not: docker would refuse), and it is not what
`tritonserver:vllm_env` points to (what the next deploy runs). Other images, and weights, are never touched.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Sequence

from tritonops.errors import InputError
from tritonops.values.names import safe_name

DEFAULT_KEEP = 3


@dataclass(frozen=True)
class ReleaseOnHost:
    id: str
    image_id: str | None
    damaged: bool = False          # its release.json cannot be used (never gone back to)


@dataclass(frozen=True)
class DeploymentOnHost:
    root: str                      # /opt/tritonops
    deployment: str
    releases: tuple[ReleaseOnHost, ...]
    current: str | None = None
    previous: str | None = None    # the release a rollback goes back to
    pruned: bool = True            # its folders are this run's to prune (it holds its lock)


@dataclass(frozen=True)
class ImageOnHost:
    id: str                        # sha256:...
    tags: tuple[str, ...] = ()
    vllm_env: bool = False         # built or tagged by tritonops as the vllm_env image
    next_deploy: bool = False      # tagged tritonserver:vllm_env: what the next deploy runs
    size_bytes: int = 0


@dataclass(frozen=True)
class ContainerOnHost:
    name: str
    image_id: str
    running: bool
    deployment: str | None = None  # its tritonops.deployment label
    release: str | None = None     # its tritonops.release label


@dataclass(frozen=True)
class ReleaseDecision:
    deployment: str
    release: str
    folder: str                    # <root>/<deployment>/releases/<id>
    remove: bool
    why: str
    image_id: str | None = None
    containers: tuple[str, ...] = ()  # stopped containers labelled with it, removed with it


@dataclass(frozen=True)
class ImageDecision:
    id: str
    tags: tuple[str, ...]
    size_bytes: int
    remove: bool
    why: str


@dataclass(frozen=True)
class PrunePlan:
    releases: tuple[ReleaseDecision, ...]   # the pruned deployments', each newest first
    images: tuple[ImageDecision, ...]       # every vllm_env image on the host

    @property
    def removed_releases(self) -> tuple[ReleaseDecision, ...]:
        return tuple(r for r in self.releases if r.remove)

    @property
    def removed_images(self) -> tuple[ImageDecision, ...]:
        return tuple(i for i in self.images if i.remove)

    @property
    def removed_containers(self) -> tuple[str, ...]:
        return tuple(name for r in self.removed_releases for name in r.containers)

    @property
    def image_bytes(self) -> int:
        """What the removed images hold together (layers another image shares stay: at most this is freed)."""
        return sum(i.size_bytes for i in self.removed_images)

    @property
    def nothing_to_do(self) -> bool:
        return not self.removed_releases and not self.removed_images


def checked_keep(keep: int) -> int:
    if isinstance(keep, bool) or not isinstance(keep, int) or not 0 <= keep <= 1000:
        raise InputError(f"keep is a count of releases from 0 to 1000, not {keep!r}", "--keep")
    return keep


def decide_prune(deployments: Sequence[DeploymentOnHost], images: Sequence[ImageOnHost],
                 containers: Sequence[ContainerOnHost], keep: int = DEFAULT_KEEP) -> PrunePlan:
    """What to remove from one host, and why each other release and vllm_env image stays."""
    keep = checked_keep(keep)
    releases = [decision for d in deployments if d.pruned for decision in _releases(d, containers, keep)]
    removed = {(r.deployment, r.release) for r in releases if r.remove}
    gone = {name for r in releases if r.remove for name in r.containers}
    kept_by: dict[str, str] = {}  # image id -> the first kept release naming it
    for d in deployments:
        for release in sorted(d.releases, key=lambda r: r.id, reverse=True):
            if release.image_id and (not d.pruned or (d.deployment, release.id) not in removed):
                kept_by.setdefault(release.image_id, f"release {release.id} of {d.deployment}"
                                       + ("" if d.pruned else " (another deployment: its own prune decides)"))
    staying = [c for c in containers if c.name not in gone]
    decisions = tuple(_image(image, kept_by, staying) for image in sorted(images, key=lambda i: i.id) if image.vllm_env)
    return PrunePlan(tuple(releases), decisions)


def _releases(deployment: DeploymentOnHost, containers, keep: int) -> list[ReleaseDecision]:
    running = {c.release: c.name for c in containers
               if c.running and c.deployment == deployment.deployment and c.release}
    decisions = []
    for rank, release in enumerate(sorted(deployment.releases, key=lambda r: r.id, reverse=True)):
        folder = posixpath.join(deployment.root, deployment.deployment, "releases", release.id)
        kept = _kept(deployment, release, rank, running, keep)
        if kept is not None:
            decisions.append(ReleaseDecision(deployment.deployment, release.id, folder, False, kept, release.image_id))
            continue
        parked = tuple(sorted(c.name for c in containers if not c.running
                              and c.deployment == deployment.deployment and c.release == release.id))
        why = (f"older than the {keep} newest, " if keep else "") + "not current or previous" \
            + ("; its release.json is damaged" if release.damaged else "")
        decisions.append(ReleaseDecision(deployment.deployment, release.id, folder, True, why, release.image_id,
                                         parked))
    return decisions


def _kept(deployment: DeploymentOnHost, release: ReleaseOnHost, rank: int, running: dict, keep: int) -> str | None:
    """Why `release` stays; None: it goes."""
    if release.id == deployment.current:
        return "current"
    if release.id == deployment.previous:
        return "previous: what a rollback goes back to"
    if release.id in running:
        return f"a running container uses it ({running[release.id]})"
    if rank < keep:
        return f"one of the {keep} newest"
    try:
        safe_name(release.id, "release")
    except InputError:
        return "not a release name tritonops makes: left alone"
    return None


def _image(image: ImageOnHost, kept_by: dict[str, str], staying: list[ContainerOnHost]) -> ImageDecision:
    user = next((c for c in staying if c.image_id == image.id and c.running), None) \
        or next((c for c in staying if c.image_id == image.id), None)
    if image.id in kept_by:
        why = f"{kept_by[image.id]} names it"
    elif user is not None:
        why = f"container {user.name} uses it ({'running' if user.running else 'stopped'})"
    elif image.next_deploy:
        why = "tagged tritonserver:vllm_env: what the next deploy runs"
    else:
        return ImageDecision(image.id, image.tags, image.size_bytes, True, "no kept release names it, no "
                             "container uses it")
    return ImageDecision(image.id, image.tags, image.size_bytes, False, why)
