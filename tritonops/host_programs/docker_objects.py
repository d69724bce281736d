"""The host's containers (running or not) and images, as `tritonops prune` needs them (tritonops/image/
host_objects.py parses this): each container's name, image ID, whether it runs and its tritonops labels; each
image's ID, tags, size and tritonops labels. Read with the docker CLI; nothing is changed.

    python3 -c SOURCE     stdout: JSON {containers: [...], images: [...]}; exit 1 when docker does not answer
"""

import json, subprocess, sys

PREFIX = "tritonops."


def docker(*args):
    done = subprocess.run(("docker",) + args, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        sys.stderr.write("docker %s: %s\n" % (args[0], done.stderr.strip()[-400:]))
        sys.exit(1)
    return done.stdout


def ours(labels):
    return {k: v for k, v in (labels or {}).items() if k.startswith(PREFIX)}


def main():
    containers, images = [], []
    ids = docker("ps", "-aq", "--no-trunc").split()
    for info in json.loads(docker("container", "inspect", *ids)) if ids else []:
        state = info.get("State") or {}
        containers.append({"name": (info.get("Name") or "").lstrip("/"), "image": info.get("Image"),
                           "running": bool(state.get("Running")), "state": state.get("Status"),
                           "labels": ours((info.get("Config") or {}).get("Labels"))})
    ids = sorted(set(docker("images", "-q", "--no-trunc").split()))
    for info in json.loads(docker("image", "inspect", *ids)) if ids else []:
        images.append({"id": info.get("Id"), "tags": info.get("RepoTags") or [], "size": info.get("Size") or 0,
                       "labels": ours((info.get("Config") or {}).get("Labels"))})
    json.dump({"containers": containers, "images": images}, sys.stdout)


if __name__ == "__main__":
    main()
