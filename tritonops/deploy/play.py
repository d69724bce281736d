"""play: a playbook of one's own over the inventory, as ansible-playbook runs one: load (done by the caller),
compile for every host (every mistake before any host is contacted), then the plays task by task. Nothing
of a deploy's around it: no probe, plan, lock, image, audit log or balancers; the tasks' own operations
(copy, template, file, command, debug and the built-in ones) are all that runs."""

from __future__ import annotations

from tritonops.deploy.run import DeployOptions, DeployReport
from tritonops.playbook import RunInputs, compile_playbook, run_playbook
from tritonops.playbook.events import EventStream, OnEvent
from tritonops.transport.sessions import SessionPool


def play(inputs: RunInputs, options: DeployOptions, *, on_event: OnEvent | None = None) -> DeployReport:
    """`on_event`: a subscriber of the run's event stream beside the report. Each host sees
    `ansible_check_mode` (true under --check), as in Ansible."""
    report = DeployReport(check=options.check)
    stream = EventStream([report.subscriber(), on_event])
    facts = {host.name: {"ansible_check_mode": options.check} for host in inputs.hosts}
    compiled = compile_playbook(inputs, host_facts=facts, tags=options.tags, skip_tags=options.skip_tags,
                                start_at_task=options.start_at_task)
    with SessionPool(list(compiled.connections), forks=options.forks,
                     accept_new_host_keys=options.accept_new_host_keys) as pool:
        try:
            report.run = run_playbook(compiled, pool, check=options.check, diff=options.diff, on_event=stream,
                                      confirm=options.step)
        finally:
            report.traffic = pool.traffic()
    return report
