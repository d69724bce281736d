"""The targets file on the controller: replaced whole (never half-written), unchanged when nothing
changed, and a file that is not file_sd left alone with an error naming it."""

import os

import pytest

from tritonops.deploy.targets import _replace
from tritonops.errors import InputError
from tritonops.metrics.targets import HostTarget, merged_groups, read_targets, render_targets


def update(path, targets, replaced):
    return _replace(str(path), lambda text: render_targets(merged_groups(read_targets(text, str(path)), replaced,
                                                                         targets)))


def test_written_once_then_unchanged_and_other_hosts_kept(tmp_path):
    path = tmp_path / "sd" / "targets.json"
    a = HostTarget("a", "10.0.0.1", 8002, "prod", "r1", ("m",), "NVIDIA H200", 8)
    b = HostTarget("b", "10.0.0.2", 8002, "prod", "r1", ("m",), "NVIDIA H200", 8)
    assert update(path, [a, b], [("prod", "a"), ("prod", "b")]) is True
    first = path.stat().st_mtime_ns, path.read_text()
    assert update(path, [a, b], [("prod", "a"), ("prod", "b")]) is False
    assert (path.stat().st_mtime_ns, path.read_text()) == first
    newer = HostTarget("a", "10.0.0.1", 8002, "prod", "r2", ("m",), "NVIDIA H200", 8)
    assert update(path, [newer], [("prod", "a")]) is True  # a deploy --limit a
    assert [g["labels"]["release"] for g in read_targets(path.read_text(), str(path))] == ["r2", "r1"]
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    assert sorted(os.listdir(path.parent)) == ["targets.json", "targets.json.lock"]  # no partial left


def test_a_file_that_is_not_file_sd_is_left_as_it_was(tmp_path):
    path = tmp_path / "targets.json"
    path.write_text("scrape_configs: []\n")
    with pytest.raises(InputError, match=f"^{path}: not a Prometheus file_sd JSON file"):
        update(path, [], [])
    assert path.read_text() == "scrape_configs: []\n"
