"""The program tritonops runs on a host (python3 -c, stdlib only, nothing installed) to read file
facts and to carry out file steps atomically. Its source is sent as the -c argument; the action and
its values are separate arguments, quoted by shlex.join, never pasted into the source.

    python3 -c SRC facts                 stdin: JSON queries   stdout: JSON answers
    python3 -c SRC put PATH MODE         stdin: the bytes      (temp file in the same folder, fsync, rename)
    python3 -c SRC mkdir PATH MODE
    python3 -c SRC symlink PATH TARGET   (temp link, rename: atomic replace)
    python3 -c SRC remove PATH RECURSIVE
    python3 -c SRC rename PATH TARGET     (refused when TARGET exists)
    python3 -c SRC lock PATH STALE_S BREAK  stdin: owner JSON; stdout: acquired, or who holds it
    python3 -c SRC unlock PATH TOKEN     (only the holder's token removes it)
"""

SOURCE = r'''
import hashlib, json, os, shutil, stat, sys, tempfile

def file_fact(q):
    path = q["path"]
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return {"kind": "missing"}
    except NotADirectoryError:
        return {"kind": "missing"}
    if stat.S_ISLNK(st.st_mode):
        return {"kind": "link", "link_target": os.readlink(path)}
    if stat.S_ISDIR(st.st_mode):
        return {"kind": "dir", "mode": stat.S_IMODE(st.st_mode)}
    if not stat.S_ISREG(st.st_mode):
        return {"kind": "other"}
    digest = hashlib.sha256()
    text = None
    with open(path, "rb") as handle:
        head = b""
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
            if q.get("content") and len(head) <= q["text_limit"]:
                head += chunk
    if q.get("content") and len(head) <= q["text_limit"]:
        try:
            text = head.decode("utf-8")
        except UnicodeDecodeError:
            text = None
    return {"kind": "file", "size": st.st_size, "mode": stat.S_IMODE(st.st_mode), "sha256": digest.hexdigest(),
            "text": text}

def dir_fact(q):
    try:
        return {"exists": True, "names": sorted(os.listdir(q["path"]))}
    except (FileNotFoundError, NotADirectoryError):
        return {"exists": False, "names": []}

def command_fact(q):
    import subprocess
    try:
        done = subprocess.run(q["argv"], stdin=subprocess.DEVNULL, capture_output=True, timeout=q["timeout_s"])
    except FileNotFoundError:
        return {"exit_code": 127, "stderr": "%s: not found" % q["argv"][0]}
    except subprocess.TimeoutExpired:
        return {"exit_code": 124, "stderr": "timed out"}
    return {"exit_code": done.returncode, "stdout": done.stdout.decode("utf-8", "replace")[-65536:],
            "stderr": done.stderr.decode("utf-8", "replace")[-4096:]}

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
            held = json.load(handle)
    except (FileNotFoundError, ValueError):
        return
    if held.get("token") == token:
        os.unlink(path)

action, args = sys.argv[1], sys.argv[2:]
if action == "facts":
    queries = json.load(sys.stdin)
    answer = {"file": file_fact, "dir": dir_fact, "command": command_fact}
    json.dump([answer[q["kind"]](q) for q in queries], sys.stdout)
elif action == "put":
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
elif action == "rename":
    if os.path.lexists(args[1]):
        sys.exit("rename: %s already exists" % args[1])
    os.rename(args[0], args[1])
else:
    sys.exit("unknown action " + action)
'''


def argv(action: str, *values: str, python: str = "python3") -> tuple[str, ...]:
    return (python, "-c", SOURCE, action, *values)
