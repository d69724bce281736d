"""The lab's stand-in vllm engine on its own (no Triton): its KV arithmetic from the simulated card's
profile, the engine arguments it accepts and refuses, and vLLM's start-up lines and messages.
It is a fixture, but the health gate compares its KV figure with tritonops' plan, so its numbers
are pinned here by hand-computed cases."""

from __future__ import annotations

import asyncio
import io
import json
import sys
import zipfile

import pytest

from tritonops.lab.hub.model import tiny_model
from tritonops.lab.profile_file import GpuFaults, SimulatedProcess, render_profile
from tritonops.lab.profiles import PROFILES
from tritonops.lab.wheelhouse import wheel_bytes

GIB, MIB = 1 << 30, 1 << 20


def _purge():
    for name in [n for n in sys.modules if n == "vllm" or n.startswith("vllm.")]:
        del sys.modules[name]


@pytest.fixture
def vllm(tmp_path, monkeypatch):
    """use(profile=..., faults=..., version=...) -> the freshly imported stand-in vllm package."""
    def use(profile="2080ti", faults=GpuFaults(), version="0.10.2"):
        site = tmp_path / f"site-{version}"
        if not site.exists():
            zipfile.ZipFile(io.BytesIO(wheel_bytes(version))).extractall(site)
        path = tmp_path / "profile"
        if profile is None:
            monkeypatch.setenv("TRITONOPS_LAB_GPU_PROFILE", str(tmp_path / "no-such-profile"))
        else:
            path.write_text(render_profile(PROFILES[profile], "h", faults))
            monkeypatch.setenv("TRITONOPS_LAB_GPU_PROFILE", str(path))
        _purge()
        monkeypatch.syspath_prepend(str(site))
        import vllm as module
        return module

    yield use
    _purge()


@pytest.fixture
def model_dir(tmp_path):
    folder = tmp_path / "tiny"
    folder.mkdir()
    for name, data in tiny_model().items():
        (folder / name).write_bytes(data)
    return folder


def _big_config(tmp_path, **overrides):
    """A 7B-class shape with no weights on disk (load_format dummy): Qwen2.5-7B's config numbers."""
    folder = tmp_path / "big"
    folder.mkdir(exist_ok=True)
    config = {"architectures": ["Qwen2ForCausalLM"], "hidden_size": 3584, "intermediate_size": 18944,
              "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064,
              "max_position_embeddings": 32768, "torch_dtype": "bfloat16", "tie_word_embeddings": False, **overrides}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def _start(vllm, **args):
    return vllm.AsyncLLMEngine.from_engine_args(vllm.AsyncEngineArgs(**args))


def test_the_tiny_model_on_a_2080_ti_by_hand(vllm, model_dir, capsys):
    v = vllm("2080ti")
    engine = _start(v, model=str(model_dir), gpu_memory_utilization=0.5)
    plan = engine._core.plan
    cuda_total = (11264 - 197) * MIB
    assert plan.cuda_total == cuda_total and plan.budget == int(0.5 * cuda_total)
    weights = sum((model_dir / n).stat().st_size for n in ("model-00001-of-00002.safetensors",
                                                           "model-00002-of-00002.safetensors")) // 2  # fp32 -> fp16
    assert plan.weights == weights
    # activations: 2048 batched tokens x (6 x 384 + 3 x 1536) x 2 B, plus 4 x 256 sequences x 1024 vocab x 4 B
    assert plan.activations == 2048 * (6 * 384 + 3 * 1536) * 2 + 4 * 256 * 1024 * 4
    assert plan.bytes_per_token == 2 * 1 * 6 * 64 * 2
    kv = plan.budget - weights - plan.activations - 300 * MIB
    assert plan.num_gpu_blocks == kv // (16 * plan.bytes_per_token)
    out = capsys.readouterr().out
    assert "Initializing a V0 LLM engine (v0.10.2)" in out  # CC 7.5: 0.10 falls back to V0
    assert f"# cuda blocks: {plan.num_gpu_blocks}, # CPU blocks: {4 * GIB // (16 * 1536)}" in out
    assert "GPU KV cache size" not in out


