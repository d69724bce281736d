"""The host's index of its deployments: every `<root>/<deployment>` tritonops deployed on the host, in one small
JSON file at a fixed path (INDEX_PATH), so `tritonops prune` can tell which releases, of every deployment on the
host, still name an image (an image is shared by the host, its deployments are not).

    {"version": 1, "deployments": [{"root": "/opt/tritonops", "deployment": "chat"}, ...]}

Deploy adds its deployment (operations/deployment_index.py, through host_programs/deployment_index.py under a
flock, written atomically); an entry is never removed by tritonops. `parse_index` reads the file back (pure);
a file that is not this shape is damaged, never guessed at.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from typing import Any

from tritonops.errors import InputError, TritonopsError
from tritonops.text import printable
from tritonops.values.names import safe_name

INDEX_PATH = "/var/lib/tritonops/deployments.json"
INDEX_VERSION = 1
MAX_ENTRIES = 1024


@dataclass(frozen=True, order=True)
class IndexedDeployment:
    root: str          # absolute, normalised: /opt/tritonops
    deployment: str    # a safe name

    @property
    def folder(self) -> str:
        return posixpath.join(self.root, self.deployment)


@dataclass(frozen=True)
class DeploymentIndex:
    deployments: tuple[IndexedDeployment, ...] = ()   # sorted, each once

    def names(self, root: str, deployment: str) -> bool:
        return IndexedDeployment(posixpath.normpath(root), deployment) in self.deployments

    def with_deployment(self, root: str, deployment: str) -> "DeploymentIndex":
        entry = indexed(root, deployment)
        return DeploymentIndex(tuple(sorted({*self.deployments, entry})))


def indexed(root: Any, deployment: Any) -> IndexedDeployment:
    """An index entry, checked: an absolute root without '..', a safe deployment name; InputError otherwise."""
    if not isinstance(root, str) or not posixpath.isabs(root) or ".." in root.split("/") or "\0" in root:
        raise InputError(f"a deployment root must be an absolute path without '..', not {printable(repr(root))}")
    return IndexedDeployment(posixpath.normpath(root), safe_name(deployment, "deployment"))


def parse_index(text: str) -> DeploymentIndex:
    """The index file's text -> DeploymentIndex; TritonopsError naming why when it is not the index's shape."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("version") != INDEX_VERSION:
            raise ValueError(f"not a version {INDEX_VERSION} index")
        listed = data.get("deployments")
        if not isinstance(listed, list) or len(listed) > MAX_ENTRIES:
            raise ValueError(f"deployments is not a list of at most {MAX_ENTRIES}")
        entries = []
        for item in listed:
            if not isinstance(item, dict) or set(item) != {"root", "deployment"}:
                raise ValueError("an entry is not {root, deployment}")
            entries.append(indexed(item["root"], item["deployment"]))
    except (ValueError, InputError) as err:
        raise TritonopsError(f"{INDEX_PATH} is not tritonops' index of deployments: "
                             f"{printable(str(getattr(err, 'what', err)))[:200]}") from None
    return DeploymentIndex(tuple(sorted(set(entries))))


def index_text(index: DeploymentIndex) -> str:
    """What the file holds for `index` (what host_programs/deployment_index.py writes)."""
    return json.dumps({"version": INDEX_VERSION, "deployments": [
        {"root": entry.root, "deployment": entry.deployment} for entry in index.deployments]}, indent=1) + "\n"
