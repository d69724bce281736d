"""The program tritonops runs on each host to read its facts.

It is sent at run time (nothing is installed on the host) and needs only
`python3`: the standard library plus nvidia-ml-py's single-module `pynvml`,
which the controller ships along (see `tritonops.facts.probe_payload`).

It prints one JSON object of *raw* readings; `tritonops.facts.probe_parse`
turns that into `HostFacts`. The `nvml` part uses the same keys as the real
H200 captures in shared/fixtures/nvml/, so the parser is tested on those.

Keep this file self-contained: it must not import tritonops.
"""

import json
import os
import platform
import shutil
import socket
import subprocess
import sys

# pynvml's NVML_P2P_CAPS_INDEX_READ is the tuple (0,) by a trailing comma,
# which ctypes refuses ("Don't know how to convert parameter 3"); pass the int.
P2P_CAPS_INDEX_READ = 0
NVLINK_MAX_LINKS = 18


def _call(errors, label, fn, *args):
    """Run one NVML call; on error record 'label: message' and return None."""
    try:
        return fn(*args)
    except Exception as exc:  # NVMLError and ctypes errors alike
        errors.append("%s: %s" % (label, _describe(exc)))
        return None


def _describe(exc):
    name = type(exc).__name__
    text = str(exc)
    return "%s: %s" % (name, text) if text else name


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def _processes(nvml, handle, errors):
    found = []
    for kind, getter in (("compute", "nvmlDeviceGetComputeRunningProcesses"),
                         ("graphics", "nvmlDeviceGetGraphicsRunningProcesses")):
        procs = _call(errors, getter, getattr(nvml, getter), handle)
        for proc in procs or ():
            found.append({"pid": int(proc.pid), "used_memory": proc.usedGpuMemory, "kind": kind})
    return found


def _nvlinks(nvml, handle, errors):
    states = []
    for link in range(NVLINK_MAX_LINKS):
        try:
            states.append(int(nvml.nvmlDeviceGetNvLinkState(handle, link)))
        except nvml.NVMLError as exc:
            if exc.value in (nvml.NVML_ERROR_NOT_SUPPORTED, nvml.NVML_ERROR_INVALID_ARGUMENT):
                break
            errors.append("nvmlDeviceGetNvLinkState(%d): %s" % (link, _describe(exc)))
            break
        except Exception as exc:
            errors.append("nvmlDeviceGetNvLinkState(%d): %s" % (link, _describe(exc)))
            break
    return states


def _gpu(nvml, index):
    errors = []
    gpu = {"index": index}
    handle = _call(errors, "nvmlDeviceGetHandleByIndex", nvml.nvmlDeviceGetHandleByIndex, index)
    if handle is None:
        gpu["errors"] = errors
        return gpu, None
    gpu["name"] = _text(_call(errors, "nvmlDeviceGetName", nvml.nvmlDeviceGetName, handle))
    gpu["uuid"] = _text(_call(errors, "nvmlDeviceGetUUID", nvml.nvmlDeviceGetUUID, handle))
    pci = _call(errors, "nvmlDeviceGetPciInfo", nvml.nvmlDeviceGetPciInfo, handle)
    gpu["pci_bus_id"] = _text(pci.busId) if pci is not None else None
    gpu["cc"] = _call(errors, "nvmlDeviceGetCudaComputeCapability",
                      nvml.nvmlDeviceGetCudaComputeCapability, handle)
    memory = _call(errors, "nvmlDeviceGetMemoryInfo", nvml.nvmlDeviceGetMemoryInfo, handle)
    if memory is not None:
        gpu["memory"] = {"total": memory.total, "free": memory.free, "used": memory.used}
    try:  # v2 adds 'reserved'; older drivers lack it, which is not an error
        memory2 = nvml.nvmlDeviceGetMemoryInfo(handle, version=nvml.nvmlMemory_v2)
        gpu["memory_v2"] = {"total": memory2.total, "free": memory2.free,
                            "used": memory2.used, "reserved": memory2.reserved}
    except Exception:
        gpu["memory_v2"] = None
    gpu["persistence"] = _call(errors, "nvmlDeviceGetPersistenceMode",
                               nvml.nvmlDeviceGetPersistenceMode, handle)
    try:
        gpu["mig_mode"] = list(nvml.nvmlDeviceGetMigMode(handle))
    except Exception:  # not supported on consumer cards: no MIG, not an error
        gpu["mig_mode"] = None
    gpu["processes"] = _processes(nvml, handle, errors)
    gpu["nvlink"] = _nvlinks(nvml, handle, errors)
    gpu["errors"] = errors
    return gpu, handle


