"""The lab's hosts over real SSH: simulated GPUs through the real pynvml, inner Docker, Triton."""

import json
import textwrap

import docker
import pytest

from tritonops.lab import api
from tritonops.lab.profile_file import GpuFaults, SimulatedProcess
from tritonops.lab.profiles import PROFILES
from tritonops.lab.request import HostSpec, LabRequest
from tritonops.lab.testing import (FULL_2080TI, LIGHT_H200X2, LIGHT_NOGPU, TEST_PREFIX, TEST_REQUEST,
                                   test_lab_port_base, test_lab_prefix)

pytestmark = pytest.mark.lab

NVML_DUMP = textwrap.dedent("""
    import json, pynvml as n
    n.nvmlInit()
    out = {"driver": n.nvmlSystemGetDriverVersion(), "cuda": n.nvmlSystemGetCudaDriverVersion_v2(), "gpus": []}
    for i in range(n.nvmlDeviceGetCount()):
        h = n.nvmlDeviceGetHandleByIndex(i)
        g = {"name": n.nvmlDeviceGetName(h), "cc": list(n.nvmlDeviceGetCudaComputeCapability(h))}
        try:
            m = n.nvmlDeviceGetMemoryInfo(h); g["total"], g["used"] = m.total, m.used
        except n.NVMLError as e:
            g["error"] = type(e).__name__
        m2 = n.nvmlDeviceGetMemoryInfo(h, version=n.nvmlMemory_v2)
        g["reserved"], g["free_v2"] = m2.reserved, m2.free
        g["procs"] = [[p.pid, p.usedGpuMemory] for p in n.nvmlDeviceGetComputeRunningProcesses(h)]
        links = 0
        for link in range(18):
            try:
                links += n.nvmlDeviceGetNvLinkState(h, link)
            except n.NVMLError_NotSupported:
                break
        g["nvlinks"] = links
        out["gpus"].append(g)
    print(json.dumps(out))
""")


def nvml_dump(lab_ssh, host, env=""):
    return json.loads(lab_ssh(host, f"{env} python3 -c '{NVML_DUMP}'").stdout)


def test_pynvml_on_a_light_host_sees_the_h200_profile(lab_ssh):
    card = PROFILES["h200x2"].card
    dump = nvml_dump(lab_ssh, LIGHT_H200X2)
    assert dump["driver"] == "580.159.04" and dump["cuda"] == 13000
    assert [g["name"] for g in dump["gpus"]] == ["NVIDIA H200", "NVIDIA H200"]
    for g in dump["gpus"]:
        assert g["total"] == 150754820096 and g["used"] == 644939776 and g["reserved"] == 644939776
        assert g["free_v2"] == 150109880320 and g["cc"] == [9, 0] and g["nvlinks"] == card.nvlinks == 18
        assert g["procs"] == []


def test_pynvml_on_the_full_host_sees_one_2080ti(lab_ssh):
    dump = nvml_dump(lab_ssh, FULL_2080TI)
    assert [(g["name"], g["total"], g["cc"], g["nvlinks"]) for g in dump["gpus"]] == [
        ("NVIDIA GeForce RTX 2080 Ti", 11264 * 1024 * 1024, [7, 5], 0)]


def test_a_host_without_gpus_has_no_nvidia_library(lab_ssh):
    proc = lab_ssh(LIGHT_NOGPU, "python3 -c 'import pynvml; pynvml.nvmlInit()'", check=False)
    assert proc.returncode != 0 and "NVMLError_LibraryNotFound" in proc.stderr


def test_faults_and_busy_gpus_come_from_the_profile(lab, lab_ssh):
    faults = GpuFaults(gpu_fail=((1, "nvmlDeviceGetMemoryInfo", 15),), processes=((0, SimulatedProcess(4242, 2 << 30)),))
    api.set_gpu_faults(lab, LIGHT_H200X2, faults)
    try:
        dump = nvml_dump(lab_ssh, LIGHT_H200X2)
    finally:
        api.set_gpu_faults(lab, LIGHT_H200X2, GpuFaults())
    gpu0, gpu1 = dump["gpus"]
    assert gpu0["procs"] == [[4242, 2 << 30]] and gpu0["used"] == 644939776 + (2 << 30)
    assert gpu0["free_v2"] == 150109880320 - (2 << 30)
    assert gpu1["error"] == "NVMLError_GpuIsLost" and "total" not in gpu1
    assert nvml_dump(lab_ssh, LIGHT_H200X2)["gpus"][1]["total"] == 150754820096  # restored


def test_init_failure_through_the_profile_path_variable(lab_ssh):
    lab_ssh(LIGHT_H200X2, "sed 's/^gpu_count=.*/&\\ninit_fail=9/' /etc/tritonops-lab/gpu-profile > /tmp/p9")
    proc = lab_ssh(LIGHT_H200X2, "TRITONOPS_LAB_GPU_PROFILE=/tmp/p9 python3 -c 'import pynvml; pynvml.nvmlInit()'",
                   check=False)
    assert "NVMLError_DriverNotLoaded" in proc.stderr


