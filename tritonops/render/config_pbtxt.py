"""`<model>/config.pbtxt` for `backend: "vllm"` (reference/triton-vllm.md 1.3, 1.6).

KIND_MODEL lets vLLM place itself on the GPUs (required for TP > 1); the decoupled
policy is what the backend asserts at initialize; max_batch_size 0 leaves batching to
vLLM. Both are written rather than left to auto-complete, so the file also works with
`--disable-auto-complete-config`. `REPORT_CUSTOM_METRICS` exports `vllm:*` metrics on
Triton's metrics port (model.json must not set disable_log_stats true).

The inputs and outputs are the backend's (image/assets/vllm_backend_model.py.txt declares the same at
auto-complete), NVIDIA's vLLM backend's names and types: Triton refuses a request with an input the model does
not declare, and Triton's OpenAI frontend sends `return_num_input_tokens` / `return_num_output_tokens` from
Triton 2.60 and `return_logprobs` from 2.64 (docs/openai.md).
"""

from __future__ import annotations

from tritonops.values.names import safe_name


# (name, data type, dims, optional)
INPUTS = (
    ("text_input", "TYPE_STRING", (1,), False),
    ("stream", "TYPE_BOOL", (1,), True),
    ("sampling_parameters", "TYPE_STRING", (1,), True),
    ("exclude_input_in_output", "TYPE_BOOL", (1,), True),
    ("return_num_input_tokens", "TYPE_BOOL", (1,), True),
    ("return_num_output_tokens", "TYPE_BOOL", (1,), True),
    ("return_logprobs", "TYPE_BOOL", (1,), True),
)
# (name, data type, dims): per sequence, but the prompt's token count (one per request)
OUTPUTS = (
    ("text_output", "TYPE_STRING", (-1,)),
    ("num_input_tokens", "TYPE_UINT32", (1,)),
    ("num_output_tokens", "TYPE_UINT32", (-1,)),
    ("logprobs", "TYPE_STRING", (-1,)),
)


def _tensors(kind: str, specs) -> str:
    entries = []
    for name, data_type, dims, *optional in specs:
        listed = ", ".join(str(d) for d in dims)
        entry = f"  {{\n    name: \"{name}\"\n    data_type: {data_type}\n    dims: [ {listed} ]\n"
        if optional and optional[0]:
            entry += "    optional: true\n"
        entries.append(entry + "  }")
    return f"{kind} [\n" + ",\n".join(entries) + "\n]\n"


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
    lines.append(_tensors("input", INPUTS))
    lines.append(_tensors("output", OUTPUTS))
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
