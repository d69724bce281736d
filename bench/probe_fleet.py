#!/usr/bin/env python3
"""How long `tritonops probe` takes on N hosts, against Ansible doing the same job.

Brings up N light lab hosts (sshd + simulated GPUs, see docs/lab.md), then for
N = 1, 8, 32 (or --sizes) times, on the same hosts:
  - tritonops probe -i INV --limit <first N> --json
  - ansible <first N> -m setup  plus  ansible <first N> -m command -a '<NVML read>'
    (Ansible's fact gathering plus one GPU query: what a user does by hand)
and prints seconds and the ratio. Both use --forks N. Each timing is the best of
--repeat runs. Not a test: it prints figures.

    python bench/probe_fleet.py [--sizes 1,8,32] [--repeat 2] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NVML_QUERY = ("python3 -c \"import ctypes; n=ctypes.CDLL('libnvidia-ml.so.1'); n.nvmlInit_v2(); "
              "c=ctypes.c_uint(); n.nvmlDeviceGetCount_v2(ctypes.byref(c)); print(c.value)\"")


def timed(argv: list[str], env: dict) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    return time.perf_counter() - started, done


def best_of(repeat: int, argv: list[str], env: dict, check) -> float:
    times = []
    for _ in range(repeat):
        seconds, done = timed(argv, env)
        problem = check(done)
        if problem:
            sys.exit(f"{' '.join(argv[:4])}...: {problem}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
        times.append(seconds)
    return min(times)


def tritonops_ok(n: int):
    def check(done: subprocess.CompletedProcess) -> str | None:
        try:
            report = json.loads(done.stdout)
        except ValueError:
            return f"exit {done.returncode}, no JSON"
        statuses = [host["status"] for host in report["hosts"]]
        if len(statuses) != n or set(statuses) != {"ok"}:
            return f"statuses {statuses}"
        return None
    return check


def ansible_ok(n: int):
    def check(done: subprocess.CompletedProcess) -> str | None:
        successes = done.stdout.count("SUCCESS") + done.stdout.count("CHANGED")
        if done.returncode != 0 or successes != n:
            return f"exit {done.returncode}, {successes}/{n} hosts succeeded"
        return None
    return check


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1,8,32")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--profile", default="h200x8", help="GPU profile of the light hosts")
    parser.add_argument("--keep", action="store_true", help="leave the bench lab running")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    largest = max(sizes)
    if not shutil.which("ansible"):
        sys.exit("ansible is not installed: pip install ansible-core (or pip install -e '.[bench]')")

    state = REPO / ".lab" / "bench"
    inventory = state / "inventory.yml"
    lab = [sys.executable, "-m", "tritonops", "lab"]
    common = ["--state-dir", str(state), "--prefix", "tritonops-bench"]
    started = time.perf_counter()
    subprocess.run(lab + ["up", *common, "--hosts", "", "--light", str(largest), "--light-profile", args.profile,
                          "--inventory-out", str(inventory)], check=True, stdout=subprocess.DEVNULL)
    print(f"lab: {largest} light hosts ({args.profile}) up in {time.perf_counter() - started:.1f} s")

    env = dict(os.environ, ANSIBLE_HOST_KEY_CHECKING="True", ANSIBLE_STDOUT_CALLBACK="minimal",
               ANSIBLE_PYTHON_INTERPRETER="auto_silent", ANSIBLE_LOCALHOST_WARNING="False",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="False", ANSIBLE_NOCOLOR="1")
    rows = []
    try:
        for n in sizes:
            limit = ":".join(f"light-{i:02d}" for i in range(1, n + 1))
            ours = best_of(args.repeat, [sys.executable, "-m", "tritonops", "probe", "-i", str(inventory),
                                         "--limit", limit, "--forks", str(n), "--json"], env, tritonops_ok(n))
            ansible = [shutil.which("ansible"), limit, "-i", str(inventory), "-f", str(n)]
            setup = best_of(args.repeat, ansible + ["-m", "setup"], env, ansible_ok(n))
            query = best_of(args.repeat, ansible + ["-m", "command", "-a", NVML_QUERY], env, ansible_ok(n))
            rows.append((n, ours, setup + query, setup, query))
    finally:
        if not args.keep:
            subprocess.run(lab + ["down", *common], check=False, stdout=subprocess.DEVNULL)

    print(f"\n{'hosts':>5}  {'tritonops probe':>15}  {'ansible setup+command':>21}  {'(setup / command)':>19}  "
          f"{'ansible / tritonops':>19}")
    for n, ours, theirs, setup, query in rows:
        print(f"{n:>5}  {ours:>13.2f} s  {theirs:>19.2f} s  {setup:>8.2f} / {query:>6.2f} s  {theirs / ours:>18.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
