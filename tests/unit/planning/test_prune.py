"""What `tritonops prune` removes from a host and why it keeps the rest: the pure decision, by equality."""

import pytest

from tritonops.errors import InputError
from tritonops.planning.prune import (ContainerOnHost, DeploymentOnHost, ImageDecision, ImageOnHost, PrunePlan,
                                      ReleaseDecision, ReleaseOnHost, decide_prune)

A, B, C, D = (f"sha256:{c * 64}" for c in "abcd")
ROOT = "/opt/tritonops"


def chat(*releases, current=None, previous=None, pruned=True, name="chat"):
    return DeploymentOnHost(ROOT, name, tuple(ReleaseOnHost(*r) for r in releases), current, previous, pruned)


def vllm_env(image_id, *tags, next_deploy=False, size=0):
    return ImageOnHost(image_id, tags, True, next_deploy, size)


def kept(release, why, image=None, name="chat"):
    return ReleaseDecision(name, release, f"{ROOT}/{name}/releases/{release}", False, why, image)


def gone(release, why, image=None, containers=(), name="chat"):
    return ReleaseDecision(name, release, f"{ROOT}/{name}/releases/{release}", True, why, image, containers)


def test_current_previous_and_the_newest_stay_the_older_ones_go_with_their_images():
    host = chat(("r1", A), ("r2", B), ("r3", C), ("r4", C), ("r5", D), current="r4", previous="r3")
    plan = decide_prune([host], [vllm_env(i, size=10) for i in (A, B, C, D)], [], keep=1)
    assert plan == PrunePlan(
        (kept("r5", "one of the 1 newest", D), kept("r4", "current", C),
         kept("r3", "previous: what a rollback goes back to", C),
         gone("r2", "older than the 1 newest, not current or previous", B),
         gone("r1", "older than the 1 newest, not current or previous", A)),
        (ImageDecision(A, (), 10, True, "no kept release names it, no container uses it"),
         ImageDecision(B, (), 10, True, "no kept release names it, no container uses it"),
         ImageDecision(C, (), 10, False, "release r4 of chat names it"),
         ImageDecision(D, (), 10, False, "release r5 of chat names it")))
    assert plan.image_bytes == 20 and [r.release for r in plan.removed_releases] == ["r2", "r1"]


def test_current_and_previous_stay_even_when_keep_is_zero_and_they_are_old():
    host = chat(("r1", A), ("r2", A), ("r3", B), current="r2", previous="r1")  # r3 failed its gate
    plan = decide_prune([host], [vllm_env(A), vllm_env(B)], [], keep=0)
    assert plan.releases == (gone("r3", "not current or previous", B), kept("r2", "current", A),
                             kept("r1", "previous: what a rollback goes back to", A))
    assert [(i.id, i.remove) for i in plan.images] == [(A, False), (B, True)]


def test_the_default_keeps_the_three_newest():
    host = chat(*((f"r{i}", A) for i in range(1, 6)), current="r5", previous="r4")
    plan = decide_prune([host], [], [])
    assert [(r.release, r.remove) for r in plan.releases] == \
        [("r5", False), ("r4", False), ("r3", False), ("r2", True), ("r1", True)]


def test_an_image_another_deployment_on_the_host_names_stays_whatever_its_age():
    mine = chat(("r1", A), ("r2", B), current="r2")
    theirs = chat(("s1", A), ("s2", C), current="s2", name="code", pruned=False)
    plan = decide_prune([mine, theirs], [vllm_env(A), vllm_env(B), vllm_env(C)], [], keep=0)
    assert plan.releases == (kept("r2", "current", B), gone("r1", "not current or previous", A))
    assert plan.images[0] == ImageDecision(A, (), 0, False, "release s1 of code (another deployment: its own prune "
                                                            "decides) names it")
    assert not plan.removed_images


def test_an_image_two_deployments_share_stays_while_either_keeps_a_release_naming_it():
    one = chat(("r1", A), ("r2", B), current="r2", previous="r1")
    two = chat(("s1", A), ("s2", B), current="s2", name="code")
    plan = decide_prune([one, two], [vllm_env(A), vllm_env(B)], [], keep=0)
    assert [(r.deployment, r.release, r.remove) for r in plan.releases] == \
        [("chat", "r2", False), ("chat", "r1", False), ("code", "s2", False), ("code", "s1", True)]
    assert plan.images[0].why == "release r1 of chat names it" and not plan.removed_images


