"""The exit codes of every tritonops command: ansible-playbook's, so scripts that wrap Ansible read
ours the same way (TaskQueueManager's RUN_* values and the CLI's option error):

    0  every host ok (changed counts as ok)
    1  any other error (tritonops itself, the controller's disk, the Docker engine here)
    2  a host failed (or a rollout stopped by max_fail_percentage; for `size`, the model does not fit)
    4  a host could not be reached (wins over 2: Ansible checks unreachable hosts first)
    5  bad input: an inventory, playbook, option or value; nothing was contacted or changed
   99  interrupted (Ctrl-C)
"""

from __future__ import annotations

from enum import IntEnum
from typing import Iterable


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1
    HOST_FAILED = 2
    HOST_UNREACHABLE = 4
    BAD_INPUT = 5
    INTERRUPTED = 99


def exit_code_of(statuses: Iterable[str]) -> ExitCode:
    """The run's code from its hosts' result statuses (ok / changed / skipped / failed / unreachable)."""
    seen = set(statuses)
    if "unreachable" in seen:
        return ExitCode.HOST_UNREACHABLE
    if "failed" in seen:
        return ExitCode.HOST_FAILED
    return ExitCode.OK
