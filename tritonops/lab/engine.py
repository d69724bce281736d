"""The local Docker engine: find it, or install and start it (no systemd on lab machines)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import docker
from docker.errors import DockerException

from tritonops.errors import TritonopsError
from tritonops.waiting import GaveUp, wait_until

# Programs the lab runs here, and the Debian package that brings each.
REQUIRED_PROGRAMS = {"dockerd": "docker.io", "debootstrap": "debootstrap", "ssh-keygen": "openssh-client",
                     "ssh": "openssh-client", "gcc": "gcc"}


class EngineError(TritonopsError):
    """The local Docker engine cannot be reached or started."""


def _client() -> docker.DockerClient | None:
    try:
        client = docker.from_env(timeout=120)
        client.ping()
        return client
    except DockerException:
        return None


def missing_packages() -> list[str]:
    missing = {pkg for prog, pkg in REQUIRED_PROGRAMS.items() if shutil.which(prog) is None}
    return sorted(missing)


def install_packages(packages: list[str], log_file: Path) -> None:
    if not packages:
        return
    if os.geteuid() != 0:
        raise EngineError(f"the lab needs {', '.join(packages)}: run as root, or install them with apt-get")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    with log_file.open("ab") as log:
        for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", *packages]):
            if subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env).returncode != 0:
                raise EngineError(f"'{' '.join(cmd)}' failed; see {log_file}")


def start_dockerd(log_file: Path, timeout_s: float = 60.0) -> docker.DockerClient:
    """Start dockerd in the background, detached from us, and wait until it answers."""
    with log_file.open("ab") as log:
        proc = subprocess.Popen(["dockerd"], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    def exited() -> str | None:
        return f"dockerd exited with code {proc.returncode}; see {log_file}" if proc.poll() is not None else None

    try:
        client = wait_until(_client, timeout_s=timeout_s, interval_s=0.5, stop=exited)
    except GaveUp as err:
        raise EngineError(str(err)) from None
    if client is None:
        raise EngineError(f"dockerd did not answer within {timeout_s:.0f} s; see {log_file}")
    return client


def ensure_engine(state_dir: Path) -> tuple[docker.DockerClient, list[str]]:
    """A client of a running local engine, and what had to be done to get it (for the report)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    actions: list[str] = []
    packages = missing_packages()
    if packages:
        install_packages(packages, state_dir / "apt.log")
        actions.append(f"installed {', '.join(packages)}")
    client = _client()
    if client is None:
        client = start_dockerd(state_dir / "dockerd.log")
        actions.append(f"started dockerd (log: {state_dir / 'dockerd.log'})")
    return client, actions


def existing_client() -> docker.DockerClient | None:
    """The engine if it already answers; `lab down` and `lab status` never start one."""
    return _client()


def main() -> int:
    """`python -m tritonops.lab.engine`: make sure a Docker engine answers (used by ./run-tests)."""
    import sys

    try:
        _, actions = ensure_engine(Path(".lab"))
    except TritonopsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print("; ".join(actions) or "a Docker engine answers", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
