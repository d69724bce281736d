"""bench/real_gpu_prefix.py (issue #44's GPU measurement): the oracle's pins balance the replicas' shares, the
tenants' weights, the stickiness read from a door's log, the arm's door rendered by tritonops checked by a real
HAProxy, and the verdict against the issue's goals on hand-made runs (a miss exits 1)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest

from tests.support.bench_scripts import bench
from tests.support.paths import REPO

prefix = bench("real_gpu_prefix")


def test_the_oracle_pins_tenants_so_both_replicas_get_the_same_share():
    skewed = prefix.weights(26, 0.5)
    assert abs(sum(skewed) - 1) < 1e-9 and skewed[0] == 0.5 and len(set(skewed[1:])) == 1
    pinned = prefix.pins(skewed, 2)
    assert [sum(s for s, p in zip(skewed, pinned) if p == r) for r in (0, 1)] == pytest.approx([0.5, 0.5])
    uniform = prefix.weights(13, None)
    loads = [sum(s for s, p in zip(uniform, prefix.pins(uniform, 2)) if p == r) for r in (0, 1)]
    assert abs(loads[0] - loads[1]) <= 1 / 13 + 1e-9


def test_stickiness_is_the_share_of_keyed_requests_on_their_keys_most_frequent_replica():
    """What the bench records as an arm's stickiness: the door's routing as `tritonops metrics` reads it."""
    from tritonops.door.request_log import routing
    from tritonops.render.door_config import http_backend

    row = lambda key, server: SimpleNamespace(key_hash=key, server=server, backend=http_backend("bench"))  # noqa: E731
    logged = [row("1", "r0"), row("1", "r0"), row("1", "r1"), row("2", "r1"), row(None, "r0")]
    assert routing(logged, http_backend("bench")).stickiness == 0.75
    assert routing([row(None, "r0")], http_backend("bench")).stickiness is None


@pytest.mark.parametrize("arm", ["leastconn", "prefix", "oracle"])
def test_each_arms_door_is_one_haproxy_accepts(tmp_path, arm):
    done = subprocess.run([sys.executable, str(REPO / "bench" / "real_gpu_prefix.py"), "render", arm, "--servers",
                           "127.0.0.1:8100,127.0.0.1:8110", "--maxconn", "32", "--socket", str(tmp_path / "s.sock"),
                           "--lua-dir", str(tmp_path / "lua"), "--factor", "0", "--out", str(tmp_path / "door")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    check = subprocess.run([shutil.which("haproxy") or "/usr/sbin/haproxy", "-c", "-f", str(tmp_path / "door")],
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    text = "".join(p.read_text() for p in sorted((tmp_path / "door").glob("*.cfg")))
    assert ("hash-balance-factor 0" in text) == (arm == "prefix") and ("pinned1" in text) == (arm == "oracle")


def run(cell: str, arm: str, **figures) -> dict:
    base = {"cell": cell, "arm": arm, "repeat": 0, "rate": 10.0, "sent": 300, "requests_failed": 0, "http_503": 0,
            "hit_rate": 0.5, "replica_hit_rates": [0.5, 0.5], "requests_per_replica": [150, 150],
            "replica_ratio": 1.0, "ttft_p50_ms": 100.0, "ttft_p90_ms": 200.0, "ttft_p99_ms": 300.0,
            "e2e_p50_ms": 500.0, "output_tok_s": 1000.0, "stickiness": None}
    return {**base, **figures}


def verdict(tmp_path, runs: list) -> tuple[int, str]:
    for i, one in enumerate(runs):
        (tmp_path / f"load-{i}.json").write_text(json.dumps(one))
    done = subprocess.run([sys.executable, str(REPO / "bench" / "real_gpu_prefix.py"), "table", str(tmp_path),
                           "--goals"], capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout


def test_the_verdict_meets_the_goals_only_when_every_one_holds(tmp_path):
    good = [run("1.6x", "leastconn", hit_rate=0.55), run("1.6x", "oracle", hit_rate=0.95),
            run("1.6x", "prefix150", hit_rate=0.90, ttft_p50_ms=60.0, output_tok_s=990.0, replica_ratio=1.3),
            run("0.6x", "leastconn", hit_rate=0.9), run("0.6x", "prefix150", hit_rate=0.93, ttft_p50_ms=97.0),
            run("skewed", "leastconn"), run("skewed", "prefix150", ttft_p99_ms=320.0)]
    (tmp_path / "good").mkdir()
    code, text = verdict(tmp_path / "good", good)
    assert code == 0 and "MISSED" not in text and text.count("met:") == 9, text
    assert "| 1.6x | prefix150 | 0 | 10.0 | 300 | 0 (0) | 90.0% |" in text
    slow = [r if r["arm"] != "prefix150" or r["cell"] != "1.6x" else {**r, "ttft_p50_ms": 80.0} for r in good]
    (tmp_path / "slow").mkdir()
    code, text = verdict(tmp_path / "slow", slow)
    assert code == 1 and text.count("MISSED") == 1 and "MISSED: 1.6x: TTFT p50 80.0 ms" in text, text


RUNS = REPO / "tests/fixtures/real/h100-prefix-routing"


def test_the_h100_runs_say_what_the_readme_says(tmp_path):
    """The measurement kept in tests/fixtures/real/h100-prefix-routing (README.md): every 1.6x goal met in each
    repeat and on their means; the 0.6x control misses its TTFT p50 goal on the means (why routing by prefix stays
    opt-in); no request failed."""
    runs = [json.loads(p.read_text()) for p in sorted(RUNS.glob("*/load-*.json"))]
    assert len(runs) == 22 and all(r["requests_ok"] == r["sent"] and r["requests_failed"] == 0 for r in runs)
    # the replicas' counters are read from the warm-up's end to the last answer: the requests counted, within 1 %
    assert all(abs(sum(r["requests_per_replica"]) - r["sent"]) <= 0.01 * r["sent"] for r in runs)
    for repeat in ("repeat0", "repeat1"):
        (tmp_path / repeat).mkdir()
        for path in (RUNS / repeat).glob("load-1.6x-*.json"):
            (tmp_path / repeat / path.name).write_text(path.read_text())
        code, text = verdict(tmp_path / repeat, [])
        assert code == 0 and text.count("met: 1.6x") == 6, text
    (tmp_path / "all").mkdir()
    code, text = verdict(tmp_path / "all", runs)
    assert code == 1 and [line for line in text.splitlines() if line.startswith("MISSED")] == [
        "MISSED: 0.6x: TTFT p50 66.1 within 5% of leastconn's 56.95"], text
    assert "met: 1.6x: TTFT p50 52.45 ms >= 30% below leastconn's 129.2 ms" in text
