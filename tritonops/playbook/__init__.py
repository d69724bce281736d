"""Playbooks and roles: Ansible-shaped YAML whose tasks name tritonops operations.

    inputs = load_run_inputs("deploy.yml", ["inventory"], roles_path=[...], limit=...,
                             extra_vars=parse_extra_vars(["a=1"]))   # read once, strict, file:line errors
    compiled = compile_playbook(inputs, host_facts={...}, tags=[...], skip_tags=[...])   # every host rendered
    with SessionPool(compiled.connections, forks=10) as pool:
        run = run_playbook(compiled, pool, check=False, diff=True, on_event=print)   # PlaybookRun

Everything that can be wrong in the playbook, its roles or the variables is found by the first two
calls, before any host is touched (PlaybookError, exit code 5: bad input).
"""

from tritonops.playbook.compile import CompiledPlaybook, compile_playbook
from tritonops.playbook.events import BatchDone, BatchStarted, Event, HostDone, PlayStarted, TaskStarted
from tritonops.playbook.extra_vars import parse_extra_vars
from tritonops.playbook.host_task import TaskOutcome
from tritonops.playbook.inputs import RunInputs, load_run_inputs
from tritonops.playbook.loader import load_playbook
from tritonops.playbook.model import Play, Playbook, PlaybookError, Role, Task
from tritonops.playbook.runner import PlaybookRun, run_playbook

__all__ = ["BatchDone", "BatchStarted", "CompiledPlaybook", "Event", "HostDone", "Play", "PlayStarted", "Playbook",
           "PlaybookError", "PlaybookRun", "Role", "RunInputs", "Task", "TaskOutcome", "TaskStarted",
           "compile_playbook", "load_playbook", "load_run_inputs", "parse_extra_vars", "run_playbook"]
