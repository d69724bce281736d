"""The `vllm` serving mode (issue #43): vLLM's own OpenAI server's command line from the plan, checked against the
pinned vLLM's argument list (captured from its parser on the real GPU) before any host is touched; one model per
replica; the gate's requests; the bad input of the issue, each a one-line refusal."""

from __future__ import annotations

import json

import pytest

from tritonops.host_programs.triton_client import answer_text
from tritonops.modes.choice import serving_mode
from tritonops.modes.openai import OPENAI
from tritonops.modes.vllm_server import (ARGUMENTS_FILE, VLLM, EngineArgumentError, ServerArguments, engine_flags,
                                         one_model, served_model_name, server_argv)

WEIGHTS = "/opt/tritonops/chat/models/Qwen--Qwen2.5-7B-Instruct@main"
# The argument list of the pinned server (tritonops/modes/vllm_server_args.json) is not captured yet (bench/
# real_gpu_openai.sh, issue #43 item 5): the tests of a plan checked against it come back with it (this file's history).
# a few options as the capture writes them (bench/real_gpu_openai.py args)
SMALL = ServerArguments.from_json({"vllm_version": "0.25.0", "options": [
    {"dest": "model_tag", "flags": [], "takes_value": True, "nargs": "?", "choices": None},
    {"dest": "max_model_len", "flags": ["--max-model-len"], "takes_value": True, "nargs": None, "choices": None},
    {"dest": "dtype", "flags": ["--dtype"], "takes_value": True, "nargs": None,
     "choices": ["auto", "bfloat16", "float16"]},
    {"dest": "enforce_eager", "flags": ["--enforce-eager", "--no-enforce-eager"], "takes_value": False, "nargs": 0,
     "choices": None},
    {"dest": "headless", "flags": ["--headless"], "takes_value": False, "nargs": 0, "choices": None},
    {"dest": "tensor_parallel_size", "flags": ["--tensor-parallel-size", "-tp"], "takes_value": True, "nargs": None,
     "choices": None},
    {"dest": "allowed_origins", "flags": ["--allowed-origins"], "takes_value": True, "nargs": "+", "choices": None},
    {"dest": "hf_overrides", "flags": ["--hf-overrides"], "takes_value": True, "nargs": None, "choices": None},
]})


def test_the_server_runs_the_weights_folder_under_the_inventory_name_with_the_plans_engine_arguments():
    assert server_argv("chat", WEIGHTS, {"max_model_len": 32768, "dtype": "bfloat16", "enforce_eager": False,
                                         "tensor_parallel_size": 2}, 9000, SMALL) == (
        "python3", "-m", "vllm.entrypoints.openai.api_server", "--model", WEIGHTS, "--served-model-name", "chat",
        "--host", "0.0.0.0", "--port", "9000", "--max-model-len=32768", "--dtype=bfloat16", "--no-enforce-eager",
        "--tensor-parallel-size=2")


def test_each_value_is_one_argv_element_that_cannot_be_read_as_an_option():
    assert engine_flags({"max_model_len": -1}, SMALL) == ("--max-model-len=-1",)  # vLLM's "fit it" value
    assert engine_flags({"hf_overrides": {"rope_scaling": {"factor": 2}}}, SMALL) == (
        '--hf-overrides={"rope_scaling":{"factor":2}}',)
    assert engine_flags({"allowed_origins": ["a", "b"]}, SMALL) == ("--allowed-origins", "a", "b")
    assert engine_flags({"enforce_eager": True, "headless": False, "dtype": None}, SMALL) == ("--enforce-eager",)


@pytest.mark.parametrize(("args", "said"), [
    ({"disable_log_requests": True},
     "engine argument 'disable_log_requests' is not an option of vLLM 0.25.0's OpenAI server"),
    ({"max_model_lenn": 4096},
     "engine argument 'max_model_lenn' is not an option of vLLM 0.25.0's OpenAI server; did you mean "
     "'max_model_len'?"),
    ({"dtype": "float8"}, "engine argument 'dtype': 'float8' is not one of auto, bfloat16, float16"),
    ({"enforce_eager": "yes"}, "engine argument 'enforce_eager' is a switch: give true or false, not 'yes'"),
    ({"max_model_len": True}, "engine argument 'max_model_len' takes a value (--max-model-len VALUE), not True"),
    ({"max_model_len": [1, 2]}, "engine argument 'max_model_len' takes one value, not a list"),
    ({"dtype": "auto\n--api-key x"}, "engine argument 'dtype': a value holds a control character"),
    ({"max_model_len": float("nan")}, "engine argument 'max_model_len': nan is not a finite number"),
    ({"served_model_name": "other"}, "engine argument 'served_model_name' is set by tritonops in the vllm mode "
                                     "(weights folder, inventory name, placement): remove it"),
    ({"port": 1234}, "engine argument 'port' is set by tritonops in the vllm mode (weights folder, inventory "
                     "name, placement): remove it"),
])
def test_an_engine_argument_the_server_would_refuse_is_one_line_naming_it(args, said):
    with pytest.raises(EngineArgumentError) as err:
        engine_flags(args, SMALL)
    assert str(err.value) == said


@pytest.mark.parametrize("name", ["", "../etc", "a/b", "-chat", ".hidden", "x" * 65, "chat model", 7])
def test_a_served_model_name_that_is_not_a_path_segment_is_refused(name):
    with pytest.raises(EngineArgumentError, match="is not a valid path segment"):
        served_model_name(name)
    with pytest.raises(EngineArgumentError, match="is not a valid path segment"):
        server_argv(name, WEIGHTS, {}, 9000, SMALL)


