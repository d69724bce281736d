"""Inventory variables -> `ImageConfig` for one host (pure but for reading a constraints file).

Variables (see tritonops/inventory/known_vars.py): tritonops_image_mode (official|committed),
tritonops_triton_image, tritonops_vllm_version, tritonops_pip_index_url,
tritonops_pip_extra_index_url, tritonops_pip_trusted_host, tritonops_pip_extra_args,
tritonops_pip_constraints, tritonops_build_host, tritonops_registry.
"""

from __future__ import annotations

import os
import shlex
from typing import Any, Callable, Mapping

from tritonops import __version__
from tritonops.errors import InputError
from tritonops.image import ngc
from tritonops.modes.choice import FRONTEND_VAR, serving_mode
from tritonops.image.spec import MODES, ImageConfig, PipOptions
from tritonops.sizing.default_version import DEFAULT_VLLM_VERSION

DEFAULT_MODE = "committed"
DEFAULT_RELEASE = ngc.DEFAULT_BASE_RELEASE


def _where(host, name: str) -> str:
    try:
        return host.setting(name).where
    except (KeyError, IndexError, AttributeError):
        return name


def _strings(value: Any, name: str, where: str, *, split_words: bool = False) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return tuple(shlex.split(value)) if split_words else tuple(v for v in value.split() if v)
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) for v in value):
        return tuple(str(v) for v in value)
    raise InputError(f"{name} must be a string or a list of strings, not {type(value).__name__}", where)


def image_config(host, read_file: Callable[[str], str] | None = None) -> ImageConfig:
    """`host` has `.name`, `.vars` and `.setting(name)` (an inventory Host)."""
    v: Mapping[str, Any] = host.vars
    mode = str(v.get("tritonops_image_mode", DEFAULT_MODE))
    if mode not in MODES:
        raise InputError(f"tritonops_image_mode must be one of {', '.join(MODES)}, not {mode!r}",
                         _where(host, "tritonops_image_mode"))
    image = v.get("tritonops_triton_image")
    release = ngc.lookup(DEFAULT_RELEASE)
    # committed on the default base: the default vLLM, not the one NVIDIA pinned in that release's image
    default_vllm = DEFAULT_VLLM_VERSION if image is None and mode == "committed" else None
    if image is None:
        image = release.official_image if mode == "official" else release.base_image
    image = str(image)
    if mode == "official" and image.endswith(":" + f"{ngc.release_of(image)}-py3"):
        image = image[: -len("-py3")] + "-vllm-python-py3"  # the plain base named: pull its vLLM sibling
    vllm = v.get("tritonops_vllm_version", default_vllm)
    if vllm is None:
        known = ngc.lookup(ngc.release_of(image))
        if mode == "committed" and known is None:
            raise InputError(f"set tritonops_vllm_version: {image} is not an NGC release tritonops knows",
                             host.name)
        vllm = known.vllm if known else None
    constraints = None
    path = v.get("tritonops_pip_constraints")
    if path:
        where = _where(host, "tritonops_pip_constraints")
        try:
            base = host.setting("tritonops_pip_constraints").base_dir
        except (KeyError, IndexError, AttributeError):
            base = ""
        full = os.path.join(base, os.path.expanduser(str(path)))
        try:
            constraints = (read_file or _read)(full)
        except OSError as exc:
            raise InputError(f"cannot read pip constraints file {full}: {exc.strerror or exc}", where) from exc
    pip = PipOptions(
        index_url=str(v["tritonops_pip_index_url"]) if v.get("tritonops_pip_index_url") else None,
        extra_index_urls=_strings(v.get("tritonops_pip_extra_index_url"), "tritonops_pip_extra_index_url",
                                  _where(host, "tritonops_pip_extra_index_url")),
        trusted_hosts=_strings(v.get("tritonops_pip_trusted_host"), "tritonops_pip_trusted_host",
                               _where(host, "tritonops_pip_trusted_host")),
        extra_args=_strings(v.get("tritonops_pip_extra_args"), "tritonops_pip_extra_args",
                            _where(host, "tritonops_pip_extra_args"), split_words=True),
        constraints=constraints,
    )
    frontend = serving_mode(v.get(FRONTEND_VAR), _where(host, FRONTEND_VAR)).name
    return ImageConfig(mode=mode, image=image, vllm_version=str(vllm) if vllm is not None else None, pip=pip,
                       tritonops_version=__version__, build_host=v.get("tritonops_build_host"),
                       registry=v.get("tritonops_registry"), frontend=frontend)


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def outside_build_hosts(hosts, inventory, build_host: str | None = None) -> dict:
    """The inventory hosts named as build host (--build-host, else each host's tritonops_build_host) that are not
    among `hosts`: a limited run may need one to build, or to send from, though it deploys nothing there.
    A name the inventory lacks is an error at the variable's line."""
    names = {host.name for host in hosts}
    wanted: dict[str, str] = {}
    for host in hosts:
        name = build_host or host.vars.get("tritonops_build_host")
        if isinstance(name, str) and name and name not in names:
            wanted.setdefault(name, "--build-host" if build_host else _where(host, "tritonops_build_host"))
    outside = {}
    for name, where in wanted.items():
        try:
            outside[name] = inventory.host(name)
        except InputError as err:
            raise InputError(f"build host: {err.what}", where) from None
    return outside
