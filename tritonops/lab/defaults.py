"""The lab's defaults that the CLI shows in its help: constants only, so `tritonops --help` loads
nothing else of the lab."""

DEFAULT_PREFIX = "tritonops-lab"  # container, volume and network name prefix; the label value
PORT_BASE = 22200                 # first sshd port on 127.0.0.1
