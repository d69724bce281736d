"""`<model>/config.pbtxt` for `backend: "vllm"` (reference/triton-vllm.md 1.3, 1.6).

KIND_MODEL lets vLLM place itself on the GPUs (required for TP > 1); the decoupled
policy is what the backend asserts at initialize; max_batch_size 0 leaves batching to
vLLM. Both are written rather than left to auto-complete, so the file also works with
`--disable-auto-complete-config`. `REPORT_CUSTOM_METRICS` exports `vllm:*` metrics on
Triton's metrics port (model.json must not set disable_log_stats true).
"""

from __future__ import annotations

from tritonops.values.names import safe_name


def _parameter(key: str, value: str) -> str:
    return ("parameters: {\n"
            f"  key: \"{key}\"\n"
            f"  value: {{ string_value: \"{value}\" }}\n"
            "}\n")


def render_config_pbtxt(model_name: str | None = None, metrics: bool = True,
                        health_check: bool = False, versions: tuple[int, ...] | None = None) -> str:
    """`versions`: load exactly these (a `specific` version policy); None: Triton's default, the
    latest version only."""
    lines = []
    if model_name is not None:
        # the name is the model's directory on the host too: the safe alphabet, nothing to escape
        lines.append(f"name: \"{safe_name(model_name, 'model name')}\"\n")
    lines.append("backend: \"vllm\"\n")
    lines.append("max_batch_size: 0\n")
    if versions:
        listed = ", ".join(str(int(v)) for v in versions)
        lines.append(f"version_policy: {{ specific: {{ versions: [ {listed} ] }} }}\n")
    lines.append("model_transaction_policy {\n  decoupled: true\n}\n")
    lines.append("instance_group [\n  {\n    count: 1\n    kind: KIND_MODEL\n  }\n]\n")
    if metrics:
        lines.append(_parameter("REPORT_CUSTOM_METRICS", "true"))
    if health_check:
        lines.append(_parameter("ENABLE_VLLM_HEALTH_CHECK", "true"))
    return "".join(lines)
