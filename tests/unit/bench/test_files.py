"""What `tritonops bench` keeps on the controller (bench/store.py), its plots (bench/plots.py) and how it finds
aiperf (bench/runner.py), on the real aiperf exports of tests/fixtures/aiperf/."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.bench import fixture_level, summary
from tritonops.bench import store
from tritonops.bench.plots import write_plots
from tritonops.bench.runner import AiperfMissing, aiperf_command, find_aiperf


def test_runs_are_kept_per_deployment_and_release_and_read_back_oldest_first(tmp_path):
    first = summary("r1", "2026-12-02T15:00:00Z", [fixture_level("fast_c1.json", 1)])
    second = summary("r2", "2026-12-02T15:10:00Z", [fixture_level("slow_c1.json", 1)])
    paths = []
    for run in (second, first):
        folder = store.new_run_dir(tmp_path, run.deployment, run.release)
        store.write_summary(folder, run)
        paths.append(folder)
    assert paths[0].parent == tmp_path / "dep" / "r2" and paths[1].parent == tmp_path / "dep" / "r1"
    (tmp_path / "dep" / "r3" / "broken").mkdir(parents=True)
    (tmp_path / "dep" / "r3" / "broken" / "summary.json").write_text("{")
    assert [run for _, run in store.kept_runs(tmp_path, "dep")] == [first, second]
    assert store.new_run_dir(tmp_path, "dep", "r1") != paths[1]  # a second run in the same second: its own folder


def test_the_plots_are_four_pngs_and_overlay_the_compared_release(tmp_path):
    fast = summary("r1", "a", [fixture_level("fast_c1.json", 1), fixture_level("fast_c4.json", 4)])
    slow = summary("r2", "b", [fixture_level("slow_c1.json", 1), fixture_level("slow_c4.json", 4)])
    alone = write_plots(tmp_path, fast)
    assert [p.name for p in alone] == ["throughput.png", "ttft.png", "itl.png", "latency_throughput.png"]
    sizes = {p.name: p.stat().st_size for p in alone}
    both = write_plots(tmp_path, slow, fast)
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in both)
    assert all(p.stat().st_size > sizes[p.name] for p in both)  # a second release's lines and legend entries


def test_without_aiperf_the_error_says_how_to_install_it_in_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("TRITONOPS_AIPERF", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("TRITONOPS_AIPERF_VENV", str(tmp_path / "none"))
    with pytest.raises(AiperfMissing) as missing:
        find_aiperf()
    assert "scripts/install-aiperf.sh" in str(missing.value) and "\n" not in str(missing.value)
    script = tmp_path / "aiperf"
    script.write_text("#!/opt/aiperf/bin/python3\nfrom aiperf.cli import app\n")
    script.chmod(0o755)
    monkeypatch.setenv("TRITONOPS_AIPERF", str(script))
    python, launch = aiperf_command()
    assert python == "/opt/aiperf/bin/python3" and Path(launch).name == "aiperf_launch.py" and os.path.isfile(launch)
    script.write_text("#!/bin/sh\n")
    with pytest.raises(AiperfMissing, match="not aiperf's console script"):
        aiperf_command()


def test_without_matplotlib_the_bench_stops_before_aiperf_runs_and_says_how_to_get_it(tmp_path, monkeypatch):
    """Issue #45 item 5: installed without the [bench] extra, the bench ran aiperf to the end and then crashed
    on `import matplotlib`."""
    import sys

    from tritonops.bench.flow import BenchRequest, run_bench
    from tritonops.errors import InputError
    from tritonops.bench.plan import Workload
    from tritonops.reading.sessions import ReadOptions

    script = tmp_path / "aiperf"
    script.write_text("#!/opt/aiperf/bin/python3\nfrom aiperf.cli import app\n")
    script.chmod(0o755)
    monkeypatch.setenv("TRITONOPS_AIPERF", str(script))
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # what Python's import system holds when it is absent
    request = BenchRequest(Workload(model="", concurrency=(1,)), None, None)
    with pytest.raises(InputError, match=r"plots need matplotlib.*pip install 'tritonops\[bench\]'.*--no-plots"):
        run_bench(None, ReadOptions(), request, root=tmp_path)
