"""The container logger, run for real here: a child printing Triton's and vLLM's lines (taken from
a real H200 run and the lab), signals passed through, the child's exit code kept."""

import json
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from tests.support.paths import FIXTURES
from tritonops.logs import container_logger
from tritonops.logs.container_logger import Formatter
from tritonops.logs.ecs import display, parsed

LOGGER = Path(container_logger.__file__)
FIELDS = ["--host", "gpu-7", "--deployment", "prod", "--release", "20261201T080000Z-6533bf3f", "--models", "chat"]
REAL = FIXTURES / "real" / "h200-serve-qwen05" / "tritonserver.log"


def fixed(line, models=("chat",)):
    clock = lambda: datetime(2026, 12, 1, 9, 30, 0, 123456, tzinfo=timezone.utc)  # noqa: E731
    return Formatter("gpu-7", "prod", "r1", models, clock).document(line)


def test_a_triton_line_becomes_ecs_fields():
    doc = fixed('2026-12-01T09:30:02Z I 1 model_lifecycle.cc:839] "successfully loaded \'chat\'"')
    assert doc == {"@timestamp": "2026-12-01T09:30:00.123Z", "log.level": "info",
                   "message": "successfully loaded 'chat'", "ecs.version": "8.11.0", "host.name": "gpu-7",
                   "service.name": "triton", "labels": {"deployment": "prod", "release": "r1", "model": "chat"},
                   "log.origin": {"file": {"name": "model_lifecycle.cc", "line": 839}}}


def test_vllm_lines_engine_core_prefix_levels_and_continuations():
    formatter = Formatter("h", "d", "r", ["a", "b"])
    kv = formatter.document("(EngineCore pid=2569) INFO 12-01 09:27:04 [kv_cache_utils.py:2146] "
                            "GPU KV cache size: 11,057,680 tokens")
    assert (kv["service.name"], kv["log.level"], kv["message"]) == ("vllm", "info", "GPU KV cache size: 11,057,680 tokens")
    assert kv["labels"]["model"] == "a,b"  # the engine does not say which model: all of them
    warning = formatter.document("WARNING 12-01 09:27:04 [config.py:1] careful")
    continued = formatter.document("  a traceback line")
    assert (warning["log.level"], continued["log.level"], continued["service.name"]) == ("warn", "warn", "vllm")
    named = formatter.document('2026-12-01T09:30:02Z E 1 model.py:1] "[vllm] model \'b\': failed"')
    assert (named["labels"]["model"], named["log.level"], named["service.name"]) == ("b", "error", "triton")


def test_every_line_of_a_real_h200_log_is_one_document_with_its_message():
    lines = REAL.read_text().splitlines()
    formatter = Formatter("h200", "prod", "r1", ["qwen05"])
    docs = [formatter.document(line) for line in lines]
    assert len(docs) == len(lines)
    assert {d["service.name"] for d in docs} == {"triton", "vllm"}
    kv = [d for d in docs if "GPU KV cache size" in d["message"]]
    assert kv and kv[0]["message"] == "GPU KV cache size: 11,057,680 tokens" and kv[0]["service.name"] == "vllm"


def run_logger(script: str, **kwargs):
    return subprocess.Popen([sys.executable, str(LOGGER), *FIELDS, "--", sys.executable, "-c", script],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def test_stdout_and_stderr_are_formatted_and_the_exit_code_kept():
    proc = run_logger("import sys; print('2026-12-01T09:30:00Z I 1 server.cc:1] \"started\"'); "
                      "print('INFO 12-01 09:30:00 [x.py:2] loaded', file=sys.stderr); sys.exit(3)")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 3
    (line,) = out.splitlines()
    doc = json.loads(line)
    assert (doc["message"], doc["host.name"], doc["labels"]["release"]) == ("started", "gpu-7", FIELDS[5])
    assert parsed(err.splitlines()[0])["message"] == "loaded"
    assert display(line).endswith("info  triton    started")


def test_sigterm_reaches_the_child_which_exits_its_own_way():
    proc = run_logger("import signal, sys, time\n"
                      "signal.signal(signal.SIGTERM, lambda *a: (print('stopping', flush=True), sys.exit(0)))\n"
                      "print('up', flush=True)\n"
                      "time.sleep(60)")
    assert json.loads(proc.stdout.readline())["message"] == "up"
    proc.send_signal(signal.SIGTERM)
    started = time.monotonic()
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0 and json.loads(out.splitlines()[0])["message"] == "stopping"
    assert time.monotonic() - started < 10


def test_a_line_that_is_not_ours_reads_back_as_it_is():
    assert parsed("plain text") is None and display("plain text") == "plain text"
    assert parsed("{not json") is None and display("{not json") == "{not json"


def test_the_admin_key_is_read_from_its_file_into_tritonservers_flags(tmp_path):
    key = tmp_path / "admin.key"
    key.write_text("s3cret\n")
    proc = subprocess.run([sys.executable, str(LOGGER), *FIELDS, "--restricted-key-file", str(key),
                           "--restricted-apis", "model-repository", "--restricted-header", "h", "--",
                           sys.executable, "-c", "import sys; print(repr(sys.argv[1:]))"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["message"] == repr(["--http-restricted-api=model-repository:h=s3cret",
                                                       "--grpc-restricted-protocol=model-repository:h=s3cret"])


def serve_program_message():
    """The host programs' `message` (host_programs/basic.py, packed into the gate program that reads the logs)."""
    from tritonops.host_programs.basic import message

    return message


def test_lines_read_back_by_the_gate_keep_tritons_level_so_its_warnings_are_not_failures():
    from tritonops.serving.verdict import classify

    message = serve_program_message()
    formatter = Formatter("h", "d", "r", ["m"])
    warning = json.dumps(formatter.document(
        '2026-12-01T09:30:00Z W 1 pinned_memory_manager.cc:273] "Unable to allocate pinned system memory, pinned '
        'memory pool will not be available: CUDA driver version is insufficient for CUDA runtime version"'))
    engine = json.dumps(formatter.document("ERROR 12-01 09:30:02 [core.py:1] ValueError: The model's max seq len "
                                           "(4096) is larger than the maximum number of tokens that can be stored "
                                           "in KV cache (3664)."))
    error = json.dumps(formatter.document('2026-12-01T09:30:00Z E 1 server.cc:1] "CUDA driver version is '
                                          'insufficient for CUDA runtime version"'))
    assert classify(message(warning)) is None  # a warning every CPU-only lab host prints
    assert classify("\n".join(map(message, (warning, engine)))).kind == "context larger than KV cache"
    assert classify(message(error)).kind == "driver too old"
    assert message("not json") == "not json"
