"""The commands that read what a deploy made, side by side: status, logs, metrics.

Each loads its inputs once (the deploy playbook's role defaults under the inventory: ports, the
deployment's name), checks every host's values before any host is contacted, then reads each host
through its SSH session (`sessions.py`). None of them writes to a host."""