def _pairs(nvml, handles, reader):
    matrix = []
    for i, a in enumerate(handles):
        row = []
        for j, b in enumerate(handles):
            if i == j or a is None or b is None:
                row.append(None)
                continue
            try:
                row.append(int(reader(a, b)))
            except Exception as exc:
                row.append({"error": _describe(exc)})
        matrix.append(row)
    return matrix


def read_nvml():
    try:
        import pynvml as nvml
    except ImportError as exc:
        return {"error": "nvidia-ml-py not available: %s" % exc}
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        if exc.value == nvml.NVML_ERROR_LIBRARY_NOT_FOUND:
            return {"error": "no NVIDIA driver (libnvidia-ml.so.1 not found)"}
        return {"error": "NVML init failed: %s" % _describe(exc)}
    try:
        out = {"errors": []}
        out["driver"] = _text(_call(out["errors"], "nvmlSystemGetDriverVersion",
                                    nvml.nvmlSystemGetDriverVersion))
        out["nvml"] = _text(_call(out["errors"], "nvmlSystemGetNVMLVersion",
                                  nvml.nvmlSystemGetNVMLVersion))
        out["cuda_driver"] = _call(out["errors"], "nvmlSystemGetCudaDriverVersion",
                                   nvml.nvmlSystemGetCudaDriverVersion)
        count = _call(out["errors"], "nvmlDeviceGetCount", nvml.nvmlDeviceGetCount) or 0
        gpus, handles = [], []
        for index in range(count):
            gpu, handle = _gpu(nvml, index)
            gpus.append(gpu)
            handles.append(handle)
        out["gpus"] = gpus
        out["topology"] = _pairs(nvml, handles, nvml.nvmlDeviceGetTopologyCommonAncestor)
        out["p2p_read"] = _pairs(
            nvml, handles, lambda a, b: nvml.nvmlDeviceGetP2PStatus(a, b, P2P_CAPS_INDEX_READ))
        return out
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:
            pass


def _meminfo():
    values = {}
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                key, _, rest = line.partition(":")
                values[key] = int(rest.split()[0]) * 1024
    except OSError:
        pass
    return values


def _os_name():
    try:
        with open("/etc/os-release") as handle:
            for line in handle:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def _existing_parent(path):
    path = os.path.abspath(path)
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def read_system(disk_path):
    mem = _meminfo()
    existing = _existing_parent(disk_path)
    usage = shutil.disk_usage(existing)
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "os": _os_name(),
        "cpu_count": os.cpu_count() or 0,
        "ram_total": mem.get("MemTotal", 0),
        "ram_available": mem.get("MemAvailable", mem.get("MemFree", 0)),
        "python": platform.python_version(),
        "disk_path": existing,
        "disk_free": usage.free,
        "disk_total": usage.total,
    }


def _run(argv, timeout=15):
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout, universal_newlines=True)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, _describe(exc)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        return None, lines[-1] if lines else "exit %d" % done.returncode
    return done.stdout.strip(), None


def read_docker():
    toolkit = [name for name in ("nvidia-container-runtime-hook", "nvidia-ctk",
                                 "nvidia-container-toolkit", "nvidia-container-runtime")
               if shutil.which(name)]
    out = {"present": bool(shutil.which("docker")), "toolkit": toolkit,
           "version": None, "runtimes": [], "error": None}
    if not out["present"]:
        return out
    version, error = _run(["docker", "version", "--format", "{{.Server.Version}}"])
    if error:
        out["error"] = error
        return out
    out["version"] = version
    runtimes, _ = _run(["docker", "info", "--format", "{{json .Runtimes}}"])
    try:
        out["runtimes"] = sorted(json.loads(runtimes or "{}"))
    except ValueError:
        pass
    return out


def main(argv):
    disk_path = argv[1] if len(argv) > 1 else "/opt/tritonops"
    report = {
        "probe_version": 1,
        "system": read_system(disk_path),
        "nvml": read_nvml(),
        "docker": read_docker(),
    }
    sys.stdout.write(json.dumps(report))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
