"""Faults for soak and chaos runs on lab hosts, and what is left on a host afterwards.

A fault plan is data made from a seed (tritonops/lab/fault_plan.py: the same seed, the same trials;
whether a fault landed is decided there too), carried out by `inject` against lab host containers from
this machine (`docker exec` into the host container, never over the SSH session under test): kill the
SSH connection (every connection a `Relay` carries is cut; the relay keeps listening so the rerun gets
through), kill the host's dockerd (SIGKILL, then started again the way the host's entrypoint starts
it), kill the Triton container, stop the lab collector, or signal the controller process (SIGINT /
SIGKILL); each says what it hit (`Effect`). `paused` holds the controller still (SIGSTOP) while a
fault is carried out, so that it lands in the phase the controller was seen in. `heal` undoes what a
fault left behind (dockerd down, collector stopped) before the rerun, as an operator's supervisor would.

`host_snapshot` reads, from inside a host container, what soak counts: containers and images, release
folders, SSH sessions, lock files, processes, disk use. `convergence` reads what chaos checks after a
rerun. Lab only: every name that reaches a command is checked and passed as an argument.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from tritonops import host_programs
from tritonops.errors import TritonopsError
from tritonops.lab.fault_plan import KINDS, PHASES, Effect, Fault, plan_faults  # noqa: F401 (the plan, named here too)
from tritonops.values.names import safe_name
from tritonops.waiting import wait_until

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def _checked(name: str, what: str) -> str:
    if not _NAME.match(name or ""):
        raise ValueError(f"{what}: not a container name: {name!r}")
    return name


class Relay:
    """127.0.0.1:<port> -> target; `cut()` closes every connection it carries (a dropped SSH session)
    and keeps listening, so the next connection gets through."""

    def __init__(self, target: tuple[str, int]):
        self.target = target
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=10)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            with self._lock:
                for s in (source, sink):
                    if s in self._conns:
                        self._conns.remove(s)
                        s.close()

    def open_connections(self) -> int:
        with self._lock:
            return len(self._conns) // 2

    def cut(self) -> int:
        """Close every carried connection at once; how many there were."""
        with self._lock:
            conns, self._conns = list(self._conns), []
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
                conn.close()
            except OSError:
                pass
        return len(conns) // 2

    def close(self) -> None:
        self.server.close()
        self.cut()


def host_exec(container: str, command: str, *, timeout: float = 120.0,
              detach: bool = False) -> subprocess.CompletedProcess:
    """A fixed shell command inside a lab host container (docker exec), not over SSH."""
    argv = ["docker", "exec", *(["-d"] if detach else []), _checked(container, "host container"), "sh", "-c", command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


DOCKERD_PID = "cat /var/run/docker.pid 2>/dev/null"


def kill_dockerd(container: str) -> str:
    """The pid of the dockerd it killed; empty when none was killed."""
    done = host_exec(container, f"pid=$({DOCKERD_PID}) && kill -9 \"$pid\" && echo \"$pid\"")
    return done.stdout.strip() if done.returncode == 0 else ""


def dockerd_up(container: str) -> bool:
    return host_exec(container, "docker info >/dev/null 2>&1", timeout=30).returncode == 0


def start_dockerd(container: str, timeout_s: float = 90.0) -> bool:
    """Start the host's dockerd as its entrypoint does (host-entrypoint.sh), unless one answers; wait for it."""
    if dockerd_up(container):
        return True
    host_exec(container, "pgrep -x dockerd >/dev/null || (rm -f /var/run/docker.pid; "
                         "dockerd >>/var/log/dockerd.log 2>&1 &)", detach=True)
    return bool(wait_until(lambda: dockerd_up(container), timeout_s=timeout_s, interval_s=1, max_interval_s=1))


def kill_triton(container: str, triton: str) -> tuple[bool, str]:
    """Whether `docker kill` killed the running container, and what it said."""
    done = host_exec(container, "docker kill " + shlex.quote(_checked(triton, "Triton container")) + " 2>&1")
    return done.returncode == 0, done.stdout.strip()


