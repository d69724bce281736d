"""The probe's defaults, in a module light enough for the CLI's parser (no pydantic, no SSH)."""

DEFAULT_ROOT = "/opt/tritonops"  # the deployment root whose disk the probe measures
PROBE_TIMEOUT_S = 60.0