def test_the_full_host_runs_gpu_containers_with_its_own_engine(lab_ssh):
    assert lab_ssh(FULL_2080TI, "docker info --format '{{.Driver}}'").stdout.strip() == "overlay2"
    env = lab_ssh(FULL_2080TI, "docker run --rm --gpus all nvcr.io/nvidia/tritonserver:24.10-py3 env").stdout
    assert "NVIDIA_VISIBLE_DEVICES=all" in env.splitlines()
    # NVML inside the GPU container too (the hook's library and profile).
    seen = lab_ssh(FULL_2080TI, "docker run --rm --gpus device=0 nvcr.io/nvidia/tritonserver:24.10-py3 "
                                "sh -c 'grep -E \"^(gpu_count|gpu.0.name)=\" /etc/tritonops-lab/gpu-profile; "
                                "ls /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1'").stdout
    assert "gpu_count=1" in seen and "gpu.0.name=NVIDIA GeForce RTX 2080 Ti" in seen
    plain = lab_ssh(FULL_2080TI, "docker run --rm nvcr.io/nvidia/tritonserver:24.10-py3 env").stdout
    assert "NVIDIA_VISIBLE_DEVICES" not in plain


def test_tritonserver_starts_in_the_full_host_and_answers_live(lab_ssh):
    script = textwrap.dedent("""
        set -e
        docker rm -f lab-triton-test >/dev/null 2>&1 || true
        docker run -d --name lab-triton-test -p 127.0.0.1:18000:8000 nvcr.io/nvidia/tritonserver:24.10-py3 \
            sh -c 'mkdir -p /models && exec tritonserver --model-repository=/models --model-control-mode=none' >/dev/null
        code=000
        for i in $(seq 60); do
            code=$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:18000/v2/health/live || true)
            [ "$code" = 200 ] && break
            sleep 1
        done
        curl -s http://127.0.0.1:18000/v2; echo
        docker rm -f lab-triton-test >/dev/null
        echo "live=$code"
    """)
    out = lab_ssh(FULL_2080TI, script, timeout=180).stdout
    assert "live=200" in out and '"version":"2.51.0"' in out


def test_lab_up_again_changes_nothing(lab):
    again = api.up(TEST_REQUEST, state_dir=lab.state_dir, name_prefix=TEST_PREFIX)
    assert [(r.host, r.status) for r in again.results] == [(h.name, "ok") for h in TEST_REQUEST.hosts]
    assert not again.changed
    assert all(h.healthy for h in again.hosts)


def test_a_second_lab_folder_with_the_same_prefix_reaches_the_hosts_and_gets_the_collector(tmp_path):
    """Two checkouts bringing the lab up under one prefix: the second keeps the host and adds its own
    client key (before, its SSH was refused: the host held the first's), the first still reaches it;
    the collector is the second's, writing into its folder."""
    import subprocess

    from tritonops.lab import collector
    from tritonops.lab.defaults import default_cache_dir

    prefix, host = test_lab_prefix("3"), HostSpec("gamma", "t4", "light")
    client = docker.from_env()
    try:
        first = api.up(LabRequest((host,)), state_dir=tmp_path / "a", name_prefix=prefix, port_base=test_lab_port_base(120))
        second = api.up(LabRequest((host,)), state_dir=tmp_path / "b", name_prefix=prefix, port_base=test_lab_port_base(120))
        assert [(r.host, r.status) for r in second.results] == [("gamma", "changed")]
        assert "added this lab folder's client key" in second.results["gamma"].msg
        assert second.host("gamma").port == first.host("gamma").port  # the same host, kept
        for state in (second, first):
            done = subprocess.run(state.ssh_argv("gamma", "hostname"), capture_output=True, text=True, timeout=60)
            assert (done.returncode, done.stdout.strip()) == (0, "gamma"), done.stderr
        again = api.up(LabRequest((host,)), state_dir=tmp_path / "b", name_prefix=prefix, port_base=test_lab_port_base(120))
        assert [(r.host, r.status, r.msg) for r in again.results] == [("gamma", "ok", "unchanged")]

        for folder in ("a", "b"):
            collector.up(client, collector.lab_collector(tmp_path / folder, prefix), default_cache_dir(),
                         tmp_path / "collector-build.log")
        (container,) = client.containers.list(filters={"name": collector.lab_collector(tmp_path, prefix).name})
        assert collector._log_folder(container) == (tmp_path / "b" / "collector").resolve()
    finally:
        collector.down(client, collector.lab_collector(tmp_path / "b", prefix))
        api.down(state_dir=tmp_path / "b", name_prefix=prefix)


def test_lab_adds_and_removes_the_difference_and_down_leaves_nothing(tmp_path):
    prefix, state_dir = test_lab_prefix("2"), tmp_path / "lab2"
    one, two = HostSpec("alpha", "t4", "light"), HostSpec("beta", "l4", "light")
    try:
        first = api.up(LabRequest((one,)), state_dir=state_dir, name_prefix=prefix, port_base=test_lab_port_base(100))
        assert [(r.host, r.status) for r in first.results] == [("alpha", "changed")]
        both = api.up(LabRequest((one, two)), state_dir=state_dir, name_prefix=prefix, port_base=test_lab_port_base(100))
        assert [(r.host, r.status) for r in both.results] == [("alpha", "ok"), ("beta", "changed")]
        assert both.host("alpha").port == first.host("alpha").port
        last = api.up(LabRequest((two,)), state_dir=state_dir, name_prefix=prefix, port_base=test_lab_port_base(100))
        assert [(r.host, r.status, r.msg) for r in last.results] == [
            ("beta", "ok", "unchanged"), ("alpha", "changed", "removed (not requested)")]
        assert [h.name for h in last.hosts] == ["beta"]
        assert (state_dir / "inventory.yml").exists()
    finally:
        api.down(state_dir=state_dir, name_prefix=prefix)
    client = docker.from_env()
    label = {"label": f"tritonops.lab={prefix}"}
    assert client.containers.list(all=True, filters=label) == []
    assert client.volumes.list(filters=label) == []
    assert client.networks.list(filters=label) == []
    assert not (state_dir / "inventory.yml").exists() and not (state_dir / "known_hosts").exists()
