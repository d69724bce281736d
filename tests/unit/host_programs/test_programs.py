"""The programs tritonops runs on hosts are real modules: each imports without doing anything, uses
the standard library only (the hub program also its hub library), is what the packer sends, and runs
under `python -c SOURCE` exactly as a host runs it."""

import ast
import grp
import hashlib
import http.server
import importlib
import json
import os
import pkgutil
import pwd
import sys
import threading
from pathlib import Path

import pytest

from tests.support.host_programs import run_program as run
from tritonops import host_programs
from tritonops.door import program as door_program, runtime_program
from tritonops.facts import query_program
from tritonops.lab import faults, generate
from tritonops.lab import releases as lab_releases
from tritonops.metrics import fetch
from tritonops.operations import host_program
from tritonops.serving import releases, status
from tritonops.weights import programs

FOLDER = Path(host_programs.__file__).parent
SHARED = ["basic", "haproxy_answers", "release_files", "triton_client"]  # modules the packer puts into the programs that import them
PROGRAMS = sorted(module.name for module in pkgutil.iter_modules([str(FOLDER)]) if module.name not in SHARED)
HUB_LIBRARIES = {"huggingface_hub", "modelscope"}


def test_every_python_program_is_there():
    assert PROGRAMS == ["deployed_releases", "deployment_containers", "deployment_index", "docker_objects",
                        "door_apply", "door_runtime", "fact_queries", "file_steps", "gpu_holders", "lab_generate",
                        "lab_release_listing", "metrics_page", "prune_release", "ray_member", "relay",
                        "release_folder", "replica_gate", "triton_health", "weights_files", "weights_hub"]


@pytest.mark.parametrize("name", PROGRAMS + SHARED)
def test_importing_a_program_runs_nothing(name, capsys):
    module = importlib.import_module(f"tritonops.host_programs.{name}")
    assert name in SHARED or callable(module.main)
    assert capsys.readouterr() == ("", "")


def imported_modules(text: str) -> set[str]:
    tree = ast.parse(text)
    found = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    return found | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}


@pytest.mark.parametrize("name", PROGRAMS)
def test_a_packed_program_imports_the_standard_library_only(name):
    allowed = set(sys.stdlib_module_names) | (HUB_LIBRARIES if name == "weights_hub" else set())
    assert {module.split(".")[0] for module in imported_modules(host_programs.source(name))} - allowed == set()


@pytest.mark.parametrize("name", PROGRAMS + ["lab_snapshot.sh", "lab_read_current.sh"])
def test_the_packer_sends_the_module_file_with_its_shared_modules_in_place(name):
    text = (FOLDER / (name if name.endswith(".sh") else f"{name}.py")).read_text(encoding="utf-8")
    for line in [line for line in text.splitlines() if line.startswith("from tritonops.host_programs.")]:
        shared = line.split()[1].rsplit(".", 1)[1]
        assert shared in SHARED, line
        text = text.replace(line, host_programs.source(shared).rstrip("\n"))
    assert host_programs.source(name) == text
    assert host_programs.source(name) is host_programs.source(name)  # read once per process


@pytest.mark.parametrize("name", ["metrics_page", "triton_health", "replica_gate"])
def test_the_programs_that_call_triton_share_one_client(name):
    assert "tritonops.host_programs.triton_client" in imported_modules(
        (FOLDER / f"{name}.py").read_text(encoding="utf-8"))
    assert "def triton_url(" in host_programs.source(name)


def test_the_callers_send_the_packed_programs():
    assert host_programs.argv("file_steps", "mkdir", "/x", "755") == ("python3", "-c", host_program.SOURCE,
                                                                     "mkdir", "/x", "755")
    assert query_program.argv() == ("python3", "-c", host_programs.source("fact_queries"))
    assert programs.files_argv("remove", "/x") == ("python3", "-c", programs.FILES, "remove", "/x")
    packed = {"fact_queries": query_program.SOURCE, "file_steps": host_program.SOURCE,
              "metrics_page": fetch.FETCH_SOURCE, "triton_health": status.HEALTH_SOURCE,
              "deployed_releases": releases.SOURCE,
              "weights_files": programs.FILES, "weights_hub": programs.HUB,
              "lab_release_listing": lab_releases.LISTING, "lab_generate": generate.PROGRAM,
              "lab_snapshot.sh": faults.SNAPSHOT, "lab_read_current.sh": faults.READ_CURRENT,
              "door_runtime": runtime_program.PROGRAM, "door_apply": door_program.PROGRAM}
    assert {name: host_programs.source(name) for name in packed} == packed


