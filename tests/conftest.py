import os
import socket
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
SHARED = Path(os.environ.get("TRITONOPS_SHARED", REPO.parent / "shared"))


def deploy_inputs(tmp_path: Path, inventory: str, limit: str | None = None):
    """The run inputs of the shipped deploy playbook (its roles too) over `inventory`, YAML text written to
    tmp_path/hosts.yml, as `tritonops deploy -i` reads them; `limit` as --limit."""
    from tritonops.playbook import load_run_inputs
    from tritonops.playbook.shipped import playbook_path, roles_path

    (tmp_path / "hosts.yml").write_text(inventory)
    playbook = str(playbook_path("deploy.yml"))
    return load_run_inputs(playbook, [str(tmp_path / "hosts.yml")], roles_path=roles_path(playbook), limit=limit)


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (just bound and let go)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(autouse=True)
def _no_user_ssh_config(monkeypatch, tmp_path_factory):
    """The developer's own ~/.ssh/config and known_hosts must never leak into a test."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TRITONOPS_SSH_CONFIG", os.devnull)


def pytest_terminal_summary(terminalreporter):
    from fuzzcount import tried

    if tried:
        total = sum(tried.values())
        terminalreporter.write_line(f"fuzz examples tried: {total:,} ("
                                    + ", ".join(f"{name} {count:,}" for name, count in sorted(tried.items())) + ")")


def _hypothesis_profiles():
    """CI runs the fuzzers derandomized (the same examples every run, so a red CI is reproducible);
    a developer's run explores new examples each time."""
    from hypothesis import settings

    settings.register_profile("ci", derandomize=True, print_blob=True)
    if os.environ.get("CI"):
        settings.load_profile("ci")


_hypothesis_profiles()
