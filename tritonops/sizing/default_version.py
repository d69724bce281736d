"""The vLLM version sizing assumes when none is given: alone here so the CLI's help can name it
without loading the version rules (tritonops.sizing.versions re-exports it).

0.25.0: the version the memory model was calibrated on (a real H200, torch 2.11.0+cu130, driver
580.159.04; tests/fixtures/real/). No NGC `-vllm-python-py3` image ships it (26.07, the newest in the
compatibility matrix, ships 0.24.0), so the default image is the plain `tritonserver:<yy.mm>-py3` base
with 0.25.0 pip-installed into it: which base, and why, is `tritonops.image.ngc.DEFAULT_BASE_RELEASE`.
Change it here and nowhere else (and the base there if the new version's CUDA differs).
"""

DEFAULT_VLLM_VERSION = "0.25.0"