def test_v1_prints_the_kv_cache_size_in_tokens(vllm, model_dir, capsys):
    engine = _start(vllm("a100x4"), model=str(model_dir), gpu_memory_utilization=0.5)
    out = capsys.readouterr().out
    assert type(engine).__module__ == "vllm.v1.engine.async_llm"
    assert f"GPU KV cache size: {engine.lab_kv_cache_tokens:,} tokens" in out
    assert "Maximum concurrency for 2,048 tokens per request:" in out
    assert "(EngineCore_0 pid=" in out


def test_tensor_parallel_splits_weights_and_kv_heads_and_needs_the_gpus(vllm, tmp_path):
    v = vllm("a100x4")
    one = _start(v, model=str(_big_config(tmp_path)), load_format="dummy", gpu_memory_utilization=0.9)._core.plan
    two = _start(v, model=str(_big_config(tmp_path)), load_format="dummy", gpu_memory_utilization=0.9,
                 tensor_parallel_size=2)._core.plan
    assert two.weights == one.weights // 2 and two.bytes_per_token == one.bytes_per_token // 2
    assert two.non_torch == 600 * MIB and one.non_torch == 300 * MIB
    with pytest.raises(ValueError, match="exceeds the total number of available GPUs"):
        _start(v, model=str(_big_config(tmp_path)), tensor_parallel_size=8)


def test_a_context_above_the_kv_cache_v0_and_v1_wording(vllm, model_dir, tmp_path):
    with pytest.raises(ValueError, match=r"^The model's max seq len \(2048\) is larger than the maximum number of "
                                         r"tokens that can be stored in KV cache \(64\)\. Try increasing "
                                         r"`gpu_memory_utilization` or decreasing `max_model_len`"):
        _start(vllm("2080ti"), model=str(model_dir), num_gpu_blocks_override=4)
    # V1 on an A100 80GB: 7B bf16 weights (~15 GiB) in a 0.21 x 79.4 GiB budget leave ~0.5 GiB for the KV cache,
    # less than 32768 tokens x 56 KiB need.
    with pytest.raises(ValueError, match=r"To serve at least one request with the models's max seq len \(32768\), "
                                         r"\(1\.75 GiB KV cache is needed, which is larger than the available KV "
                                         r"cache memory .* the estimated maximum model length is \d+\."):
        _start(vllm("a100x4"), model=str(_big_config(tmp_path)), load_format="dummy", gpu_memory_utilization=0.21)


def test_no_memory_left_for_the_cache(vllm, tmp_path):
    with pytest.raises(ValueError, match="^No available memory for the cache blocks"):
        _start(vllm("a100x4"), model=str(_big_config(tmp_path)), load_format="dummy", gpu_memory_utilization=0.15)


def test_weights_larger_than_the_card_are_out_of_memory(vllm, tmp_path):
    with pytest.raises(RuntimeError, match="CUDA out of memory"):
        _start(vllm("2080ti"), model=str(_big_config(tmp_path)), load_format="dummy", dtype="float16")


def test_other_processes_memory_refuses_a_v1_start(vllm, model_dir):
    faults = GpuFaults(processes=((0, SimulatedProcess(4242, 60 * GIB)),))
    with pytest.raises(ValueError, match=r"^Free memory on device \(19\.45/79\.45 GiB\) on startup is less than "
                                         r"desired GPU memory utilization \(0\.9"):
        _start(vllm("a100x4", faults), model=str(model_dir))


