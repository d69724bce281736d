"""One host's part in relaying something to other hosts (issue #29): hosts pass a stream on over their own network,
so it leaves the controller at most once. What moves is the cargo: an image (`docker save` into `docker load`) or
a folder of model weights (a tar of the files into the receiver's staging folder).

    python3 -c SOURCE prepare RUN_ID     stdin: JSON {"program": this program's text, "key": bool}
        makes /run/tritonops-relay-RUN_ID (0700) holding this program; with "key", a key pair made here for this run
        (the private half never leaves the host). stdout: JSON {"public_key": "ssh-ed25519 ..." | null,
        "host_keys": ["type base64", ...]} (this host's sshd keys, for its upstreams' known_hosts).
    python3 -c SOURCE wire RUN_ID        stdin: JSON {"authorize": ["ssh-ed25519 ..."], "children": [{"name",
        "address", "port", "user", "host_keys": [...]}], "sink": SINK | null, "send": ORDER | null}
        authorizes each upstream key for the forced command `receive` only (`restrict`, marked with the run), and
        records where this host passes the stream on (the children, with their host keys: strict checking), what
        it does with a stream it receives (SINK), and, on a root, what it sends (ORDER):
          SINK  {"kind": "image"}: into `docker load`;
                {"kind": "folder", "staging": PATH, "files": {rel: size}}: the files into PATH (unpack below)
          ORDER {"kind": "image", "image_id": "sha256:...", "skip": [layer diff IDs every receiver holds]}
                {"kind": "folder", "root": PATH, "files": [{"path": rel, "size": n}]}: those files of PATH
    python3 -c SOURCE send RUN_ID
        the order streamed to the children. An image: `docker save`; with layers to skip, saved to a spool file
        first (its manifest, at the end of the tar, says which file is which layer) and streamed without those
        layers' files (`docker load` never opens the file of a layer it holds). A folder: a tar of its files.
        stdout: JSON {"bytes", "save_rc", "children": {name: rc}, "child_errors": {name: what ssh said}, "skipped": n}.
    receive RUN_ID  (the forced command a child's authorized key runs; stdin: the stream)
        the stream into the sink here and on to this host's children as it arrives; result in receive.json.
    python3 RUN_DIR/relay.py unpack RUN_ID   (receive's local sink for a folder; stdin: the tar)
        each file the sink names, of the size it names, to `<name>.part` and renamed to `<name>` once complete;
        a file already complete there is read past, not written again. Anything else in the tar is refused.
    python3 -c SOURCE report RUN_ID      stdout: receive.json (or {"bytes": progress so far} while running).
    python3 -c SOURCE cleanup RUN_ID     the run's key lines, a receive still running and the folder removed.
        stdout: JSON {"keys_removed": n, "dir_removed": bool}.

A broken child does not stop the others or the local sink; the controller verifies every host afterwards (an
image by its ID, a folder file by file against its manifest), so a stream cut anywhere shows as a host lacking
the cargo, never as a wrong one.
Exit codes: 0 done; 1 the local sink or the send failed (receive / send / unpack); 2 bad input (one line on stderr).
"""

import json, os, re, signal, subprocess, sys, tarfile

MARK = "tritonops-relay-"
RUN_ID_RE = re.compile(r"^[0-9a-f]{16,64}$")
IMAGE_ID_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
PUBLIC_KEY_RE = re.compile(r"^ssh-ed25519 [A-Za-z0-9+/]+={0,3}$")
HOST_KEY_RE = re.compile(r"^[a-z0-9@.-]+ [A-Za-z0-9+/]+={0,3}$")
ADDRESS_RE = re.compile(r"^[A-Za-z0-9_:][A-Za-z0-9._:%-]*$")
USER_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._@-]*$")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# AES-GCM first: the CPUs of GPU hosts have AES instructions, and it costs about 30 % less CPU than OpenSSH's
# default chacha20-poly1305 (measured in the lab: 1.4 s against 2.0 s for a 582 MB image); the others as fallbacks
CIPHERS = "aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com"
CHUNK = 1 << 20
SPOOL = "/var/tmp/" + MARK + "%s.tar"  # a root's `docker save`, when the stream leaves layers out
PROGRESS_EVERY = 16 << 20


