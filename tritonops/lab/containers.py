"""Lab host containers in the local engine: find, create, remove, get ready. All found by label."""

from __future__ import annotations

import time
from pathlib import Path

import docker
from docker.errors import APIError, NotFound

from tritonops.lab.plan import ExistingHost
from tritonops.waiting import wait_until
from tritonops.lab.request import HostSpec
from tritonops.tarball import tar_bytes

LABEL_LAB = "tritonops.lab"  # value: the lab's name prefix
LABEL_HOST = "tritonops.lab.host"
LABEL_PROFILE = "tritonops.lab.profile"
LABEL_KIND = "tritonops.lab.kind"
LABEL_SPEC = "tritonops.lab.spec"
LABEL_HOSTKEY = "tritonops.lab.hostkey"

PROFILE_PATH = "/etc/tritonops-lab/gpu-profile"
# sshd reads its drop-ins in name order and keeps the first value: this one wins over the image's.
BASTION_SSHD_CONFIG = ("/etc/ssh/sshd_config.d/00-bastion.conf",
                       b"# tritonops lab bastion: forwards SSH (ProxyJump, ssh -W) to the lab's hosts.\n"
                       b"AllowTcpForwarding yes\n")
PRELOAD_DIR = "/opt/tritonops-lab/preload"

# Docker-in-Docker without --privileged (design.md section 4).
FULL_HOST_OPTIONS = dict(
    cap_add=["ALL"], cap_drop=["SYS_RESOURCE"],
    security_opt=["seccomp=unconfined", "apparmor=unconfined"],  # + systempaths=unconfined, see create_host
    cgroupns="host", tmpfs={"/run": ""},
)


def container_name(prefix: str, host: str) -> str:
    return f"{prefix}-{host}"


def volume_name(prefix: str, host: str) -> str:
    return f"{prefix}-{host}-docker"


def network_name(prefix: str) -> str:
    return f"{prefix}-net"


def lab_containers(client: docker.DockerClient, prefix: str | None = None) -> list:
    label = f"{LABEL_LAB}={prefix}" if prefix else LABEL_LAB
    return client.containers.list(all=True, filters={"label": label})


def published_port(container) -> int | None:
    bindings = (container.attrs.get("HostConfig", {}).get("PortBindings") or {}).get("22/tcp") or []
    return int(bindings[0]["HostPort"]) if bindings and bindings[0].get("HostPort") else None


def network_address(container, prefix: str) -> str | None:
    """The container's IP address on the lab network (None when it has none there)."""
    networks = (container.attrs.get("NetworkSettings") or {}).get("Networks") or {}
    return (networks.get(network_name(prefix)) or {}).get("IPAddress") or None


def existing_hosts(client, prefix: str) -> list[ExistingHost]:
    return [ExistingHost(c.labels[LABEL_HOST], c.name, c.labels.get(LABEL_SPEC, ""), c.status == "running",
                         published_port(c))
            for c in lab_containers(client, prefix) if LABEL_HOST in c.labels]


def ports_of_other_labs(client, prefix: str) -> set[int]:
    return {p for c in lab_containers(client) if c.labels.get(LABEL_LAB) != prefix
            for p in [published_port(c)] if p}


def ensure_network(client, prefix: str) -> str:
    name = network_name(prefix)
    if not client.networks.list(names=[name], filters={"label": f"{LABEL_LAB}={prefix}"}):
        client.networks.create(name, driver="bridge", labels={LABEL_LAB: prefix})
    return name


def put_profile(container, profile_text: str | None) -> None:
    """Write (or, for a host without a driver, remove) the GPU profile file."""
    if profile_text is None:
        container.exec_run(["rm", "-f", PROFILE_PATH])
    else:
        container.put_archive("/", tar_bytes([(PROFILE_PATH, profile_text.encode(), 0o644)], mtime=int(time.time())))


AUTHORIZED_KEYS = "/root/.ssh/authorized_keys"


def authorize_key(container, client_pubkey: str) -> bool:
    """Add this lab folder's client key to the host's authorized keys where it is missing: a host kept
    from a lab brought up under the same prefix from another folder (a second checkout) holds that
    folder's key only. The other folder's key stays: both reach the host. True when it was added. The
    host is running (kept or just started)."""
    code, current = container.exec_run(["cat", AUTHORIZED_KEYS])
    current = current if code == 0 else b""
    if client_pubkey.encode() in current.splitlines():
        return False
    keys = current + (b"" if not current or current.endswith(b"\n") else b"\n") + client_pubkey.encode() + b"\n"
    container.put_archive("/", tar_bytes([(AUTHORIZED_KEYS, keys, 0o600)], mtime=int(time.time())))
    return True