def _stopped(pid: int) -> bool:
    """Every thread of `pid` is stopped (or gone)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as handle:
                state = handle.read().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("T", "t", "Z", "X"):
            return False
    return True


@contextmanager
def paused(process: subprocess.Popen, timeout_s: float = 5.0) -> Iterator[bool]:
    """The process held still (SIGSTOP) inside the block, every thread of it stopped; True when it is
    (False: it had exited). SIGCONT after, also when a fault killed it."""
    if process.poll() is not None:
        yield False
        return
    os.kill(process.pid, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + timeout_s
        while not _stopped(process.pid) and time.monotonic() < deadline:
            time.sleep(0.005)
        yield _stopped(process.pid) and process.poll() is None
    finally:
        try:
            os.kill(process.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


@dataclass
class Injector:
    """Carries out faults: host name -> host container and relay; the collector (tritonops.lab.collector)."""

    containers: dict[str, str]
    relays: dict[str, Relay] = field(default_factory=dict)
    collector: object | None = None       # a LabCollector, or None when logs are not shipped
    triton: str = "tritonops-default"      # the deployment's container name
    log: list[str] = field(default_factory=list)

    def inject(self, fault: Fault, controller: subprocess.Popen | None) -> Effect:
        """Carry out `fault`; whether it hit what it aims at, and what was done, in words."""
        host = self.containers[fault.host]
        if fault.kind == "ssh":
            cut = self.relays[fault.host].cut()
            effect = Effect(cut > 0, f"cut {cut} SSH connection(s) to {fault.host}")
        elif fault.kind == "dockerd":
            pid = kill_dockerd(host)
            effect = Effect(bool(pid), f"killed dockerd (pid {pid}) on {fault.host}" if pid
                            else f"no dockerd to kill on {fault.host}")
        elif fault.kind == "triton":
            killed, said = kill_triton(host, self.triton)
            effect = Effect(killed, f"docker kill {self.triton} on {fault.host}: {said or '?'}")
        elif fault.kind == "collector":
            import docker
            from tritonops.lab import collector as lab_collector
            stopped = self.collector is not None and lab_collector.stop(docker.from_env(), self.collector)
            effect = Effect(bool(stopped), "stopped the collector" if stopped else "collector not running")
        elif fault.kind in ("controller-int", "controller-kill"):
            sig = signal.SIGINT if fault.kind == "controller-int" else signal.SIGKILL
            if controller is not None and controller.poll() is None:
                controller.send_signal(sig)
                effect = Effect(True, f"sent {sig.name} to the controller (pid {controller.pid})")
            else:
                effect = Effect(False, "the controller had already finished")
        else:
            raise ValueError(f"unknown fault kind {fault.kind!r}")
        self.log.append(effect.said)
        return effect

    def heal(self) -> list[str]:
        """Undo what faults leave behind: every host's dockerd answers, the collector runs."""
        done = []
        for name, host in self.containers.items():
            if not dockerd_up(host):
                done.append(f"started dockerd on {name}: {'ok' if start_dockerd(host) else 'FAILED'}")
        if self.collector is not None:
            import docker
            from tritonops.lab import collector as lab_collector
            client = docker.from_env()
            found = client.containers.list(all=True, filters={"name": self.collector.name})
            if found and found[0].status != "running":
                lab_collector.start(client, self.collector)
                done.append("started the collector")
        return done


# What soak counts on a host, read inside its container in one command (host_programs/lab_snapshot.sh).
SNAPSHOT = host_programs.source("lab_snapshot.sh")


