"""Hostile inputs at sizing's edges: every one is one typed error naming the field and the file
(or flag, or inventory file:line), never a traceback, never a plan that "fits" on nonsense.

Integral floats (4096.0 in config.json, "4.0" on a flag) are the same number and are accepted;
strings in config.json are not numbers ("4096" there is refused: vLLM would not convert it).
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from tests.support.facts import host_facts
from tests.support.paths import FIXTURES
from tritonops.cli.main import main
from tritonops.errors import InputError
from tritonops.facts.model import HostProbe, ProbeReport, report_to_json
from tritonops.sizing.chooser import size_engine
from tritonops.sizing.engine_plan import SizingRequest
from tritonops.sizing.fleet import host_request
from tritonops.sizing.gpu_spec import gpu_spec_from_catalog, gpu_spec_from_facts, gpu_spec_from_numbers
from tritonops.sizing.model_catalog import find_catalog_model
from tritonops.sizing.model_source import load_model_spec, safetensors_totals
from tritonops.sizing.model_spec import ConfigError, model_spec_from_config

MODELS = FIXTURES / "models"
TINY = json.loads((MODELS / "tiny-llama" / "config.json").read_text())
NAN, INF = float("nan"), float("inf")
QWEN7 = find_catalog_model("Qwen/Qwen2.5-7B-Instruct")


def model_dir(tmp_path: Path, config: dict | str, **files: bytes) -> Path:
    (tmp_path / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    for name, data in files.items():
        (tmp_path / name.replace("__", ".")).write_bytes(data)
    return tmp_path


def safetensors(header: dict, data: bytes = b"") -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


def one_line_error(capsys, argv: list[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code != 0 and err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


# --- config.json: (changes to a good config, what the message must name) ---------------------

CONFIG_CASES = [
    ({"hidden_size": NAN}, "hidden_size"),
    ({"hidden_size": INF}, "hidden_size"),
    ({"hidden_size": -INF}, "hidden_size"),
    ({"hidden_size": 0}, "hidden_size"),
    ({"hidden_size": -16}, "hidden_size"),
    ({"hidden_size": 16.5}, "hidden_size"),
    ({"hidden_size": "16"}, "hidden_size"),
    ({"hidden_size": True}, "hidden_size"),
    ({"hidden_size": [16]}, "hidden_size"),
    ({"hidden_size": {"v": 16}}, "hidden_size"),
    ({"hidden_size": 10**30}, "hidden_size"),
    ({"hidden_size": 2}, "head_dim would be 0"),
    ({"num_hidden_layers": 0}, "num_hidden_layers"),
    ({"num_hidden_layers": NAN}, "num_hidden_layers"),
    ({"num_hidden_layers": -2}, "num_hidden_layers"),
    ({"num_attention_heads": 0}, "num_attention_heads"),
    ({"num_attention_heads": INF}, "num_attention_heads"),
    ({"num_key_value_heads": -1}, "num_key_value_heads"),
    ({"num_key_value_heads": 0}, "num_key_value_heads"),
    ({"head_dim": 0}, "head_dim"),
    ({"vocab_size": 0}, "vocab_size"),
    ({"vocab_size": NAN}, "vocab_size"),
    ({"vocab_size": None}, "missing 'vocab_size'"),
    ({"intermediate_size": -32}, "intermediate_size"),
    ({"intermediate_size": NAN}, "intermediate_size"),
    ({"max_position_embeddings": NAN}, "max_position_embeddings"),
    ({"max_position_embeddings": INF}, "max_position_embeddings"),
    ({"max_position_embeddings": 0}, "max_position_embeddings"),
    ({"max_position_embeddings": -128}, "max_position_embeddings"),
    ({"max_position_embeddings": None}, "missing 'max_position_embeddings'"),
    ({"seq_length": -1}, "seq_length"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": NAN}}, "rope_scaling.factor"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": INF}}, "rope_scaling.factor"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": -4.0}}, "rope_scaling.factor"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 0}}, "rope_scaling.factor"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": "4"}}, "rope_scaling.factor"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 1e-9}}, "max_model_len (rope_scaling.factor"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": -5}},
     "rope_scaling.original_max_position_embeddings"),
    ({"quantization_config": {"quant_method": "awq", "bits": NAN}}, "quantization_config.bits"),
    ({"quantization_config": {"quant_method": "awq", "bits": 0}}, "quantization_config.bits"),
    ({"quantization_config": {"quant_method": "awq", "bits": -4}}, "quantization_config.bits"),
    ({"quantization_config": {"quant_method": "awq", "bits": 4.5}}, "quantization_config.bits"),
    ({"quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 0}},
     "quantization_config.group_size"),
    ({"quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": -128}},
     "quantization_config.group_size"),
    ({"quantization_config": {"quant_method": ["awq"]}}, "quantization_config.quant_method"),
    ({"num_experts": -8}, "num_experts"),
    ({"num_local_experts": NAN}, "num_local_experts"),
    ({"num_experts": 8, "num_experts_per_tok": 0}, "num_experts_per_tok"),
    ({"num_experts": 8, "moe_intermediate_size": -1}, "moe_intermediate_size"),
    ({"shared_expert_intermediate_size": -1}, "shared_expert_intermediate_size"),
    ({"kv_lora_rank": NAN}, "kv_lora_rank"),
    ({"kv_lora_rank": -512}, "kv_lora_rank"),
    ({"qk_rope_head_dim": -64}, "qk_rope_head_dim"),
    ({"sliding_window": -4096}, "sliding_window"),
    ({"sliding_window": NAN}, "sliding_window"),
    ({"layer_types": "full_attention"}, "layer_types"),
    ({"layer_types": [{"a": 1}]}, "layer_types"),
    ({"model_type": {"x": 1}}, "model_type"),
    ({"torch_dtype": 16}, "torch_dtype"),
    ({"text_config": {**TINY, "hidden_size": -1}}, "text_config.hidden_size"),
]


@pytest.mark.parametrize("changes, field", CONFIG_CASES, ids=[f"{k}" for k, _ in CONFIG_CASES])
def test_nonsense_in_config_json_is_one_error_naming_the_key_and_the_file(tmp_path, changes, field):
    config = {**TINY, **changes}
    config = {k: v for k, v in config.items() if v is not None}
    # json.dumps writes NaN/Infinity as Python's json reader accepts them, as some exporters do
    with pytest.raises(InputError) as err:
        load_model_spec(str(model_dir(tmp_path, config)))
    assert field in str(err.value) and str(tmp_path / "config.json") in str(err.value)


CONFIG_BYTES_CASES = [
    (b"[1, 2]", "not a JSON object"),
    (b"{not json", "malformed config.json"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (b'{"hidden_size": 1' + b"0" * 5000 + b"}", "malformed config.json"),
    (b'{"hidden_size": 1e999}', "hidden_size must be a finite number"),
    (b'{"model_type": "\xff"}', "malformed config.json"),
    (b"", "malformed config.json"),
]


@pytest.mark.parametrize("data, message", CONFIG_BYTES_CASES, ids=[m for _, m in CONFIG_BYTES_CASES])
def test_config_json_that_is_not_a_config_is_one_error(tmp_path, data, message):
    (tmp_path / "config.json").write_bytes(data)
    with pytest.raises(InputError, match=message) as err:
        load_model_spec(str(tmp_path))
    assert str(tmp_path / "config.json") in str(err.value)


def test_an_oversized_config_json_is_refused_with_the_cap(tmp_path):
    (tmp_path / "config.json").write_bytes(b" " * (16 * 2**20 + 1))
    with pytest.raises(InputError, match="larger than 16 MiB"):
        load_model_spec(str(tmp_path))


# --- safetensors headers and the index ----------------------------------------------------------

TENSOR = {"dtype": "BF16", "shape": [4, 4], "data_offsets": [0, 32]}
SAFETENSORS_CASES = [
    ({"w": {"dtype": "BF16", "shape": [4, 4]}}, "data_offsets"),
    ({"w": {**TENSOR, "data_offsets": [-32, 0]}}, "data_offsets must be at least 0"),
    ({"w": {**TENSOR, "data_offsets": [32, 0]}}, "before begin"),
    ({"w": {**TENSOR, "data_offsets": [0, NAN]}}, "data_offsets must be a finite number"),
    ({"w": {**TENSOR, "data_offsets": [0, 32, 64]}}, "data_offsets must be a list"),
    ({"w": {**TENSOR, "data_offsets": "0-32"}}, "data_offsets must be a list"),
    ({"w": {**TENSOR, "data_offsets": [0, 10**15]}}, "data_offsets must be at most 32"),
    ({"w": {**TENSOR, "data_offsets": [0, "32"]}}, "data_offsets must be a number"),
    ({"w": {**TENSOR, "shape": 16}}, "shape must be a list"),
    ({"w": {**TENSOR, "shape": {"a": 4}}}, "shape must be a list"),
    ({"w": {**TENSOR, "shape": [-4, -4]}}, "shape must be at least 0"),
    ({"w": {**TENSOR, "shape": [4, 4.5]}}, "shape must be a whole number"),
    ({"w": {**TENSOR, "shape": [2**40] * 8}}, "no checkpoint has"),
    ({"w": {**TENSOR, "shape": [4, 2], "data_offsets": [0, 16]}, "x": {**TENSOR, "shape": [4, 2],
                                                                       "data_offsets": [8, 24]}}, "an overlap"),
    ({"w": {**TENSOR, "shape": [4, 2], "data_offsets": [16, 32]}}, "begin at 16, not at 0"),
    ({"w": {**TENSOR, "shape": [4, 2], "data_offsets": [0, 16]}}, "end at 16, but the file holds 32 bytes"),
    ({"w": {**TENSOR, "shape": [4, 8]}}, "data_offsets span 32 bytes but shape x BF16 is 64"),
    ({"w": [0, 32]}, "is not an object"),
]


@pytest.mark.parametrize("header, message", SAFETENSORS_CASES, ids=[m for _, m in SAFETENSORS_CASES])
def test_nonsense_in_a_safetensors_header_is_one_error_naming_the_file(tmp_path, header, message):
    directory = model_dir(tmp_path, TINY, model__safetensors=safetensors(header, b"\0" * 32))
    with pytest.raises(InputError, match=message) as err:
        load_model_spec(str(directory))
    assert "model.safetensors" in str(err.value)


SAFETENSORS_BYTES = [
    (b"", "shorter than its 8-byte header length"),
    (struct.pack("<Q", 0), "header length 0"),
    (struct.pack("<Q", 2**64 - 1) + b"{}", "header length"),
    (struct.pack("<Q", 1000) + b"{}", "header length 1000 in a file of 10 bytes"),
    (struct.pack("<Q", 2) + b"[]", "not a JSON object"),
    (struct.pack("<Q", 2) + b"\xff\xfe", "malformed safetensors header"),
]


@pytest.mark.parametrize("data, message", SAFETENSORS_BYTES, ids=[m for _, m in SAFETENSORS_BYTES])
def test_a_file_that_is_not_safetensors_is_one_error(tmp_path, data, message):
    directory = model_dir(tmp_path, TINY, model__safetensors=data)
    with pytest.raises(InputError, match=message):
        load_model_spec(str(directory))


INDEX_CASES = [
    ({"metadata": {"total_size": -5}}, "metadata.total_size must be at least 1"),
    ({"metadata": {"total_size": 0}}, "metadata.total_size must be at least 1"),
    ({"metadata": {"total_size": NAN}}, "metadata.total_size must be a finite number"),
    ({"metadata": {"total_size": "11424"}}, "metadata.total_size must be a number"),
    ({"metadata": {"total_size": 1.5}}, "metadata.total_size must be a whole number"),
    ({"metadata": {"total_size": 2**60}}, "metadata.total_size must be at most"),
    ({"metadata": {}}, "no metadata.total_size"),
    ({"metadata": [1]}, "no metadata.total_size"),
    ([], "no metadata.total_size"),
]


@pytest.mark.parametrize("index, message", INDEX_CASES, ids=[m for _, m in INDEX_CASES])
def test_nonsense_in_the_safetensors_index_is_one_error(tmp_path, index, message):
    directory = model_dir(tmp_path, TINY, model__safetensors__index__json=json.dumps(index).encode())
    with pytest.raises(InputError, match=message) as err:
        load_model_spec(str(directory))
    assert "model.safetensors.index.json" in str(err.value)


# --- files that are not files -------------------------------------------------------------------

@pytest.mark.parametrize("name", ["config.json", "model.safetensors", "model.safetensors.index.json"])
def test_a_fifo_in_the_model_directory_is_refused_not_waited_on(tmp_path, name):
    (tmp_path / "config.json").write_text(json.dumps(TINY))
    if name == "config.json":
        (tmp_path / name).unlink()
    os.mkfifo(tmp_path / name)
    with pytest.raises(InputError, match="not a regular file") as err:
        load_model_spec(str(tmp_path))
    assert str(tmp_path / name) in str(err.value)


def test_a_directory_named_config_json_is_refused(tmp_path):
    (tmp_path / "config.json").mkdir()
    with pytest.raises(InputError, match="not a regular file"):
        load_model_spec(str(tmp_path))


def test_a_symlink_to_a_device_is_refused(tmp_path):
    (tmp_path / "config.json").symlink_to("/dev/zero")
    with pytest.raises(InputError, match="not a regular file"):
        load_model_spec(str(tmp_path))


# --- GPUs ----------------------------------------------------------------------------------------

GPU_CASES = [
    (lambda: gpu_spec_from_catalog("h200:99999999999999999999"), "at most 64"),
    (lambda: gpu_spec_from_catalog("h200:65"), "at most 64"),
    (lambda: gpu_spec_from_catalog("h200:0"), "GPU count must be at least 1"),
    (lambda: gpu_spec_from_catalog("h200:-1"), "GPU count must be at least 1"),
    (lambda: gpu_spec_from_catalog("h200:two"), "GPU count must be a number"),
    (lambda: gpu_spec_from_catalog("h200:1.5"), "GPU count must be a whole number"),
    (lambda: gpu_spec_from_catalog("h200:nan"), "GPU count must be a finite number"),
    (lambda: gpu_spec_from_numbers("nan", "9.0"), "--gpu-memory-gib"),
    (lambda: gpu_spec_from_numbers(NAN, "9.0"), "--gpu-memory-gib"),
    (lambda: gpu_spec_from_numbers(INF, "9.0"), "--gpu-memory-gib"),
    (lambda: gpu_spec_from_numbers(-80, "9.0"), "--gpu-memory-gib"),
    (lambda: gpu_spec_from_numbers(0, "9.0"), "--gpu-memory-gib"),
    (lambda: gpu_spec_from_numbers(1e12, "9.0"), "at most 4096"),
    (lambda: gpu_spec_from_numbers(80, "9.0", 0), "--gpus"),
    (lambda: gpu_spec_from_numbers(80, "9.0", 10**20), "at most 64"),
    (lambda: gpu_spec_from_numbers(80, "9.0", "2.5"), "--gpus"),
    (lambda: gpu_spec_from_facts(host_facts(65)), "at most 64"),
    (lambda: gpu_spec_from_facts(host_facts(1, cuda=0)), "cuda_total_bytes"),
    (lambda: gpu_spec_from_facts(host_facts(1, cuda=-1)), "cuda_total_bytes"),
]


@pytest.mark.parametrize("call, message", GPU_CASES, ids=[m for _, m in GPU_CASES])
def test_nonsense_gpus_are_one_error_with_the_bound(call, message):
    with pytest.raises(InputError, match=message):
        call()


# --- the request: flags and inventory variables ------------------------------------------------

REQUEST_CASES = [
    ({"tensor_parallel_size": 0}, "--tensor-parallel-size: tensor_parallel_size must be at least 1"),
    ({"tensor_parallel_size": -2}, "--tensor-parallel-size"),
    ({"tensor_parallel_size": 10**9}, "tensor_parallel_size must be at most 64"),
    ({"max_num_seqs": -1}, "--max-num-seqs: max_num_seqs must be at least 1"),
    ({"max_num_seqs": 0}, "--max-num-seqs"),
    ({"max_num_seqs": 2.5}, "max_num_seqs must be a whole number"),
    ({"gpu_memory_utilization": -0.5}, "--gpu-memory-utilization: gpu_memory_utilization must be more than 0"),
    ({"gpu_memory_utilization": 0}, "gpu_memory_utilization must be more than 0"),
    ({"gpu_memory_utilization": 1.5}, "gpu_memory_utilization must be at most 1"),
    ({"gpu_memory_utilization": NAN}, "gpu_memory_utilization must be a finite number"),
    ({"max_model_len": 0}, "--max-model-len"),
    ({"max_model_len": NAN}, "--max-model-len"),
    ({"max_context": -1}, "--max-context"),
    ({"max_num_batched_tokens": 0}, "--max-num-batched-tokens"),
    ({"concurrency": 0}, "--concurrency"),
    ({"host_ram_bytes": -1}, "system.ram_total_bytes"),
]


@pytest.mark.parametrize("fields, message", REQUEST_CASES, ids=[m for _, m in REQUEST_CASES])
def test_size_engine_refuses_nonsense_request_numbers(fields, message):
    with pytest.raises(InputError, match=message.replace("(", "\\(")):
        size_engine(QWEN7, gpu_spec_from_catalog("h200:8"), SizingRequest(**fields))


INVENTORY_CASES = [
    ("tritonops_gpu_memory_utilization", -0.5, "must be more than 0"),
    ("tritonops_gpu_memory_utilization", 1.5, "must be at most 1"),
    ("tritonops_gpu_memory_utilization", "nan", "must be a finite number"),
    ("tritonops_gpu_memory_utilization", "", "must be a number"),
    ("tritonops_max_model_len", -4096, "must be at least 1"),
    ("tritonops_max_model_len", 4096.5, "must be a whole number"),
    ("tritonops_max_model_len", True, "must be a number"),
    ("tritonops_tensor_parallel_size", 0, "must be at least 1"),
    ("tritonops_tensor_parallel_size", 1.5, "must be a whole number"),
    ("tritonops_tensor_parallel_size", 100000, "must be at most 64"),
    ("tritonops_max_num_seqs", -1, "must be at least 1"),
    ("tritonops_max_num_seqs", [256], "must be a number"),
    ("tritonops_vllm_version", 0.10, "must be a string"),
]


@pytest.mark.parametrize("var, value, message", INVENTORY_CASES,
                         ids=[f"{v}={x!r}" for v, x, _ in INVENTORY_CASES])
def test_a_nonsense_host_variable_names_the_variable_and_its_line(var, value, message):
    with pytest.raises(InputError) as err:
        host_request(SizingRequest(), {var: value}, {var: "hosts.yml:7"})
    assert str(err.value).startswith(f"hosts.yml:7: {var} ") and message in str(err.value)


# --- the CLI: one line on stderr, non-zero, no traceback ---------------------------------------

CLI_CASES = [
    ["--gpu", "h200:99999999999999999999"],
    ["--gpu", "h200:0"],
    ["--gpu", "h200", "--tensor-parallel-size", "0"],
    ["--gpu", "h200", "--max-num-seqs", "-1"],
    ["--gpu", "h200", "--gpu-memory-utilization", "-0.5"],
    ["--gpu", "h200", "--gpu-memory-utilization", "0.5.5"],
    ["--gpu", "h200", "--gpu-memory-utilization", "nan"],
    ["--gpu", "h200", "--gpu-memory-utilization", "1.01"],
    ["--gpu", "h200", "--max-model-len", "1e400"],
    ["--gpu", "h200", "--concurrency", "0"],
    ["--gpu-memory-gib", "nan", "--compute-capability", "9.0"],
    ["--gpu-memory-gib", "inf", "--compute-capability", "9.0"],
    ["--gpu-memory-gib", "80", "--compute-capability", "9.0", "--gpus", "0"],
    ["--gpu-memory-gib", "80", "--compute-capability", "9.0", "--gpus", "99999999999"],
]


@pytest.mark.parametrize("argv", CLI_CASES, ids=[" ".join(a) for a in CLI_CASES])
def test_size_with_a_nonsense_flag_is_one_line_on_stderr(capsys, argv):
    err = one_line_error(capsys, ["size", "--model", "Qwen/Qwen2.5-7B-Instruct", *argv])
    assert "--" in err


def test_size_gpu_count_refusal_says_the_cap(capsys):
    err = one_line_error(capsys, ["size", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "h200:99999999999999999999"])
    assert err == "error: --gpu: GPU count must be at most 64, not '99999999999999999999'\n"


def test_size_with_a_nonsense_config_is_one_line_naming_key_and_file(tmp_path, capsys):
    directory = model_dir(tmp_path, {**TINY, "hidden_size": NAN})
    err = one_line_error(capsys, ["size", "--model", str(directory), "--gpu", "h200"])
    assert err == f"error: {directory / 'config.json'}: hidden_size must be a finite number, not nan\n"


def test_size_with_a_fifo_config_is_one_line(tmp_path, capsys):
    os.mkfifo(tmp_path / "config.json")
    err = one_line_error(capsys, ["size", "--model", str(tmp_path), "--gpu", "h200"])
    assert "config.json is not a regular file" in err


@pytest.mark.parametrize("name", ["../../etc", "/etc", "-rf", ".hidden", "a/b", "a b", 'a"b', "", "x" * 65])
def test_plan_refuses_a_model_name_that_is_not_a_safe_name(tmp_path, capsys, name):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n    h1:\n      ansible_host: 127.0.0.1\n")
    err = one_line_error(capsys, ["plan", "-i", str(inventory), "--model", "Qwen/Qwen2.5-7B-Instruct",
                                  f"--model-name={name}", "--facts", str(tmp_path / "never-read.json")])
    assert "--model-name: model name" in err


def test_plan_refuses_a_fifo_as_the_facts_file(tmp_path, capsys):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n    h1:\n      ansible_host: 127.0.0.1\n")
    os.mkfifo(tmp_path / "facts.json")
    err = one_line_error(capsys, ["plan", "-i", str(inventory), "--model", "Qwen/Qwen2.5-7B-Instruct",
                                  "--facts", str(tmp_path / "facts.json")])
    assert "probe report is not a regular file" in err


def test_plan_with_a_nonsense_host_variable_writes_no_files_for_that_host(tmp_path, capsys):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n    good:\n      ansible_host: 127.0.0.1\n"
                         "    bad:\n      ansible_host: 127.0.0.2\n      tritonops_max_num_seqs: -1\n")
    facts = tmp_path / "facts.json"
    report = ProbeReport(hosts=(HostProbe(host="good", status="ok", facts=host_facts(1)),
                                HostProbe(host="bad", status="ok", facts=host_facts(1))))
    facts.write_text(json.dumps(report_to_json(report)))
    # the command refuses it as bad input, before planning anything (planning.host_values)
    code = main(["plan", "-i", str(inventory), "--model", "Qwen/Qwen2.5-7B-Instruct", "--facts", str(facts), "--json"])
    captured = capsys.readouterr()
    assert code == 5 and captured.out == ""
    assert captured.err == f"error: {inventory}:7: tritonops_max_num_seqs must be at least 1, not -1 (host bad)\n"
    # planned without that check (the planner's own callers), the host still gets no files and the others go on
    from tritonops.inventory import load_inventory
    from tritonops.planning import load_models, plan_hosts

    hosts = load_inventory([str(inventory)]).hosts
    models, errors = load_models(["Qwen/Qwen2.5-7B-Instruct"])
    plans = {plan.host: plan for plan in plan_hosts(hosts, {h.host: h.facts for h in report.hosts},
                                                     SizingRequest(model_ref=""), models, errors,
                                                     default_model="Qwen/Qwen2.5-7B-Instruct")}
    assert not plans["bad"].ok and plans["bad"].files == {} and plans["bad"].models == ()
    assert plans["bad"].error == f"{inventory}:7: tritonops_max_num_seqs must be at least 1, not -1"
    assert plans["good"].ok and set(plans["good"].files) == {"vllm_model/config.pbtxt", "vllm_model/1/model.json"}


# --- sane values still work ----------------------------------------------------------------------

def test_integral_floats_in_config_json_are_the_same_sizes():
    as_floats = {k: float(v) if isinstance(v, int) and not isinstance(v, bool) else v for k, v in TINY.items()}
    assert model_spec_from_config(as_floats, "t") == model_spec_from_config(TINY, "t")


def test_gptq_group_size_minus_one_means_no_groups():
    config = {**TINY, "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": -1}}
    quant = model_spec_from_config(config, "t").quantization
    assert (quant.method, quant.bits, quant.group_size) == ("gptq", 4, None)


def test_rope_scaling_with_a_sane_factor_scales_the_length():
    config = {**TINY, "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32}}
    assert model_spec_from_config(config, "t").max_model_len == 128


def test_flags_as_text_are_numbers(capsys):
    code = main(["size", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "h200:8", "--tensor-parallel-size", "2.0",
                 "--gpu-memory-utilization", "0.85", "--max-num-seqs", " 64 ", "--json"])
    plan = json.loads(capsys.readouterr().out)
    assert code == 0
    assert (plan["tensor_parallel_size"], plan["gpu_memory_utilization"], plan["max_num_seqs"]) == (2, 0.85, 64)


def test_64_gpus_and_utilization_one_are_accepted():
    assert gpu_spec_from_catalog("h200:64").count == 64
    plan = size_engine(QWEN7, gpu_spec_from_catalog("h200"), SizingRequest(gpu_memory_utilization=1))
    assert plan.gpu_memory_utilization == 1.0


def test_the_fixture_models_still_load():
    assert load_model_spec(str(MODELS / "tiny-llama")).weight_bytes > 0
    assert load_model_spec(str(MODELS / "tiny-llama-sharded")).weight_bytes == 11424


def test_a_config_error_is_an_input_error():
    assert issubclass(ConfigError, InputError)


def test_safetensors_totals_of_a_sane_header():
    header = {"__metadata__": {"format": "pt"}, "a": TENSOR, "b": {"dtype": "F32", "shape": [], "data_offsets": [32, 36]}}
    assert safetensors_totals(header, "x", data_bytes=36) == (36, 17)
    assert safetensors_totals(header) == (36, 17)
