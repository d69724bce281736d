"""deploy's weights phase (issue #29): a controller folder that several hosts of the run need leaves the
controller about once; the hosts pass it on to each other (weights/relay.py) before the playbook runs, so the
playbook's `model_weights` task then finds it verified on each of them (`ok`). A folder that one host needs, and
every hub or host-path source, is left to that task, as before. A host whose weights could not be brought
(not enough disk, a failed push) leaves the run, as for any phase; the others go on.
"""

from __future__ import annotations

import json
from typing import Callable, Mapping, Sequence

from tritonops.errors import TritonopsError
from tritonops.planning import HostDeployPlan
from tritonops.relay.run import RelayHost
from tritonops.relay.settings import relay_fanout, relay_peer
from tritonops.results import HostResult
from tritonops.transport.base import Unreachable
from tritonops.transport.sessions import SessionPool
from tritonops.weights.operation import ModelWeightsArgs
from tritonops.weights.relay import relay_weights

TASK = "weights"


def shared_folders(names: Sequence[str], plans: Mapping[str, HostDeployPlan]) -> list[tuple[dict, list[str]]]:
    """Each controller folder (as `model_weights` arguments) that two hosts or more of `names` need, with them."""
    groups: dict[str, tuple[dict, list[str]]] = {}
    for name in names:
        for model in plans[name].models:
            args = model.weights.args if model.weights is not None else {}
            if args.get("source") == "controller_dir":
                group = groups.setdefault(json.dumps(args, sort_keys=True), (dict(args), []))
                if name not in group[1]:
                    group[1].append(name)
    return [group for group in groups.values() if len(group[1]) > 1]


def weights_phase(pool: SessionPool, hosts: Sequence, names: Sequence[str], plans: Mapping[str, HostDeployPlan],
                  record: Callable[[HostResult], None]) -> tuple[list[str], int]:
    """(the hosts still in the run, bytes of weights that left the controller)."""
    by_name = {host.name: host for host in hosts}
    dropped: set[str] = set()
    bytes_out = 0
    for args, members in shared_folders(names, plans):
        taking_part = []
        for name in members:
            try:
                transport = pool.session(name).transport
            except Unreachable as exc:
                record(HostResult(name, "unreachable", str(exc), task=TASK))
                dropped.add(name)
                continue
            taking_part.append(RelayHost(name, transport, relay_peer(by_name[name])))
        try:
            relayed = relay_weights(ModelWeightsArgs(**args), taking_part,
                                    fanout=relay_fanout([by_name[m.name] for m in taking_part]))
        except TritonopsError as exc:  # the folder cannot be read on the controller: every host's failure
            for member in taking_part:
                record(HostResult(member.name, "failed", str(exc), task=TASK))
                dropped.add(member.name)
            continue
        bytes_out += relayed.bytes_out
        for arrival in relayed.arrivals.values():
            record(HostResult(arrival.host, arrival.status, arrival.msg, arrival, task=TASK))
            if arrival.status == "failed":
                dropped.add(arrival.host)
    return [name for name in names if name not in dropped], bytes_out
