"""The Ray every node of a pipeline-parallel cluster runs (issue #28): one pin, here and nowhere else.

Why this version:
- vLLM 0.25.0 (tritonops.sizing.default_version) declares no Ray dependency at all in its published
  metadata (`pip install vllm==0.25.0` installs no Ray): Ray is the user's to install for
  `distributed_executor_backend: "ray"`. The floor vLLM last wrote in its requirements for it is
  `ray[cgraph]>=2.48.0` ("Ray Compiled Graph, required for pipeline parallelism in V1").
- Token authentication (`RAY_AUTH_MODE=token`, the token read from `RAY_AUTH_TOKEN_PATH`) exists from
  Ray 2.52.0; without it anyone who reaches the GCS port can run code on every GPU host.
- 2.60.0 is the newest release satisfying both (checked against PyPI when pinned: wheels for CPython
  3.10-3.13 on manylinux x86_64 and aarch64).
The `cgraph` extra is what vLLM's pipeline parallel on V1 uses (cupy for NCCL channels between stages).
Every node of a cluster must run the same Ray and Python: the image carries both, and every member
runs the same image.
"""

RAY_VERSION = "2.60.0"
RAY_EXTRA = "cgraph"
RAY_REQUIREMENT = f"ray[{RAY_EXTRA}]=={RAY_VERSION}"