def fail(code, message):
    sys.stderr.write(" ".join(str(message).split())[:2000] + "\n")
    sys.exit(code)


def run_dir(run_id):
    if not isinstance(run_id, str) or not RUN_ID_RE.match(run_id):
        fail(2, "run id %r is not 16 to 64 lowercase hex digits" % (run_id,))
    return "/run/" + MARK + run_id


def authorized_line(run_id, public_key):
    """The authorized_keys line that lets `public_key` run this run's `receive` and nothing else."""
    if not PUBLIC_KEY_RE.match(public_key or ""):
        fail(2, "not an ssh-ed25519 public key: %r" % (public_key,)[:80])
    folder = run_dir(run_id)
    return 'restrict,command="python3 %s/relay.py receive %s" %s %s%s' % (folder, run_id, public_key, MARK, run_id)


def known_hosts_lines(address, port, host_keys):
    where = address if port == 22 else "[%s]:%d" % (address, port)
    return ["%s %s" % (where, key) for key in host_keys]


def checked_child(child):
    if not isinstance(child, dict):
        fail(2, "a child must be an object")
    name, address, port, user = child.get("name"), child.get("address"), child.get("port"), child.get("user")
    if not isinstance(name, str) or not NAME_RE.match(name):
        fail(2, "child name %r is not a host name" % (name,))
    if not isinstance(address, str) or not ADDRESS_RE.match(address):
        fail(2, "child %s: address %r is not a host name or IP address" % (name, address))
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        fail(2, "child %s: port %r is not 1-65535" % (name, port))
    if not isinstance(user, str) or not USER_RE.match(user):
        fail(2, "child %s: user %r is not a user name" % (name, user))
    keys = child.get("host_keys") or []
    if not keys or not all(isinstance(k, str) and HOST_KEY_RE.match(k) for k in keys):
        fail(2, "child %s: host_keys must be 'type base64' lines" % name)
    return {"name": name, "address": address, "port": port, "user": user, "host_keys": list(keys)}


def hop_argv(folder, child):
    """ssh to a child as this run's key, strict host-key checking against the run's own known_hosts; the command
    is ignored there (the key's forced command runs)."""
    return ["ssh", "-F", "/dev/null", "-i", folder + "/key", "-o", "IdentitiesOnly=yes",
            "-o", "UserKnownHostsFile=" + folder + "/known_hosts", "-o", "GlobalKnownHostsFile=/dev/null",
            "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
            "-o", "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3", "-c", CIPHERS,
            "-p", str(child["port"]), "-l", child["user"], child["address"], "receive"]


def read_request():
    try:
        request = json.loads(sys.stdin.read() or "{}")
    except ValueError as err:
        fail(2, "stdin is not JSON: %s" % err)
    if not isinstance(request, dict):
        fail(2, "stdin must be a JSON object")
    return request


def write_private(path, text):
    fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def host_keys():
    keys = []
    folder = "/etc/ssh"
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if name.startswith("ssh_host_") and name.endswith("_key.pub"):
            with open(os.path.join(folder, name)) as f:
                parts = f.read().split()
            if len(parts) >= 2 and HOST_KEY_RE.match(parts[0] + " " + parts[1]):
                keys.append(parts[0] + " " + parts[1])
    return keys


def prepare(run_id):
    folder = run_dir(run_id)
    request = read_request()
    program = request.get("program")
    if not isinstance(program, str) or not program:
        fail(2, "program must be this program's text")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)
    write_private(folder + "/relay.py", program)
    public = None
    if request.get("key"):
        key = folder + "/key"
        if not os.path.exists(key):
            made = subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", MARK + run_id, "-f", key],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if made.returncode:
                fail(1, "ssh-keygen failed: %s" % made.stderr.decode(errors="replace"))
        with open(key + ".pub") as f:
            public = " ".join(f.read().split()[:2])
    json.dump({"public_key": public, "host_keys": host_keys()}, sys.stdout)


