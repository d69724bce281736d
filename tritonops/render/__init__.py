"""Rendering: the files a Triton vLLM model directory holds, as deterministic text."""

from tritonops.render.config_pbtxt import render_config_pbtxt
from tritonops.render.model_json import render_model_json
from tritonops.render.model_repository import RepositoryModel, model_json_text, render_model_repository

__all__ = ["RepositoryModel", "model_json_text", "render_config_pbtxt", "render_model_json",
           "render_model_repository"]
