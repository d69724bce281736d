"""The Hub's HTTP API as `huggingface_hub` uses it to fetch a model (read from its source, 2.4):

    GET  /api/models/{repo}/revision/{rev}[?blobs=true]   model info: sha (the commit), siblings
                                                          (rfilename; with blobs: size, blobId, lfs {size,
                                                          sha256, pointerSize})
    HEAD /{repo}/resolve/{rev}/{file}                     X-Repo-Commit, ETag (LFS: its sha256, else the git
                                                          blob sha1), X-Linked-Etag + X-Linked-Size (LFS),
                                                          Content-Length, Accept-Ranges
    GET  /{repo}/resolve/{rev}/{file}                     the bytes; `Range: bytes=N-` answers 206 +
                                                          Content-Range
Errors carry X-Error-Code (RepoNotFound, RevisionNotFound, EntryNotFound) as the Hub's do; with a
token set, a request without `Authorization: Bearer <token>` is 401.

Pace for tests: `slow(every, pause_s)` sends each file `every` bytes at a time, pausing between.
Faults for tests: `cut(file, after)` sends `after` bytes of the next GET of `file`, drops the
connection and answers 503 for that file until `restore()` (a download dying mid-way). It counts
body bytes served and keeps a request log (method, path, Range) so tests can say what moved.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".gguf")
_RANGE = re.compile(r"bytes=(\d+)-(\d*)")


@dataclass
class Repo:
    files: dict[str, bytes]
    commit: str = ""
    branches: tuple[str, ...] = ("main",)

    def __post_init__(self):
        if not self.commit:
            h = hashlib.sha1()
            for name in sorted(self.files):
                h.update(name.encode() + b"\0" + hashlib.sha256(self.files[name]).digest())
            self.commit = h.hexdigest()

    def resolves(self, revision: str) -> bool:
        return revision in self.branches or revision == self.commit

    @staticmethod
    def is_lfs(name: str) -> bool:
        return name.endswith(LFS_SUFFIXES)

    @staticmethod
    def blob_id(data: bytes) -> str:
        return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()

    def sibling(self, name: str) -> dict:
        data = self.files[name]
        entry = {"rfilename": name, "size": len(data), "blobId": self.blob_id(data)}
        if self.is_lfs(name):
            entry["lfs"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "pointerSize": 134}
        return entry


@dataclass
class Log:
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)  # (method, path, Range)
    bytes_served: int = 0
    authorizations: list[str | None] = field(default_factory=list)


class HubServer:
    """A threaded HTTP server on (host, port); a context manager (stops on exit)."""

    def __init__(self, repos: dict[str, dict[str, bytes] | Repo], *, host: str = "127.0.0.1", port: int = 0,
                 token: str | None = None):
        self.repos = {name: r if isinstance(r, Repo) else Repo(dict(r)) for name, r in repos.items()}
        self.token = token
        self.log = Log()
        self._lock = threading.Lock()
        self._cuts: dict[str, int] = {}
        self._down: set[str] = set()
        self._pace: tuple[int, float] | None = None
        self._server = ThreadingHTTPServer((host, port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="lab-hub")
        self._thread.start()

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def reset_log(self) -> None:
        with self._lock:
            self.log = Log()

    def cut(self, name: str, after: int) -> None:
        with self._lock:
            self._cuts[name] = after

    def slow(self, every: int | None, pause_s: float = 0.0) -> None:
        """Send files `every` bytes at a time with `pause_s` between (None: at full speed again): a download
        that lasts long enough to be watched."""
        with self._lock:
            self._pace = (every, pause_s) if every else None

    def restore(self) -> None:
        with self._lock:
            self._cuts.clear()
            self._down.clear()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "HubServer":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format, *args):  # noqa: A002 - http.server's signature
                pass

            def do_HEAD(self):
                self._route(body=False)

            def do_GET(self):
                self._route(body=True)

            def _error(self, status: int, code: str | None, message: str) -> None:
                payload = json.dumps({"error": message}).encode()
                self.send_response(status)
                if code:
                    self.send_header("X-Error-Code", code)
                self.send_header("X-Error-Message", message)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            def _route(self, body: bool) -> None:
                url = urlsplit(self.path)
                with hub._lock:
                    hub.log.requests.append((self.command, url.path, self.headers.get("Range")))
                    hub.log.authorizations.append(self.headers.get("Authorization"))
                if hub.token is not None and self.headers.get("Authorization") != f"Bearer {hub.token}":
                    return self._error(401, None, "Invalid credentials in Authorization header")
                parts = [unquote(p) for p in url.path.strip("/").split("/")]
                if parts[:2] == ["api", "models"] and "revision" in parts:
                    at = parts.index("revision")
                    return self._info("/".join(parts[2:at]), "/".join(parts[at + 1:]), parse_qs(url.query))
                if "resolve" in parts:
                    at = parts.index("resolve")
                    if len(parts) > at + 2:
                        return self._file("/".join(parts[:at]), parts[at + 1], "/".join(parts[at + 2:]), body)
                return self._error(404, None, "Not Found")

            def _repo(self, name: str, revision: str) -> Repo | None:
                repo = hub.repos.get(name)
                if repo is None:
                    self._error(404, "RepoNotFound", f"Repository Not Found for {name}")
                elif not repo.resolves(revision):
                    self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
                    return None
                return repo

            def _info(self, name: str, revision: str, query: dict) -> None:
                repo = self._repo(name, revision)
                if repo is None:
                    return
                blobs = query.get("blobs", ["false"])[0].lower() in ("1", "true")
                siblings = [repo.sibling(f) if blobs else {"rfilename": f} for f in sorted(repo.files)]
                payload = json.dumps({"_id": repo.commit[:24], "id": name, "modelId": name, "sha": repo.commit,
                                      "private": False, "disabled": False, "gated": False, "tags": [],
                                      "downloads": 0, "likes": 0, "library_name": "transformers",
                                      "siblings": siblings}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("X-Repo-Commit", repo.commit)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            def _file(self, name: str, revision: str, path: str, body: bool) -> None:
                repo = self._repo(name, revision)
                if repo is None:
                    return
                data = repo.files.get(path)
                if data is None:
                    return self._error(404, "EntryNotFound", f"{path} does not exist on {revision}")
                with hub._lock:
                    down = path in hub._down
                    cut = hub._cuts.pop(path, None) if body else None
                    if cut is not None:
                        hub._down.add(path)
                if down:
                    return self._error(503, None, "Service Unavailable (lab fault)")
                start, status = 0, 200
                match = _RANGE.fullmatch(self.headers.get("Range") or "")
                if match and int(match.group(1)) < len(data):
                    start, status = int(match.group(1)), 206
                    end = int(match.group(2)) + 1 if match.group(2) else len(data)
                else:
                    end = len(data)
                sha = hashlib.sha256(data).hexdigest()
                etag = sha if repo.is_lfs(path) else repo.blob_id(data)
                self.send_response(status)
                self.send_header("X-Repo-Commit", repo.commit)
                self.send_header("ETag", f'"{etag}"')
                if repo.is_lfs(path):
                    self.send_header("X-Linked-Etag", f'"{sha}"')
                    self.send_header("X-Linked-Size", str(len(data)))
                self.send_header("Accept-Ranges", "bytes")
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(end - start))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
                self.end_headers()
                if not body:
                    return
                chunk = data[start:end] if cut is None else data[start:start + cut]
                with hub._lock:
                    pace = hub._pace
                step = pace[0] if pace else len(chunk) or 1
                for at in range(0, len(chunk), step):
                    self.wfile.write(chunk[at:at + step])
                    with hub._lock:
                        hub.log.bytes_served += len(chunk[at:at + step])
                    if pace and at + step < len(chunk):
                        self.wfile.flush()
                        time.sleep(pace[1])
                if cut is not None:
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(2)

        return Handler
