"""The steps that carry out a prune decision (planning/prune.py) on a host, in the order that lets each succeed:
the containers parked for a removed release (`docker rm`, never forced: a running one is refused), the release
folders (host_programs/prune_release.py: only `<deployment>/releases/<id>`, no symbolic link followed, never
current's), then the images (`docker image rm` by each tag, never forced: docker refuses one a container uses)."""

from __future__ import annotations

import posixpath

from tritonops import host_programs
from tritonops.operations.steps import Run
from tritonops.planning.prune import ImageDecision, PrunePlan, ReleaseDecision


def remove_container(name: str) -> Run:
    return Run(("docker", "rm", name), timeout_s=120.0)


def remove_release(release: ReleaseDecision) -> Run:
    deployment_dir = posixpath.dirname(posixpath.dirname(release.folder))
    return Run(host_programs.argv("prune_release", deployment_dir, release.release), timeout_s=600.0,
               program="prune_release")


def remove_image(image: ImageDecision) -> Run:
    return Run(("docker", "image", "rm", *(image.tags or (image.id,))), timeout_s=300.0)


def prune_steps(plan: PrunePlan) -> list[tuple[str, Run]]:
    """(what it removes, the step), in order."""
    return ([(f"container {name}", remove_container(name)) for name in plan.removed_containers]
            + [(f"release {r.release}", remove_release(r)) for r in plan.removed_releases]
            + [(f"image {i.id[7:19] if i.id.startswith('sha256:') else i.id[:12]}", remove_image(i))
               for i in plan.removed_images])
