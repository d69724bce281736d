"""A balancer's HAProxy brought to the configuration the controller rendered (issue #31): installed when missing,
the new files checked by `haproxy -c` before anything live changes, then started (master-worker, daemon) or
reloaded hitlessly (SIGUSR2 to the master: a new worker takes the listeners, the old one finishes its requests).
A change of servers' maxconn (a new max_num_seqs), address and port (a replica booted on its other slot) or health
check port alone is made on the running worker through the stats socket (`set maxconn server`, `set server ...
addr`, `... check-port`) and written to the files, with no reload: a reload's old worker may cancel an HTTP/2 (gRPC)
stream that reaches it as it stops.

    python3 -c SOURCE            stdin: JSON {"dir", "files": {name: text}, "remove": [name], "pidfile",
                                              "socket", "install": bool, "keys_files": [path],
                                              "scripts_dir", "scripts": {name: text} (optional),
                                              "keys": {"action": "rotate" | "retire", "file": path,
                                                       "keep_old": bool, "check": bool} (optional)}
    stdout: JSON {"action": "started" | "reloaded" | "updated without a reload" | "unchanged" | "would reload",
                  "installed": bool,
                  "keys_created": [path], "version", "keys": {"file", "new", "kept": [id], "removed": [id]}}

`dir` holds every deployment's file on this balancer: the files given replace theirs, `remove` goes, the others
stay. `scripts` are Lua files the files load (`lua-load`), written into `scripts_dir` before `haproxy -c` reads
them: each is named for its content (door/program.py), so one already there is left as it is. A keys file that does
not exist is made (0600, in a 0700 folder) with one new key, never printed; a keys file whose content changed since
haproxy last loaded it (a key added or rotated by hand) reloads haproxy.

`keys` changes a keys file a door here checks, on this host (tritonops door rotate-key / retire-keys): `rotate`
puts a new key first, the old ones kept after it (`keep_old`, an overlap while clients move) or gone; `retire`
keeps only the newest key (the first). The file is replaced whole (0600) and haproxy reloads hitlessly; `check`
says what would change and touches nothing. Only key ids (`k:` and 12 hex digits of the key's SHA-256) leave
this host, never a key. One door program at a time on a balancer (an flock beside the pid file).

Exit codes: 0 done; 2 bad input (one line on stderr); 3 haproxy -c refused the new files (its words on stderr;
nothing live changed); 4 haproxy did not start or reload in time (stderr); 5 haproxy is missing and could not
be installed (stderr).
"""

import fcntl, hashlib, json, os, re, secrets, shutil, signal, socket, subprocess, sys, time

from tritonops.host_programs.basic import write_atomically
from tritonops.host_programs.haproxy_answers import refusal

NAME_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
READY_S = 20


def fail(code, message):
    sys.stderr.write(" ".join(str(message).split())[:2000] + "\n")
    sys.exit(code)


def checked(request):
    """The request's values, or exit 2: absolute paths without odd characters; file names of the safe alphabet."""
    def path(value, what):
        if not isinstance(value, str) or not value.startswith("/") or any(c.isspace() or ord(c) < 32 for c in value):
            fail(2, "%s %r is not an absolute path" % (what, value))
        return os.path.normpath(value)

    files = request.get("files") or {}
    remove = request.get("remove") or []
    for name in list(files) + list(remove):
        if not isinstance(name, str) or not name.endswith(".cfg") or set(name) - NAME_OK or name.startswith("."):
            fail(2, "file name %r is not a .cfg name of letters, digits, '-', '_' and '.'" % (name,))
    if not all(isinstance(text, str) for text in files.values()):
        fail(2, "file contents must be text")
    scripts = request.get("scripts") or {}
    for name, text in scripts.items():
        if not name.endswith(".lua") or set(name) - NAME_OK or name.startswith(".") or not isinstance(text, str):
            fail(2, "script %r is not a .lua name of letters, digits, '-', '_' and '.' with text" % (name,))
    scripts_dir = path(request.get("scripts_dir"), "scripts_dir") if scripts else None
    keys = request.get("keys")
    if keys is not None:
        if not isinstance(keys, dict) or keys.get("action") not in ("rotate", "retire"):
            fail(2, "keys must be {\"action\": \"rotate\" or \"retire\", \"file\": PATH}")
        keys = {"action": keys["action"], "file": path(keys.get("file"), "keys file"),
                "keep_old": bool(keys.get("keep_old")), "check": bool(keys.get("check"))}
    return (path(request.get("dir"), "dir"), files, remove, path(request.get("pidfile"), "pidfile"),
            path(request.get("socket"), "socket"), bool(request.get("install")),
            [path(p, "keys file") for p in request.get("keys_files") or []], keys, scripts_dir, scripts)