def authorized_keys_path():
    return os.path.join(os.path.expanduser("~"), ".ssh", "authorized_keys")


def checked_path(path, what):
    """An absolute, normalised path on this host (a staging folder, a model folder)."""
    if not isinstance(path, str) or not path.startswith("/") or os.path.normpath(path) != path \
            or any(c in path for c in "\0\n\r"):
        fail(2, "%s %r is not an absolute, normalised path" % (what, path))
    return path


def checked_file(rel, size):
    """A file of a folder's cargo: a relative path inside the folder, and its size."""
    parts = rel.split("/") if isinstance(rel, str) else [""]
    if any(part in ("", ".", "..") for part in parts) or any(c in rel for c in "\0\n\r\\"):
        fail(2, "file %r is not a relative path inside the folder" % (rel,))
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        fail(2, "file %s: size %r is not a byte count" % (rel, size))
    return rel, size


def checked_sink(sink):
    if sink is None or sink == {"kind": "image"}:
        return {"kind": "image"}
    if not isinstance(sink, dict) or sink.get("kind") != "folder" or not isinstance(sink.get("files"), dict):
        fail(2, "sink must be {kind: image} or {kind: folder, staging, files}")
    files = dict(checked_file(rel, size) for rel, size in sink["files"].items())
    return {"kind": "folder", "staging": checked_path(sink.get("staging"), "staging"), "files": files}


def checked_order(order):
    if order is None:
        return None
    if not isinstance(order, dict) or order.get("kind") not in ("image", "folder"):
        fail(2, "send must be {kind: image, image_id, skip} or {kind: folder, root, files}")
    if order["kind"] == "image":
        image_id, skip = order.get("image_id"), order.get("skip") or []
        if not isinstance(image_id, str) or not IMAGE_ID_RE.match(image_id):
            fail(2, "image id %r is not sha256:<64 hex>" % (image_id,))
        if not isinstance(skip, list) or not all(isinstance(d, str) and IMAGE_ID_RE.match(d) for d in skip):
            fail(2, "skip must be a list of layer diff IDs (sha256:<64 hex>)")
        return {"kind": "image", "image_id": image_id, "skip": skip}
    files = order.get("files")
    if not isinstance(files, list) or not all(isinstance(f, dict) for f in files):
        fail(2, "files must be a list of {path, size}")
    listed = [checked_file(f.get("path"), f.get("size")) for f in files]
    return {"kind": "folder", "root": checked_path(order.get("root"), "root"),
            "files": [{"path": rel, "size": size} for rel, size in listed]}


def wire(run_id):
    folder = run_dir(run_id)
    request = read_request()
    if not os.path.isdir(folder):
        fail(2, "%s is missing: prepare the run first" % folder)
    lines = [authorized_line(run_id, key) for key in request.get("authorize") or []]
    children = [checked_child(c) for c in request.get("children") or []]
    sink, order = checked_sink(request.get("sink")), checked_order(request.get("send"))
    if lines:
        path = authorized_keys_path()
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        present = set()
        if os.path.exists(path):
            with open(path) as f:
                present = set(f.read().splitlines())
        with open(path, "a") as f:
            os.chmod(path, 0o600)
            for line in lines:
                if line not in present:
                    f.write(line + "\n")
    write_private(folder + "/sink.json", json.dumps(sink))
    write_private(folder + "/send.json", json.dumps(order))
    known = [line for c in children for line in known_hosts_lines(c["address"], c["port"], c["host_keys"])]
    write_private(folder + "/known_hosts", "".join(line + "\n" for line in known))
    write_private(folder + "/children.json", json.dumps(children))
    for name in ("receive.json", "progress"):  # a new round: the last round's outcome is not this one's
        if os.path.exists(os.path.join(folder, name)):
            os.remove(os.path.join(folder, name))
    json.dump({"children": [c["name"] for c in children], "authorized": len(lines)}, sys.stdout)