def host_snapshot(container: str, root: str, deployment: str) -> dict:
    argv = ["docker", "exec", _checked(container, "host container"), "sh", "-c", SNAPSHOT, "snapshot",
            root if root.startswith("/") and ".." not in root else "/nonexistent", safe_name(deployment, "deployment")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if done.returncode != 0 or not done.stdout.strip():  # a failed read is not "nothing left behind"
        raise TritonopsError(f"{container}: the snapshot read failed (exit {done.returncode}): "
                             f"{done.stderr.strip()[-300:]}")
    found: dict = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition("=")
        value = value.strip()
        found[key] = int(value) if value.isdigit() else value
    return found


READ_CURRENT = host_programs.source("lab_read_current.sh")


def current_state(container: str, root: str, deployment: str, triton: str) -> dict:
    """On a host: the lock file (its text), `current`, whether its release.json records a passed gate,
    and which release the deployment's container runs."""
    argv = ["docker", "exec", _checked(container, "host container"), "sh", "-c", READ_CURRENT, "current",
            root, safe_name(deployment, "deployment"), _checked(triton, "Triton container")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:  # the read itself failed (the host container gone or stopped): no state to judge by
        why = " ".join((done.stderr or done.stdout or f"exit {done.returncode}").split())[:300]
        raise TritonopsError(f"{container}: could not read the deployment's state: {why}")
    raw = dict(line.partition("=")[::2] for line in done.stdout.splitlines() if "=" in line)
    try:
        record = json.loads(raw.get("record") or "null")
    except ValueError:
        record = None
    gates = (record or {}).get("gates") or []
    running, _, serving = (raw.get("running") or "").partition(" ")
    current = raw.get("current", "")
    return {"lock": raw.get("lock", ""), "current": current.rpartition("/")[2], "record": record is not None,
            "gate_passed": any(g.get("passed") for g in gates if isinstance(g, dict)),
            "running": running == "true", "serving": serving}


def deployment_inventory(lab_inventory: dict, deployment: str, http_port: int, *, hosts: list[str] | None = None,
                         relays: dict[str, Relay] | None = None, known_hosts: str | None = None,
                         extra_vars: dict | None = None) -> dict:
    """The lab's inventory (as written by `lab up`) narrowed to its full hosts (or `hosts`), every host
    on `deployment` with ports http_port..+2 of its own; with relays, each host is reached through its
    relay (and `known_hosts` names the relay ports)."""
    lab = lab_inventory["all"]["children"]["lab"]["children"]["lab_full"]
    shared = {**lab_inventory["all"].get("vars", {}), **lab.get("vars", {}), **(extra_vars or {})}
    if known_hosts:
        shared.pop("ansible_ssh_common_args", None)
        shared["tritonops_known_hosts_file"] = known_hosts
    chosen = {}
    for name, values in lab["hosts"].items():
        if hosts is not None and name not in hosts:
            continue
        values = dict(values, tritonops_deployment=safe_name(deployment, "deployment"), tritonops_http_port=http_port,
                      tritonops_grpc_port=http_port + 1, tritonops_metrics_port=http_port + 2)
        if relays and name in relays:
            values.update(ansible_host="127.0.0.1", ansible_port=relays[name].port)
        chosen[name] = values
    if shared.get("tritonops_build_host") not in chosen:
        shared["tritonops_build_host"] = sorted(chosen)[0]
    return {"all": {"vars": shared, "hosts": chosen}}


def relayed_known_hosts(lines: list[str], ports: dict[int, int]) -> list[str]:
    """known_hosts lines for relay ports: each `[127.0.0.1]:<host port>` line again under its relay's port."""
    out = list(lines)
    for line in lines:
        for port, relay_port in ports.items():
            prefix = f"[127.0.0.1]:{port} "
            if line.startswith(prefix):
                out.append(f"[127.0.0.1]:{relay_port} " + line[len(prefix):])
    return out


def tcp_connections_to(ports: set[int], pid: int | str = "self") -> int:
    """ESTABLISHED TCP connections of process `pid` to any of `ports` (e.g. the lab hosts' sshd ports):
    its socket inodes (/proc/PID/fd) matched with /proc/PID/net/tcp{,6}."""
    inodes = set()
    folder = f"/proc/{pid}/fd"
    for fd in os.listdir(folder):
        try:
            target = os.readlink(os.path.join(folder, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as handle:
                rows = handle.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 9 and fields[3] == "01" and fields[9] in inodes \
                    and int(fields[2].rsplit(":", 1)[1], 16) in ports:
                count += 1
    return count
