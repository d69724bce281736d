"""The Triton container's first process: runs tritonserver and writes each line it prints as one
JSON object with ECS field names, so every log line that leaves the host carries who said it.

    python3 container_logger.py --host H --deployment D --release R --models a,b
        [--restricted-key-file F --restricted-apis A --restricted-header H] -- tritonserver ...

Fields: @timestamp (when the line was printed, UTC, milliseconds), log.level, message, host.name,
service.name (the source: triton, vllm), labels.{deployment, release, model}, log.origin.file.*
where the line names it, ecs.version. Triton's lines (ISO 8601 format) and vLLM's (`INFO mm-dd
hh:mm:ss [file:line] ...`, maybe after `(EngineCore pid=N) `) are recognised; any other line
(a table, a traceback) continues the source and level of the line before it. Signals are passed
to tritonserver, orphans are reaped (this is PID 1), and the exit code is tritonserver's.

Runs inside the container with the image's python3: standard library only, Python 3.8+. tritonops
ships this file's text to the host (serving program); the tests run it here.
"""

import datetime
import json
import os
import re
import signal
import subprocess
import sys
import threading

ECS_VERSION = "8.11.0"
TRITON = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) ([IWEV]) \d+ ([\w.\-]+):(\d+)\] ?(.*)$")
VLLM = re.compile(r"^(?:\([\w\-]+ pid=\d+\) )?(DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d"
                  r"(?:\.\d+)? \[([\w.\-]+):(\d+)\] ?(.*)$")
TRITON_LEVELS = {"I": "info", "W": "warn", "E": "error", "V": "debug"}
VLLM_LEVELS = {"DEBUG": "debug", "INFO": "info", "WARNING": "warn", "ERROR": "error", "CRITICAL": "critical"}


class Formatter:
    """Lines of one stream -> ECS JSON documents; remembers the last source and level."""

    def __init__(self, host, deployment, release, models, clock=None):
        self.host, self.models = host, list(models)
        self.labels = {"deployment": deployment, "release": release}
        self.source, self.level = "triton", "info"
        self.clock = clock or (lambda: datetime.datetime.now(datetime.timezone.utc))

    def document(self, line):
        line = line.rstrip("\r\n")
        origin = None
        match = TRITON.match(line)
        if match:
            self.source, self.level = "triton", TRITON_LEVELS[match.group(2)]
            origin, message = (match.group(3), int(match.group(4))), match.group(5)
            if len(message) >= 2 and message.startswith('"') and message.endswith('"'):
                message = message[1:-1].replace('\\"', '"')
        else:
            match = VLLM.match(line)
            if match:
                self.source, self.level = "vllm", VLLM_LEVELS[match.group(1)]
                origin, message = (match.group(2), int(match.group(3))), match.group(4)
            else:
                message = line
        doc = {"@timestamp": self.clock().strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
               "log.level": self.level, "message": message, "ecs.version": ECS_VERSION,
               "host.name": self.host, "service.name": self.source,
               "labels": dict(self.labels, model=self.model_of(message))}
        if origin:
            doc["log.origin"] = {"file": {"name": origin[0], "line": origin[1]}}
        return doc

    def model_of(self, message):
        """The served model the line names ('name' or "name"), else the only one, else all."""
        named = [m for m in self.models if "'%s'" % m in message or '"%s"' % m in message
                 or " %s:" % m in message]
        chosen = named if len(named) == 1 else self.models
        return ",".join(chosen)


def pump(stream, out, formatter):
    for raw in iter(stream.readline, b""):
        text = raw.decode("utf-8", "replace")
        out.write(json.dumps(formatter.document(text), ensure_ascii=False) + "\n")
        out.flush()


def exit_code(status):
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def parse(argv):
    if "--" not in argv:
        raise SystemExit("usage: container_logger.py --host H --deployment D --release R --models a,b -- CMD...")
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1:]
    values = dict(zip(options[::2], options[1::2]))
    return values, command


def restricted_flags(values):
    """Triton's restricted-API flags with the key read from its file (mounted read-only), so the key
    is in no `docker run` command line and not in `docker inspect`."""
    path = values.get("--restricted-key-file")
    if not path:
        return []
    with open(path) as handle:
        key = handle.read().strip()
    if not key:
        raise SystemExit("the admin key file %s is empty" % path)
    rule = "%s:%s=%s" % (values["--restricted-apis"], values["--restricted-header"], key)
    return ["--http-restricted-api=" + rule, "--grpc-restricted-protocol=" + rule]


def main(argv):
    values, command = parse(argv)
    command = command + restricted_flags(values)
    models = [m for m in values.get("--models", "").split(",") if m]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, lambda number, frame: child.send_signal(number))
    pumps = []
    for stream, out in ((child.stdout, sys.stdout), (child.stderr, sys.stderr)):
        formatter = Formatter(values.get("--host", ""), values.get("--deployment", ""),
                              values.get("--release", ""), models)
        thread = threading.Thread(target=pump, args=(stream, out, formatter), daemon=True)
        thread.start()
        pumps.append(thread)
    code = 1
    while True:
        try:
            pid, status = os.waitpid(-1, 0)  # PID 1 in the container: reap every orphan too
        except InterruptedError:
            continue
        except ChildProcessError:
            break
        if pid == child.pid:
            code = child.returncode = exit_code(status)
            break
    for thread in pumps:
        thread.join(timeout=5)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
