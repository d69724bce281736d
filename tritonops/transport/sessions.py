"""Sessions that last across the phases of one run: each host's SSH session is opened once, on first
use, and handed to every phase (probe, image, deploy tasks); a host that could not be reached is
`unreachable` in every later phase without being dialled again.

    with SessionPool(specs, forks=10) as pool:
        facts = pool.run(read_facts_phase)            # GroupResult, one result per host
        built = pool.run(build_phase, hosts=["a"])    # the same sessions
Whatever a phase raises is that host's one-line result (see pool.py); the others go on.
"""

from __future__ import annotations

import importlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Sequence

from tritonops.errors import TritonopsError
from tritonops.results import GroupResult, HostResult
from tritonops.text import printable
from tritonops.transport.base import CommandTimeout, Traffic, Transport, Unreachable
from tritonops.transport.spec import ConnectionSpec


@dataclass
class HostSession:
    """One host's open connection for the length of a run, and what phases keep about it."""

    spec: ConnectionSpec
    transport: Transport
    # read once per run and kept for its later phases (their types live above this layer):
    facts: Any = None    # the host's facts (facts.model.HostFacts), the probe's read
    docker: Any = None   # the docker client riding this session (image.engine.HostEngine), closed with it

    @property
    def name(self) -> str:
        return self.spec.name

    def close(self) -> None:
        close = getattr(self.docker, "close", None)
        if close is not None:
            try:
                close()
            except Exception:  # closing what rides a half-dead session must not raise
                pass
        try:
            self.transport.close()
        except Exception:
            pass


Phase = Callable[[HostSession], HostResult]


def open_transport(spec: ConnectionSpec, *, accept_new_host_keys: bool = False) -> Transport:
    """The host's session: its commands run as spec.become_user through sudo when set (transport/become.py)."""
    transport = _open_login(spec, accept_new_host_keys)
    if spec.become_user is None:
        return transport
    from tritonops.transport.become import BecomeTransport

    return BecomeTransport(transport, spec)


def _open_login(spec: ConnectionSpec, accept_new_host_keys: bool) -> Transport:
    if spec.opener is not None:  # a connection the caller holds (a fabric Connection): opened its own way
        return spec.opener(spec, accept_new_host_keys=accept_new_host_keys)
    if spec.local:
        from tritonops.transport.local import LocalTransport

        return LocalTransport(spec.name)
    from tritonops.transport.dial import dial_direct

    dialled = dial_direct(spec)  # sshd readies its side while paramiko loads
    try:
        from tritonops.transport.ssh import SshTransport  # paramiko is only needed for remote hosts

        return SshTransport.open(spec, accept_new_host_keys=accept_new_host_keys, dialled=dialled)
    except BaseException:
        if dialled is not None and not isinstance(dialled, OSError):
            dialled.close()  # closed already when the connection had begun; closing twice is harmless
        raise


class SessionPool:
    """`preload`: modules the run will need once hosts answer (a parser, what prints the result). They are
    imported in a thread of their own once a first host is connected, in time this process would
    otherwise spend waiting for hosts (sshd readies a session in ~50 ms, the command runs); not before,
    where they would compete for the interpreter with loading the SSH library and with the handshake's
    replies (docs/performance.md)."""

    def __init__(self, specs: Sequence[ConnectionSpec], *, forks: int = 10, accept_new_host_keys: bool = False,
                 preload: Sequence[str] = ()):
        if forks < 1:
            raise TritonopsError(f"--forks must be at least 1 (got {forks})")
        names = [spec.name for spec in specs]
        if len(set(names)) != len(names):
            raise TritonopsError("a host is named twice: " + ", ".join(sorted({n for n in names if names.count(n) > 1})))
        self.specs = {spec.name: spec for spec in specs}
        self.forks = forks
        self.accept_new_host_keys = accept_new_host_keys
        self._sessions: dict[str, HostSession] = {}
        self._unreachable: dict[str, str] = {}
        self._locks = {name: threading.Lock() for name in self.specs}
        self.closed = False
        self._connected = threading.Event()
        if preload:
            threading.Thread(target=self._preload, args=(tuple(preload),), name="preload", daemon=True).start()

    def _preload(self, modules: tuple[str, ...]) -> None:
        """Import `modules` once a first host is connected. A warm-up only: a module that fails to load
        here fails again, and is reported, where it is used."""
        self._connected.wait()
        for name in modules:
            if self.closed:
                return
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - see above
                pass

    def __enter__(self) -> "SessionPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def unreachable(self) -> dict[str, str]:
        """Hosts that could not be reached, and why (one line each)."""
        return dict(self._unreachable)

    def session(self, name: str) -> HostSession:
        """The host's open session, opened now if this is its first use; Unreachable if it cannot be."""
        with self._locks[name]:
            if name in self._unreachable:
                raise Unreachable(self._unreachable[name])
            if name not in self._sessions:
                spec = self.specs[name]
                try:
                    transport = open_transport(spec, accept_new_host_keys=self.accept_new_host_keys)
                except Unreachable as exc:
                    self._unreachable[name] = one_line(str(exc))
                    raise Unreachable(self._unreachable[name]) from None
                except Exception as exc:  # a missing proxy program, a bad key file, a library's surprise
                    self._unreachable[name] = one_line(f"cannot connect to {spec.label}: {described(exc)}")
                    raise Unreachable(self._unreachable[name]) from None
                self._sessions[name] = HostSession(spec, transport)
                self._connected.set()
            return self._sessions[name]

    def lost(self, name: str, why: str) -> None:
        """The host's session broke mid-run: later phases report it unreachable."""
        with self._locks[name]:
            self._unreachable[name] = one_line(why)
            session = self._sessions.pop(name, None)
        if session is not None:
            session.close()

    def run(self, phase: Phase, hosts: Iterable[str] | None = None, *, task: str = "") -> GroupResult:
        """`phase` on each host (all, or `hosts` in the given order), at most `forks` at once."""
        names = list(self.specs) if hosts is None else list(hosts)
        if not names:
            return GroupResult()
        with ThreadPoolExecutor(max_workers=min(self.forks, len(names)), thread_name_prefix="host") as pool:
            futures = [pool.submit(self._run_one, name, phase, task) for name in names]
            return GroupResult.of(future.result() for future in futures)

    def _run_one(self, name: str, phase: Phase, task: str) -> HostResult:
        started = time.monotonic()

        def result(status: str, msg: str) -> HostResult:
            return HostResult(name, status, one_line(msg), elapsed_s=time.monotonic() - started, task=task)

        try:
            session = self.session(name)
        except Unreachable as exc:
            return result("unreachable", str(exc))
        try:
            outcome = phase(session)
        except Unreachable as exc:
            self.lost(name, str(exc))
            return result("unreachable", str(exc))
        except (CommandTimeout, TritonopsError) as exc:
            return result("failed", str(exc))
        except Exception as exc:  # a bug or an unexpected host: report it on that host only
            return result("failed", described(exc))
        return replace(outcome, elapsed_s=time.monotonic() - started, task=outcome.task or task)

    def traffic(self) -> Traffic:
        """The command-channel traffic of every session opened so far (see transport.base.Traffic)."""
        total = Traffic()
        for session in list(self._sessions.values()):
            total += getattr(session.transport, "traffic", Traffic())
        return total

    def close(self) -> None:
        self.closed = True
        self._connected.set()  # a preload still waiting ends without loading anything
        sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            session.close()


def one_line(text: str) -> str:
    """A message as one line: later lines joined with ' | ', control characters dropped."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return printable(" | ".join(lines))


def described(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
