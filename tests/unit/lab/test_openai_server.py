"""The lab stand-in's OpenAI server (issue #43 item 4, without Docker): started by the very command line the `vllm`
mode renders, asked by the official `openai` client only (sync, async, streaming): models, a completion, a chat
through the tokenizer's own chat template, usage in streams, NotFoundError for an unknown model,
AuthenticationError without the key; and the gate's own requests pass against it."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
import time
import urllib.request
import zipfile

import openai
import pytest

from tests.support.network import server_port
from tritonops.host_programs.triton_client import answer_text, ask
from tritonops.lab.hub.model import tiny_model
from tritonops.lab.profile_file import GpuFaults, render_profile
from tritonops.lab.profiles import PROFILES
from tritonops.lab.wheelhouse import wheel_bytes
from tritonops.modes.vllm_server import VLLM, ServerArguments, server_argv

KEY = "lab-key"
TEMPLATE = ("{% for m in messages %}{{ m['role'] }} {{ m['content'] }} {% endfor %}"
            "{% if add_generation_prompt %}assistant{% endif %}")
# the engine arguments the stand-in knows, as the capture's format has them (the production check uses the
# pinned vLLM's list, tests/unit/modes/test_vllm.py)
LAB_ARGS = ServerArguments.from_json({"vllm_version": "0.25.0", "options": [
    {"dest": d, "flags": [f"--{d.replace('_', '-')}"] + ([f"--no-{d.replace('_', '-')}"] if b else []),
     "takes_value": not b, "nargs": 0 if b else None, "choices": None}
    for d, b in (("max_model_len", False), ("gpu_memory_utilization", False), ("enforce_eager", True),
                 ("max_num_seqs", False), ("dtype", False))]})


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lab-openai")
    site = tmp / "site"
    zipfile.ZipFile(io.BytesIO(wheel_bytes("0.25.0"))).extractall(site)
    (tmp / "profile").write_text(render_profile(PROFILES["2080ti"], "h", GpuFaults()))
    model = tmp / "tiny"
    model.mkdir()
    for name, data in tiny_model().items():
        (model / name).write_bytes(data)
    config = json.loads((model / "tokenizer_config.json").read_text())
    (model / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": TEMPLATE}))
    port = server_port()
    argv = server_argv("chat", str(model), {"max_model_len": 1024, "gpu_memory_utilization": 0.5,
                                            "enforce_eager": False, "dtype": "float32"}, port, LAB_ARGS,
                       host="127.0.0.1")
    assert argv[:3] == ("python3", "-m", "vllm.entrypoints.openai.api_server")
    env = {**os.environ, "PYTHONPATH": str(site), "TRITONOPS_LAB_GPU_PROFILE": str(tmp / "profile"),
           "TRITONOPS_LAB_TOKENS_PER_S": "2000", "TRITONOPS_LAB_TTFT_S": "0.001"}
    proc = subprocess.Popen([sys.executable, *argv[1:], "--api-key", KEY], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(url + "/health", timeout=1)
            break
        except OSError:
            if proc.poll() is not None:
                pytest.fail(proc.stdout.read())
            time.sleep(0.05)
    yield url, port
    proc.terminate()
    proc.wait(10)


def _client(url, key=KEY):
    return openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0)


def test_the_client_lists_the_model_under_its_inventory_name(server):
    url, _ = server
    assert [m.id for m in _client(url).models.list().data] == ["chat"]


def test_a_completion_and_a_chat_answer_text_with_usage(server):
    url, _ = server
    api = _client(url)
    done = api.completions.create(model="chat", prompt="t5 t6 t7", max_tokens=4)
    assert done.choices[0].text.strip() and done.choices[0].finish_reason == "length"
    assert (done.usage.prompt_tokens, done.usage.completion_tokens) == (3, 4)
    chat = api.chat.completions.create(model="chat", messages=[{"role": "user", "content": "hello there"}],
                                       max_tokens=5)
    assert chat.choices[0].message.content.strip()
    # the tokenizer's template made the prompt: "user hello there assistant", four words, four tokens
    assert (chat.usage.prompt_tokens, chat.usage.completion_tokens) == (4, 5)


def test_a_streamed_chat_ends_with_usage_sync_and_async(server):
    url, _ = server
    pieces, usage = [], None
    for chunk in _client(url).chat.completions.create(model="chat", messages=[{"role": "user", "content": "hi"}],
                                                     max_tokens=6, stream=True,
                                                     stream_options={"include_usage": True}):
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
        if chunk.usage is not None:
            usage = chunk.usage
    assert len(pieces) == 6 and usage.completion_tokens == 6

    async def streamed():
        api = openai.AsyncOpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
        got = []
        stream = await api.completions.create(model="chat", prompt="t1 t2", max_tokens=3, stream=True,
                                              stream_options={"include_usage": True})
        async for chunk in stream:
            got.append(chunk)
        await api.close()
        return got

    chunks = asyncio.run(streamed())
    assert "".join(c.choices[0].text for c in chunks if c.choices).split().__len__() == 3
    assert chunks[-1].usage.completion_tokens == 3 and chunks[-1].usage.prompt_tokens == 2


def test_an_unknown_model_is_not_found_and_no_key_is_unauthenticated(server):
    url, _ = server
    with pytest.raises(openai.NotFoundError):
        _client(url).chat.completions.create(model="nope", messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.AuthenticationError):
        _client(url, key="wrong").models.list()


def test_the_gates_requests_pass_against_it(server):
    url, port = server
    endpoints = {"openai": port}
    doc = VLLM.host_requests(["chat"], "hello", 4)
    for request in (doc["live"], doc["ready"]):
        assert ask(request, endpoints)[0] == 200
    # the gate sends no key: the replica's key is the door's (here the stand-in runs with one, so ask with it)
    for request in doc["models"]["chat"]["generate"]:
        body = json.dumps(request["body"]).encode()
        reply = urllib.request.urlopen(urllib.request.Request(
            url + request["path"], body, {"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"}))
        assert answer_text(request, reply.status, reply.read().decode()), request["path"]
    metrics = urllib.request.urlopen(url + "/metrics").read().decode()
    assert 'vllm:generation_tokens_total{engine="0",model_name="chat"}' in metrics
