"""The vLLM version sizing assumes when none is given: alone here so the CLI's help can name it
without loading the version rules (tritonops.sizing.versions re-exports it).

The vLLM that `nvcr.io/nvidia/tritonserver:26.06-vllm-python-py3` ships (0.22.1, NGC compatibility
matrix in reference/triton-vllm.md 2.1). Chosen over 26.07 (0.24.0) because every memory rule of 0.22
was read from its source (0.22.0), while 0.24 falls between two read versions (0.22.0 and 0.33.0).
Change it here and nowhere else.
"""

DEFAULT_VLLM_VERSION = "0.22.1"
