"""Lab fixtures (`lab`, `lab_ssh`): see tritonops/lab/testing.py."""

from tritonops.lab.testing import lab, lab_ssh  # noqa: F401
