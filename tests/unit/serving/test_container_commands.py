"""serving.container_commands: every docker command the controller runs on a replica's container, by equality
(issue #42 item 2, as Kamal's test/commands)."""

import pytest

from tritonops.serving import container_commands as commands


def test_the_states_of_several_containers_in_one_inspect():
    assert commands.inspect_states(("tritonops-chat", "tritonops-chat-1")) == (
        "docker", "inspect", "--format",
        '{{.Name}} {{.State.Status}} {{.HostConfig.RestartPolicy.Name}} {{index .Config.Labels "tritonops.release"}}',
        "tritonops-chat", "tritonops-chat-1")


def test_listing_a_replica_s_containers_filters_by_its_labels():
    assert commands.list_replica("chat", "1") == (
        "docker", "ps", "--all", "--filter", "label=tritonops.deployment=chat", "--filter", "label=tritonops.replica=1",
        "--format", "{{.Names}}")


def test_stop_start_rename_and_remove():
    assert commands.stop("tritonops-chat", 60) == ("docker", "stop", "--time", "60", "tritonops-chat")
    assert commands.start("tritonops-chat") == ("docker", "start", "tritonops-chat")
    assert commands.rename("tritonops-chat", "tritonops-chat--old") == (
        "docker", "rename", "tritonops-chat", "tritonops-chat--old")
    assert commands.remove("tritonops-chat") == ("docker", "rm", "tritonops-chat")
    assert commands.remove("tritonops-chat", force=True) == ("docker", "rm", "--force", "tritonops-chat")


@pytest.mark.parametrize("grace", [-1, 1.5, True, "60"])
def test_a_stop_grace_that_is_not_whole_seconds_is_refused(grace):
    with pytest.raises(ValueError, match="whole number of seconds"):
        commands.stop("tritonops-chat", grace)
