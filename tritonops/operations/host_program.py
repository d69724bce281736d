"""The argument list of the step actions program (tritonops/host_programs/file_steps.py: python3 -c,
stdlib only, nothing installed) that carries out file steps atomically on a host: put, mkdir, symlink,
remove, rename, lock, unlock. Its source is the -c argument; the action and its values are separate
arguments, quoted by shlex.join, never pasted into the source.
"""

from tritonops import host_programs

SOURCE = host_programs.source("file_steps")


def argv(action: str, *values: str, python: str = "python3") -> tuple[str, ...]:
    return host_programs.argv("file_steps", action, *values, python=python)
