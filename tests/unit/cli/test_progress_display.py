"""The live progress display `image build` draws on stderr: one row per host and step, bytes, total and rate,
fed by the Progress events the image layer emits."""

import io
import time

from rich.console import Console

from tritonops.cli.output import Output
from tritonops.cli.progress_display import TransferDisplay, live_progress
from tritonops.image.engine import ByteCounter, counted
from tritonops.results import Progress

MIB = 1 << 20


def test_each_host_gets_a_row_with_its_bytes_total_and_rate():
    screen = io.StringIO()
    display = TransferDisplay(Console(file=screen, force_terminal=True, width=150))
    display(Progress("builder", "build", note="tritonserver:vllm_env-abc"))
    display(Progress("t1", "receive", 0, 8 * MIB, "from builder"))
    display(Progress("t1", "receive", 1 * MIB, 8 * MIB))
    time.sleep(0.3)  # rich measures the rate between the samples' times
    display(Progress("t1", "receive", 3 * MIB, 8 * MIB))
    display(Progress("builder", "build", note="tritonserver:vllm_env-abc", finished=True))
    rows = display.rows()
    assert rows[("t1", "receive")] == ("receiving image from builder", 3 * MIB, 8 * MIB)
    assert rows[("builder", "build")][0] == "building tritonserver:vllm_env-abc"
    display.bars.console.print(display.bars.get_renderable())
    text = screen.getvalue()
    assert "t1" in text and "3.1/8.4 MB" in text and "MB/s" in text and "builder" in text


def test_a_byte_counter_tells_its_listener_each_targets_running_total():
    heard = []
    counter = ByteCounter(lambda target, so_far: heard.append((target, so_far)))
    import threading

    list(counted([b"x" * 10, b"y" * 5], "t1", counter, threading.Event()))
    list(counted([b"z" * 7], "t2", counter, threading.Event()))
    assert heard == [("t1", 10), ("t1", 15), ("t2", 7)]


def test_no_live_display_for_json_or_a_stderr_that_is_not_a_terminal():
    with live_progress(Output(json_mode=True)) as display:
        assert display is None
    with live_progress(Output(err_file=io.StringIO())) as display:
        assert display is None


def test_the_deploy_progress_draws_weights_bytes_only_on_a_terminal():
    from tritonops.cli.cmd_deploy import _Progress

    err = io.StringIO()
    progress = _Progress(Output(err_file=err))
    progress(Progress("gpu-1", "weights", 5 * MIB, 10 * MIB, "pushing tiny@abc"))
    progress.close()
    assert progress.display is None and err.getvalue() == ""  # a log file gets the task lines only
