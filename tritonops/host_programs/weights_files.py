"""The weights files program (stdlib only, the host's python3), run by the weights steps
(tritonops/weights/): values come as arguments or JSON on stdin, never pasted into the source.

    python3 -c SOURCE fact [QUERY]   what is in the model folder, its staging twin and a host path; free disk
    python3 -c SOURCE reopen FINAL STAGING   a folder that failed verification becomes the staging folder again
    python3 -c SOURCE remove PATH    a folder or link at the final path, before a folder or link replaces it
    python3 -c SOURCE discard        stdin {staging, paths}: drop files that failed verification
    python3 -c SOURCE finalize       stdin {staging, final, manifest}: hash every file against the manifest,
                                     drop the rest, write the manifest (with stamps) last, fsync, rename
    python3 -c SOURCE link FINAL TARGET   point the final path at a host path (temp link, rename)
Exit code 65: verification failed.
"""

import hashlib, json, os, shutil, stat, sys
MANIFEST = ".tritonops-manifest.json"
MAX_LIST = 100000

def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()

def walk(root):
    """Regular files under root as {rel: lstat}, links and others skipped."""
    found = {}
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(folder, name)
            st = os.lstat(full)
            if stat.S_ISREG(st.st_mode):
                found[os.path.relpath(full, root).replace(os.sep, "/")] = st
            if len(found) > MAX_LIST:
                raise SystemExit("more than %d files under %s" % (MAX_LIST, root))
    return found

def kind(path):
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return "missing", None
    if stat.S_ISLNK(st.st_mode):
        return "link", os.readlink(path)
    if stat.S_ISDIR(st.st_mode):
        return "dir", None
    return "other", None

def read_manifest(folder):
    try:
        with open(os.path.join(folder, MANIFEST), "rb") as f:
            return json.loads(f.read(64 << 20)), None
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as err:
        return None, str(err)[:200]

def final_fact(final, verify):
    k, target = kind(final)
    out = {"kind": k, "link_target": target, "manifest": None, "manifest_error": None, "files": {}}
    if k != "dir":
        return out
    manifest, error = read_manifest(final)
    out["manifest_error"] = error
    if not isinstance(manifest, dict):
        return out
    stamps = manifest.pop("stamps", {}) if isinstance(manifest.get("stamps"), dict) else {}
    out["manifest"] = manifest
    for entry in manifest.get("files") or []:
        try:
            rel, size, sha = entry["path"], entry["size"], entry["sha256"]
            st = os.lstat(os.path.join(final, rel))
        except (TypeError, KeyError, OSError):
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        fact = {"size": st.st_size, "sha256": None}
        if st.st_size == size:
            stamp = stamps.get(rel)
            if verify == "quick" and stamp == [st.st_size, st.st_mtime_ns]:
                fact["sha256"] = sha
            else:
                fact["sha256"] = sha256_of(os.path.join(final, rel))
        out["files"][rel] = fact
    return out

def host_path_fact(path):
    k, target = kind(path)
    if k == "link":
        k = "dir" if os.path.isdir(path) else "other"
    out = {"kind": k, "files": {}, "texts": {}, "headers": {}}
    if k != "dir":
        return out
    for rel, st in walk(path).items():
        out["files"][rel] = st.st_size
        full = os.path.join(path, rel)
        if rel in ("config.json", "model.safetensors.index.json") and st.st_size <= (16 << 20):
            with open(full, "rb") as f:
                out["texts"][rel] = f.read().decode("utf-8", "replace")
        elif rel.endswith(".safetensors") and st.st_size >= 8:
            with open(full, "rb") as f:
                out["headers"][rel] = int.from_bytes(f.read(8), "little")
    return out

def free_bytes(path):
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize, path

def fact(q):
    staging = {"exists": os.path.isdir(q["staging"]), "files": {}}
    if staging["exists"]:
        staging["files"] = {rel: st.st_size for rel, st in walk(q["staging"]).items()}
    free, where = free_bytes(q["free_path"])
    return {"final": final_fact(q["final"], q.get("verify", "quick")), "staging": staging,
            "free_bytes": free, "free_path": where,
            "host_path": host_path_fact(q["host_path"]) if q.get("host_path") else None}

def fsync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

def remove(path):
    k, _ = kind(path)
    if k == "dir":
        shutil.rmtree(path)
    elif k != "missing":
        os.unlink(path)

def finalize(q):
    staging, final, manifest = q["staging"], q["final"], q["manifest"]
    wanted = {e["path"]: e for e in manifest["files"]}
    present = walk(staging)
    bad = []
    for rel, entry in sorted(wanted.items()):
        st = present.get(rel)
        if st is None:
            bad.append({"path": rel, "problem": "missing"})
        elif st.st_size != entry["size"]:
            bad.append({"path": rel, "problem": "size %d, expected %d" % (st.st_size, entry["size"])})
        elif sha256_of(os.path.join(staging, rel)) != entry["sha256"]:
            bad.append({"path": rel, "problem": "sha256 differs"})
    if bad:
        for b in bad:
            if b["problem"] != "missing":
                os.unlink(os.path.join(staging, b["path"]))
        print(json.dumps({"error": "mismatch", "files": bad}))
        sys.exit(65)
    for rel in present:
        if rel not in wanted:
            os.unlink(os.path.join(staging, rel))
    for folder, dirs, files in os.walk(staging, topdown=False):
        if folder != staging and not os.listdir(folder):
            os.rmdir(folder)
    stamps = {}
    for rel in wanted:
        full = os.path.join(staging, rel)
        fd = os.open(full, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        st = os.lstat(full)
        stamps[rel] = [st.st_size, st.st_mtime_ns]
    data = dict(manifest, stamps=stamps)
    tmp = os.path.join(staging, MANIFEST + ".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(staging, MANIFEST))
    fsync_dir(staging)
    remove(final)
    os.rename(staging, final)
    fsync_dir(os.path.dirname(final))
    print(json.dumps({"ok": True, "files": len(wanted)}))


def main():
    action, args = sys.argv[1], sys.argv[2:]
    if action == "fact":  # the query as an argument (a command fact) or on stdin
        json.dump(fact(json.loads(args[0]) if args else json.load(sys.stdin)), sys.stdout)
    elif action == "reopen":
        remove(args[1])
        os.makedirs(os.path.dirname(args[1]), exist_ok=True)
        os.rename(args[0], args[1])
        try:
            os.unlink(os.path.join(args[1], MANIFEST))
        except FileNotFoundError:
            pass
    elif action == "remove":
        remove(args[0])
    elif action == "discard":
        q = json.load(sys.stdin)
        for rel in q["paths"]:
            try:
                os.unlink(os.path.join(q["staging"], rel))
            except FileNotFoundError:
                pass
    elif action == "finalize":
        finalize(json.load(sys.stdin))
    elif action == "link":
        final, target = args
        os.makedirs(os.path.dirname(final), exist_ok=True)
        tmp = final + ".tritonops-link"
        if os.path.lexists(tmp):
            os.unlink(tmp)
        os.symlink(target, tmp)
        os.replace(tmp, final)
    else:
        sys.exit("unknown action " + action)


if __name__ == "__main__":
    main()
