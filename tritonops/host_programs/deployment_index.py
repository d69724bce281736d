"""The host's index of its deployments (tritonops/serving/deployment_index.py is its shape and parser): add one
`<root>/<deployment>`, under a flock beside the file so two deploys of different deployments on one host both
land, written to a temporary name, fsynced and renamed into place. Adding one already there changes nothing.
A file that is not the index is left as it is (exit 3, why on stderr).

    python3 -c SOURCE add PATH ROOT DEPLOYMENT    stdout: {"added": true|false}
"""

import fcntl, json, os, sys

from tritonops.host_programs.basic import write_atomically


def entries_of(path):
    """The entries the file at `path` holds ([] when there is none); ValueError when it is not the index."""
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read(1024 * 1024).decode("utf-8"))
    except FileNotFoundError:
        return []
    if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("deployments"), list):
        raise ValueError("not a version 1 index of deployments")
    entries = data["deployments"]
    if not all(isinstance(e, dict) and set(e) == {"root", "deployment"} for e in entries):
        raise ValueError("an entry is not {root, deployment}")
    return entries


def add(path, root, deployment):
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    with open(path + ".lock", "a") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        try:
            entries = entries_of(path)
        except ValueError as err:
            sys.stderr.write("%s is left as it is: %s\n" % (path, err))
            sys.exit(3)
        entry = {"root": root, "deployment": deployment}
        if entry in entries:
            json.dump({"added": False}, sys.stdout)
            return
        entries = sorted(entries + [entry], key=lambda e: (e["root"], e["deployment"]))
        write_atomically(path, json.dumps({"version": 1, "deployments": entries}, indent=1) + "\n", 0o644)
    json.dump({"added": True}, sys.stdout)


def main():
    action, args = sys.argv[1], sys.argv[2:]
    if action == "add":
        add(*args)
    else:
        sys.exit("unknown action " + action)


if __name__ == "__main__":
    main()
