#!/usr/bin/env python3
"""How long `tritonops probe` takes on N hosts, against plain OpenSSH and Ansible doing the same job.

Brings up light lab hosts (sshd + simulated GPUs, see docs/lab.md), then for each N (default
1, 8, 32, 64), on the first N hosts, in rounds (each round runs the three in a rotating order, so
they share the machine's load; the figure is the median of --repeat rounds):
  - tritonops:  tritonops probe -i INV --limit <first N> --forks N --json
  - OpenSSH:    the floor: one plain `ssh` per host, all at once, running the probe's own remote
                command with the same bundle on stdin (the same query, the same bytes), with the
                inventory's key and known_hosts and strict host-key checking; nothing else tuned
  - Ansible:    ansible <first N> -m setup, then -m command -a '<NVML read>' (its fact gathering plus
                one GPU query: what a user does by hand), -f N, Ansible's defaults (ControlPersist on)
and prints the medians, the two ratios (tritonops / OpenSSH, goal <= 1.25; Ansible / tritonops,
goal >= 8) and the load average over the rounds. Every run is checked (all N hosts answered). Ends with each
goal met or MISSED (per N); exits 1 when one missed.
One untimed round on one host comes first (bytecode compiled, the probe bundle cached).
tritonops is, by default, installed from a wheel of this tree into a venv of its own whose
dependencies are this venv's (--install wheel: what `pip install` gives a user); --install editable
runs the development install next to this interpreter, whose finder every start pays (~20-40 ms).
ansible is the one next to this interpreter (the venv's), else the one on PATH. Python bytecode
caching is on for all three (PYTHONPYCACHEPREFIX in the state dir), as for installed packages: a
development shell with PYTHONDONTWRITEBYTECODE=1 would recompile tritonops' own modules on every run
(+0.1 s); --no-bytecode keeps the environment as it is. Not a test.

    python bench/probe_fleet.py [--sizes 1,8,32,64] [--repeat 3] [--prefix tritonops-bench]
                                [--port-base 22600] [--keep] [--json-out FILE] [--install wheel|editable]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from goals import Goal, verdict  # noqa: E402  (bench/ is the script's folder)

GOAL_OURS_OVER_OPENSSH = 1.25
GOAL_ANSIBLE_OVER_OURS = 8.0


def goals(rows: list[dict]) -> list[Goal]:
    """Per N: tritonops within 1.25x of plain OpenSSH, Ansible at least 8x tritonops (where Ansible ran)."""
    found = []
    for row in rows:
        found.append(Goal(f"N={row['hosts']}: tritonops / OpenSSH", round(row["ours_over_openssh"], 3),
                          GOAL_OURS_OVER_OPENSSH, unit="x"))
        if not math.isnan(row["ansible_over_ours"]):   # NaN: --no-ansible
            found.append(Goal(f"N={row['hosts']}: Ansible / tritonops", round(row["ansible_over_ours"], 2),
                              GOAL_ANSIBLE_OVER_OURS, at_most=False, unit="x"))
    return found

from tritonops.facts import probe_payload  # noqa: E402
from tritonops.inventory import load_inventory  # noqa: E402

NVML_QUERY = ("python3 -c \"import ctypes; n=ctypes.CDLL('libnvidia-ml.so.1'); n.nvmlInit_v2(); "
              "c=ctypes.c_uint(); n.nvmlDeviceGetCount_v2(ctypes.byref(c)); print(c.value)\"")
ANSIBLE_ENV = dict(ANSIBLE_HOST_KEY_CHECKING="True", ANSIBLE_STDOUT_CALLBACK="minimal",
                   ANSIBLE_PYTHON_INTERPRETER="auto_silent", ANSIBLE_LOCALHOST_WARNING="False",
                   ANSIBLE_INVENTORY_UNPARSED_WARNING="False", ANSIBLE_NOCOLOR="1")


class BenchFailure(Exception):
    pass


def venv_tool(name: str) -> str | None:
    """The tool installed beside this interpreter (a venv's bin/), else the one on PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else shutil.which(name)


def children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes so far."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


CONTROLLER_CPU: dict[str, list[float]] = {}  # what each tool's own processes used, per run


def timed(argv: list[str], env: dict) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    return time.perf_counter() - started, done


def installed_from_wheel(state: Path) -> str:
    """`tritonops` installed from a wheel of this tree (built again each run: the tree may have changed)
    into a venv of its own; a path line in a .pth file gives it this venv's dependencies, the same
    versions, and no editable-install finder."""
    import shutil
    import sysconfig

    venv, wheels = state / "installed", state / "wheels"
    for folder in (venv, wheels):
        shutil.rmtree(folder, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (site,) = (venv / "lib").glob("python*/site-packages")
    (site / "bench-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    quiet = dict(stdout=subprocess.DEVNULL, check=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels),
                    str(REPO)], **quiet)
    (wheel,) = wheels.glob("tritonops-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    "--no-deps", str(wheel)], **quiet)
    return str(venv / "bin" / "tritonops")


def tritonops_run(program: list[str], inventory: Path, limit: str, n: int, env: dict) -> float:
    cpu = children_cpu()
    seconds, done = timed([*program, "probe", "-i", str(inventory),
                           "--limit", limit, "--forks", str(n), "--json"], env)
    try:
        statuses = [row["status"] for row in json.loads(done.stdout)["results"]]
    except (ValueError, KeyError):
        raise BenchFailure(f"tritonops probe: exit {done.returncode}, no report\n{done.stderr[-2000:]}") from None
    if len(statuses) != n or set(statuses) != {"ok"}:
        raise BenchFailure(f"tritonops probe: statuses {statuses}\n{done.stderr[-2000:]}")
    CONTROLLER_CPU.setdefault(f"tritonops {n}", []).append(children_cpu() - cpu)
    return seconds


SSH_OPTIONS: list[str] = []  # --ssh-option: e.g. KexAlgorithms=curve25519-sha256 for a stricter floor


def ssh_argv(spec, command: str) -> list[str]:
    """Plain OpenSSH with the inventory's key, known_hosts and strict host-key checking."""
    argv = ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"]
    for option in SSH_OPTIONS:
        argv += ["-o", option]
    for key in spec.key_files:
        argv += ["-i", key]
    if spec.known_hosts_file:
        argv += ["-o", f"UserKnownHostsFile={spec.known_hosts_file}"]
    if spec.port:
        argv += ["-p", str(spec.port)]
    return argv + [f"{spec.user}@{spec.host}" if spec.user else spec.host, command]


def openssh_run(specs: list, env: dict) -> float:
    """The floor: every host's ssh started at once, the probe's command and bundle, until the last ends."""
    command, bundle = probe_payload.command("/opt/tritonops"), probe_payload.bundle()
    cpu = children_cpu()
    started = time.perf_counter()
    procs = [subprocess.Popen(ssh_argv(spec, command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env) for spec in specs]
    outputs = [proc.communicate(bundle) for proc in procs]
    seconds = time.perf_counter() - started
    for spec, proc, (out, err) in zip(specs, procs, outputs):
        if proc.returncode != 0 or not json.loads(out.decode().strip().splitlines()[-1]).get("nvml"):
            raise BenchFailure(f"ssh {spec.name}: exit {proc.returncode}\n{err.decode()[-2000:]}")
    CONTROLLER_CPU.setdefault(f"openssh {len(specs)}", []).append(children_cpu() - cpu)
    return seconds


def ansible_run(inventory: Path, limit: str, n: int, env: dict) -> tuple[float, float]:
    base = [venv_tool("ansible"), limit, "-i", str(inventory), "-f", str(n)]
    results = []
    for extra in (["-m", "setup"], ["-m", "command", "-a", NVML_QUERY]):
        seconds, done = timed(base + extra, env)
        successes = done.stdout.count("SUCCESS") + done.stdout.count("CHANGED")
        if done.returncode != 0 or successes != n:
            raise BenchFailure(f"ansible {extra[1]}: exit {done.returncode}, {successes}/{n} hosts\n"
                               f"{done.stdout[-1500:]}\n{done.stderr[-1500:]}")
        results.append(seconds)
    return results[0], results[1]


def handshakes(inventory: Path, count: int, env: dict) -> dict:
    """One connection at a time to `count` hosts, each running `true`: wall time and controller CPU per
    connection, tritonops' transport (paramiko, in this process) against a plain `ssh` process."""
    import resource

    from tritonops.transport.ssh import SshTransport

    specs = [host.connection for host in load_inventory([str(inventory)]).select("all")][:count]
    figures = {"paramiko_wall": [], "paramiko_cpu": [], "openssh_wall": [], "openssh_cpu": []}
    for spec in specs:
        started, cpu = time.perf_counter(), time.process_time()
        transport = SshTransport.open(spec)
        if not transport.run("true").ok:
            raise BenchFailure(f"{spec.name}: true failed over paramiko")
        transport.close()
        figures["paramiko_wall"].append(time.perf_counter() - started)
        figures["paramiko_cpu"].append(time.process_time() - cpu)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        if subprocess.run(ssh_argv(spec, "true"), env=env, capture_output=True).returncode != 0:
            raise BenchFailure(f"{spec.name}: true failed over ssh")
        figures["openssh_wall"].append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        figures["openssh_cpu"].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return {key: statistics.median(values) for key, values in figures.items()}


def measure(program: list[str], n: int, repeat: int, inventory: Path, env: dict, ansible: bool = True) -> dict:
    """`program`: the tritonops command measured (see --install)."""
    names = [f"light-{i:02d}" for i in range(1, n + 1)]
    limit = ":".join(names)
    specs = [host.connection for host in load_inventory([str(inventory)]).select(limit)]
    runs = {"tritonops": [], "openssh": [], "ansible_setup": [], "ansible_command": [], "load": []}
    order = ["tritonops", "openssh", "ansible"] if ansible else ["tritonops", "openssh"]
    for round_ in range(repeat):
        runs["load"].append(os.getloadavg()[0])
        for what in order[round_ % len(order):] + order[:round_ % len(order)]:
            if what == "tritonops":
                runs["tritonops"].append(tritonops_run(program, inventory, limit, n, env))
            elif what == "openssh":
                runs["openssh"].append(openssh_run(specs, env))
            else:
                setup, command = ansible_run(inventory, limit, n, env)
                runs["ansible_setup"].append(setup)
                runs["ansible_command"].append(command)
    runs["ansible"] = [s + c for s, c in zip(runs["ansible_setup"], runs["ansible_command"])] or [float("nan")]
    runs["ansible_setup"] = runs["ansible_setup"] or [float("nan")]
    runs["ansible_command"] = runs["ansible_command"] or [float("nan")]
    medians = {key: statistics.median(values) for key, values in runs.items()}
    cpu = {tool: statistics.median(CONTROLLER_CPU[f"{tool} {n}"]) for tool in ("tritonops", "openssh")}
    return {"hosts": n, "runs": runs, "median": medians, "controller_cpu": cpu,
            "ours_over_openssh": medians["tritonops"] / medians["openssh"],
            "ansible_over_ours": medians["ansible"] / medians["tritonops"]}


def print_table(rows: list[dict]) -> None:
    print(f"\n{'hosts':>5}  {'tritonops':>9}  {'OpenSSH':>8}  {'Ansible':>8}  {'(setup / command)':>17}  "
          f"{'ours/ssh':>8}  {'ansible/ours':>12}  {'load (1 min)':>12}")
    for row in rows:
        m = row["median"]
        loads = row["runs"]["load"]
        print(f"{row['hosts']:>5}  {m['tritonops']:>7.2f} s  {m['openssh']:>6.2f} s  {m['ansible']:>6.2f} s  "
              f"{m['ansible_setup']:>7.2f} / {m['ansible_command']:>5.2f} s  {row['ours_over_openssh']:>7.2f}x  "
              f"{row['ansible_over_ours']:>11.1f}x  {min(loads):>5.2f}-{max(loads):<5.2f}")
    print("\ncontroller CPU (user + system of tritonops' process / of all the ssh processes), median:")
    for row in rows:
        cpu = row["controller_cpu"]
        print(f"  N={row['hosts']}: tritonops {cpu['tritonops']:.2f} s, OpenSSH {cpu['openssh']:.2f} s")
    print("\nmedians of each run set; every run of each:")
    for row in rows:
        runs = row["runs"]
        print(f"  N={row['hosts']}: tritonops {_list(runs['tritonops'])}  OpenSSH {_list(runs['openssh'])}  "
              f"Ansible {_list(runs['ansible'])}")


def _list(values: list[float]) -> str:
    return "[" + ", ".join(f"{v:.2f}" for v in values) + "]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1,8,32,64")
    parser.add_argument("--repeat", type=int, default=3, help="rounds per size; the median is reported (>= 3)")
    parser.add_argument("--profile", default="h200x8", help="GPU profile of the light hosts")
    parser.add_argument("--prefix", default="tritonops-bench", help="the bench lab's prefix (its own containers)")
    parser.add_argument("--state-dir", type=Path, default=None, help="default: .lab/<prefix>")
    parser.add_argument("--port-base", type=int, default=22600)
    parser.add_argument("--lab-hosts", type=int, default=None,
                        help="light hosts in the bench lab (default: the largest size; `lab up` removes the others)")
    parser.add_argument("--keep", action="store_true", help="leave the bench lab running")
    parser.add_argument("--json-out", type=Path, help="write every figure here as JSON")
    parser.add_argument("--no-bytecode", action="store_true", help="leave PYTHONDONTWRITEBYTECODE as it is")
    parser.add_argument("--ssh-option", action="append", default=[], metavar="OPT",
                        help="an -o option for the OpenSSH floor (repeatable), e.g. KexAlgorithms=curve25519-sha256")
    parser.add_argument("--no-ansible", action="store_true", help="tritonops and the OpenSSH floor only")
    parser.add_argument("--install", choices=("wheel", "editable"), default="wheel",
                        help="the tritonops measured: installed from a wheel of this tree (default), or this "
                             "venv's development install")
    parser.add_argument("--handshakes", type=int, default=16, metavar="K",
                        help="also time K single connections (paramiko vs ssh, wall and controller CPU); 0: no")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    SSH_OPTIONS.extend(args.ssh_option)
    if not args.no_ansible and not venv_tool("ansible"):
        sys.exit("ansible is not installed: pip install ansible-core (or pip install -e '.[bench]')")

    state = args.state_dir or REPO / ".lab" / args.prefix
    inventory = state / "inventory.yml"
    lab = [venv_tool("tritonops") or sys.executable, "lab"]
    common = ["--state-dir", str(state), "--prefix", args.prefix]
    started = time.perf_counter()
    lab_hosts = max(args.lab_hosts or 0, max(sizes))
    subprocess.run(lab + ["up", *common, "--hosts", "", "--light", str(lab_hosts), "--light-profile", args.profile,
                          "--port-base", str(args.port_base), "--inventory-out", str(inventory)],
                   check=True, stdout=subprocess.DEVNULL)
    print(f"lab: {lab_hosts} light hosts ({args.profile}) up in {time.perf_counter() - started:.1f} s; "
          f"{os.cpu_count()} CPUs here, load {os.getloadavg()[0]:.2f}", flush=True)

    measured = installed_from_wheel(state) if args.install == "wheel" else venv_tool("tritonops")
    program = [measured] if measured else [sys.executable, "-m", "tritonops"]
    print(f"tritonops measured: {' '.join(program)} ({args.install} install)", flush=True)
    env = dict(os.environ, **ANSIBLE_ENV)
    if not args.no_bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(state / "pycache")
    rows = []
    try:
        if args.handshakes:
            hs = handshakes(inventory, args.handshakes, env)
            print(f"one connection + `true`, median of {args.handshakes} hosts: paramiko {hs['paramiko_wall']:.3f} s "
                  f"(controller CPU {hs['paramiko_cpu']:.3f} s), OpenSSH {hs['openssh_wall']:.3f} s "
                  f"(CPU {hs['openssh_cpu']:.3f} s)", flush=True)
        measure(program, 1, 1, inventory, env, not args.no_ansible)  # warm-up, not counted: bytecode compiled, the bundle cached
        CONTROLLER_CPU.clear()
        for n in sizes:
            rows.append(measure(program, n, args.repeat, inventory, env, not args.no_ansible))
            m = rows[-1]["median"]
            print(f"N={n}: tritonops {m['tritonops']:.2f} s, OpenSSH {m['openssh']:.2f} s, "
                  f"Ansible {m['ansible']:.2f} s", flush=True)
    except BenchFailure as failure:
        sys.exit(f"bench run failed: {failure}")
    finally:
        if not args.keep:
            subprocess.run(lab + ["down", *common], check=False, stdout=subprocess.DEVNULL)
    print_table(rows)
    if args.json_out:
        args.json_out.write_text(json.dumps(rows, indent=2))
    return verdict(goals(rows))


if __name__ == "__main__":
    raise SystemExit(main())
