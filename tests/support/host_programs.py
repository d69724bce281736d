"""A host program run here as a host runs it."""

import os
import subprocess
import sys

from tritonops import host_programs


def run_program(name: str, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    """The program as a host runs it: its packed source as the -c argument, nothing of tritonops on the path."""
    return subprocess.run((sys.executable, *host_programs.argv(name, *args)[1:]), input=stdin, capture_output=True,
                          text=True, timeout=60, cwd="/", env={"PATH": os.environ.get("PATH", "")})