def haproxy_version():
    found = shutil.which("haproxy")
    if not found:
        return None
    done = subprocess.run([found, "-v"], capture_output=True, text=True)
    words = done.stdout.split()
    return words[2] if len(words) > 2 and words[:2] == ["HAProxy", "version"] else "?"


def install():
    """Debian's or Ubuntu's package; the package's own service is left alone (ours has its own files)."""
    if not shutil.which("apt-get"):
        fail(5, "haproxy is not installed and this host has no apt-get: install HAProxy 2.6 or later")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for argv in (["apt-get", "update", "-qq"],
                 ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "haproxy"]):
        done = subprocess.run(argv, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            fail(5, "haproxy is not installed and %s failed: %s" % (" ".join(argv[:2]), (done.stderr or done.stdout)[-400:]))


def make_key(path):
    """A keys file made on first use: one key, 0600, its folder 0700. False when it was already there."""
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    try:
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(handle, "w") as out:
        out.write(secrets.token_urlsafe(32) + "\n")
    return True


def key_id(key):
    """What may be shown of a key: its fingerprint."""
    return "k:" + hashlib.sha256(key.encode()).hexdigest()[:12]


def key_lines(text):
    """The keys of a keys file, in order (haproxy's pattern file: blank lines and '#' comments are no keys)."""
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def write_private(path, text):
    """`path` replaced whole by `text`, 0600, never half-written (a file beside it, then renamed)."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    partial = path + ".tritonops-new"
    if os.path.lexists(partial):
        os.unlink(partial)
    handle = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(handle, "w") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(partial, path)


def change_keys(keys, live):
    """The keys file changed as `keys` asks (not in check): (its text before or None, what changed: ids only)."""
    path = keys["file"]
    if not any(("-f %s\n" % path) in text for text in live.values()):
        fail(2, "no tritonops door on this balancer checks keys from %s: set tritonops_api_keys_file to it and "
                "deploy first" % path)
    before = read_text(path)
    old = key_lines(before or "")
    if keys["action"] == "rotate":
        new = None if keys["check"] else secrets.token_urlsafe(32)
        kept = old if keys["keep_old"] else []
        said = {"file": path, "new": key_id(new) if new else None, "kept": [key_id(k) for k in kept],
                "removed": [key_id(k) for k in old if k not in kept]}
        older = before.rstrip("\n") + "\n" if keys["keep_old"] and before else ""
        text = new + "\n" + older if new else None
    else:
        if not old:
            fail(2, "%s holds no key: nothing to keep (rotate a new one first)" % path)
        said = {"file": path, "new": None, "kept": [key_id(old[0])],
                "removed": [key_id(k) for k in old[1:] if k != old[0]]}
        lines = [line for line in before.splitlines() if key_lines(line) in ([], [old[0]])]
        text = "\n".join(lines).rstrip("\n") + "\n" if said["removed"] and not keys["check"] else None
    if text is not None:
        write_private(path, text)
    return before, said


def keys_digest(paths):
    """A digest of the keys files' contents: a key added, rotated or removed on the balancer reloads haproxy (it
    reads ACL files only when it starts)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.encode() + b"\0" + (read_text(path) or "").encode() + b"\0")
    return digest.hexdigest()


