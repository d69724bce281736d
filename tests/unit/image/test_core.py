"""The vllm_env image's pure core: hash, tags, labels, build script, NGC table, preflight, plans."""

from __future__ import annotations

import dataclasses
import shlex
import subprocess
from types import SimpleNamespace

import pytest

from tritonops.errors import InputError
from tritonops.facts.model import DockerFacts, GpuFacts, HostFacts, NvidiaFacts, SystemFacts
from tritonops.image import build_script, ngc
from tritonops.image.plan import HostImage, Transfer, choose_build_host, plan_distribution
from tritonops.image.preflight import EngineFacts, ImageNeeds, check
from tritonops.image.settings import image_config
from tritonops.image.spec import (LABEL_BASE_DIGEST, LABEL_BUILD_TIME, LABEL_CONTENT, LABEL_VLLM, ImageConfig,
                                  ImageSpec, PipOptions, split_tag)

BASE = "nvcr.io/nvidia/tritonserver:24.10-py3"
BASE_ID = "sha256:" + "a" * 64


def make_spec(**changes) -> ImageSpec:
    pip = PipOptions(index_url="http://mirror.example/simple", trusted_hosts=("mirror.example",))
    config = ImageConfig("committed", BASE, "0.10.2", pip, "0.1.0")
    spec = ImageSpec(config, BASE_ID, "c" * 64)
    pip_changes = {k: v for k, v in changes.items() if k in {f.name for f in dataclasses.fields(PipOptions)}}
    config_changes = {k: v for k, v in changes.items()
                      if k in {"mode", "image", "vllm_version", "tritonops_version", "requirements"}}
    spec_changes = {k: v for k, v in changes.items() if k in {"base_id", "backend_code_sha"}}
    if pip_changes:
        config = dataclasses.replace(config, pip=dataclasses.replace(pip, **pip_changes))
    config = dataclasses.replace(config, **config_changes)
    return dataclasses.replace(spec, config=config, **spec_changes)


# ---- content hash, tags, labels -------------------------------------------------------------------

def test_same_inputs_give_the_same_hash_and_tag():
    assert make_spec().content_hash == make_spec().content_hash
    assert make_spec().content_tag == f"tritonserver:vllm_env-{make_spec().content_hash[:12]}"
    assert make_spec().moving_tag == "tritonserver:vllm_env"


@pytest.mark.parametrize("change", [
    {"mode": "official"}, {"image": "nvcr.io/nvidia/tritonserver:24.11-py3"}, {"vllm_version": "0.10.1.1"},
    {"index_url": "http://other.example/simple"}, {"extra_index_urls": ("http://extra.example/simple",)},
    {"trusted_hosts": ("other.example",)}, {"extra_args": ("--pre",)}, {"constraints": "numpy<2\n"},
    {"tritonops_version": "0.2.0"}, {"base_id": "sha256:" + "b" * 64}, {"backend_code_sha": "d" * 64},
    {"requirements": ("ray[cgraph]==2.60.0",)}, {"requirements": ("ray==2.60.0",)},
])
def test_every_input_changes_the_hash(change):
    assert make_spec(**change).content_hash != make_spec().content_hash


def test_build_time_is_a_label_not_an_input():
    spec = make_spec()
    early, late = spec.labels("2026-01-01T00:00:00Z"), spec.labels("2026-06-01T12:00:00Z")
    assert early[LABEL_BUILD_TIME] != late[LABEL_BUILD_TIME]
    assert early[LABEL_CONTENT] == late[LABEL_CONTENT] == spec.content_hash


def test_labels_name_the_vllm_version_and_the_base():
    labels = make_spec().labels("t")
    assert labels[LABEL_VLLM] == "0.10.2"
    assert labels[LABEL_BASE_DIGEST] == BASE_ID  # no repo digest known: the ID stands in
    with_digest = dataclasses.replace(make_spec(), base_digest="sha256:" + "e" * 64)
    assert with_digest.labels("t")[LABEL_BASE_DIGEST] == "sha256:" + "e" * 64


def test_split_tag_ignores_a_registry_port():
    assert split_tag("tritonserver:vllm_env-abc") == ("tritonserver", "vllm_env-abc")
    assert split_tag("registry:5000/tritonserver") == ("registry:5000/tritonserver", "latest")
    assert split_tag("registry:5000/t:1") == ("registry:5000/t", "1")


# ---- the build script -------------------------------------------------------------------------------

def _pip_line(script: str) -> list[str]:
    start = script.index('\n"$PY" -m pip install') + 1
    return shlex.split(script[start:script.index("\nGOT=", start)])[3:]