def test_engine_arguments_like_the_pinned_version(vllm, model_dir):
    v = vllm()
    with pytest.raises(TypeError, match=r"^AsyncEngineArgs\.__init__\(\) got an unexpected keyword argument 'x'$"):
        v.AsyncEngineArgs(model=str(model_dir), x=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'disable_log_requests'"):
        v.AsyncEngineArgs(model=str(model_dir), disable_log_requests=True)
    with pytest.raises(ValueError, match=r"User-specified max_model_len \(4096\) is greater than the derived "
                                         r"max_model_len \(max_position_embeddings=2048"):
        _start(v, model=str(model_dir), max_model_len=4096)
    with pytest.raises(ValueError, match="Bfloat16 is only supported on GPUs with compute capability of at least 8.0. "
                                         "Your NVIDIA GeForce RTX 2080 Ti GPU has compute capability 7.5"):
        _start(v, model=str(model_dir), dtype="bfloat16")
    with pytest.raises(ValueError, match="Invalid repository ID or local directory specified: 'org/not-here'"):
        _start(v, model="org/not-here")
    with pytest.raises(ValueError, match="max_model_len must be an integer"):
        _start(v, model=str(model_dir), max_model_len="auto")  # 'auto' arrives with vLLM 0.14


def test_no_gpu_no_engine(vllm, model_dir):
    with pytest.raises(RuntimeError, match="^Failed to infer device type"):
        _start(vllm(profile=None), model=str(model_dir))


def test_cuda_visible_devices_narrows_the_cards(vllm, model_dir, monkeypatch):
    vllm("a100x4")  # the fixture installs the profile
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    from vllm.lab.gpu import visible_gpus
    assert [g.index for g in visible_gpus()] == [3]


def test_vllm_use_v1_1_on_a_turing_card_is_refused_as_0_10_does(vllm, model_dir, monkeypatch):
    monkeypatch.setenv("VLLM_USE_V1", "1")
    with pytest.raises(NotImplementedError, match="Compute Capability < 8.0"):
        _start(vllm("2080ti"), model=str(model_dir))


def test_generation_is_deterministic_paced_and_abortable(vllm, model_dir, monkeypatch):
    monkeypatch.setenv("TRITONOPS_LAB_TOKENS_PER_S", "100")
    monkeypatch.setenv("TRITONOPS_LAB_TTFT_S", "0")
    v = vllm("a100x4")
    from vllm.sampling_params import RequestOutputKind
    engine = _start(v, model=str(model_dir))

    async def collect(request_id, abort_after=None, **params):
        pieces, started = [], asyncio.get_running_loop().time()
        async for out in engine.generate("t5 t6 hello", v.SamplingParams(**params), request_id):
            pieces.append(out.outputs[0].text)
            if abort_after is not None and len(pieces) == abort_after:
                await engine.abort(request_id)
        return pieces, asyncio.get_running_loop().time() - started

    async def main():
        whole, _ = await collect("a", max_tokens=5)
        deltas, took = await collect("b", max_tokens=5, output_kind=RequestOutputKind.DELTA)
        stopped = await collect("c", max_tokens=5, stop=[whole[-1].split()[2]])
        with pytest.raises(asyncio.CancelledError):
            await collect("d", abort_after=2, max_tokens=50)
        return whole, deltas, took, stopped[0]

    whole, deltas, took, stopped = asyncio.run(main())
    assert whole[-1] == "".join(deltas) and len(whole[-1].split()) == 5
    assert took >= 4 / 100  # four gaps at 100 tokens/s
    stop = whole[-1].split()[2]
    assert stopped[-1] == whole[-1][:whole[-1].index(stop)]  # the text before the stop string, as vLLM cuts it
    assert engine.lab_stats["requests_aborted"] == 1 and engine.lab_stats["prompt_tokens"] == 3 * 4


def test_outputs_carry_prompt_and_token_ids_and_logprobs_only_when_asked_like_vllms(vllm, model_dir, monkeypatch):
    monkeypatch.setenv("TRITONOPS_LAB_TOKENS_PER_S", "2000")
    monkeypatch.setenv("TRITONOPS_LAB_TTFT_S", "0")
    v = vllm("a100x4")
    from vllm.sampling_params import RequestOutputKind
    from vllm.sequence import Logprob
    engine = _start(v, model=str(model_dir))

    async def collect(**params):
        return [out async for out in engine.generate("t5  t6\thello", v.SamplingParams(**params), str(params))]

    async def main():
        return (await collect(max_tokens=4), await collect(max_tokens=4, logprobs=3),
                await collect(max_tokens=4, logprobs=0, output_kind=RequestOutputKind.DELTA))

    plain, cumulative, delta = asyncio.run(main())
    assert all(out.prompt_token_ids == engine._core.tokenizer.encode("t5 t6 hello") for out in plain + delta)
    assert [len(out.outputs[0].token_ids) for out in plain] == [1, 2, 3, 4]  # all so far
    assert [len(out.outputs[0].token_ids) for out in delta] == [1, 1, 1, 1]  # only the new one
    assert all(out.outputs[0].logprobs is None for out in plain)
    last = cumulative[-1].outputs[0]
    assert len(last.logprobs) == 4  # one {token id: Logprob} per generated token
    for token, position in zip(last.token_ids, last.logprobs):
        assert sorted(p.rank for p in position.values()) == [1, 2, 3] and position[token].rank == 1
        assert isinstance(position[token], Logprob) and position[token].decoded_token == engine._core._text([token])
    assert [len(out.outputs[0].logprobs) for out in delta] == [1, 1, 1, 1]  # logprobs 0: the generated token only
    assert [list(out.outputs[0].logprobs[0]) for out in delta] == [out.outputs[0].token_ids for out in delta]


def test_sampling_params_refuse_unknown_keys_like_msgspec(vllm):
    v = vllm()
    with pytest.raises(TypeError, match="^Unexpected keyword argument 'max_tokenz'$"):
        v.SamplingParams(max_tokenz=3)
    with pytest.raises(ValueError, match="temperature must be non-negative"):
        v.SamplingParams(temperature=-0.5)
    assert "output_kind" in v.SamplingParams.__struct_fields__


@pytest.mark.parametrize("version, v0, v1", [
    ("0.7.3", True, False), ("0.8.0rc1", True, False), ("0.8.0", True, True), ("0.10.2", True, True),
    ("0.11.0rc1", True, True), ("0.11.0.dev0", True, True), ("0.11.0", False, True), ("0.11.0.post1", False, True),
])
def test_the_stand_in_dates_its_engines_in_pep440_order(vllm, version, v0, v1):
    """A pre-release of the version that brought V1 (0.8.0) or dropped V0 (0.11.0) is still the one before."""
    vllm(version=version)
    from vllm.lab import config
    assert (config.has_v0(), config.has_v1()) == (v0, v1)
    assert config.version_key("0.9.0rc1") < config.version_key("0.9.0") == config.version_key("0.9.0.post1") \
        < config.version_key("0.9.1.dev0") < config.version_key("0.9.1") < config.version_key("0.10.0")


def test_pipeline_parallel_and_the_executor_backend_are_checked_as_vllm_checks_them(vllm, model_dir, monkeypatch):
    v = vllm("a100x4")
    with pytest.raises(ValueError, match=r"^Unrecognized distributed executor backend nccl\. Supported values are "
                                         r"'ray', 'mp' 'uni', 'external_launcher'"):
        _start(v, model=str(model_dir), distributed_executor_backend="nccl")
    with pytest.raises(ValueError, match=r"^pipeline_parallel_size must be a positive integer, got 0$"):
        _start(v, model=str(model_dir), pipeline_parallel_size=0)
    with pytest.raises(ValueError, match="exceeds the total number of available GPUs"):
        _start(v, model=str(model_dir), pipeline_parallel_size=2, tensor_parallel_size=4,
               distributed_executor_backend="mp")
    # PP on one node's processes: both stages' GPUs are this node's
    engine = _start(v, model=str(model_dir), pipeline_parallel_size=2, tensor_parallel_size=2)
    assert len(engine._core.config.gpus) == 4 and engine._core.ray_stages == []
    monkeypatch.setitem(sys.modules, "ray", None)  # a vllm_env without Ray
    with pytest.raises(ValueError, match=r"^Unable to load Ray: .* Ray is required for multi-node inference"):
        _start(v, model=str(model_dir), pipeline_parallel_size=2, distributed_executor_backend="ray")