def read_text(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return None


def read_dir(folder):
    if not os.path.isdir(folder):
        return {}
    found = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".cfg"):
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                found[name] = handle.read()
    return found


def write_scripts(folder, scripts):
    """Each script whose file is missing or differs, written whole."""
    for name, text in scripts.items():
        target = os.path.join(folder, name)
        if read_text(target) != text:
            write_atomically(target, text)


def write_dir(folder, files):
    os.makedirs(folder, mode=0o755)
    for name, text in files.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as out:
            out.write(text)


def master_pid(pidfile):
    """The running master's pid from our pidfile, or None."""
    try:
        with open(pidfile) as handle:
            pid = int(handle.read().split()[0])
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        return None
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            if b"haproxy" not in handle.read():
                return None
    except OSError:
        pass
    return pid


def runtime(path, command, timeout=2):
    """HAProxy's answer to one runtime API command on the stats socket; None when the socket does not answer."""
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(timeout)
        conn.connect(path)
        conn.sendall((command + "\n").encode())
        data = b""
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
        conn.close()
    except OSError:
        return None
    return data.decode("utf-8", "replace")


def answers(path):
    """Whether the stats socket answers `show info`, and the worker's pid it names."""
    data = runtime(path, "show info")
    if data is None:
        return None
    for line in data.splitlines():
        if line.startswith("Pid:"):
            return line.split(":", 1)[1].strip()
    return None


SERVER_LINE = re.compile(r"^\s*server (\S+) (\S+):([0-9]+)((?: .*)?)$")
CHECK_PORT = re.compile(r" check port ([0-9]+)")
MAXCONN = re.compile(r" maxconn ([0-9]+)")


def server_line(line):
    """(name, address, port, health check port, maxconn, the rest with those numbers left out) of a `server` line;
    None for another line."""
    found = SERVER_LINE.match(line)
    if not found:
        return None
    name, address, port, rest = found.groups()
    check, maxconn = CHECK_PORT.search(rest), MAXCONN.search(rest)
    shape = MAXCONN.sub(" maxconn N", CHECK_PORT.sub(" check port N", rest))
    return (name, address, int(port), int(check.group(1)) if check else None,
            int(maxconn.group(1)) if maxconn else None, shape)


def server_changes(live, wanted):
    """The runtime commands that make the running worker what the wanted files say, when they differ from the
    running ones only in servers' address and port (a replica booted on its other slot), health check port or
    maxconn; None when anything else differs (that takes a reload)."""
    if set(live) != set(wanted):
        return None
    commands = []
    for name in sorted(wanted):
        old, new = live[name].splitlines(), wanted[name].splitlines()
        if len(old) != len(new):
            return None
        backend = None
        for before, after in zip(old, new):
            words = after.split()
            if len(words) == 2 and words[0] == "backend":
                backend = words[1]
            if before == after:
                continue
            was, now = server_line(before), server_line(after)
            if not (was and now and backend and was[0] == now[0] and was[5] == now[5]):
                return None
            server = "%s/%s" % (backend, now[0])
            if was[1:3] != now[1:3]:
                commands.append("set server %s addr %s port %d" % (server, now[1], now[2]))
            if was[3] != now[3]:
                commands.append("set server %s check-port %d" % (server, now[3]))
            if was[4] != now[4]:
                commands.append("set maxconn server %s %d" % (server, now[4]))
    return commands


def set_at_runtime(path, commands):
    """Each command sent to the running worker; whether every one was taken (HAProxy says so by the shape of its
    answer: door_runtime.refusal)."""
    for command in commands:
        said = runtime(path, command, timeout=5)
        if said is None or refusal(command, said):
            return False
    return True


def wait_for_worker(sock, not_pid):
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        pid = answers(sock)
        if pid is not None and pid != not_pid:
            return True
        time.sleep(0.1)
    return False