def test_pip_command_carries_the_mirror_settings():
    pip = PipOptions(index_url="https://mirror.example/simple", extra_index_urls=("https://a/simple", "https://b/simple"),
                     trusted_hosts=("mirror.example", "a"), extra_args=("--retries", "1"), constraints="numpy<2\n")
    args = _pip_line(build_script.render(pip, "0.10.2", b"code"))
    assert args == ["install", "--no-cache-dir", "--disable-pip-version-check", "--no-input", "--progress-bar", "off",
                    "--index-url", "https://mirror.example/simple", "--extra-index-url", "https://a/simple",
                    "--extra-index-url", "https://b/simple", "--trusted-host", "mirror.example", "--trusted-host", "a",
                    "--constraint", build_script.CONSTRAINTS_PATH, "--retries", "1", "vllm==0.10.2"]


def test_no_mirror_means_plain_pip_defaults():
    args = _pip_line(build_script.render(PipOptions(), "0.10.2", b"code"))
    assert "--index-url" not in args and args[-1] == "vllm==0.10.2"


HOSTILE = "http://x/simple'; touch /tmp/pwned; echo '$(id)`id`\"\n#"


def test_hostile_values_stay_single_arguments():
    pip = PipOptions(index_url=HOSTILE, trusted_hosts=(HOSTILE,), extra_args=(HOSTILE,), constraints=HOSTILE)
    script = build_script.render(pip, "0.10.2", b"EOF\n'\"")
    args = _pip_line(script)
    assert args.count(HOSTILE) == 3
    assert subprocess.run(["sh", "-n"], input=script, text=True).returncode == 0