def create_host(client, prefix: str, spec: HostSpec, image_id: str, port: int, network: str, spec_hash: str,
                client_pubkey: str, host_key: tuple[bytes, str], profile_text: str | None,
                preload_dir: Path | None):
    labels = {LABEL_LAB: prefix, LABEL_HOST: spec.name, LABEL_PROFILE: spec.profile, LABEL_KIND: spec.kind,
              LABEL_SPEC: spec_hash, LABEL_HOSTKEY: host_key[1]}
    host_options: dict = dict(init=True, network_mode=network, port_bindings={22: ("127.0.0.1", port)})
    if spec.kind == "full":
        volume = client.volumes.create(volume_name(prefix, spec.name), labels={LABEL_LAB: prefix, LABEL_HOST: spec.name})
        binds = {"/sys/fs/cgroup": {"bind": "/sys/fs/cgroup", "mode": "rw"},
                 volume.name: {"bind": "/var/lib/docker", "mode": "rw"}}
        if preload_dir is not None:
            preload_dir.mkdir(parents=True, exist_ok=True)
            binds[str(preload_dir)] = {"bind": PRELOAD_DIR, "mode": "ro"}
        host_options.update(FULL_HOST_OPTIONS, binds=binds)
    host_config = client.api.create_host_config(**host_options)
    if spec.kind == "full":
        # `--security-opt systempaths=unconfined`: the CLI sends empty masked/read-only path lists.
        host_config.update(MaskedPaths=[], ReadonlyPaths=[])
    created = client.api.create_container(image_id, name=container_name(prefix, spec.name), hostname=spec.name,
                                          labels=labels, ports=[22], host_config=host_config)
    container = client.containers.get(created["Id"])
    files = [(AUTHORIZED_KEYS, (client_pubkey + "\n").encode(), 0o600),
             ("/etc/ssh/ssh_host_ed25519_key", host_key[0], 0o600),
             ("/etc/ssh/ssh_host_ed25519_key.pub", (host_key[1] + "\n").encode(), 0o644)]
    if profile_text is not None:
        files.append((PROFILE_PATH, profile_text.encode(), 0o644))
    if spec.kind == "bastion":
        files.append((*BASTION_SSHD_CONFIG, 0o644))
    container.put_archive("/", tar_bytes(files, mtime=int(time.time())))
    container.start()
    return container


def remove_host(client, prefix: str, host: str) -> None:
    try:
        client.containers.get(container_name(prefix, host)).remove(force=True, v=True)
    except NotFound:
        pass
    for volume in client.volumes.list(filters={"label": [f"{LABEL_LAB}={prefix}", f"{LABEL_HOST}={host}"]}):
        try:
            volume.remove(force=True)
        except APIError:
            time.sleep(1)
            volume.remove(force=True)


def wait_inner_engine(container, timeout_s: float = 90.0) -> str | None:
    """The inner engine's version once it answers, else None."""
    def version() -> str | None:
        code, out = container.exec_run(["docker", "version", "--format", "{{.Server.Version}}"])
        return out.decode().strip() if code == 0 else None

    return wait_until(version, timeout_s=timeout_s, interval_s=0.5)


def inner_has_image(container, image_id: str) -> bool:
    code, _ = container.exec_run(["docker", "image", "inspect", "--format", "{{.Id}}", image_id])
    return code == 0


def preload_image(container, image_id: str, tar_name: str, tags: tuple[str, ...]) -> tuple[bool, str]:
    """(loaded now?, message). Loads only when the inner engine lacks that image ID; then makes
    sure `tags` name it (an image saved from the engine carries one name only)."""
    loaded, msg = False, ""
    if not inner_has_image(container, image_id):
        code, out = container.exec_run(["docker", "load", "-i", f"{PRELOAD_DIR}/{tar_name}"])
        if code != 0:
            raise RuntimeError(f"docker load in {container.name} failed: {out.decode(errors='replace').strip()[-300:]}")
        loaded, msg = True, out.decode(errors="replace").strip()
    for tag in tags:
        code, out = container.exec_run(["docker", "tag", image_id, tag])
        if code != 0:
            raise RuntimeError(f"docker tag {tag} in {container.name} failed: {out.decode(errors='replace').strip()}")
    return loaded, msg
