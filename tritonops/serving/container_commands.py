"""Every `docker` command the controller runs on a replica's container, as an argument list (issue #42, item 2):
pure, tested by equality, as Kamal's `commands/app/containers.rb`. The caller runs them over its session (joined
with shlex, never pasted into a shell string) or asks them as facts (facts.queries.CommandQuery).

A container is named by values/containers.py (`replica_container`); `docker run` is serving.container.run_argv.
"""

from __future__ import annotations

from tritonops.values.containers import LABEL_DEPLOYMENT, LABEL_RELEASE, LABEL_REPLICA

Argv = tuple[str, ...]

# what `inspect_states` prints, a line per container that exists: /<name> <status> <restart policy> <release>
STATES_FORMAT = ('{{.Name}} {{.State.Status}} {{.HostConfig.RestartPolicy.Name}} '
                 '{{index .Config.Labels "%s"}}' % LABEL_RELEASE)


def inspect_states(containers: tuple[str, ...]) -> Argv:
    """Each named container's state (a missing one prints no line; docker exits 1 then)."""
    return ("docker", "inspect", "--format", STATES_FORMAT, *containers)


def list_replica(deployment: str, replica: str) -> Argv:
    """The containers of one replica of the deployment (its label), every state."""
    return ("docker", "ps", "--all", "--filter", f"label={LABEL_DEPLOYMENT}={deployment}",
            "--filter", f"label={LABEL_REPLICA}={replica}", "--format", "{{.Names}}")


def stop(container: str, grace_s: int) -> Argv:
    """Stop it: SIGTERM (Triton's graceful exit), SIGKILL after `grace_s` seconds."""
    return ("docker", "stop", "--time", str(_seconds(grace_s)), container)


def start(container: str) -> Argv:
    """Start a stopped container again: the same release, image and arguments."""
    return ("docker", "start", container)


def rename(container: str, new_name: str) -> Argv:
    """Park a container under another name (the previous release's, kept to come back to)."""
    return ("docker", "rename", container, new_name)


def remove(container: str, *, force: bool = False) -> Argv:
    return ("docker", "rm", *(("--force",) if force else ()), container)


def _seconds(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"a stop grace is a whole number of seconds >= 0, not {value!r}")
    return value
