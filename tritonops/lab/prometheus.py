"""The lab's Prometheus: Debian's `prometheus` binary run on this machine (the controller side of the
lab) as a process the lab starts and stops, with its config, rules, data and log under
`<state dir>/prometheus/`, listening on 127.0.0.1 only.

It loads the file_sd targets file `tritonops deploy` writes (`targets.json` there, named by the
`tritonops_prometheus_file_sd` the lab's overlay inventory sets) and tritonops' alerting rules
rendered with the lab's seconds-long `for:` (rules.LAB_TIMING; deploy writes the shipped timing beside
the targets file), scraping every second. It reaches each lab host's Triton metrics port at the
host container's address on the lab's Docker network (`tritonops_metrics_address` in the overlay).

    python -m tritonops.lab prometheus up -i inventory/lab.yml   # start (or reload), write the overlay
    tritonops deploy -i inventory/lab.yml -i .lab/prometheus/inventory.yml
    python -m tritonops.lab prometheus targets|alerts             # what it sees
    python -m tritonops.lab prometheus down
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tritonops.errors import TritonopsError
from tritonops.lab.defaults import PROMETHEUS_PORT
from tritonops.metrics.rules import LAB_TIMING, RULES_FILE, render_rules
from tritonops.planning.door import serving_hosts
from tritonops.values.ssh_target import host_address
from tritonops.waiting import wait_until

BINARY = "prometheus"
JOB = "tritonops"


@dataclass(frozen=True)
class LabPrometheus:
    folder: Path      # <state dir>/prometheus
    port: int = PROMETHEUS_PORT

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def config_file(self) -> Path:
        return self.folder / "prometheus.yml"

    @property
    def targets_file(self) -> Path:
        return self.folder / "targets.json"

    @property
    def rules_file(self) -> Path:
        return self.folder / "lab-rules" / RULES_FILE

    @property
    def inventory_file(self) -> Path:
        return self.folder / "inventory.yml"

    @property
    def pid_file(self) -> Path:
        return self.folder / "prometheus.pid"

    @property
    def log_file(self) -> Path:
        return self.folder / "prometheus.log"


def lab_prometheus(state_dir: Path | str, port: int = PROMETHEUS_PORT) -> LabPrometheus:
    return LabPrometheus(Path(state_dir).resolve() / "prometheus", port)


def prometheus_config(targets_file: str, rules_file: str, interval: str = "1s") -> dict:
    """The lab's prometheus.yml (pure)."""
    return {"global": {"scrape_interval": interval, "scrape_timeout": interval, "evaluation_interval": interval},
            "rule_files": [rules_file],
            "scrape_configs": [{"job_name": JOB, "file_sd_configs": [{"files": [targets_file],
                                                                        "refresh_interval": interval}]}]}


def overlay_inventory(targets_file: str, addresses: dict[str, str]) -> dict:
    """An inventory to load after the lab's: every host's targets file, and where Prometheus reaches it."""
    return {"all": {"vars": {"tritonops_prometheus_file_sd": targets_file},
                    "hosts": {name: {"tritonops_metrics_address": host_address(address, f"lab host {name}")}
                              for name, address in sorted(addresses.items())}}}


