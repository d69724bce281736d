"""`host_values`: what a host's variables say about serving, checked, before anything about the host is known.

The models it serves, the address its replicas bind to, the serving mode, the GPUs it may use, how many replicas
on which ports, its sizing overrides and its Ray cluster's name depend on the inventory, `-e` and the flags only,
never on the probe. `plan_host` reads them here; `check_host_values` reads them here too, for every selected host,
before `plan` or `deploy` contacts any: a bad value is bad input (exit 5) naming the variable and where it was set
(file:line, or `-e`), as the README promises, not a host that failed after its probe. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tritonops.errors import InputError, TritonopsError
from tritonops.modes.base import ServingMode
from tritonops.modes.choice import FRONTEND_VAR, serving_mode
from tritonops.planning.bind import replica_bind
from tritonops.planning.cluster_plan import cluster_of
from tritonops.planning.entries import ModelEntry, host_where, model_entries
from tritonops.planning.gpu_choice import (BOOT_FIRST_VAR, GPUS_VAR, PORT_VARS, REPLICAS_VAR, STRIDE_VAR, allowed_gpus,
                                          replica_count)
from tritonops.planning.placement import ReplicaPorts
from tritonops.sizing.engine_plan import SizingRequest
from tritonops.sizing.fleet import HOST_VARS, host_request
from tritonops.values.flags import flag
from tritonops.values.numbers import whole_number

DEFAULT_STRIDE = 10


@dataclass(frozen=True)
class HostValues:
    """A host's serving variables, checked (planning.host_plan sizes and places with them)."""

    entries: tuple[ModelEntry, ...]   # empty: the host names no model and there is no --model
    bind: str                         # the address its replicas' ports bind to (planning.bind)
    mode: ServingMode                 # tritonops_frontend
    allowed: tuple[int, ...] | None   # tritonops_gpus (None: every GPU)
    replicas: int | None              # tritonops_replicas (None: auto)
    ports: ReplicaPorts               # the first replica's, from the mode's tritonops_<role>_port
    stride: int                       # tritonops_port_stride
    boot_first: bool                  # tritonops_boot_first: new replicas boot on spare GPUs before old ones stop
    request: SizingRequest            # the run's request with the host's tritonops_* overrides
    cluster: str | None               # tritonops_cluster


def host_values(host, request: SizingRequest, default_model: str | None, default_name: str = "vllm_model",
                behind_balancer: bool = False) -> HostValues:
    """`host`'s serving values; InputError (TritonopsError for a deployment path) naming the variable and where
    it was set, for the first bad one."""
    entries = model_entries(host, default_model, default_name)
    bind = replica_bind(host, behind_balancer)
    mode = serving_mode(host.vars.get(FRONTEND_VAR), host_where(host, FRONTEND_VAR))
    allowed = allowed_gpus(host.vars.get(GPUS_VAR), host_where(host, GPUS_VAR))
    replicas = replica_count(host.vars.get(REPLICAS_VAR), host_where(host, REPLICAS_VAR))

    def given(var, default):
        return default if host.vars.get(var) in (None, "") else host.vars[var]

    stride = whole_number(given(STRIDE_VAR, DEFAULT_STRIDE), STRIDE_VAR, host_where(host, STRIDE_VAR), minimum=3,
                          maximum=10000)
    # the mode's ports, each from tritonops_<role>_port (kserve: http, grpc, metrics; openai: http, grpc, openai)
    port_vars = [(f"tritonops_{role}_port", dict(PORT_VARS).get(f"tritonops_{role}_port", port))
                 for role, port in mode.ports]
    ports = ReplicaPorts(*(whole_number(given(var, default), var, host_where(host, var), maximum=65535)
                           for var, default in port_vars))
    owner: dict[int, str] = {}
    for (var, _), port in zip(port_vars, ports.all()):  # two roles on one port: one of them could not listen
        if port in owner:
            raise InputError(f"{var} {port} is {owner[port]}'s too: in the {mode.name} mode each of "
                             f"{', '.join(v for v, _ in port_vars)} needs its own port", host_where(host, var))
        owner[port] = var
    refused = mode.refuse_models(tuple(entry.name for entry in entries))
    if refused and entries:
        raise InputError(refused, host_where(host, FRONTEND_VAR))
    where = {var: host_where(host, var) for var in HOST_VARS}
    sized = host_request(request, host.vars, {k: v for k, v in where.items() if v})
    boot_first = flag(given(BOOT_FIRST_VAR, True), BOOT_FIRST_VAR, host_where(host, BOOT_FIRST_VAR))
    return HostValues(tuple(entries), bind, mode, allowed, replicas, ports, stride, boot_first, sized,
                      cluster_of(host))


def check_host_values(hosts: Iterable, request: SizingRequest, default_model: str | None,
                      default_name: str = "vllm_model", behind_balancer: bool = False) -> None:
    """Every host's serving values (host_values), before any host is contacted: the first bad one is an
    InputError (exit 5) naming where it was set, and the host when the inventory set it."""
    for host in hosts:
        try:
            host_values(host, request, default_model, default_name, behind_balancer)
        except TritonopsError as err:
            what, where = (err.what, err.where) if isinstance(err, InputError) else (str(err), None)
            # -e is every host's: naming one would mislead; a file:line may be a group's, so say which host
            named = where == "-e" or what.startswith(f"{host.name}: ") or f"host {host.name}" in what
            raise InputError(what if named else f"{what} (host {host.name})", where) from None
