"""The lab's log collector: Debian's rsyslog in a container on the lab's Docker network
(`<prefix>-collector`), receiving syslog over TCP on 514 and writing every message it receives as
one line to `<state dir>/collector/received.log` (bind-mounted, so tests read it directly).

Lab hosts reach it by name on the lab network, as a fleet reaches its collector: a deploy with the
overlay inventory `up` writes (`tritonops_log_driver: syslog`, `tritonops_log_collector:
tcp://<prefix>-collector:514`) ships every host's Triton lines and the deploy's events there.

    python -m tritonops.lab collector up        # start it, write the overlay inventory
    tritonops deploy -i inventory/lab.yml -i .lab/collector/inventory.yml
    python -m tritonops.lab collector show      # what it received, per host
    python -m tritonops.lab collector stop|start|down
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from tritonops.errors import TritonopsError
from tritonops.lab import image_specs as specs
from tritonops.lab.containers import LABEL_LAB, ensure_network
from tritonops.waiting import wait_until

PORT = 514
FILE = "received.log"
LOG_PATH = "/var/log/collector"


@dataclass(frozen=True)
class LabCollector:
    prefix: str
    folder: Path          # <state dir>/collector

    @property
    def name(self) -> str:
        return f"{self.prefix}-collector"

    @property
    def address(self) -> str:
        return f"tcp://{self.name}:{PORT}"

    @property
    def received_file(self) -> Path:
        return self.folder / FILE

    @property
    def inventory_file(self) -> Path:
        return self.folder / "inventory.yml"


def lab_collector(state_dir: Path | str, prefix: str) -> LabCollector:
    return LabCollector(prefix, Path(state_dir) / "collector")


def up(client, collector: LabCollector, cache_dir: Path, log_file: Path) -> None:
    """Build the image if needed, (re)start the container, write the overlay inventory."""
    from tritonops.lab.images import ensure_image

    image = ensure_image(client, specs.collector_spec(specs.base_spec()), cache_dir, log_file)
    collector.folder.mkdir(parents=True, exist_ok=True)
    network = ensure_network(client, collector.prefix)
    found = _container(client, collector)
    if found is not None and (found.image.id != image.image_id or _log_folder(found) != collector.folder.resolve()):
        found.remove(force=True)  # an older image, or another lab folder's (a second checkout): its logs go there
        found = None
    if found is None:
        found = client.containers.run(image.image_id, name=collector.name, hostname=collector.name, detach=True,
                                      network=network, labels={LABEL_LAB: collector.prefix},
                                      volumes={str(collector.folder): {"bind": LOG_PATH, "mode": "rw"}})
    elif found.status != "running":
        found.start()
    _wait_listening(found)
    overlay = {"all": {"vars": {"tritonops_log_driver": "syslog", "tritonops_log_collector": collector.address}}}
    collector.inventory_file.write_text("# Written by `python -m tritonops.lab collector up`: ship every lab host's "
                                        "Triton logs to the lab collector.\n" + yaml.safe_dump(overlay))


def _log_folder(container) -> Path | None:
    """The folder of this machine the collector writes received.log into."""
    for mount in container.attrs.get("Mounts") or ():
        if mount.get("Destination") == LOG_PATH and mount.get("Source"):
            return Path(mount["Source"]).resolve()
    return None


def stop(client, collector: LabCollector) -> bool:
    found = _container(client, collector)
    if found is None or found.status != "running":
        return False
    found.stop(timeout=5)
    return True


def start(client, collector: LabCollector) -> None:
    found = _container(client, collector)
    if found is None:
        raise TritonopsError("the lab collector does not exist: python -m tritonops.lab collector up")
    found.start()
    _wait_listening(found)


def down(client, collector: LabCollector) -> bool:
    found = _container(client, collector)
    if found is not None:
        found.remove(force=True)
    if collector.inventory_file.exists():
        collector.inventory_file.unlink()
    return found is not None


def received(collector: LabCollector) -> list[dict]:
    """Every message received, as {time, host, app, message, doc}: `doc` is the JSON object the
    message holds (our one log format), None when it holds none."""
    try:
        lines = collector.received_file.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        parts = line.split(" ", 3)
        if len(parts) < 4:
            continue
        text = parts[3]
        doc = None
        start = text.find("{")
        if start >= 0:
            try:
                doc = json.loads(text[start:])
            except ValueError:
                doc = None
        out.append({"time": parts[0], "host": parts[1], "app": parts[2], "message": text,
                    "doc": doc if isinstance(doc, dict) else None})
    return out


def _container(client, collector: LabCollector):
    found = client.containers.list(all=True, filters={"name": f"^{collector.name}$", "label": LABEL_LAB})
    return found[0] if found else None


def _wait_listening(container, timeout_s: float = 20.0) -> None:
    def listening() -> bool:
        container.reload()
        if container.status != "running":
            raise TritonopsError(f"the lab collector stopped: {container.logs(tail=5).decode(errors='replace')}")
        code, _ = container.exec_run(["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/514"])
        return code == 0

    if wait_until(listening, timeout_s=timeout_s, interval_s=0.2, max_interval_s=0.2):
        return
    raise TritonopsError("the lab collector does not listen on 514")


def main(argv: list[str]) -> int:
    """`python -m tritonops.lab collector up|show|stop|start|down [--state-dir DIR] [--prefix P]`."""
    import argparse

    import docker

    from tritonops.lab.defaults import DEFAULT_PREFIX, default_cache_dir, default_state_dir

    parser = argparse.ArgumentParser(prog="python -m tritonops.lab collector")
    parser.add_argument("action", choices=("up", "show", "stop", "start", "down"))
    parser.add_argument("--state-dir", default=None)
    parser.add_argument("--prefix", default=DEFAULT_PREFIX)
    args = parser.parse_args(argv)
    state_dir = Path(args.state_dir or default_state_dir())
    collector = lab_collector(state_dir, args.prefix)
    try:
        client = docker.from_env()
        if args.action == "up":
            up(client, collector, default_cache_dir(), state_dir / "collector-build.log")
            print(f"collector listening at {collector.address}, writing {collector.received_file}; deploy with "
                  f"-i {collector.inventory_file} after the lab's inventory")
        elif args.action == "show":
            for entry in received(collector):
                doc = entry["doc"] or {}
                labels = doc.get("labels", {})
                print(f"{doc.get('host.name', entry['host'])} {labels.get('release', '-')} "
                      f"{doc.get('service.name', '-')} {doc.get('log.level', '-')}: "
                      f"{doc.get('message', entry['message'])}")
        elif args.action == "stop":
            print("collector stopped" if stop(client, collector) else "collector was not running")
        elif args.action == "start":
            start(client, collector)
            print("collector started")
        else:
            print("collector removed" if down(client, collector) else "no collector")
    except (TritonopsError, OSError) as err:
        print(f"error: {err}")
        return 1
    return 0
