"""Rendering: the files a Triton vLLM model directory holds, as deterministic text."""

from tritonops.render.config_pbtxt import render_config_pbtxt
from tritonops.render.model_json import render_model_json

__all__ = ["render_config_pbtxt", "render_model_json"]