def read_wired(folder, name, check):
    """What `wire` recorded (sink.json, send.json), checked again: the folder is this run's, but a file is read
    by another process."""
    try:
        with open(os.path.join(folder, name)) as f:
            return check(json.load(f))
    except (OSError, ValueError):
        fail(2, "%s/%s is missing or not JSON: wire the run first" % (folder, name))


def open_children(folder):
    with open(folder + "/children.json") as f:
        children = [checked_child(c) for c in json.load(f)]
    sinks = {}
    for child in children:
        err = open(os.path.join(folder, "hop-%s.err" % child["name"]), "wb")
        sinks[child["name"]] = subprocess.Popen(hop_argv(folder, child), stdin=subprocess.PIPE,
                                                stdout=subprocess.DEVNULL, stderr=err)
        err.close()
    return sinks


def pump(source, sinks, progress_path=None):
    """Every chunk of `source` to every sink still taking bytes; a sink that breaks is dropped, the others go on;
    once none is left, reading stops. Returns (bytes read, names of the sinks dropped)."""
    total, mark, dropped = 0, PROGRESS_EVERY, []
    while sinks:
        chunk = source.read(CHUNK)
        if not chunk:
            break
        total += len(chunk)
        dropped += write_all(sinks, chunk)
        if progress_path and total >= mark:
            mark += PROGRESS_EVERY
            write_private(progress_path, str(total))
    close_all(sinks)
    return total, dropped


def write_all(sinks, data):
    """`data` to every sink; a sink that breaks is removed from `sinks`. Returns the names of those removed."""
    dropped = []
    for name, proc in list(sinks.items()):
        try:
            proc.stdin.write(data)
        except OSError:
            dropped.append(name)
            del sinks[name]
    return dropped


def close_all(sinks):
    """Every sink's stdin closed (its end of the stream); one already broken is left as it is."""
    for proc in sinks.values():
        try:
            proc.stdin.close()
        except OSError:
            pass


def wait_all(procs):
    close_all(procs)
    return {name: proc.wait() for name, proc in procs.items()}


def sent_to(folder, procs):
    """{"children": {name: exit code}, "child_errors": {name: the last line ssh said}} once every child ended."""
    codes = wait_all(procs)
    said = {}
    for name, code in codes.items():
        if code:
            try:
                with open(os.path.join(folder, "hop-%s.err" % name), "rb") as f:
                    lines = f.read().decode(errors="replace").strip().splitlines()
            except OSError:
                lines = []
            said[name] = lines[-1][-300:] if lines else ""
    return {"children": codes, "child_errors": said}


class FanOut:
    """A file to write to that writes to every sink still taking bytes (a tar stream's output)."""

    def __init__(self, sinks):
        self.sinks, self.total = sinks, 0

    def write(self, data):
        self.total += len(data)
        write_all(self.sinks, data)
        if not self.sinks:
            raise BrokenPipeError("every child broke off")
        return len(data)


def stream_without(spool, skip, sinks):
    """The saved image's tar to the sinks, without the files of the layers in `skip`. Returns (bytes, layers
    left out)."""
    with tarfile.open(spool, "r:") as source:
        (entry,) = json.load(source.extractfile("manifest.json"))
        diff_ids = json.load(source.extractfile(entry["Config"]))["rootfs"]["diff_ids"]
        left_out = {path for path, diff in zip(entry["Layers"], diff_ids) if diff in skip}
        out = FanOut(sinks)
        try:
            with tarfile.open(fileobj=out, mode="w|", bufsize=CHUNK) as tar:
                for member in source.getmembers():
                    if member.name not in left_out:
                        tar.addfile(member, source.extractfile(member) if member.isfile() else None)
        except BrokenPipeError:
            pass
    close_all(sinks)
    return out.total, len(left_out)


