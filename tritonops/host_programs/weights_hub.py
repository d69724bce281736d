"""The hub program: a model's files fetched from its hub into the staging folder (run by
tritonops/weights/transfer.py where the hub library is: the host's python3 or an image). It needs
`huggingface_hub` or `modelscope` there; nothing of tritonops.

    python3 -c SOURCE    stdin {kind, repo, revision, include, staging, token, endpoint}
Resolves the revision and the files with their sizes and hashes through the hub library's public API
(huggingface_hub: HfApi.model_info, hf_hub_url, build_hf_headers), refuses when the disk is too small
(before any byte moves), fetches each missing file to `<name>.part` (resumed from its size with an
HTTP Range; every byte that arrived stays there when the connection drops), verifies it, renames it to
`<name>`; prints one JSON line {commit, files, bytes}.
Exit codes: 65 verification failed, 69 the hub library is missing, 74 a download cut short (what arrived is
kept), 75 not enough disk.

Why not hf_hub_download(local_dir=...) or snapshot_download: huggingface_hub 1.33 and 2.0 download each file to
a process-unique `.incomplete` file and delete it when the download fails (file_download.py,
_download_to_tmp_and_move), so a cut download would start over at byte 0 on the next run; the files here are
tens of GiB. Their internal http_get (and its chunk size) is not used either.
"""

import fnmatch, hashlib, json, os, sys

q = token = staging = None  # the request, set by main()

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

CHUNK = 1 << 20

def http_fetch(url, headers, out, offset):
    """GET url into out from offset (a Range; a server that ignores it answers 200 and the file starts over).
    Each chunk is written as it arrives, so a cut keeps every byte that came. Returns what the server said the
    body holds (None when it did not say)."""
    import urllib.request
    from urllib.parse import urlsplit

    class SameHostAuthorization(urllib.request.HTTPRedirectHandler):
        """A redirect to another host (a hub's CDN) does not carry the token there."""
        def redirect_request(self, req, fp, code, msg, hdrs, newurl):
            new = super().redirect_request(req, fp, code, msg, hdrs, newurl)
            if new is not None and urlsplit(newurl).netloc != urlsplit(req.full_url).netloc:
                for name in [k for k in new.headers if k.lower() == "authorization"]:
                    del new.headers[name]
            return new

    request = urllib.request.Request(url, headers=dict(headers))
    if offset:
        request.add_header("Range", "bytes=%d-" % offset)
    with urllib.request.build_opener(SameHostAuthorization).open(request, timeout=60) as response:
        if offset and response.status != 206:
            out.seek(0)
            out.truncate()
        read = getattr(response, "read1", response.read)  # what has arrived, up to CHUNK: on disk at once
        for chunk in iter(lambda: read(CHUNK), b""):
            out.write(chunk)
        length = response.headers.get("Content-Length")
        return int(length) if length and length.isdigit() else None

def hf_files():
    try:
        from huggingface_hub import HfApi, hf_hub_url
        from huggingface_hub.utils import build_hf_headers
    except ImportError as err:
        fail(69, error="missing_library", library="huggingface_hub", detail=str(err)[:200])
    info = HfApi(endpoint=q.get("endpoint")).model_info(q["repo"], revision=q["revision"], files_metadata=True,
                                                         token=token)
    files = []
    for s in info.siblings or []:
        if wanted(s.rfilename):
            files.append({"path": s.rfilename, "size": s.size, "blob": s.blob_id,
                          "sha256": s.lfs.sha256 if s.lfs else None})
    headers = build_hf_headers(token=token)
    def fetch(f, out, offset):
        http_fetch(hf_hub_url(q["repo"], f["path"], revision=info.sha, endpoint=q.get("endpoint")), headers, out,
                   offset)
    return info.sha, files, fetch

def ms_files():
    try:
        from modelscope.hub.api import HubApi
        from modelscope.hub.file_download import get_file_download_url
    except ImportError as err:
        fail(69, error="missing_library", library="modelscope", detail=str(err)[:200])
    if q.get("endpoint"):
        os.environ["MODELSCOPE_DOMAIN"] = q["endpoint"]
    api = HubApi()
    cookies = api.login(token)[1] if token else None
    entries = api.get_model_files(q["repo"], revision=q["revision"], recursive=True, cookies=cookies)
    files = [{"path": e["Path"], "size": e["Size"], "sha256": e.get("Sha256") or None, "blob": None}
             for e in entries if e.get("Type") != "tree" and wanted(e["Path"])]
    headers = {"Cookie": "; ".join("%s=%s" % (c.name, c.value) for c in cookies)} if cookies is not None else {}
    def fetch(f, out, offset):
        http_fetch(get_file_download_url(q["repo"], f["path"], q["revision"]), headers, out, offset)
    return q["revision"], files, fetch


def cut(f, part, moved, why):
    kept = os.path.getsize(part) if os.path.isfile(part) else 0
    fail(74, error="incomplete", bytes=moved, detail="%s: %s after %d of %d bytes; they are kept (%s.part) and the "
         "next run resumes from them" % (f["path"], why[:200], kept, f["size"], os.path.basename(f["path"])))

def main():
    # the request is module state: the functions above read it, as when this was one script
    global q, token, staging
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    q = json.loads(sys.stdin.read())
    token = q.pop("token", None) or None
    staging = q["staging"]
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
            try:
                with open(part, "ab") as out:
                    try:
                        fetch(f, out, have)
                    finally:  # what arrived stays on disk, for the next run to resume from
                        out.flush()
                        os.fsync(out.fileno())
            except OSError as err:  # the connection refused, reset or timed out (urllib's errors are OSErrors)
                cut(f, part, moved + os.path.getsize(part) - have, str(err))
            moved += os.path.getsize(part) - have
            if os.path.getsize(part) < f["size"]:
                cut(f, part, moved, "the connection closed early")
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


if __name__ == "__main__":
    main()