def test_one_model_per_replica_several_refused_in_one_line_naming_them():
    assert one_model(("chat",)) == "chat"
    with pytest.raises(EngineArgumentError) as err:
        one_model(("chat", "small"))
    assert str(err.value) == ("the vllm mode serves one model per replica; this host's plan has 2: chat, small "
                              "(serve each on its own hosts, or use tritonops_frontend: kserve)")
    assert VLLM.refuse_models(("chat", "small")) == str(err.value)
    assert VLLM.refuse_models(("chat",)) is None and OPENAI.refuse_models(("chat", "small")) is None


def test_the_mode_is_named_vllm_and_is_not_tritons_own_openai_frontend():
    assert serving_mode("vllm") is VLLM and serving_mode("openai") is OPENAI
    assert VLLM.runs == "vLLM's OpenAI server (python3 -m vllm.entrypoints.openai.api_server)"
    assert VLLM.first_release is None  # any vllm_env image has the server: no NGC floor
    assert VLLM.http_door_role == "openai" and VLLM.check_path == "/health" and VLLM.door_open == ("/health",)
    # the door refuses in OpenAI's shape, as for the openai mode
    assert VLLM.error_body("no_key", 401, "send a key") == {
        "error": {"message": "send a key", "type": "authentication_error", "param": None, "code": "no_key"}}


def test_the_gate_asks_health_models_a_completion_a_chat_and_a_streamed_chat_with_usage():
    assert VLLM.host_requests(["chat"], "Hello", 8) == {
        "live": {"port": "openai", "method": "GET", "path": "/health"},
        "ready": {"port": "openai", "method": "GET", "path": "/health"},
        "metrics": {"port": "openai", "method": "GET", "path": "/metrics"},
        "models": {"chat": {
            "ready": {"port": "openai", "method": "GET", "path": "/v1/models", "text": ["data", 0, "id"]},
            "generate": [
                {"port": "openai", "method": "POST", "path": "/v1/completions",
                 "body": {"model": "chat", "prompt": "Hello", "max_tokens": 8}, "text": ["choices", 0, "text"]},
                {"port": "openai", "method": "POST", "path": "/v1/chat/completions",
                 "body": {"model": "chat", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 8},
                 "text": ["choices", 0, "message", "content"]},
                {"port": "openai", "method": "POST", "path": "/v1/chat/completions",
                 "body": {"model": "chat", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 8,
                          "stream": True, "stream_options": {"include_usage": True}},
                 "text": ["choices", 0, "delta", "content"], "stream": True, "usage": True}]}}}


def _sse(*events) -> str:
    return "".join(f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n" for e in events)


def test_a_streamed_chat_passes_the_gate_only_read_to_done_with_usage():
    request = VLLM.generate("chat", "Hello", 8)[2].document()
    delta = lambda text: {"choices": [{"index": 0, "delta": {"content": text}}]}  # noqa: E731
    usage = {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}
    assert answer_text(request, 200, _sse(delta("Hi"), delta(" there"), usage, "[DONE]")) == "Hi there"
    assert answer_text(request, 200, _sse(delta("Hi"), delta(" there"), "[DONE]")) is None  # no usage
    assert answer_text(request, 200, _sse(delta("Hi"), usage)) is None                      # cut before [DONE]
    assert answer_text(request, 200, _sse(usage, "[DONE]")) is None                         # no text
    assert answer_text(request, 500, _sse(delta("Hi"), usage, "[DONE]")) is None
    no_usage_asked = {**request, "usage": False}
    assert answer_text(no_usage_asked, 200, _sse(delta("Hi"), "[DONE]")) == "Hi"


def test_several_models_on_a_host_in_this_mode_are_refused_at_the_frontends_line(tmp_path):
    from tests.support.planning import TWO_MODELS, plan

    hp = plan(tmp_path, TWO_MODELS + "      tritonops_frontend: vllm\n")
    assert not hp.ok and not hp.files
    assert hp.error == (f"{tmp_path / 'hosts.yml'}:8: the vllm mode serves one model per replica; this host's plan "
                        "has 2: chat, small (serve each on its own hosts, or use tritonops_frontend: kserve)")


def test_the_openai_port_on_a_kserve_port_is_refused_naming_both_variables(tmp_path):
    from tests.support.planning import plan

    hp = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n      tritonops_frontend: vllm\n"
                        "      tritonops_openai_port: 8000\n")
    assert not hp.ok and not hp.files
    assert hp.error == (f"{tmp_path / 'hosts.yml'}:7: tritonops_openai_port 8000 is tritonops_http_port's too: in "
                        "the vllm mode each of tritonops_http_port, tritonops_grpc_port, tritonops_openai_port needs "
                        "its own port")


def test_bench_drives_the_vllm_modes_chat_completions_as_the_openai_modes():
    from tritonops.bench.plan import Workload, aiperf_argv, check_workload

    check_workload(Workload("chat", mode="vllm"))
    argv = aiperf_argv(["aiperf"], ["http://10.0.0.9:9000"], Workload("chat", requests=8, mode="vllm"), 4, "/tok",
                       "/run/kserve_payload.json.j2", "/run/c4")
    assert argv[8:11] == ["--endpoint-type", "chat", "--streaming"] and "--custom-endpoint" not in argv


def test_without_the_argument_list_a_vllm_plan_is_refused_in_one_line():
    assert VLLM.plan_problem((("chat", {"model": WEIGHTS}),)) == (
        f"this tritonops ships no argument list of the pinned vLLM's OpenAI server (tritonops/modes/{ARGUMENTS_FILE}; "
        "bench/real_gpu_openai.sh captures it): the vllm mode cannot check engine arguments")
