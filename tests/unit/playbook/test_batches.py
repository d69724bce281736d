"""serial -> batches, exactly as Ansible cuts them; --tags selection with Ansible's special tags."""

import pytest

from tritonops.playbook.batches import batch_sizes, batches, check_serial
from tritonops.playbook.model import PlaybookError
from tritonops.playbook.tags import should_run


def test_no_serial_is_one_batch_of_every_host():
    assert batch_sizes((), 7) == [7]
    assert batch_sizes((0,), 7) == [7]


def test_a_number_cuts_equal_batches_and_a_short_last_one():
    assert batch_sizes((2,), 7) == [2, 2, 2, 1]
    assert batch_sizes((10,), 3) == [3]


def test_a_percentage_is_of_all_the_play_hosts_rounded_down_at_least_one():
    assert batch_sizes(("25%",), 8) == [2, 2, 2, 2]
    assert batch_sizes(("25%",), 3) == [1, 1, 1]
    assert batch_sizes(("30%",), 10) == [3, 3, 3, 1]


def test_a_list_ramps_up_and_its_last_entry_repeats():
    assert batch_sizes((1, "25%", "100%"), 10) == [1, 2, 7]
    assert batch_sizes((1, 2), 7) == [1, 2, 2, 2]


def test_batches_keep_host_order():
    assert batches(["a", "b", "c", "d", "e"], (1, 3)) == [["a"], ["b", "c", "d"], ["e"]]


def test_serial_as_written():
    assert check_serial(None, "p:1") == ()
    assert check_serial(3, "p:1") == (3,)
    assert check_serial("3", "p:1") == (3,)
    assert check_serial([1, "25%", " 100% "], "p:1") == (1, "25%", "100%")


@pytest.mark.parametrize("bad", [-1, "x", "25 %%", True, 1.5, [], [1, None], "٣"])
def test_serial_that_is_not_a_number_or_percentage_is_refused(bad):
    with pytest.raises(PlaybookError) as err:
        check_serial(bad, "site.yml:4")
    assert err.value.where == "site.yml:4"


def test_tags_select_like_ansible():
    assert should_run(set()) and should_run({"config"})
    assert not should_run({"never", "debug"})
    assert should_run({"never", "debug"}, only={"debug"})
    assert should_run({"config"}, only={"config"}) and not should_run({"link"}, only={"config"})
    assert should_run({"always"}, only={"config"})
    assert should_run(set(), only={"untagged"}) and not should_run({"x"}, only={"untagged"})
    assert should_run({"x"}, only={"tagged"}) and not should_run(set(), only={"tagged"})
    assert not should_run({"config"}, skip={"config"})
    assert not should_run({"always", "x"}, skip={"x"})
    assert not should_run({"x"}, skip={"all"}) and should_run({"always"}, skip={"all"})
    assert not should_run({"always"}, skip={"all", "always"})
