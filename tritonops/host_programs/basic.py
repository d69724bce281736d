"""What the host programs share (stdlib only), the way Ansible's modules share `module_utils/basic.py`: answer
and fail, run docker, read a container's state and log lines, write a file atomically, hold a flock. Not a
program of its own: a program imports it as `from tritonops.host_programs.basic import ...`, and the packer puts
this file's text in that line's place (tritonops/host_programs/__init__.py).
"""

import fcntl, json, os, subprocess, sys, tempfile, time


def answer(document):
    """The program's one JSON answer on stdout; it ends here with exit 0."""
    json.dump(document, sys.stdout)
    sys.stdout.flush()
    sys.exit(0)


def fail(why, code=3):
    """The program cannot do what it was asked: why on stderr, a non-zero exit."""
    sys.stderr.write(why.rstrip("\n") + "\n")
    sys.exit(code)


def docker(*args, timeout=120):
    """(exit code, stdout, stderr) of `docker ARGS...`."""
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout, done.stderr


def inspect(name):
    """A container's state as the programs read it, or None when there is no container of that name."""
    code, out, _ = docker("inspect", name)
    if code != 0:
        return None
    info = json.loads(out)[0]
    state = info.get("State", {})
    labels = info.get("Config", {}).get("Labels") or {}
    return {"running": bool(state.get("Running")), "status": state.get("Status"),
            "restarts": int(info.get("RestartCount", 0)), "exit_code": state.get("ExitCode"),
            "release": labels.get("tritonops.release"), "logging": labels.get("tritonops.logging"),
            "image": info.get("Image"), "started_at": state.get("StartedAt"), "pid": state.get("Pid")}


TRITON_LEVELS = {"info": "I", "warn": "W", "error": "E", "debug": "V"}


def message(line):
    """A container logger line (one ECS JSON object) read back as the line it was: Triton's keep their time and
    level letter in front (the failure classifier passes over Triton's info and warning lines), vLLM's are their
    message."""
    if line.startswith("{"):
        try:
            doc = json.loads(line)
        except ValueError:
            return line
        if isinstance(doc, dict) and isinstance(doc.get("message"), str):
            level = TRITON_LEVELS.get(doc.get("log.level"))
            if doc.get("service.name") == "triton" and level and isinstance(doc.get("@timestamp"), str):
                return "%s %s %s" % (doc["@timestamp"], level, doc["message"])
            return doc["message"]
    return line


def logs(name, lines=400):
    """The container's last log lines, each as it was written (`message`)."""
    code, out, err = docker("logs", "--tail", str(lines), name)
    return [message(line) for line in (out + err).splitlines()[-lines:]]


def write_atomically(path, data, mode=0o644):
    """`data` (bytes or text) at `path`: a temporary file in the same folder, fsynced, then renamed into place."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tritonops-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data.encode("utf-8") if isinstance(data, str) else data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def flock(path, wait_s):
    """An exclusive flock on `path` (made 0600), waited for at most `wait_s` seconds: the open descriptor (the
    lock lasts until the program ends: the kernel drops it), or None when another holder kept it that long."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    end = time.time() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.time() > end:
                os.close(fd)
                return None
            time.sleep(0.5)