def main():
    try:
        request = json.loads(sys.stdin.read() or "{}")
    except ValueError as err:
        fail(2, "the request is not JSON: %s" % err)
    if not isinstance(request, dict):
        fail(2, "the request is not a JSON object")
    folder, files, remove, pidfile, sock, may_install, keys_files, keys, scripts_dir, scripts = checked(request)
    os.makedirs(os.path.dirname(pidfile), exist_ok=True)
    lock = open(pidfile + ".lock", "a")
    fcntl.flock(lock, fcntl.LOCK_EX)  # one door program at a time: a deploy's door and a key rotation
    if keys is not None:
        if keys["file"] not in keys_files:
            keys_files.append(keys["file"])
        before, said = change_keys(keys, read_dir(folder))
        if keys["check"]:
            changes = keys["action"] == "rotate" or said["removed"]
            print(json.dumps({"action": "would reload" if changes else "unchanged", "installed": False,
                              "keys_created": [], "version": haproxy_version() or "?", "keys": said}))
            return
    installed = False
    if haproxy_version() is None:
        if not may_install:
            fail(5, "haproxy is not installed")
        install()
        installed = True
    version = haproxy_version()
    created = [path for path in keys_files if make_key(path)]

    write_scripts(scripts_dir, scripts)  # also when nothing else changes: a later reload loads them again
    live = read_dir(folder)
    wanted = dict(live)
    wanted.update(files)
    for name in remove:
        wanted.pop(name, None)
    pid = master_pid(pidfile)
    keys_now = keys_digest(keys_files)
    stamp = pidfile + ".keys"  # the keys files' digest when haproxy last loaded them
    answer = {"installed": installed, "keys_created": created, "version": version}
    if keys is not None:
        answer["keys"] = said
    if wanted == live and pid is not None and not created and read_text(stamp) == keys_now:
        print(json.dumps(dict(answer, action="unchanged")))
        return
    runtime = server_changes(live, wanted) \
        if pid is not None and not created and keys is None and read_text(stamp) == keys_now else None
    stage = folder + ".next"
    shutil.rmtree(stage, ignore_errors=True)
    write_dir(stage, wanted)
    check = subprocess.run(["haproxy", "-c", "-f", stage], capture_output=True, text=True)
    if check.returncode != 0:
        shutil.rmtree(stage, ignore_errors=True)
        if keys is not None and read_text(keys["file"]) != before:  # the keys as the running door has them
            write_private(keys["file"], before) if before is not None else os.unlink(keys["file"])
        fail(3, "haproxy -c refused the new configuration (nothing changed): " + (check.stderr or check.stdout))
    if wanted != live or not os.path.isdir(folder):
        old = folder + ".prev"
        shutil.rmtree(old, ignore_errors=True)
        if os.path.isdir(folder):
            os.rename(folder, old)
        os.rename(stage, folder)
    else:
        shutil.rmtree(stage, ignore_errors=True)
    os.makedirs(os.path.dirname(sock), exist_ok=True)
    os.makedirs(os.path.dirname(pidfile), exist_ok=True)
    if pid is not None and runtime and set_at_runtime(sock, runtime):
        action = "updated without a reload"  # the files say what the worker now runs with
    elif pid is not None:
        before = answers(sock)
        os.kill(pid, signal.SIGUSR2)
        if not wait_for_worker(sock, before):
            fail(4, "haproxy was told to reload (pid %d) but no new worker answered on %s within %d s"
                 % (pid, sock, READY_S))
        action = "reloaded"
    else:
        done = subprocess.run(["haproxy", "-W", "-D", "-f", folder, "-p", pidfile], capture_output=True, text=True)
        if done.returncode != 0 or not wait_for_worker(sock, None):
            fail(4, "haproxy did not start: " + ((done.stderr or done.stdout).strip() or
                                                  "no worker answered on %s within %d s" % (sock, READY_S)))
        action = "started"
    with open(stamp, "w") as out:
        out.write(keys_now)
    print(json.dumps(dict(answer, action=action)))


if __name__ == "__main__":
    main()
