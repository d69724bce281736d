"""`tritonops logs` on the command line: how a follow ends (no SSH: the rounds are given)."""

import pytest
import yaml

from tritonops.cli.main import main
from tritonops.logs.reading import LogLine
from tritonops.results import GroupResult, HostResult


@pytest.fixture
def inventory(tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": {"gpu1": {"ansible_host": "127.0.0.1", "ansible_port": 1}}}}))
    return str(path)


@pytest.fixture
def rounds_then_ctrl_c(monkeypatch):
    """read_logs yields one round per status given, then the user presses Ctrl-C; `closed` says whether the
    reading (its sessions) was ended."""
    state = {"closed": False}

    def fake_read_logs(inputs, options, *, tail, since, follow=False, replica=0):
        statuses = state["statuses"]
        try:
            for status in statuses:
                lines = [LogLine("2026-12-01T11:15:26Z", f"line {len(statuses)}")] if status == "ok" else []
                yield GroupResult.of([HostResult("gpu1", status, "no container" if status != "ok" else "1 line(s)",
                                                 lines)])
            raise KeyboardInterrupt
        finally:
            state["closed"] = True

    monkeypatch.setattr("tritonops.reading.logs.read_logs", fake_read_logs)
    return state


def test_ctrl_c_ends_a_follow_quietly_with_the_code_of_what_was_read(capsys, inventory, rounds_then_ctrl_c):
    rounds_then_ctrl_c["statuses"] = ["ok", "ok"]
    code = main(["logs", "-i", inventory, "--follow"])
    captured = capsys.readouterr()
    assert code == 0 and captured.err == ""
    assert captured.out.count("gpu1 | line 2") == 2 and rounds_then_ctrl_c["closed"]


def test_a_follow_that_saw_a_host_fail_still_says_so_when_ended(capsys, inventory, rounds_then_ctrl_c):
    rounds_then_ctrl_c["statuses"] = ["failed", "ok"]
    assert main(["logs", "-i", inventory, "--follow"]) == 2
    assert "interrupted" not in capsys.readouterr().err


def test_ctrl_c_anywhere_else_is_still_an_interruption(capsys, inventory, rounds_then_ctrl_c):
    rounds_then_ctrl_c["statuses"] = []
    code = main(["logs", "-i", inventory])   # no --follow: the read was cut short
    assert code == 99 and capsys.readouterr().err == "error: interrupted\n"
