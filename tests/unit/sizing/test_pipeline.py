"""Pipeline parallel across hosts: vLLM's layer split, each stage's memory, the plan and `size --nodes`."""

import json
import subprocess
import sys

import pytest

from tritonops.errors import InputError
from tritonops.sizing import calibrated_terms as measured
from tritonops.sizing.chooser import size_engine
from tritonops.sizing.engine_plan import SizingRequest
from tritonops.sizing.gpu_spec import gpu_spec_from_catalog
from tritonops.sizing.memory_model import (EngineSettings, kv_bytes_per_token, stage_estimates, stage_share,
                                           weights_per_gpu)
from tritonops.sizing.model_catalog import find_catalog_model
from tritonops.sizing.pipeline import layer_split, pipeline_stages
from tritonops.sizing.versions import profile_for

LLAMA70 = find_catalog_model("meta-llama/Llama-3.1-70B-Instruct")   # untied embedding and LM head
QWEN7 = find_catalog_model("Qwen/Qwen2.5-7B-Instruct")
QWEN05 = find_catalog_model("Qwen/Qwen2.5-0.5B-Instruct")          # tied


def size(model, gpu, **kw):
    return size_engine(model, gpu_spec_from_catalog(gpu), SizingRequest(model_ref=model.name, **kw))


# vLLM's own goldens (tests/distributed/test_pipeline_partition.py, test_uneven_auto_partition)
@pytest.mark.parametrize("layers, pp, split", [
    (2, 2, (1, 1)), (3, 2, (2, 1)), (3, 3, (1, 1, 1)), (4, 3, (1, 2, 1)), (5, 3, (2, 2, 1)),
    (80, 3, (27, 27, 26)), (80, 1, (80,)),
])
def test_layers_split_as_vllm_splits_them(layers, pp, split):
    assert layer_split(layers, pp) == split
    stages = pipeline_stages(layers, pp)
    assert [s.first_layer for s in stages] == [sum(split[:i]) for i in range(pp)]
    assert [(s.first, s.last) for s in stages] == [(i == 0, i == pp - 1) for i in range(pp)]


def test_more_stages_than_layers_is_refused():
    with pytest.raises(ValueError, match="2 layers cannot be split over 3 stages"):
        layer_split(2, 3)


@pytest.mark.parametrize("pp", [2, 3, 4])
def test_the_stages_hold_the_model_once_and_a_tied_lm_head_twice(pp):
    for model, extra in ((LLAMA70, 0), (QWEN05, 1)):
        whole = measured.weight_tensors(model, 2, 1)
        parts = [t for stage in pipeline_stages(model.num_hidden_layers, pp)
                 for t in measured.weight_tensors(model, 2, 1, stage)]
        vocab_matrix = model.vocab_size * model.hidden_size * 2
        # the last stage loads its own LM head when the embedding it is tied to lives on the first
        assert sum(parts) == sum(whole) + extra * vocab_matrix
        total = 10**11
        assert sum(stage_share(model, total, s) for s in pipeline_stages(model.num_hidden_layers, pp)) \
            == pytest.approx(total + extra * vocab_matrix, abs=pp)


def test_each_stage_keeps_the_kv_of_its_own_layers():
    split = layer_split(LLAMA70.num_hidden_layers, 3)
    per_stage = [kv_bytes_per_token(LLAMA70, 8, 2, layers) for layers in split]
    assert sum(per_stage) == kv_bytes_per_token(LLAMA70, 8, 2)
    assert weights_per_gpu(QWEN7, "bfloat16", 1, pipeline_stages(28, 2)[0]) < weights_per_gpu(QWEN7, "bfloat16", 1)


def test_a_pipeline_plan_runs_on_ray_and_its_kv_figure_is_the_poorest_stages():
    one = size(QWEN7, "h200")
    two = size(QWEN7, "h200", pipeline_parallel_size=2)
    assert two.fits and (two.pipeline_parallel_size, two.layer_split, two.tensor_parallel_size) == (2, (14, 14), 1)
    assert two.model_json["pipeline_parallel_size"] == 2 and two.model_json["distributed_executor_backend"] == "ray"
    assert "pipeline_parallel_size" not in one.model_json and "distributed_executor_backend" not in one.model_json
    # half the layers per GPU: half the KV bytes per token, fewer weights, so more tokens than one H200
    assert two.kv_bytes_per_token * 2 == one.kv_bytes_per_token
    assert two.kv_cache_tokens > one.kv_cache_tokens
    reasons = {r.field: r for r in two.reasons}
    assert reasons["pipeline_parallel_size"].value == "2" and "layers 0-13" in reasons["pipeline_parallel_size"].why
    assert reasons["distributed_executor_backend"].value == "ray"
    assert "uncalibrated" in " ".join(two.notes)   # pipeline parallel was never measured: the allowance is kept


