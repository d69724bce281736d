"""Where a host's deployment lives: (root, deployment name) from its variables, checked once, since
both become paths on the host and the container's name. Pure."""

from __future__ import annotations

import posixpath

from tritonops.errors import TritonopsError
from tritonops.facts.defaults import DEFAULT_ROOT
from tritonops.planning.entries import host_where
from tritonops.values.names import safe_name

DEFAULT_DEPLOYMENT = "default"


def deployment_of(host) -> tuple[str, str]:
    """(root, deployment) of a host, checked: they become paths on it."""
    root = str(host.vars.get("tritonops_root") or DEFAULT_ROOT)
    where = host_where(host, "tritonops_root")
    if not posixpath.isabs(root) or ".." in root.split("/") or any(c in root for c in "\n\0"):
        raise TritonopsError(f"{where + ': ' if where else ''}tritonops_root must be an absolute path, not {root!r}")
    return posixpath.normpath(root), safe_name(host.vars.get("tritonops_deployment") or DEFAULT_DEPLOYMENT,
                                               "tritonops_deployment", host_where(host, "tritonops_deployment"))


def deployment_dir(host) -> str:
    """<root>/<deployment> of a host."""
    return posixpath.join(*deployment_of(host))
