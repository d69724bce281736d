"""Where a command finds its playbook and roles when none is named: a project of one's own first,
then the ones shipped inside the tritonops package (tritonops/playbooks/, tritonops/roles/).

They ship inside the package, not beside it, so that `pip install tritonops` deploys as a checkout
does: a wheel carries only the package folder.
"""

from __future__ import annotations

import os
from pathlib import Path

# A wheel is installed unpacked, so the package folder is a real folder: the loader reads these
# files by path (and shows those paths in file:line errors), which importlib.resources would not promise.
PACKAGE = Path(__file__).resolve().parents[1]
SHIPPED_PLAYBOOKS = PACKAGE / "playbooks"
SHIPPED_ROLES = PACKAGE / "roles"


def playbook_path(name: str, project: Path = Path(".")) -> Path:
    """`playbooks/NAME` of the project (by default the working directory) when it has one, else the shipped one.

    Shipped is also the answer when neither exists, so the error names the file a user would expect."""
    own = project / "playbooks" / name
    return own if own.is_file() else SHIPPED_PLAYBOOKS / name


def roles_path(playbook: str | os.PathLike) -> tuple[str, ...]:
    """`roles/` beside the playbook's folder, then the shipped roles: the folders that exist, each once.

    (`roles/` next to the playbook itself is the loader's own first place, as in Ansible.)"""
    beside = Path(os.path.abspath(playbook)).parent.parent / "roles"
    found = (os.path.normpath(folder) for folder in (beside, SHIPPED_ROLES) if folder.is_dir())
    return tuple(dict.fromkeys(found))
