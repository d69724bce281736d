"""The step actions: file steps carried out atomically on a host (tritonops/operations/execute.py runs
them; facts are read by the fact program, fact_queries.py). The action and its values are arguments,
quoted by shlex.join, never pasted into the source.

    python3 -c SOURCE put PATH MODE         stdin: the bytes      (temp file in the same folder, fsync, rename)
    python3 -c SOURCE mkdir PATH MODE
    python3 -c SOURCE symlink PATH TARGET   (temp link, rename: atomic replace)
    python3 -c SOURCE remove PATH RECURSIVE
    python3 -c SOURCE rename PATH TARGET    (refused when TARGET exists)
    python3 -c SOURCE lock PATH STALE_S BREAK  stdin: owner JSON; stdout: acquired, or who holds it
    python3 -c SOURCE unlock PATH TOKEN     (only the holder's token removes it); stdout: released or not
    python3 -c SOURCE held PATH             stdout: {"held": false}, or the lock file's text and age
"""

import json, os, shutil, sys, tempfile

def put(path, mode):
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tritonops-")
    try:
        with os.fdopen(fd, "wb") as out:
            shutil.copyfileobj(sys.stdin.buffer, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, int(mode, 8))
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise

def symlink(path, target):
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, ".tritonops-link-%d" % os.getpid())
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(target, tmp)
    os.replace(tmp, path)

def remove(path, recursive):
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        if recursive == "1":
            shutil.rmtree(path)
        else:
            os.rmdir(path)

def lock(path, stale_s, break_lock):
    import time
    owner = sys.stdin.read()
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        try:
            with open(path) as handle:
                held = handle.read()
            age = time.time() - os.stat(path).st_mtime
        except FileNotFoundError:  # released between our two looks: try once more
            return lock(path, stale_s, break_lock)
        if break_lock != "1" and age <= float(stale_s):
            json.dump({"acquired": False, "owner": held, "age_s": age}, sys.stdout)
            return
        fd_tmp, tmp = tempfile.mkstemp(dir=folder, prefix=".tritonops-lock-")
        with os.fdopen(fd_tmp, "w") as out:
            out.write(owner)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
        json.dump({"acquired": True, "broke": held, "age_s": age}, sys.stdout)
        return
    with os.fdopen(fd, "w") as out:
        out.write(owner)
    json.dump({"acquired": True}, sys.stdout)

def unlock(path, token):
    try:
        with open(path) as handle:
            owner = json.load(handle)
    except (FileNotFoundError, ValueError):
        json.dump({"released": False}, sys.stdout)
        return
    released = isinstance(owner, dict) and owner.get("token") == token
    if released:
        os.unlink(path)
    json.dump({"released": released}, sys.stdout)

def held(path):
    import time
    try:
        with open(path, "rb") as handle:
            text = handle.read(64 * 1024).decode("utf-8", "replace")
        age = time.time() - os.stat(path).st_mtime
    except FileNotFoundError:
        json.dump({"held": False}, sys.stdout)
        return
    json.dump({"held": True, "owner": text, "age_s": age}, sys.stdout)


def main():
    action, args = sys.argv[1], sys.argv[2:]
    if action == "put":
        put(args[0], args[1])
    elif action == "mkdir":
        os.makedirs(args[0], mode=int(args[1], 8), exist_ok=True)
    elif action == "symlink":
        symlink(args[0], args[1])
    elif action == "remove":
        remove(args[0], args[1])
    elif action == "lock":
        lock(args[0], args[1], args[2])
    elif action == "unlock":
        unlock(args[0], args[1])
    elif action == "held":
        held(args[0])
    elif action == "rename":
        if os.path.lexists(args[1]):
            sys.exit("rename: %s already exists" % args[1])
        os.rename(args[0], args[1])
    else:
        sys.exit("unknown action " + action)


if __name__ == "__main__":
    main()
