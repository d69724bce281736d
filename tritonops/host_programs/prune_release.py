"""Remove one release folder of a deployment, for `tritonops prune`: only `<deployment dir>/releases/<id>`, only a
real folder (a symbolic link, there or at `releases`, is left alone: nothing outside is ever reached), never the
one `current` points to. A folder already gone is nothing to do.

    python3 -c SOURCE DEPLOYMENT_DIR RELEASE_ID
    stdout: {"removed": true, "bytes": N} | {"removed": false, "why": "..."}; exit 3 when it refuses
"""

import json, os, re, shutil, stat, sys

SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def refuse(why):
    json.dump({"removed": False, "why": why}, sys.stdout)
    sys.exit(3)


def size_of(path):
    total = 0
    for folder, dirs, files in os.walk(path):  # os.walk follows no symbolic link to a folder
        for name in dirs + files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return total


def main():
    deployment_dir, release = sys.argv[1], sys.argv[2]
    if not os.path.isabs(deployment_dir) or ".." in deployment_dir.split("/") \
            or not SAFE.fullmatch(release) or ".." in release:
        refuse("not a deployment folder and release id tritonops makes")
    releases = os.path.join(deployment_dir, "releases")
    path = os.path.join(releases, release)
    if os.path.islink(releases) or os.path.islink(path):
        refuse("%s is a symbolic link: left alone" % (releases if os.path.islink(releases) else path))
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        json.dump({"removed": False, "why": "already gone"}, sys.stdout)
        return
    if not stat.S_ISDIR(mode):
        refuse("%s is not a folder: left alone" % path)
    link = os.path.join(deployment_dir, "current")
    if os.path.islink(link) and os.path.basename(os.path.normpath(os.readlink(link))) == release:
        refuse("current points to %s now: left alone" % release)
    size = size_of(path)
    shutil.rmtree(path)  # on Linux it unlinks symbolic links inside, never what they point to
    json.dump({"removed": True, "bytes": size}, sys.stdout)


if __name__ == "__main__":
    main()
