"""The lab's release listing: a deployment folder's releases, the newest one's release.json and files,
and its weights folders (tritonops/lab/releases.py). It changes nothing.

    python3 -c SOURCE FOLDER    stdout: JSON {releases, newest, files, models}
"""

import json, os, sys


def names(path):
    return sorted(n for n in os.listdir(path) if not n.startswith(".")) if os.path.isdir(path) else []


def main():
    folder = sys.argv[1]
    releases = names(os.path.join(folder, "releases"))
    newest, files = None, []
    if releases:
        top = os.path.join(folder, "releases", releases[-1])
        files = sorted(os.path.relpath(os.path.join(d, n), top) for d, _, ns in os.walk(top) for n in ns)
        try:
            with open(os.path.join(top, "release.json")) as handle:
                newest = json.load(handle)
        except (OSError, ValueError):
            newest = None
    json.dump({"releases": releases, "newest": newest, "files": files, "models": names(os.path.join(folder, "models"))},
              sys.stdout)


if __name__ == "__main__":
    main()
