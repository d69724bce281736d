"""A deployment's folder on the host (`<root>/releases/<id>/release.json`, `<root>/current`), as the release folder
and Ray member programs change it (stdlib only). Not a program of its own: imported, and packed into the programs
that import it (tritonops/host_programs/__init__.py).
"""

import json, os, secrets, shutil

from tritonops.host_programs.basic import write_atomically


def current_release(root):
    """The release `current` names, or None."""
    try:
        target = os.readlink(os.path.join(root, "current"))
    except OSError:
        return None
    return target[len("releases/"):] if target.startswith("releases/") else None


def switch_current(root, release):
    """`current` names `release` (a temporary link renamed over it: atomic)."""
    link = os.path.join(root, "current")
    tmp = link + ".tritonops-new"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(os.path.join("releases", release), tmp)
    os.replace(tmp, link)


def release_document(root, release):
    """The release's release.json as a dict, or None when it is missing or damaged."""
    try:
        with open(os.path.join(root, "releases", release, "release.json")) as handle:
            body = json.load(handle)
    except (OSError, ValueError):
        return None
    return body if isinstance(body, dict) else None


def gate_passed(root, release):
    """Whether the release has a passed gate on record."""
    return passed_in(release_document(root, release) or {})


def passed_in(body):
    """Whether a release.json (a dict) records a passed gate."""
    gates = body.get("gates") or []
    return isinstance(gates, list) and any(isinstance(g, dict) and g.get("passed") for g in gates)


def record_gate(root, release, gate, if_none_passed=False):
    """The gate appended to the release's release.json (left as it is when damaged: a damaged release is never gone
    back to); with `if_none_passed`, only when no passed gate is on record yet. Whether it was recorded."""
    body = release_document(root, release)
    if body is None or not isinstance(body.get("gates", []), list):
        return False
    if if_none_passed and passed_in(body):
        return False
    body.setdefault("gates", []).append(gate)
    write_atomically(os.path.join(root, "releases", release, "release.json"), json.dumps(body, indent=2) + "\n")
    return True


def record_serve(root, release, serve):
    """The release's release.json says where its replicas run (`serve`: the record with each replica on the slot
    the rollout boots it on); left as it is when damaged. Whether it changed."""
    body = release_document(root, release)
    if body is None or body.get("serve") == serve:
        return False
    body["serve"] = serve
    write_atomically(os.path.join(root, "releases", release, "release.json"), json.dumps(body, indent=2) + "\n")
    return True


def prune(root, keep, current, previous):
    """The newest `keep` releases kept (and always `current` and `previous`), the older folders removed: their
    names (their parked containers are the caller's to remove)."""
    folder = os.path.join(root, "releases")
    try:
        names = sorted(n for n in os.listdir(folder) if not n.startswith("."))
    except OSError:
        return []
    doomed = [n for n in names[:-keep] if n not in (current, previous)] if keep > 0 else []
    for name in doomed:
        shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
    return doomed


def ensure_admin_key(path):
    """The restricted APIs' key: made here (0600, random) the first time, so it never travels."""
    if path and not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(24) + "\n")


def install_logger(path, source):
    """The container logger, next to the releases: written when missing or different."""
    try:
        with open(path) as handle:
            if handle.read() == source:
                return
    except OSError:
        pass
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    write_atomically(path, source, 0o644)
