"""The balancer lab every front-door lab test shares (tests/lab/conftest.py's session fixture `balancer`): one
balancer host (Debian's HAProxy) and a second full host, both also on the test lab's network, where the test lab's
full host serves the replicas the door fronts."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tritonops.lab import api
from tritonops.lab.containers import network_name
from tritonops.lab.request import HostSpec, LabRequest, balancer_hosts
from tritonops.lab.state import LabState
from tritonops.lab.testing import test_lab_port_base, test_lab_prefix

PREFIX = test_lab_prefix("door")
PORT_BASE = test_lab_port_base(150)
BALANCER = "balancer-1"
SECOND = "gpu-2"  # a second serving host, the balancer lab's own full host (issue #41's partial runs)


def balancer_lab(lab: LabState) -> Iterator[LabState]:
    """Up, its two hosts joined to `lab`'s network; down after (unless TRITONOPS_LAB_KEEP)."""
    import docker

    state_dir = Path(tempfile.gettempdir()) / PREFIX
    try:
        state = api.up(LabRequest(balancer_hosts(1) + (HostSpec(SECOND, "2080ti", "full"),)), state_dir=state_dir,
                       name_prefix=PREFIX, port_base=PORT_BASE)
        if state.results.failed:
            pytest.fail("lab up failed: " + "; ".join(f"{r.host}: {r.msg}" for r in state.results.failed))
        client = docker.from_env()
        network = client.networks.get(network_name(lab.prefix))
        for name in (BALANCER, SECOND):
            container = client.containers.get(state.host(name).container)
            if network.name not in container.attrs["NetworkSettings"]["Networks"]:
                network.connect(container)
        yield state
    finally:
        if not os.environ.get("TRITONOPS_LAB_KEEP"):
            api.down(state_dir=state_dir, name_prefix=PREFIX)
