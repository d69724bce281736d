"""Where benches are kept on the controller: beside the audit log (deploy/event_log.py), under
$TRITONOPS_BENCH_DIR, else $XDG_STATE_HOME/tritonops/bench (~/.local/state/tritonops/bench):

    <root>/<deployment>/<release>/<UTC stamp>/summary.json     tritonops' summary (bench/results.py)
                                              c<N>/            aiperf's exports of concurrency N (JSON, CSV,
                                                               per-request JSONL) and its log
                                              *.png            the plots
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from tritonops.errors import TritonopsError
from tritonops.values.user_dirs import user_path
from tritonops.bench.results import BenchSummary, summary_from_json
from tritonops.values.names import safe_name

ROOT_VAR = "TRITONOPS_BENCH_DIR"
SUMMARY = "summary.json"


def bench_root() -> Path:
    return user_path("state", "bench", override=ROOT_VAR)


def new_run_dir(root: Path, deployment: str, release: str) -> Path:
    """A fresh folder for one run (its name: the UTC time, to the second; a second run in the same second
    gets a suffix)."""
    base = root / safe_name(deployment, "deployment") / _release_dir(release)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for suffix in ("", *(f"-{n}" for n in range(1, 100))):
        path = base / f"{stamp}{suffix}"
        try:
            path.mkdir(parents=True)
            return path
        except FileExistsError:
            continue
    raise TritonopsError(f"{base}: cannot make a run folder")


def _release_dir(release: str) -> str:
    return "+".join(safe_name(part, "release") for part in release.split("+"))


def write_summary(run_dir: Path, summary: BenchSummary) -> Path:
    path = run_dir / SUMMARY
    partial = path.with_name(f".{SUMMARY}.tmp")
    partial.write_text(json.dumps(summary.to_json(), indent=2, sort_keys=True) + "\n")
    os.replace(partial, path)
    return path


def kept_runs(root: Path, deployment: str) -> list[tuple[Path, BenchSummary]]:
    """Every kept run of the deployment whose summary can be read, oldest first."""
    found = []
    for path in sorted((root / safe_name(deployment, "deployment")).glob(f"*/*/{SUMMARY}")):
        try:
            found.append((path.parent, summary_from_json(json.loads(path.read_text()))))
        except (OSError, ValueError, TritonopsError):
            continue
    return sorted(found, key=lambda item: item[1].started)
