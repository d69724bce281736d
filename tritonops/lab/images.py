"""Build the lab's images in the local engine, or reuse them when their inputs hash matches."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import BuildError, ImageNotFound

import pynvml

from tritonops.errors import TritonopsError
from tritonops.lab import image_specs as specs
from tritonops.lab.cache import filling
from tritonops.lab.image_specs import ImageSpec


class ImageBuildError(TritonopsError):
    """A lab image could not be built; the message names the image and the log."""


@dataclass(frozen=True)
class ImageResult:
    role: str
    tag: str
    image_id: str
    built: bool
    elapsed_s: float


@dataclass(frozen=True)
class LabImages:
    host_light: ImageResult
    host_full: ImageResult | None
    tritonserver: ImageResult | None
    results: tuple[ImageResult, ...]
    host_balancer: ImageResult | None = None


def _find(client: docker.DockerClient, spec: ImageSpec):
    try:
        image = client.images.get(spec.tag)
    except ImageNotFound:
        return None
    return image if image.labels.get(specs.LABEL_INPUTS) == spec.inputs_hash else None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def pytriton_wheel(cache_dir: Path, log_file: Path) -> Path:
    """The nvidia-pytriton wheel, downloaded once into the cache."""
    with filling(cache_dir, "wheels"):
        return _pytriton_wheel(cache_dir, log_file)


def _pytriton_wheel(cache_dir: Path, log_file: Path) -> Path:
    wheels = cache_dir / "wheels"
    pattern = f"nvidia_pytriton-{specs.PYTRITON_VERSION}-*.whl"
    found = sorted(wheels.glob(pattern))
    if found:
        return found[0]
    wheels.mkdir(parents=True, exist_ok=True)
    with log_file.open("ab") as log:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               f"nvidia-pytriton=={specs.PYTRITON_VERSION}", "-d", str(wheels)]
        if subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode != 0:
            raise ImageBuildError(f"could not download nvidia-pytriton {specs.PYTRITON_VERSION}; see {log_file}")
    found = sorted(wheels.glob(pattern))
    if not found:
        raise ImageBuildError(f"pip left no {pattern} in {wheels}; see {log_file}")
    return found[0]


def _wheel_sha(wheel: Path, cache_dir: Path) -> str:
    """Hashing 55 MB on every `lab up` is wasted time: remember it next to the wheel."""
    marker = wheel.with_suffix(".sha256")
    stat = wheel.stat()
    key = f"{stat.st_size}:{stat.st_mtime_ns}"
    if marker.exists():
        saved_key, _, sha = marker.read_text().partition(" ")
        if saved_key == key:
            return sha.strip()
    sha = _sha256(wheel)
    marker.write_text(f"{key} {sha}\n")
    return sha


def compile_nvml(out: Path) -> None:
    src = out.parent / "fake_nvml.c"
    src.write_bytes(specs.nvml_source())
    # Strict C11 keeps glibc from redirecting to newer (C23) symbols the image's glibc may lack.
    cmd = ["gcc", "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-shared", "-fPIC", "-O2", "-Wall",
           "-Wl,-soname,libnvidia-ml.so.1", "-o", str(out), str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ImageBuildError(f"gcc could not build libnvidia-ml.so.1: {proc.stderr.strip()}")
    src.unlink()


def _build_base(client: docker.DockerClient, spec: ImageSpec, work: Path, log_file: Path) -> None:
    rootfs = work / "rootfs"
    with log_file.open("ab") as log:
        cmd = ["debootstrap", "--variant=minbase", specs.DEBIAN_SUITE, str(rootfs), specs.DEBIAN_MIRROR]
        if subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode != 0:
            raise ImageBuildError(f"debootstrap failed; see {log_file}")
    (rootfs / "etc/apt/sources.list").write_text(
        f"deb {specs.DEBIAN_MIRROR} {specs.DEBIAN_SUITE} main\n"
        f"deb {specs.DEBIAN_MIRROR} {specs.DEBIAN_SUITE}-updates main\n"
        f"deb http://deb.debian.org/debian-security {specs.DEBIAN_SUITE}-security main\n")
    shutil.rmtree(rootfs / "var/cache/apt/archives", ignore_errors=True)
    (rootfs / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
    tarball = work / "rootfs.tar"
    subprocess.run(["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(tarball), "."], check=True)
    shutil.rmtree(rootfs)
    changes = [f'LABEL {k}="{v}"' for k, v in spec.labels.items()] + ['CMD ["/bin/bash"]']
    client.api.import_image_from_file(str(tarball), repository=spec.repository, tag=spec.tag.split(":")[1],
                                      changes=changes)


def _context_files(spec: ImageSpec, context: Path, cache_dir: Path, log_file: Path) -> None:
    if spec.role == "host-light":
        compile_nvml(context / "libnvidia-ml.so.1")
        shutil.copy(pynvml.__file__, context / "pynvml.py")
        for name in specs.HOST_LIGHT_ASSETS:
            (context / name).write_bytes(specs.asset_bytes(name))
    elif spec.role == "host-full":
        for name in specs.HOST_FULL_ASSETS:
            (context / name).write_bytes(specs.asset_bytes(name))
    elif spec.role == "collector":
        for name in specs.COLLECTOR_ASSETS:
            (context / name).write_bytes(specs.asset_bytes(name))
    elif spec.role == "tritonserver":
        wheel = pytriton_wheel(cache_dir, log_file)
        with zipfile.ZipFile(wheel) as zf:
            members = [m for m in zf.namelist()
                       if m.startswith(("pytriton/tritonserver/", "nvidia_pytriton.libs/"))]
            zf.extractall(context / "wheel", members)
        tree = context / "tritonserver"
        shutil.move(context / "wheel/pytriton/tritonserver", tree)
        shutil.move(context / "wheel/nvidia_pytriton.libs", tree / "lib")
        for path in tree.rglob("*"):  # zip extraction drops the executable bits
            if path.is_file() and (path.parent.name in ("bin", "lib") or path.suffix == ".so"
                                   or path.name == "triton_python_backend_stub"):
                path.chmod(0o755)
        shutil.rmtree(context / "wheel")


def _build_from_dockerfile(client, spec: ImageSpec, work: Path, cache_dir: Path, log_file: Path) -> None:
    context = work / "context"
    context.mkdir()
    _context_files(spec, context, cache_dir, log_file)
    # Labels as one LABEL line: the builder's `labels=` argument left a dangling twin image behind.
    label_line = "LABEL " + " ".join(f'{k}="{v}"' for k, v in spec.labels.items()) + "\n"
    (context / "Dockerfile").write_text(spec.dockerfile_text() + label_line)
    try:
        _, logs = client.images.build(path=str(context), tag=spec.tag, rm=True,
                                      forcerm=True, pull=False)
        with log_file.open("a") as log:
            for entry in logs:
                log.write(entry.get("stream", ""))
    except BuildError as err:
        with log_file.open("a") as log:
            for entry in err.build_log:
                log.write(entry.get("stream", "") or entry.get("error", ""))
        raise ImageBuildError(f"building {spec.tag} failed: {err.msg}; see {log_file}") from None


def ensure_image(client, spec: ImageSpec, cache_dir: Path, log_file: Path) -> ImageResult:
    import time

    started = time.monotonic()
    with filling(cache_dir, "images"):  # another lab coming up builds it once, this one then finds it
        image = _find(client, spec)
        built = image is None
        if built:
            with tempfile.TemporaryDirectory(prefix=f"tritonops-lab-{spec.role}-", dir=cache_dir) as tmp:
                if spec.role == "base":
                    _build_base(client, spec, Path(tmp), log_file)
                else:
                    _build_from_dockerfile(client, spec, Path(tmp), cache_dir, log_file)
            image = client.images.get(spec.tag)
        for extra in spec.extra_tags:
            repo, tag = extra.rsplit(":", 1)
            if extra not in image.tags:
                image.tag(repo, tag)
    return ImageResult(spec.role, spec.tag, image.id, built, time.monotonic() - started)


def ensure_images(client, need_full: bool, cache_dir: Path, log_file: Path, need_balancer: bool = False) -> LabImages:
    """The images a lab of this shape needs, built in order (each on its parent)."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    base = specs.base_spec()
    light = specs.host_light_spec(base, Path(pynvml.__file__).read_bytes())
    results = [ensure_image(client, base, cache_dir, log_file), ensure_image(client, light, cache_dir, log_file)]
    full = triton = None
    if need_full:
        full = ensure_image(client, specs.host_full_spec(light), cache_dir, log_file)
        wheel = pytriton_wheel(cache_dir, log_file)
        triton = ensure_image(client, specs.tritonserver_spec(base, _wheel_sha(wheel, cache_dir)), cache_dir, log_file)
        results += [full, triton]
    balancer = None
    if need_balancer:
        balancer = ensure_image(client, specs.host_balancer_spec(light), cache_dir, log_file)
        results.append(balancer)
    return LabImages(results[1], full, triton, tuple(results), balancer)


def saved_image(client, image: ImageResult, cache_dir: Path) -> Path:
    """`docker save` of an image, once per image ID, for loading into full hosts' inner engines."""
    path = cache_dir / "images" / f"{image.role}-{image.image_id.split(':')[-1][:12]}.tar"
    with filling(cache_dir, "saved-images"):
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(".partial")
            with partial.open("wb") as f:
                for chunk in client.images.get(image.image_id).save(named=True):
                    f.write(chunk)
            partial.rename(path)
    return path
