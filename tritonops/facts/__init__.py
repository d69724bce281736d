"""Facts: what tritonops reads from a host. A fact is a program run on the host
plus a pure parser of its output: the probe (probe*.py: GPUs, memory, disk, docker, toolkit) and the
queries an operation asks about files, folders and commands (queries.py, answered by query_program.py)."""
