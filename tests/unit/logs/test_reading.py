"""Reading container logs back: the docker command, --since/--tail checks, parsing and follow. Pure."""

import pytest

from tritonops.errors import InputError
from tritonops.logs.reading import logs_argv, parse, since_value, tail_value

OUT = ('2026-12-01T11:15:26.225846637Z {"message": "Started HTTPService", "log.level": "info", '
       '"service.name": "triton", "@timestamp": "2026-12-01T11:15:26.225Z"}\n'
       "2026-12-01T11:15:26.3Z plain line\n"
       "not a docker line\n"
       "2026-12-01T11:15:27.000000001Z last\n")


def test_the_command_is_an_argument_list_naming_the_deployments_container():
    assert logs_argv("prod", tail=50, since="10m") == ("docker", "logs", "--timestamps", "--tail", "50",
                                                       "--since", "10m", "tritonops-prod")
    assert logs_argv("prod", tail=None, since=None) == ("docker", "logs", "--timestamps", "tritonops-prod")
    assert logs_argv("prod", tail=5, since=None, replica=3) == ("docker", "logs", "--timestamps", "--tail", "5",
                                                                "tritonops-prod-3")


@pytest.mark.parametrize("value", [-1, 1024])
def test_a_replica_out_of_range_is_one_line(value):
    from tritonops.logs.reading import replica_value

    with pytest.raises(InputError, match=f"^--replica must be from 0 to 1023, not {value}$"):
        replica_value(value)


def test_lines_keep_docker_time_and_read_back_our_format():
    lines = parse(OUT)
    assert [line.received for line in lines] == ["2026-12-01T11:15:26.225846637Z", "2026-12-01T11:15:26.3Z",
                                                 "2026-12-01T11:15:27.000000001Z"]
    assert lines[0].shown == "2026-12-01T11:15:26.225Z info  triton    Started HTTPService"
    assert lines[1].shown == "plain line"


def test_following_drops_what_was_seen_comparing_fractions_as_numbers():
    assert [line.text for line in parse(OUT, after="2026-12-01T11:15:26.25Z")] == ["plain line", "last"]
    assert [line.text for line in parse(OUT, after="2026-12-01T11:15:27Z")] == ["last"]
    assert parse(OUT, after="2026-12-01T11:15:27.000000001Z") == []


@pytest.mark.parametrize("value", ["10m", "2h", "90s", "2026-12-01", "2026-12-01T08:00:00Z",
                                   "2026-12-01T08:00:00.5+01:00", "1796112000", "1796112000.25"])
def test_since_takes_what_docker_takes(value):
    assert since_value(value) == value


@pytest.mark.parametrize("value", ["", "10 m", "-1h", "1; rm -rf /", "--follow", "yesterday", "10d"])
def test_since_refuses_anything_else_in_one_line(value):
    with pytest.raises(InputError, match="--since"):
        since_value(value)


def test_tail_is_bounded():
    assert tail_value(0) == 0
    with pytest.raises(InputError, match="--tail"):
        tail_value(-1)
