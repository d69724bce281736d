"""model.json and config.pbtxt text, by equality."""

import json

import pytest

from tests.support.model_config import INTERFACE
from tritonops.errors import InputError

from tritonops.render import render_config_pbtxt, render_model_json
from tritonops.sizing.chooser import size_engine
from tritonops.sizing.engine_plan import SizingRequest
from tritonops.sizing.gpu_spec import gpu_spec_from_catalog
from tritonops.sizing.model_catalog import find_catalog_model

QWEN7 = find_catalog_model("Qwen/Qwen2.5-7B-Instruct")


def test_model_json_text():
    plan = size_engine(QWEN7, gpu_spec_from_catalog("a100-80gb:4"), SizingRequest(model_ref=QWEN7.name))
    assert render_model_json(plan, model="/models/qwen2.5-7b") == """{
  "model": "/models/qwen2.5-7b",
  "tensor_parallel_size": 1,
  "gpu_memory_utilization": 0.92,
  "max_model_len": 32768,
  "dtype": "bfloat16",
  "enforce_eager": false,
  "max_num_seqs": 256,
  "max_num_batched_tokens": 2048
}
"""


def test_model_json_keeps_json_types():
    plan = size_engine(QWEN7, gpu_spec_from_catalog("h200"), SizingRequest(model_ref="q"))
    data = json.loads(render_model_json(plan))
    assert data["enforce_eager"] is False and isinstance(data["max_model_len"], int)


def test_model_json_refuses_a_key_the_version_removed():
    plan = size_engine(QWEN7, gpu_spec_from_catalog("h200"), SizingRequest(model_ref="q"))
    from dataclasses import replace
    bad = replace(plan, model_json={**plan.model_json, "swap_space": 4})
    with pytest.raises(ValueError, match="swap_space"):
        render_model_json(bad)


def test_config_pbtxt_with_metrics():
    assert render_config_pbtxt("vllm_model") == """name: "vllm_model"
backend: "vllm"
max_batch_size: 0
""" + INTERFACE + """model_transaction_policy {
  decoupled: true
}
instance_group [
  {
    count: 1
    kind: KIND_MODEL
  }
]
parameters: {
  key: "REPORT_CUSTOM_METRICS"
  value: { string_value: "true" }
}
"""


def test_config_pbtxt_without_metrics_has_no_parameters():
    text = render_config_pbtxt(metrics=False)
    assert "parameters:" not in text and text.startswith('backend: "vllm"\n')


def test_config_pbtxt_refuses_a_quote_in_the_name():
    with pytest.raises(InputError, match="model name"):
        render_config_pbtxt('a"b')


def test_config_pbtxt_refuses_a_name_that_climbs_out_of_the_repository():
    with pytest.raises(InputError, match="model name '../../etc'"):
        render_config_pbtxt("../../etc")