def test_script_runs_in_a_sandbox_without_executing_hostile_values(tmp_path):
    """Run the script with a fake python3 that records its arguments: the values arrive intact."""
    fake = tmp_path / "bin" / "python3"
    fake.parent.mkdir()
    log = tmp_path / "args"
    fake.write_text(f"#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done >> {log}\nprintf '\\n\\0' >> {log}\n"
                    "case \"$*\" in *importlib.metadata*) echo 0.10.2;; esac\n")
    fake.chmod(0o755)
    pip = PipOptions(index_url=HOSTILE, extra_args=(HOSTILE,))
    script = build_script.render(pip, "0.10.2", b"code").replace(build_script.BACKEND_DIR, str(tmp_path / "be"))
    done = subprocess.run(["sh", "-c", script], env={"PATH": f"{fake.parent}:/usr/bin:/bin"}, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    calls = [c.strip("\0").split("\0") for c in log.read_text().split("\n\0") if c.strip("\0")]
    pip_call = next(c for c in calls if c[:3] == ["-m", "pip", "install"])
    assert pip_call.count(HOSTILE) == 2
    assert not (tmp_path / "pwned").exists()


def test_script_redacts_passwords_it_prints():
    script = build_script.render(PipOptions(index_url="https://user:s3cret@mirror/simple"), "0.10.2", b"x")
    echo = next(l for l in script.splitlines() if l.startswith("echo") and "pip" in l)
    assert "s3cret" not in echo and "user:****@mirror" in echo


def test_backend_code_is_part_of_the_image():
    assert b"class TritonPythonModel" in build_script.backend_code()
    assert len(build_script.backend_code_sha()) == 64


# ---- NGC table and preflight ---------------------------------------------------------------------

def test_release_lookups():
    assert ngc.release_of("nvcr.io/nvidia/tritonserver:24.10-py3") == "24.10"
    assert ngc.release_of("nvcr.io/nvidia/tritonserver:25.01-vllm-python-py3") == "25.01"
    assert ngc.release_of("tritonserver:vllm_env") is None
    r = ngc.lookup("25.01")
    assert (r.vllm, r.cuda, r.min_driver) == ("0.6.3.post1", "12.8.0.038", (525, 0))
    assert ngc.lookup("25.10").min_driver == (580, 0)  # CUDA 13
    assert ngc.lookup("25.10").official_image == "nvcr.io/nvidia/tritonserver:25.10-vllm-python-py3"
    assert ngc.lookup("99.99") is None


def facts(driver: str | None = "580.159.04", cc=(9, 0), toolkit=True, gpus=1) -> HostFacts:
    gpu = GpuFacts(index=0, name="NVIDIA H200", uuid="GPU-0", pci_bus_id="0", memory_total_bytes=1, memory_free_bytes=1,
                   memory_used_bytes=0, cuda_total_bytes=1, compute_capability=cc)
    return HostFacts(
        system=SystemFacts(hostname="h", kernel="k", os="o", cpu_count=1, ram_total_bytes=1, ram_available_bytes=1,
                           python="3.11", disk_path="/", disk_free_bytes=1, disk_total_bytes=1),
        nvidia=NvidiaFacts(driver_version=driver, gpus=(gpu,) * gpus if driver else (),
                           error=None if driver else "no NVIDIA driver (libnvidia-ml.so.1 not found)"),
        docker=DockerFacts(present=True, version="20.10", nvidia_container_toolkit=toolkit))


ENGINE = EngineFacts(answering=True, data_root="/var/lib/docker", data_root_free_bytes=100 << 30)
G = 1 << 30


def test_a_fit_host_passes():
    assert check(facts(), ENGINE, ImageNeeds(ngc.lookup("25.10"), 9 * G)).refusals == ()


def test_driver_too_old_for_a_cuda13_image():
    (reason,) = check(facts("575.51.03"), ENGINE, ImageNeeds(ngc.lookup("25.10"), None)).refusals
    assert "driver 575.51.03 is too old for Triton 25.10 (CUDA 13.0.2.006)" in reason and ">= 580" in reason
    assert check(facts("550.120"), ENGINE, ImageNeeds(ngc.lookup("24.10"), None)).ok  # CUDA 12: >= 525


def test_no_driver_no_runtime_old_gpu_engine_down_small_disk():
    small = EngineFacts(answering=True, data_root="/data/docker", data_root_free_bytes=10 * G)
    reasons = check(facts(None, toolkit=False), small, ImageNeeds(ngc.lookup("25.10"), 8 * G)).refusals
    assert any(r.startswith("no NVIDIA driver") for r in reasons)
    assert any(r.startswith("no GPU runtime") for r in reasons)
    assert any("10.0 GiB free under Docker's data root /data/docker; needs 16.0 GiB" in r for r in reasons)
    (old,) = check(facts(cc=(7, 0)), ENGINE, ImageNeeds(ngc.lookup("25.01"), None)).refusals
    assert "compute capability 7.0; Triton 25.01 needs >= 7.5" in old
    down = check(facts(), EngineFacts(answering=False, error="connection refused"), ImageNeeds(None, 8 * G))
    assert down.refusals == ("the Docker engine does not answer: connection refused",)
    assert "unknown Triton release: driver floor not checked" in down.notes


# ---- distribution plan and build host ----------------------------------------------------------------

IMG = "sha256:" + "f" * 64


def test_plan_sends_only_to_hosts_lacking_the_id():
    hosts = [HostImage("a", True, IMG, IMG), HostImage("b", False), HostImage("c", False, "sha256:old", "sha256:old"),
             HostImage("d", True, None, None)]
    plan = plan_distribution(IMG, hosts, prefer=["a"])
    assert plan.transfers == (Transfer("a", "b"), Transfer("d", "c"))  # holders take turns
    assert plan.retag == ("d",) and plan.up_to_date == ("a",)


def test_plan_spreads_over_sources_and_is_a_no_op_when_all_have_it():
    hosts = [HostImage("a", True, IMG, IMG), HostImage("b", True, IMG, IMG), HostImage("c", False),
             HostImage("d", False), HostImage("e", False)]
    assert [t.source for t in plan_distribution(IMG, hosts, prefer=["b"]).transfers] == ["b", "a", "b"]
    everyone = [HostImage(n, True, IMG, IMG) for n in "abc"]
    assert plan_distribution(IMG, everyone).no_op
    assert plan_distribution(IMG, [HostImage("a", True, IMG, IMG), HostImage("b", False)],
                             registry="reg:5000").transfers[0].method == "registry"
    with pytest.raises(InputError):
        plan_distribution(IMG, [HostImage("a", False)])


def test_build_host_choice():
    assert choose_build_host(["a", "b"], {"a": False, "b": True}) == "b"
    assert choose_build_host(["a", "b"], {}) == "a"
    assert choose_build_host(["a", "b"], {"b": True}, configured="a") == "a"
    with pytest.raises(InputError, match="build host c was refused: driver"):
        choose_build_host(["a"], {}, configured="c", refused={"c": "driver too old"})
    with pytest.raises(InputError, match="not among the hosts"):
        choose_build_host(["a"], {}, configured="z")


# ---- inventory variables -----------------------------------------------------------------------------

def host(**vars_):
    return SimpleNamespace(name="h1", vars=vars_, setting=lambda n: SimpleNamespace(where=f"inv.yml:3 ({n})",
                                                                                    base_dir="/inv"))


def test_settings_from_inventory_variables():
    config = image_config(host(tritonops_triton_image=BASE, tritonops_vllm_version="0.10.2",
                               tritonops_pip_index_url="http://127.0.0.1:8999/simple",
                               tritonops_pip_trusted_host="127.0.0.1", tritonops_pip_extra_args="--retries 0 --pre",
                               tritonops_pip_extra_index_url=["http://a/simple"],
                               tritonops_pip_constraints="c.txt"),
                          read_file=lambda path: f"read {path}")
    assert (config.mode, config.image, config.vllm_version, config.release) == ("committed", BASE, "0.10.2", "24.10")
    assert config.pip == PipOptions("http://127.0.0.1:8999/simple", ("http://a/simple",), ("127.0.0.1",),
                                    ("--retries", "0", "--pre"), "read /inv/c.txt")


def test_the_default_base_needs_the_cuda_13_driver_floor_the_h200_meets():
    needs = ImageNeeds(ngc.lookup(image_config(host()).release), 9 * G)
    assert (needs.release.cuda, needs.release.min_driver) == ("13.0.2.006", (580, 0))  # torch 2.11.0+cu130's
    assert check(facts("580.159.04"), ENGINE, needs).refusals == ()  # the lent H200's driver
    (reason,) = check(facts("575.51.03"), ENGINE, needs).refusals
    assert "driver 575.51.03 is too old for Triton 25.11 (CUDA 13.0.2.006)" in reason and ">= 580" in reason


def test_settings_defaults_and_errors():
    official = image_config(host(tritonops_image_mode="official", tritonops_triton_image=BASE))
    assert official.image == "nvcr.io/nvidia/tritonserver:24.10-vllm-python-py3" and official.vllm_version == "0.5.5"
    default = image_config(host())
    assert (default.mode, default.image, default.vllm_version) == (
        "committed", "nvcr.io/nvidia/tritonserver:25.11-py3", "0.25.0")
    assert image_config(host(tritonops_vllm_version="0.24.0")).vllm_version == "0.24.0"
    official_default = image_config(host(tritonops_image_mode="official"))
    assert (official_default.image, official_default.vllm_version) == (
        "nvcr.io/nvidia/tritonserver:25.11-vllm-python-py3", "0.11.0")  # NVIDIA's pin: it ships no 0.25
    with pytest.raises(InputError, match=r"inv.yml:3 \(tritonops_image_mode\): tritonops_image_mode must be one of"):
        image_config(host(tritonops_image_mode="pull"))
    with pytest.raises(InputError, match="set tritonops_vllm_version"):
        image_config(host(tritonops_triton_image="my/triton:latest"))


def test_a_build_host_outside_the_limit_is_found_in_the_inventory_and_a_missing_one_is_an_error_at_its_line(
        tmp_path):
    from tritonops.image.settings import outside_build_hosts
    from tritonops.inventory import load_inventory

    path = tmp_path / "hosts.yml"
    path.write_text("all:\n  vars:\n    tritonops_build_host: builder\n  hosts:\n    builder: {}\n    t1: {}\n")
    inventory = load_inventory([str(path)])
    assert list(outside_build_hosts(inventory.select("t1"), inventory)) == ["builder"]
    assert outside_build_hosts(inventory.select(None), inventory) == {}  # in the run: no outside host
    path.write_text("all:\n  vars:\n    tritonops_build_host: buildr\n  hosts:\n    builder: {}\n    t1: {}\n")
    inventory = load_inventory([str(path)])
    with pytest.raises(InputError) as caught:
        outside_build_hosts(inventory.select("t1"), inventory)
    assert caught.value.where == f"{path}:3" and "builder" in caught.value.what


def test_a_cluster_members_image_installs_ray_beside_vllm_in_one_resolve():
    from tritonops.serving.ray_version import RAY_REQUIREMENT

    plain, member = image_config(host()), image_config(host(tritonops_cluster="big"))
    assert (plain.requirements, member.requirements) == ((), (RAY_REQUIREMENT,))
    assert not plain.same_build(member)
    script = build_script.render(member.pip, member.vllm_version, code=b"", requirements=member.requirements)
    pip_line = next(line for line in script.splitlines() if line.startswith('"$PY" -m pip install'))
    assert shlex.split(pip_line)[-2:] == [f"vllm=={member.vllm_version}", RAY_REQUIREMENT]
    mirrored = image_config(host(tritonops_cluster="big", tritonops_ray_requirement="ray == 2.60.0"))
    assert mirrored.requirements == ("ray==2.60.0",)


@pytest.mark.parametrize("value, message", [
    ("numpy==2.0", "must name the ray package"),
    ("--index-url=http://evil/simple", "is not a pip requirement"),
    ("ray @ https://example.com/ray.whl", "must name the ray package"),
    ("ray==2.60.0; rm -rf /", "is not a pip requirement"),
])
def test_a_ray_requirement_that_is_not_one_is_refused_at_its_line(value, message):
    with pytest.raises(InputError, match=rf"^inv.yml:3 \(tritonops_ray_requirement\): .*{message}"):
        image_config(host(tritonops_cluster="big", tritonops_ray_requirement=value))
