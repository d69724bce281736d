"""The programs the weights steps run on a host, sent as `python3 -c SOURCE ACTION` (values on stdin
as JSON, never pasted into the source or a command line).

FILES (stdlib only, the host's python3):
    fact       what is in the model folder, its staging twin and a host path; free disk
    reopen     FINAL STAGING: a folder that failed verification becomes the staging folder again
    remove     PATH: a folder or link at the final path, before a folder or link replaces it
    discard    stdin {staging, paths}: drop files that failed verification
    finalize   stdin {staging, final, manifest}: hash every file against the manifest, drop the
               rest, write the manifest (with stamps) last, fsync, rename staging -> final
    link       FINAL TARGET: point the final path at a host path (temp link, rename)

HUB (needs `huggingface_hub` or `modelscope` where it runs: the host's python3 or an image):
    stdin {kind, repo, revision, include, staging, token, endpoint}: resolve the revision and the
    files with their sizes and hashes, refuse when the disk is too small (before any byte moves),
    fetch each missing file to `<name>.part` (resumed from its size with an HTTP Range), verify it,
    rename it to `<name>`; prints one JSON line {commit, files, bytes}.
Exit codes: 65 verification failed, 69 the hub library is missing, 75 not enough disk.
"""

from __future__ import annotations

EXIT_MISMATCH = 65
EXIT_NO_LIBRARY = 69
EXIT_NO_SPACE = 75

FILES = r'''
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
'''

HUB = r'''
import fnmatch, hashlib, json, os, sys
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
q = json.loads(sys.stdin.read())
token = q.pop("token", None) or None
staging = q["staging"]

def fail(code, **what):
    print(json.dumps(what))
    sys.stdout.flush()
    sys.exit(code)

def hashes(path):
    sha, blob = hashlib.sha256(), hashlib.sha1(b"blob %d\0" % os.path.getsize(path))
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            sha.update(chunk)
            blob.update(chunk)
    return sha.hexdigest(), blob.hexdigest()

def good(path, f):
    """Whether the file at path is f (size and its hub hash: LFS sha256, or the git blob sha1)."""
    if not os.path.isfile(path) or os.path.getsize(path) != f["size"]:
        return None
    sha, blob = hashes(path)
    if (f.get("sha256") and sha != f["sha256"]) or (not f.get("sha256") and f.get("blob") and blob != f["blob"]):
        return None
    return sha

def wanted(path):
    return not q["include"] or any(fnmatch.fnmatch(path, p) for p in q["include"])

def hf_files():
    try:
        from huggingface_hub import HfApi, constants, hf_hub_url
        from huggingface_hub.file_download import http_get
        from huggingface_hub.utils import build_hf_headers
    except ImportError as err:
        fail(69, error="missing_library", library="huggingface_hub", detail=str(err)[:200])
    # http_get writes what it has read every DOWNLOAD_CHUNK_SIZE (10 MiB): a cut loses less at 1 MiB
    constants.DOWNLOAD_CHUNK_SIZE = min(getattr(constants, "DOWNLOAD_CHUNK_SIZE", 1 << 20), 1 << 20)
    info = HfApi(endpoint=q.get("endpoint")).model_info(q["repo"], revision=q["revision"], files_metadata=True,
                                                         token=token)
    files = []
    for s in info.siblings or []:
        if wanted(s.rfilename):
            files.append({"path": s.rfilename, "size": s.size, "blob": s.blob_id,
                          "sha256": s.lfs.sha256 if s.lfs else None})
    def fetch(f, out, offset):
        url = hf_hub_url(q["repo"], f["path"], revision=info.sha, endpoint=q.get("endpoint"))
        http_get(url, out, resume_size=offset, headers=build_hf_headers(token=token), expected_size=f["size"])
    return info.sha, files, fetch

def ms_files():
    try:
        from modelscope.hub.api import HubApi
        from modelscope.hub.file_download import get_file_download_url
    except ImportError as err:
        fail(69, error="missing_library", library="modelscope", detail=str(err)[:200])
    import urllib.request
    if q.get("endpoint"):
        os.environ["MODELSCOPE_DOMAIN"] = q["endpoint"]
    api = HubApi()
    cookies = api.login(token)[1] if token else None
    entries = api.get_model_files(q["repo"], revision=q["revision"], recursive=True, cookies=cookies)
    files = [{"path": e["Path"], "size": e["Size"], "sha256": e.get("Sha256") or None, "blob": None}
             for e in entries if e.get("Type") != "tree" and wanted(e["Path"])]
    def fetch(f, out, offset):
        request = urllib.request.Request(get_file_download_url(q["repo"], f["path"], q["revision"]))
        if offset:
            request.add_header("Range", "bytes=%d-" % offset)
        if cookies is not None:
            request.add_header("Cookie", "; ".join("%s=%s" % (c.name, c.value) for c in cookies))
        with urllib.request.urlopen(request, timeout=60) as response:
            if offset and response.status != 206:
                out.seek(0)
                out.truncate()
            for chunk in iter(lambda: response.read(1 << 20), b""):
                out.write(chunk)
    return q["revision"], files, fetch

commit, files, fetch = hf_files() if q["kind"] == "huggingface" else ms_files()
if not files:
    fail(65, error="no_files", detail="the revision has no files matching the include patterns")
for f in files:
    if f["size"] is None or "\0" in f["path"] or f["path"].startswith("/") or ".." in f["path"].split("/"):
        fail(65, error="bad_listing", detail="the hub listed %r without a size or with an unsafe name" % f["path"])
os.makedirs(staging, exist_ok=True)
done, todo, need = {}, [], 0
for f in files:
    final = os.path.join(staging, f["path"])
    sha = good(final, f)
    if sha:
        done[f["path"]] = sha
        continue
    part = final + ".part"
    have = os.path.getsize(part) if os.path.isfile(part) else 0
    if have > f["size"]:
        os.unlink(part)
        have = 0
    need += f["size"] - have
    todo.append(f)
st = os.statvfs(staging)
free = st.f_bavail * st.f_frsize
if need > free:
    fail(75, error="no_space", need=need, free=free, path=staging)
moved = 0
for f in todo:
    final = os.path.join(staging, f["path"])
    part = final + ".part"
    os.makedirs(os.path.dirname(final), exist_ok=True)
    for attempt in (1, 2):
        have = os.path.getsize(part) if os.path.isfile(part) else 0
        with open(part, "ab") as out:
            fetch(f, out, have)
            out.flush()
            os.fsync(out.fileno())
        moved += os.path.getsize(part) - have
        sha = good(part, f)
        if sha:
            break
        os.unlink(part)
        if attempt == 2:
            fail(65, error="mismatch", files=[{"path": f["path"], "problem": "hash differs from the hub's"}])
    os.replace(part, final)
    done[f["path"]] = sha
print(json.dumps({"commit": commit, "bytes": moved,
                  "files": [{"path": f["path"], "size": f["size"], "sha256": done[f["path"]]} for f in files]}))
'''


def files_argv(action: str, *values: str, python: str = "python3") -> tuple[str, ...]:
    return (python, "-c", FILES, action, *values)