def test_a_running_containers_release_and_image_stay_a_parked_one_goes_with_its_release():
    host = chat(("r1", A), ("r2", B), ("r3", C), ("r4", D), current="r4")
    containers = [ContainerOnHost("tritonops-chat", D, True, "chat", "r4"),
                  ContainerOnHost("tritonops-chat-1", B, True, "chat", "r2"),      # a replica left on r2
                  ContainerOnHost("tritonops-chat--r1", A, False, "chat", "r1"),  # parked for a rollback to r1
                  ContainerOnHost("tritonops-chat--r3-failed", C, False, "chat", "r3")]
    plan = decide_prune([host], [vllm_env(i) for i in (A, B, C, D)], containers, keep=0)
    assert plan.releases == (kept("r4", "current", D),
                             gone("r3", "not current or previous", C, ("tritonops-chat--r3-failed",)),
                             kept("r2", "a running container uses it (tritonops-chat-1)", B),
                             gone("r1", "not current or previous", A, ("tritonops-chat--r1",)))
    assert plan.removed_containers == ("tritonops-chat--r3-failed", "tritonops-chat--r1")
    assert [(i.id, i.remove) for i in plan.images] == [(A, True), (B, False), (C, True), (D, False)]


def test_an_image_a_container_uses_stays_running_or_stopped():
    host = chat(("r1", C), current="r1")
    containers = [ContainerOnHost("someone-else", A, True), ContainerOnHost("stopped-one", B, False)]
    plan = decide_prune([host], [vllm_env(A), vllm_env(B)], containers, keep=0)
    assert plan.images == (ImageDecision(A, (), 0, False, "container someone-else uses it (running)"),
                           ImageDecision(B, (), 0, False, "container stopped-one uses it (stopped)"))


def test_the_image_the_next_deploy_runs_stays_and_other_images_are_never_considered():
    host = chat(("r1", C), current="r1")
    images = [vllm_env(A, "tritonserver:vllm_env", "tritonserver:vllm_env-aaaa", next_deploy=True),
              vllm_env(B, "tritonserver:vllm_env-bbbb"), ImageOnHost(D, ("debian:bookworm",))]
    plan = decide_prune([host], images, [], keep=0)
    assert plan.images == (
        ImageDecision(A, ("tritonserver:vllm_env", "tritonserver:vllm_env-aaaa"), 0, False,
                      "tagged tritonserver:vllm_env: what the next deploy runs"),
        ImageDecision(B, ("tritonserver:vllm_env-bbbb",), 0, True, "no kept release names it, no container uses it"))


def test_a_damaged_release_is_pruned_by_age_like_the_others_and_says_so():
    host = chat(("r1", None, True), ("r2", A), ("r3", None, True), current="r2")
    plan = decide_prune([host], [], [], keep=1)
    assert plan.releases == (kept("r3", "one of the 1 newest"), kept("r2", "current", A),
                             gone("r1", "older than the 1 newest, not current or previous; its release.json is "
                                        "damaged"))


def test_a_folder_whose_name_tritonops_would_not_make_is_left_alone():
    host = chat(("r9", A), ("-rf", None, True), current="r9")
    plan = decide_prune([host], [], [], keep=0)
    assert plan.releases[1] == kept("-rf", "not a release name tritonops makes: left alone")


def test_nothing_deployed_and_nothing_to_remove_is_nothing_to_do():
    plan = decide_prune([chat()], [vllm_env(A, "tritonserver:vllm_env", next_deploy=True)], [])
    assert plan.nothing_to_do and plan.releases == () and not plan.images[0].remove


def test_another_deployments_folders_are_never_removed():
    theirs = chat(("s1", A), ("s2", A), ("s3", A), ("s4", A), current="s4", name="code", pruned=False)
    assert decide_prune([theirs], [], [], keep=0).releases == ()


@pytest.mark.parametrize("keep", [-1, 1001, True, "3"])
def test_a_keep_count_out_of_range_is_bad_input(keep):
    with pytest.raises(InputError) as caught:
        decide_prune([], [], [], keep=keep)
    assert caught.value.where == "--keep"
