"""Model specs: config.json parsing, safetensors headers, the catalog, bad inputs."""

import json

import pytest

from tests.support.paths import FIXTURES
from tritonops.errors import InputError
from tritonops.sizing.model_catalog import MODEL_CATALOG, catalog_ids, find_catalog_model
from tritonops.sizing.model_source import load_model_dir, load_model_spec
from tritonops.sizing.model_spec import model_spec_from_config

MODELS = FIXTURES / "models"


def test_qwen25_7b_config_gives_its_architecture():
    spec = load_model_spec(str(MODELS / "Qwen2.5-7B-Instruct"))
    assert (spec.hidden_size, spec.num_hidden_layers, spec.num_attention_heads, spec.num_key_value_heads,
            spec.head_dim, spec.intermediate_size, spec.vocab_size, spec.max_model_len, spec.torch_dtype) == \
        (3584, 28, 28, 4, 128, 18944, 152064, 32768, "bfloat16")
    assert spec.sliding_window is None  # use_sliding_window: false
    assert not spec.rough


def test_safetensors_headers_give_exact_bytes_and_parameters():
    spec = load_model_dir(MODELS / "tiny-llama")
    assert spec.weight_bytes == 11424
    assert spec.param_count == 5712
    assert spec.estimated_param_count() == 5712   # the architecture formula agrees


def test_safetensors_index_gives_total_size():
    spec = load_model_dir(MODELS / "tiny-llama-sharded")
    assert spec.weight_bytes == 11424 and spec.param_count == 0


def test_missing_config_names_the_file(tmp_path):
    with pytest.raises(InputError) as err:
        load_model_spec(str(tmp_path))
    assert str(tmp_path / "config.json") in str(err.value)


def test_malformed_config_names_the_file(tmp_path):
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(InputError, match="malformed config.json") as err:
        load_model_spec(str(tmp_path))
    assert str(tmp_path / "config.json") in str(err.value)


def test_config_without_heads_names_the_key(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 64, "num_hidden_layers": 2,
                                                      "vocab_size": 10, "max_position_embeddings": 8}))
    with pytest.raises(InputError, match="missing 'num_attention_heads'"):
        load_model_spec(str(tmp_path))


def test_bad_safetensors_header_names_the_file(tmp_path):
    (tmp_path / "config.json").write_text((MODELS / "tiny-llama" / "config.json").read_text())
    (tmp_path / "model.safetensors").write_bytes(b"\xff" * 4)
    with pytest.raises(InputError) as err:
        load_model_spec(str(tmp_path))
    assert "model.safetensors" in str(err.value)


def test_hub_id_resolves_offline_through_the_catalog():
    spec = load_model_spec("Qwen/Qwen2.5-7B-Instruct")
    assert spec.source == "built-in catalog" and spec.param_count == 7_615_616_512


def test_unknown_hub_id_offline_is_one_clear_error():
    with pytest.raises(InputError, match="--model"):
        load_model_spec("nobody/no-such-model-xyz")


def test_catalog_has_at_least_20_models_across_families():
    ids = catalog_ids()
    assert len(ids) >= 20
    for family in ("Qwen1.5", "Qwen2-", "Qwen2.5", "Qwen3", "Llama-2", "Llama-3", "Mistral"):
        assert any(family in i for i in ids), family


@pytest.mark.parametrize("model_id", sorted(MODEL_CATALOG))
def test_catalog_parameter_counts_agree_with_the_architecture(model_id):
    spec = find_catalog_model(model_id)
    estimate = spec.estimated_param_count()
    if spec.tie_word_embeddings and spec.param_count > estimate * 1.1:
        estimate += spec.vocab_size * spec.hidden_size   # the checkpoint also stores the tied lm_head
    assert abs(estimate - spec.param_count) / spec.param_count < 0.03


def test_llama31_keeps_its_131072_limit_and_gqa():
    spec = find_catalog_model("meta-llama/Llama-3.1-8B-Instruct")
    assert (spec.max_model_len, spec.num_key_value_heads, spec.head_dim) == (131072, 8, 128)


def test_yarn_rope_scaling_extends_the_limit():
    config = {"model_type": "qwen2", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
              "vocab_size": 10, "max_position_embeddings": 32768,
              "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}
    assert model_spec_from_config(config, "m").max_model_len == 131072


def test_hybrid_and_sliding_models_are_marked_rough():
    assert find_catalog_model("google/gemma-2-9b-it").rough
    assert find_catalog_model("mistralai/Mistral-7B-Instruct-v0.1").sliding_window == 4096


def test_mqa_and_quantization_are_read():
    config = {"model_type": "falcon", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
              "multi_query": True, "vocab_size": 10, "max_position_embeddings": 2048,
              "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}}
    spec = model_spec_from_config(config, "m")
    assert spec.num_key_value_heads == 1
    assert (spec.quantization.method, spec.quantization.bits, spec.quantization.group_size) == ("awq", 4, 128)