def test_the_kv_figure_is_the_stage_with_the_fewest_blocks():
    """The first stage holds the embedding, the last the LM head and the sampler's peak: they differ, and the
    plan states the smaller (vLLM gives every stage the smallest block count)."""
    gpu, profile = gpu_spec_from_catalog("h100"), profile_for("0.25.0", (9, 0))
    settings = EngineSettings(tensor_parallel_size=1, gpu_memory_utilization=0.9, dtype="bfloat16",
                              kv_cache_dtype="auto", max_model_len=8192, max_num_seqs=1024,
                              max_num_batched_tokens=2048, enforce_eager=True, pipeline_parallel_size=3)
    first, middle, last = stage_estimates(QWEN7, gpu, settings, profile)
    assert (first.stage, middle.stage, last.stage) == (0, 1, 2)
    assert middle.weights < first.weights and middle.weights < last.weights   # no vocabulary matrix in the middle
    assert last.activation > middle.activation                                # the sampler over 1024 requests
    plan = size(QWEN7, "h100", pipeline_parallel_size=3, max_num_seqs=1024, max_num_batched_tokens=2048,
                gpu_memory_utilization=0.9, enforce_eager=True, max_model_len=8192)
    poorest = min((first, middle, last), key=lambda m: m.num_blocks)
    assert (plan.kv_cache_tokens, plan.kv_stage) == (poorest.kv_cache_tokens, poorest.stage)
    assert plan.kv_cache_tokens < max(m.kv_cache_tokens for m in (first, middle, last))


def test_the_plan_says_what_vllm_would_refuse():
    tiny = size(QWEN05, "h200", pipeline_parallel_size=16)
    assert tiny.fits   # 24 layers over 16 hosts: vLLM splits them [2 x 8, 1 x 8]
    assert size(find_catalog_model("facebook/opt-125m"), "h200", pipeline_parallel_size=13).problems == \
        ("pipeline_parallel_size 13 is more than the model's 12 layers (every stage needs one)",)
    old = size(QWEN7, "a100-80gb", pipeline_parallel_size=2, vllm_version="0.4.0")
    assert any("cannot run a pipeline across hosts on Ray" in p for p in old.problems) and not old.fits
    with pytest.raises(InputError, match="--nodes"):
        size(QWEN7, "h200", pipeline_parallel_size=0)
    with pytest.raises(InputError, match="--nodes"):
        size(QWEN7, "h200", pipeline_parallel_size=17)


def test_size_nodes_prints_the_pipeline_plan():
    run = subprocess.run([sys.executable, "-m", "tritonops", "size", "--model", "meta-llama/Llama-3.1-70B-Instruct",
                          "--gpu", "t4:4", "--nodes", "3", "--json"], capture_output=True, text=True, timeout=120)
    plan = json.loads(run.stdout)
    assert (run.returncode, plan["pipeline_parallel_size"], plan["layer_split"]) == (0, 3, [27, 27, 26])
    assert plan["model_json"]["distributed_executor_backend"] == "ray" and plan["tensor_parallel_size"] == 4
    table = subprocess.run([sys.executable, "-m", "tritonops", "size", "--model", "meta-llama/Llama-3.1-70B-Instruct",
                            "--gpu", "t4:4", "--nodes", "3"], capture_output=True, text=True, timeout=120,
                           env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert "fits on 3 hosts of 4 x Tesla T4" in table.stdout and "TP 4 x PP 3" in table.stdout
    bad = subprocess.run([sys.executable, "-m", "tritonops", "size", "--model", "Qwen/Qwen2.5-7B-Instruct",
                          "--gpu", "h200", "--nodes", "two"], capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "--nodes" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