def container_address(container: str, network: str) -> str | None:
    """The container's address on the lab network (None when it has none: stopped or absent)."""
    proc = subprocess.run(["docker", "inspect", "--format", "{{json .NetworkSettings.Networks}}", container],
                          capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        return None
    found = (json.loads(proc.stdout or "null") or {}).get(network) or {}
    return found.get("IPAddress") or None


def up(lab: LabPrometheus, addresses: dict[str, str], timeout_s: float = 60.0) -> dict:
    """Write config, lab rules and overlay; start Prometheus (or make a running one reload). Data."""
    import yaml

    (lab.folder / "data").mkdir(parents=True, exist_ok=True)
    lab.rules_file.parent.mkdir(parents=True, exist_ok=True)
    lab.rules_file.write_text(render_rules(LAB_TIMING))
    if not lab.targets_file.exists():
        lab.targets_file.write_text("[]\n")
    lab.config_file.write_text(yaml.safe_dump(prometheus_config(str(lab.targets_file), str(lab.rules_file)),
                                              sort_keys=False))
    lab.inventory_file.write_text("# Written by `python -m tritonops.lab prometheus up`: load after the lab's "
                                  "inventory.\n" + yaml.safe_dump(overlay_inventory(str(lab.targets_file), addresses),
                                                                  sort_keys=False))
    pid = running_pid(lab)
    if pid is not None:
        os.kill(pid, signal.SIGHUP)  # config and rules re-read
        started, alive = False, lambda: running_pid(lab) == pid
    else:
        process = _start(lab)
        pid, started, alive = process.pid, True, lambda: process.poll() is None
    _wait_ready(lab, alive, timeout_s)
    return {"url": lab.url, "pid": pid, "started": started, "config": str(lab.config_file),
            "targets_file": str(lab.targets_file), "rules": str(lab.rules_file), "inventory": str(lab.inventory_file)}


def _start(lab: LabPrometheus) -> subprocess.Popen:
    binary = _binary()
    with open(lab.log_file, "ab") as log:
        process = subprocess.Popen(
            [binary, f"--config.file={lab.config_file}", f"--storage.tsdb.path={lab.folder / 'data'}",
             f"--web.listen-address=127.0.0.1:{lab.port}", "--storage.tsdb.retention.time=1d"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, cwd=lab.folder)
    lab.pid_file.write_text(f"{process.pid}\n")
    (lab.folder / "port").write_text(f"{lab.port}\n")
    return process


def _binary() -> str:
    import shutil

    found = shutil.which(BINARY)
    if found is None:
        raise TritonopsError("the lab's Prometheus needs Debian's prometheus package: apt-get install prometheus "
                             "(scripts/bootstrap.sh installs it)")
    return found


def recorded_port(folder: Path) -> int | None:
    """The port the lab's Prometheus was last started on (so `targets`, `alerts`, `down` find it)."""
    try:
        return int((folder / "port").read_text().strip())
    except (OSError, ValueError):
        return None


def running_pid(lab: LabPrometheus) -> int | None:
    """The pid in the lab's pid file when that process is alive and is our Prometheus (its command
    line names our config file); never another process that happens to reuse the pid."""
    try:
        pid = int(lab.pid_file.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return None
    ours = f"--config.file={lab.config_file}".encode() in cmdline
    return pid if ours and not _zombie(pid) else None


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _wait_ready(lab: LabPrometheus, alive, timeout_s: float) -> None:
    def ready() -> bool:
        if not alive():
            tail = lab.log_file.read_text(errors="replace").strip().splitlines()[-1:] if lab.log_file.exists() else []
            raise TritonopsError(f"the lab's Prometheus exited: {tail[0] if tail else 'no log'} ({lab.log_file})")
        try:
            with urllib.request.urlopen(lab.url + "/-/ready", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    if wait_until(ready, timeout_s=timeout_s, interval_s=0.3, max_interval_s=0.3):
        return
    raise TritonopsError(f"the lab's Prometheus was not ready within {timeout_s:.0f} s ({lab.log_file})")


def down(lab: LabPrometheus, timeout_s: float = 30.0) -> bool:
    """Stop the lab's Prometheus (SIGTERM, by its recorded pid); True when one was running."""
    pid = running_pid(lab)
    if pid is None:
        return False
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: running_pid(lab) != pid, timeout_s=timeout_s, interval_s=0.2, max_interval_s=0.2)
    lab.pid_file.unlink(missing_ok=True)
    return True


def api(lab: LabPrometheus, path: str, **params: str) -> object:
    """GET /api/v1/<path>: its `data`, or TritonopsError with Prometheus' error."""
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    with urllib.request.urlopen(f"{lab.url}/api/v1/{path}{query}", timeout=10) as response:
        body = json.loads(response.read())
    if body.get("status") != "success":
        raise TritonopsError(f"Prometheus: {body.get('error', body)}")
    return body["data"]


def query(lab: LabPrometheus, promql: str) -> list[dict]:
    return api(lab, "query", query=promql)["result"]  # type: ignore[index]


def targets(lab: LabPrometheus) -> list[dict]:
    return api(lab, "targets", state="active")["activeTargets"]  # type: ignore[index]


def not_up(found: list[dict]) -> list[str]:
    """The targets Prometheus does not read as up (`host scrapeUrl health`); none listed at all is one too."""
    if not found:
        return ["no target at all"]
    return [f"{t.get('labels', {}).get('host', '?')} {t.get('scrapeUrl')} {t.get('health')}" for t in found
            if t.get("health") != "up"]


def targets_scraped(lab: LabPrometheus, timeout_s: float = 30.0) -> list[dict]:
    """The active targets once each was scraped at least once (health no longer `unknown`), or as they are after
    `timeout_s` (a targets file just written is read within the scrape interval of 1 s, the next scrape follows)."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = targets(lab)
        if (found and not any(t.get("health") == "unknown" for t in found)) or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def alerts(lab: LabPrometheus) -> list[dict]:
    return api(lab, "alerts")["alerts"]  # type: ignore[index]


def main(argv: list[str]) -> int:
    """`python -m tritonops.lab prometheus up|down|targets|alerts [-i INVENTORY] [--state-dir DIR] [--port N]`."""
    import argparse

    from tritonops.lab.containers import network_name
    from tritonops.lab.defaults import DEFAULT_PREFIX, default_state_dir

    parser = argparse.ArgumentParser(prog="python -m tritonops.lab prometheus")
    parser.add_argument("action", choices=("up", "down", "targets", "alerts"))
    parser.add_argument("-i", "--inventory", help="the lab's inventory (up: its hosts are scraped)")
    parser.add_argument("--state-dir", default=None)
    parser.add_argument("--prefix", default=DEFAULT_PREFIX)
    parser.add_argument("--port", type=int, default=None,
                        help=f"up: where it listens (default {PROMETHEUS_PORT}); the others: the port up was given")
    args = parser.parse_args(argv)
    folder = lab_prometheus(args.state_dir or default_state_dir()).folder
    port = args.port or recorded_port(folder) or PROMETHEUS_PORT
    lab = LabPrometheus(folder, port)
    try:
        if args.action == "up":
            if not args.inventory:
                parser.error("up needs -i INVENTORY (the lab's)")
            from tritonops.inventory import load_inventory

            names = [host.name for host in serving_hosts(load_inventory([args.inventory]).hosts)]
            found = {name: container_address(f"{args.prefix}-{name}", network_name(args.prefix)) for name in names}
            state = up(lab, {name: address for name, address in found.items() if address})
            print(f"prometheus {'started' if state['started'] else 'reloaded'}: {state['url']} (pid {state['pid']}); "
                  f"deploy with -i {args.inventory} -i {state['inventory']}")
            missing = sorted(name for name, address in found.items() if not address)
            if missing:
                print(f"no lab container {args.prefix}-<host> on {network_name(args.prefix)} for: {', '.join(missing)} "
                      "(not given an address; --prefix?)")
        elif args.action == "down":
            print("prometheus stopped" if down(lab) else "prometheus was not running")
        elif args.action == "targets":
            found = targets_scraped(lab)
            for target in found:
                labels = target.get("labels", {})
                print(f"{labels.get('host', '?')}: {target['health']} {target['scrapeUrl']} "
                      f"release {labels.get('release', '?')} {target.get('lastError') or ''}".rstrip())
            if unhealthy := not_up(found):
                print(f"error: not every target is UP: {', '.join(unhealthy)}")
                return 1
        else:
            for alert in alerts(lab):
                labels = alert.get("labels", {})
                print(f"{alert['state']}: {labels.get('alertname')} {labels.get('host', '')} "
                      f"{alert.get('annotations', {}).get('summary', '')}")
    except (TritonopsError, OSError) as err:
        print(f"error: {err}")
        return 1
    return 0
