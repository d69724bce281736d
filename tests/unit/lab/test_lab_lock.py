"""One run of the lab tests at a time per test lab (issue #46 item 5): a second run with the same name prefix would
reuse and tear down the first one's containers, so it stops at once, naming the holder and what to do instead."""

import os
import subprocess
import sys

import pytest

from tritonops.lab.testing import LabBusy, held_lab_lock, lab_lock_path


def test_a_second_run_is_told_who_holds_the_lab_and_the_lock_is_free_again_after(tmp_path):
    path = tmp_path / "labtest.lock"
    with held_lab_lock(path):
        with pytest.raises(LabBusy) as busy:
            with held_lab_lock(path):
                pass
        assert f"(pid {os.getpid()}) holds {path}" in str(busy.value)
        assert "TRITONOPS_LAB_TEST_PREFIX" in str(busy.value)
        other = subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; "
                                "from tritonops.lab.testing import held_lab_lock\n"
                                "with held_lab_lock(Path(sys.argv[1])): pass", str(path)],
                               capture_output=True, text=True, timeout=60)
        assert other.returncode != 0 and "LabBusy" in other.stderr
    with held_lab_lock(path):  # released when the holder is done
        pass


def test_each_test_lab_prefix_has_its_own_lock():
    assert lab_lock_path("tritonops-labtest") != lab_lock_path("helper-lab")