def send_folder(root, files, sinks):
    """The files of `root` as one tar stream to the sinks. Returns the bytes sent."""
    out = FanOut(sinks)
    try:
        with tarfile.open(fileobj=out, mode="w|", bufsize=CHUNK, format=tarfile.PAX_FORMAT) as tar:
            for entry in files:
                with open(os.path.join(root, entry["path"]), "rb") as source:
                    info = os.fstat(source.fileno())
                    if info.st_size != entry["size"]:
                        fail(1, "%s is %d bytes, the manifest says %d" % (entry["path"], info.st_size, entry["size"]))
                    member = tarfile.TarInfo(entry["path"])
                    member.size, member.mode, member.mtime = entry["size"], 0o644, int(info.st_mtime)
                    tar.addfile(member, source)
    except BrokenPipeError:
        pass
    close_all(sinks)
    return out.total


def send(run_id):
    folder = run_dir(run_id)
    order = read_wired(folder, "send.json", checked_order)
    if order is None:
        fail(2, "this host sends nothing in this round")
    children = open_children(folder)
    everyone = dict(children)
    if order["kind"] == "folder":
        total = send_folder(order["root"], order["files"], children)
        json.dump(dict({"bytes": total, "save_rc": 0, "skipped": 0}, **sent_to(folder, everyone)), sys.stdout)
        return
    image_id, skip = order["image_id"], set(order["skip"])
    if skip:
        spool = SPOOL % run_id
        try:
            saved = subprocess.run(["docker", "save", "-o", spool, image_id], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
            if saved.returncode == 0:  # else (no room for the spool, say) the whole image, streamed
                total, skipped = stream_without(spool, skip, children)
                json.dump(dict({"bytes": total, "save_rc": 0, "skipped": skipped}, **sent_to(folder, everyone)),
                          sys.stdout)
                return
        finally:
            if os.path.exists(spool):
                os.remove(spool)
    save = subprocess.Popen(["docker", "save", image_id], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    total, _ = pump(save.stdout, children)
    abandoned = not children  # every child broke off: nobody is left to read the rest
    if abandoned:
        save.kill()
    error = save.stderr.read().decode(errors="replace")[-1000:]
    save_rc = save.wait()
    if abandoned:
        save_rc, error = 0, "every child broke off"
    json.dump({"bytes": total, "save_rc": save_rc, "save_error": error.strip(),
               **sent_to(folder, everyone)}, sys.stdout)
    sys.exit(0 if save_rc == 0 else 1)


def local_sink(folder, run_id, sink):
    """Where a received stream goes on this host: `docker load`, or this program's `unpack` into the staging
    folder."""
    if sink["kind"] == "image":
        return ["docker", "load", "-q"]
    return [sys.executable or "python3", folder + "/relay.py", "unpack", run_id]


def receive(run_id):
    folder = run_dir(run_id)
    write_private(folder + "/receive.pid", str(os.getpid()))
    sink = read_wired(folder, "sink.json", checked_sink)
    out = open(folder + "/sink.out", "wb")
    err = open(folder + "/sink.err", "wb")
    local = subprocess.Popen(local_sink(folder, run_id, sink), stdin=subprocess.PIPE, stdout=out, stderr=err)
    out.close()
    err.close()
    children = open_children(folder)
    sinks = dict(children)
    sinks[""] = local  # "" is never a host name
    total, _ = pump(sys.stdin.buffer, sinks, folder + "/progress")
    codes = wait_all({"": local, **children})
    local_rc = codes.pop("")
    with open(folder + "/sink.out", "rb") as f:
        said = f.read().decode(errors="replace").strip()[-500:]
    with open(folder + "/sink.err", "rb") as f:
        error = f.read().decode(errors="replace").strip()[-500:]
    write_private(folder + "/receive.json", json.dumps({"bytes": total, "sink_rc": local_rc, "sink_out": said,
                                                        "sink_error": error, "children": codes, "done": True}))
    sys.exit(0 if local_rc == 0 else 1)


def unpack_into(staging, files, stream):
    """The tar on `stream` into `staging`: each file the sink names, of its size, to `<name>.part`, renamed to
    `<name>` once complete; a file already complete there is read past. Returns (written, already there)."""
    written, kept = 0, 0
    os.makedirs(staging, exist_ok=True)
    with tarfile.open(fileobj=stream, mode="r|", bufsize=CHUNK) as tar:
        for member in tar:
            name = member.name
            if files.get(name) is None or not member.isfile() or member.size != files[name]:
                fail(2, "the stream holds %r (%d bytes), which this host was not told to take" % (name, member.size))
            target = os.path.join(staging, name)
            if os.path.isfile(target) and not os.path.islink(target) and os.path.getsize(target) == member.size:
                kept += 1
                continue
            os.makedirs(os.path.dirname(target), exist_ok=True)
            data = tar.extractfile(member)
            with open(target + ".part", "wb") as f:
                for chunk in iter(lambda: data.read(CHUNK), b""):
                    f.write(chunk)
            if os.path.getsize(target + ".part") != member.size:
                fail(1, "%s: the stream ended inside it" % name)
            os.replace(target + ".part", target)
            written += 1
    return written, kept


def unpack(run_id):
    folder = run_dir(run_id)
    sink = read_wired(folder, "sink.json", checked_sink)
    if sink["kind"] != "folder":
        fail(2, "this host's sink is not a folder")
    try:
        written, kept = unpack_into(sink["staging"], sink["files"], sys.stdin.buffer)
    except (tarfile.TarError, EOFError) as err:
        fail(1, "the stream broke off: %s" % err)
    json.dump({"written": written, "kept": kept}, sys.stdout)


def report(run_id):
    folder = run_dir(run_id)
    try:
        with open(folder + "/receive.json") as f:
            json.dump(json.load(f), sys.stdout)
            return
    except (OSError, ValueError):
        pass
    try:
        with open(folder + "/progress") as f:
            so_far = int(f.read().strip() or 0)
    except (OSError, ValueError):
        so_far = 0
    json.dump({"bytes": so_far, "done": False}, sys.stdout)


def cleanup(run_id):
    folder = run_dir(run_id)
    marker = " " + MARK + run_id
    removed = 0
    path = authorized_keys_path()
    if os.path.exists(path):
        with open(path) as f:
            lines = f.read().splitlines()
        kept = [line for line in lines if not line.endswith(marker)]
        removed = len(lines) - len(kept)
        if removed:
            mode = os.stat(path).st_mode & 0o777
            fd = os.open(path + ".tritonops-relay", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
            with os.fdopen(fd, "w") as f:
                f.write("".join(line + "\n" for line in kept))
            os.replace(path + ".tritonops-relay", path)
    try:
        with open(folder + "/receive.pid") as f:
            pid = int(f.read().strip())
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            if (folder + "/relay.py").encode() in f.read():
                os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        pass
    if os.path.exists(SPOOL % run_id):
        os.remove(SPOOL % run_id)
    existed = os.path.isdir(folder)
    if existed:
        subprocess.run(["rm", "-rf", "--", folder], check=False)
    json.dump({"keys_removed": removed, "dir_removed": existed and not os.path.exists(folder)}, sys.stdout)


def main():
    args = sys.argv[1:]
    commands = {"prepare": prepare, "wire": wire, "send": send, "receive": receive, "unpack": unpack,
                "report": report, "cleanup": cleanup}
    if len(args) != 2 or args[0] not in commands:
        fail(2, "usage: prepare|wire|send|receive|unpack|report|cleanup RUN_ID")
    commands[args[0]](args[1])


if __name__ == "__main__":
    main()