def test_the_fact_program_answers_file_dir_and_command_queries(tmp_path):
    (tmp_path / "a.txt").write_text("hello\n")
    os.chmod(tmp_path / "a.txt", 0o640)
    (tmp_path / "sub").mkdir(mode=0o750)
    os.symlink("a.txt", tmp_path / "link")
    queries = [{"kind": "file", "path": str(tmp_path / "a.txt"), "content": True, "text_limit": 1024},
               {"kind": "file", "path": str(tmp_path / "link")},
               {"kind": "file", "path": str(tmp_path / "nothing")},
               {"kind": "dir", "path": str(tmp_path)},
               {"kind": "command", "argv": ["sh", "-c", "echo out; exit 3"], "timeout_s": 10},
               {"kind": "command", "argv": ["tritonops-no-such-command"], "timeout_s": 10}]
    done = run("fact_queries", stdin=json.dumps(queries))
    assert done.returncode == 0, done.stderr
    file, link, missing, folder, command, absent = json.loads(done.stdout)
    owners = {"owner": pwd.getpwuid(os.getuid()).pw_name, "group": grp.getgrgid(os.getgid()).gr_name}
    assert file == {"kind": "file", "size": 6, "mode": 0o640, "text": "hello\n",
                    "sha256": hashlib.sha256(b"hello\n").hexdigest(), **owners}
    assert link == {"kind": "link", "link_target": "a.txt"}
    assert missing == {"kind": "missing"}
    assert folder == {"exists": True, "names": ["a.txt", "link", "sub"]}
    assert command == {"exit_code": 3, "stdout": "out\n", "stderr": ""}
    assert absent == {"exit_code": 127, "stderr": "tritonops-no-such-command: not found"}


def test_the_step_actions_put_mkdir_symlink_rename_and_remove(tmp_path):
    target = tmp_path / "deep" / "file.txt"
    assert run("file_steps", "put", str(target), "640", stdin="the bytes").returncode == 0
    assert target.read_text() == "the bytes" and target.stat().st_mode & 0o777 == 0o640
    assert not [name for name in os.listdir(target.parent) if name.startswith(".tritonops-")]
    assert run("file_steps", "mkdir", str(tmp_path / "a" / "b"), "755").returncode == 0
    assert (tmp_path / "a" / "b").is_dir()
    assert run("file_steps", "symlink", str(tmp_path / "current"), "deep").returncode == 0
    assert os.readlink(tmp_path / "current") == "deep"
    refused = run("file_steps", "rename", str(target), str(tmp_path / "current"))
    assert refused.returncode == 1 and "already exists" in refused.stderr
    assert run("file_steps", "rename", str(target), str(tmp_path / "moved.txt")).returncode == 0
    assert run("file_steps", "remove", str(tmp_path / "deep"), "0").returncode == 0
    assert run("file_steps", "remove", str(tmp_path / "a"), "1").returncode == 0
    assert sorted(os.listdir(tmp_path)) == ["current", "moved.txt"]
    unknown = run("file_steps", "frobnicate")
    assert unknown.returncode == 1 and "unknown action frobnicate" in unknown.stderr


def test_the_step_actions_lock_says_who_holds_it(tmp_path):
    lock = str(tmp_path / "lock")
    first = run("file_steps", "lock", lock, "600", "0", stdin=json.dumps({"token": "t1"}))
    assert json.loads(first.stdout) == {"acquired": True}
    second = json.loads(run("file_steps", "lock", lock, "600", "0", stdin=json.dumps({"token": "t2"})).stdout)
    assert second["acquired"] is False and json.loads(second["owner"]) == {"token": "t1"}
    assert run("file_steps", "unlock", lock, "t2").returncode == 0 and os.path.exists(lock)
    assert run("file_steps", "unlock", lock, "t1").returncode == 0 and not os.path.exists(lock)


def test_the_lab_listing_lists_the_newest_release(tmp_path):
    (tmp_path / "releases" / "r1").mkdir(parents=True)
    (tmp_path / "releases" / "r2" / "repo").mkdir(parents=True)
    (tmp_path / "releases" / "r2" / "release.json").write_text('{"image_id": "sha256:abc"}')
    (tmp_path / "releases" / "r2" / "repo" / "config.pbtxt").write_text("")
    (tmp_path / "models" / "m").mkdir(parents=True)
    done = run("lab_release_listing", str(tmp_path))
    assert json.loads(done.stdout) == {"releases": ["r1", "r2"], "newest": {"image_id": "sha256:abc"},
                                       "files": ["release.json", "repo/config.pbtxt"], "models": ["m"]}


def test_the_weights_files_program_reads_an_empty_model_folder(tmp_path):
    query = {"final": str(tmp_path / "final"), "staging": str(tmp_path / "staging"), "free_path": str(tmp_path)}
    done = run("weights_files", "fact", json.dumps(query))
    answer = json.loads(done.stdout)
    assert answer["final"]["kind"] == "missing" and answer["staging"] == {"exists": False, "files": {}}
    assert answer["free_path"] == str(tmp_path) and answer["free_bytes"] > 0


class FakeTriton(http.server.BaseHTTPRequestHandler):
    """Live and ready; model `chat` ready, `other` not; a metrics page."""
    answers = {"/v2/health/live": 200, "/v2/health/ready": 200, "/v2/models/chat/ready": 200, "/metrics": 200}

    def do_GET(self):
        code = self.answers.get(self.path, 400)
        body = b"nv_inference_request_success{model=\"chat\",version=\"1\"} 3\n" if self.path == "/metrics" else b""
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_the_health_check_asks_triton_at_the_address_its_replicas_are_bound_to():
    server = http.server.ThreadingHTTPServer(("127.0.0.2", 0), FakeTriton)  # not 127.0.0.1: only there answers
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = str(server.server_address[1])
        assert json.loads(run("triton_health", "127.0.0.1", port, port, "chat").stdout)["live"] is False
        done = run("triton_health", "127.0.0.2", port, port, "chat", "other")
    finally:
        server.shutdown()
        server.server_close()
    assert json.loads(done.stdout) == {"live": True, "ready": True, "models": {"chat": True, "other": False},
                                       "metrics": 'nv_inference_request_success{model="chat",version="1"} 3\n'}
