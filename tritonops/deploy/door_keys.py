"""`tritonops door rotate-key` / `retire-keys`: the API keys of every balancer of the run changed on the balancer
itself (host_programs/door_apply.py, its `keys` request), then HAProxy reloaded hitlessly (the door program's own
path). The controller never sees a key: only ids (`k:` + 12 hex digits of the key's SHA-256) come back, and go into
the results and the audit log like a deploy's changes. A rotation puts a new key first and, with `keep_old`, keeps
the old ones open while clients move; retiring keeps only the newest. In --check nothing is touched: each balancer
says what would change.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass

from tritonops.door.program import ARGV, DoorApplied, keys_request, read_answer
from tritonops.deploy.event_log import audit_results
from tritonops.errors import InputError, TritonopsError
from tritonops.planning.door import door
from tritonops.planning.deployment import deployment_of
from tritonops.playbook.inputs import RunInputs
from tritonops.results import GroupResult, HostResult
from tritonops.transport.sessions import HostSession, SessionPool

TASK = "door keys"
TIMEOUT_S = 120
COMMANDS = {"rotate": "door rotate-key", "retire": "door retire-keys"}


@dataclass(frozen=True)
class KeysOptions:
    action: str                     # rotate | retire
    keep_old: bool = False          # rotate: the old keys stay open after the new one (an overlap)
    check: bool = False
    forks: int = 10
    accept_new_host_keys: bool = False
    audit_log: object | None = None  # a Path; None: not written


def change_keys(inputs: RunInputs, options: KeysOptions, clock=time.time) -> GroupResult:
    """One result per balancer --limit selected: changed (the key ids it made, kept and removed), ok (nothing to
    do), failed (no keys file, no door checking it, haproxy did not reload)."""
    if not inputs.balancers:
        raise InputError(f"no balancer matches {inputs.limit or 'the inventory'}: API keys are on the hosts of "
                         "tritonops_balancers", "--limit" if inputs.limit else "-i")
    files, refused = {}, []
    for host in inputs.balancers:  # every value checked before a host is contacted; a bad one fails that host only
        try:
            keys_file = door(host).keys_file
        except InputError as err:
            refused.append(HostResult(host.name, "failed", str(err), task=TASK))
            continue
        if keys_file is None:
            refused.append(HostResult(host.name, "failed", "no tritonops_api_keys_file: this door needs no key, "
                                                           "there is none to rotate", task=TASK))
            continue
        files[host.name] = keys_file
    started = clock()

    def phase(session: HostSession) -> HostResult:
        body = keys_request(files[session.name], options.action, keep_old=options.keep_old, check=options.check)
        result = session.transport.run(shlex.join(ARGV), stdin=body, timeout=TIMEOUT_S)
        try:
            applied = read_answer(result.exit_code, result.stdout, result.stderr)
        except TritonopsError as err:
            return HostResult(session.name, "failed", str(err), task=TASK)
        return HostResult(session.name, "changed" if applied.changed else "ok", said(applied, options), applied,
                          task=TASK)

    by_name = {host.name: host for host in inputs.balancers}
    with SessionPool([by_name[name].connection for name in files], forks=options.forks,
                     accept_new_host_keys=options.accept_new_host_keys) as pool:
        done = pool.run(phase, list(files), task=TASK) if files else GroupResult()
    results = GroupResult.of(sorted([*done, *refused], key=lambda r: list(by_name).index(r.host)))
    if options.audit_log is not None and not options.check:
        audit_results(options.audit_log, results, {name: deployment_of(host) for name, host in by_name.items()},
                      command=COMMANDS[options.action], started=started, finished=clock())
    return results


def said(applied: DoorApplied, options: KeysOptions) -> str:
    """One line of ids, never a key."""
    keys = applied.keys
    if keys is None:  # the program answers `keys` to every keys request
        return f"HAProxy {applied.version} {applied.action}"
    would = options.check
    parts = []
    if options.action == "rotate":
        parts.append(f"{'would make' if would else 'made'} a new key{' ' + keys.new if keys.new else ''} in "
                     f"{keys.file} (0600; read it there)")
    if keys.kept and options.action == "rotate":
        parts.append(f"the old key{'s' if len(keys.kept) > 1 else ''} {', '.join(keys.kept)} "
                     f"{'would stay' if would else 'still'} open until `tritonops door retire-keys`")
    if keys.kept and options.action == "retire":
        parts.append(f"{keys.kept[0]} {'would stay' if would else 'stays'} the only key in {keys.file}")
    if keys.removed:
        parts.append(f"{', '.join(keys.removed)} {'would no longer open' if would else 'no longer open'}")
    elif options.action == "retire":
        parts.append("no older key to retire")
    if applied.action == "would reload":
        parts.append("HAProxy would reload")
    elif not would:
        parts.append(f"HAProxy {applied.version} {applied.action}")
    return "; ".join(parts)
