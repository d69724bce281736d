#!/usr/bin/env python3
"""How long `tritonops` takes before doing anything: --help, --version, a usage error, a command's
--help; median wall time of N runs each, with bytecode cached (as an installed package has it) and
without (PYTHONDONTWRITEBYTECODE=1). With --before TREE, the same cases for another checkout of the
repository, alternating, in the same conditions (e.g. `git worktree add /tmp/old 52f218a`).

    python bench/startup_time.py [--rounds 5] [--before /tmp/old]
Goal (#12): --help, --version and usage errors in <= 0.15 s (median, bytecode cached as an installed package has
it, this tree). Ends with each goal met or MISSED; exits 1 when one missed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from goals import Goal, verdict

REPO = Path(__file__).resolve().parent.parent
GOAL_S = 0.15
GOAL_CASES = ("--help", "--version", "usage error")   # a command's --help is shown, not held to it
GOAL_MODE = "bytecode cached"
CASES = {"--help": ["--help"], "--version": ["--version"], "usage error": ["probe", "--no-such-flag"],
         "probe --help": ["probe", "--help"]}
# what each case must exit with and print, or its time is not a start-up's (a crash is fast too)
EXPECTED = {"--help": (0, "usage: tritonops"), "--version": (0, "tritonops "),
            "usage error": (5, "unrecognized arguments: --no-such-flag"), "probe --help": (0, "usage: tritonops probe")}


def wall(tree: Path, name: str, argv: list[str], env: dict) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "tritonops", *argv], env=dict(env, PYTHONPATH=str(tree)),
                          capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    code, says = EXPECTED[name]
    if done.returncode != code or says not in done.stdout + done.stderr:
        raise SystemExit(f"{tree}: tritonops {' '.join(argv)} exited {done.returncode} (expected {code}) and did "
                         f"not print {says!r}: {(done.stderr or done.stdout).strip()[-300:]}")
    return seconds


def goals(medians: dict[tuple[str, str], float]) -> list[Goal]:
    """(mode, case) -> this tree's median seconds: each goal case, with bytecode cached, in <= 0.15 s."""
    return [Goal(f"tritonops {case} ({GOAL_MODE})", medians.get((GOAL_MODE, case)), GOAL_S, unit="s")
            for case in GOAL_CASES]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", type=Path, help="another checkout to compare with")
    args = parser.parse_args()
    trees = {"now": REPO, **({"before": args.before.resolve()} if args.before else {})}
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    medians: dict[tuple[str, str], float] = {}   # this tree's, for the goal
    with tempfile.TemporaryDirectory(prefix="tritonops-startup-pyc-") as pyc:
        modes = {"bytecode cached": dict(base, PYTHONPYCACHEPREFIX=pyc),
                 "no bytecode": dict(base, PYTHONDONTWRITEBYTECODE="1")}
        for mode, env in modes.items():
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], env=env, check=False)
            bare = time.perf_counter() - started
            loads = [os.getloadavg()[0]]
            print(f"{mode} (python -c pass {bare:.3f} s)")
            for name, argv in CASES.items():
                for tree in trees.values():
                    wall(tree, name, argv, env)  # warm: bytecode written, files in the page cache
                times: dict[str, list[float]] = {label: [] for label in trees}
                for _ in range(args.rounds):
                    for label, tree in trees.items():
                        times[label].append(wall(tree, name, argv, env))
                loads.append(os.getloadavg()[0])
                medians[(mode, name)] = round(statistics.median(times["now"]), 3)
                shown = "  ".join(f"{label} {statistics.median(values):.3f} s" for label, values in times.items())
                print(f"  {name:<14} {shown}")
            print(f"  (load {min(loads):.2f}-{max(loads):.2f}; median of {args.rounds})")
    return verdict(goals(medians))


if __name__ == "__main__":
    sys.exit(main())
