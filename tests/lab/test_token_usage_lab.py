"""Token usage on a real lab host: a release deployed by tritonops (real tritonserver 2.51, the image's backend,
the lab's CPU engine) answers a generate request that sets `return_num_input_tokens` and
`return_num_output_tokens`, the BOOL inputs Triton's OpenAI frontend sends from Triton 2.60 for its `usage`
figures: `num_input_tokens` is the prompt's token count by the lab model's tokenizer, `num_output_tokens`
max_tokens (ignore_eos), in one response or added up over a stream. A request that asks nothing gets text only.
One deployment (`dep-tokens`) on the test lab's full host."""

import contextlib
import io
import json
import runpy
import shlex
import zipfile

import pytest

from tests.lab.test_serve_lab import full_host_inventory, full_host_shell, task
from tritonops.cli.main import main
from tritonops.lab.hub.model import tiny_model
from tritonops.lab.wheelhouse import LAB_VLLM_VERSION, wheel_bytes

DEPLOYMENT = "dep-tokens"
HTTP_PORT = 18900
PROMPT = "how  many\ttokens are in this prompt"
MAX_TOKENS = 9
USAGE = {"return_num_input_tokens": True, "return_num_output_tokens": True}


@pytest.fixture(scope="module")
def inventory(lab, tmp_path_factory):
    return full_host_inventory(lab, tmp_path_factory.mktemp("tokens") / "hosts.yml", DEPLOYMENT,
                               tritonops_http_port=HTTP_PORT, tritonops_grpc_port=HTTP_PORT + 1,
                               tritonops_metrics_port=HTTP_PORT + 2)


@pytest.fixture(scope="module")
def host(lab, inventory):
    yield from full_host_shell(lab, DEPLOYMENT)


@pytest.fixture(scope="module")
def served(inventory, host):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["deploy", "-i", inventory, "--json"])
    report = json.loads(out.getvalue())
    assert code == 0, [r["msg"] for r in report["results"] if r["status"] == "failed"]
    assert task(report, "Triton serves")["status"] == "changed"
    return host


def prompt_tokens(tmp_path) -> int:
    """The prompt's token count by the lab model's tokenizer: the stand-in vllm's own, over the tokenizer.json
    of the lab's tiny model (the code the engine on the host runs)."""
    site = tmp_path / "vllm-site"
    zipfile.ZipFile(io.BytesIO(wheel_bytes(LAB_VLLM_VERSION))).extractall(site)
    model = tmp_path / "tiny"
    model.mkdir()
    for name, data in tiny_model().items():
        (model / name).write_bytes(data)
    namespace = runpy.run_path(str(site / "vllm" / "lab" / "model.py"))
    vocab = json.loads((model / "config.json").read_text())["vocab_size"]
    return len(namespace["Tokenizer"](str(model), vocab).encode(PROMPT))


def post(host, path: str, body: dict, extra: tuple = ()) -> str:
    argv = ["curl", "-s", *extra, "-X", "POST", "-d", json.dumps(body), f"localhost:{HTTP_PORT}{path}"]
    proc = host(shlex.join(argv))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_a_whole_answer_counts_the_prompt_and_the_generated_tokens(served, tmp_path):
    expected = prompt_tokens(tmp_path)
    assert expected == len(PROMPT.split())  # the lab's tokenizer: whitespace words (tabs and runs of spaces too)
    out = post(served, "/v2/models/vllm_model/generate",
               {"text_input": PROMPT, "exclude_input_in_output": True, **USAGE,
                "parameters": {"max_tokens": MAX_TOKENS, "ignore_eos": True}})
    answer = json.loads(out)
    assert answer["num_input_tokens"] == expected, answer
    assert answer["num_output_tokens"] == MAX_TOKENS, answer
    assert len(answer["text_output"].split()) == MAX_TOKENS


def test_a_stream_counts_each_events_tokens_and_they_add_up_to_max_tokens(served, tmp_path):
    expected = prompt_tokens(tmp_path)
    out = post(served, "/v2/models/vllm_model/generate_stream",
               {"text_input": PROMPT, "stream": True, **USAGE,
                "parameters": {"max_tokens": MAX_TOKENS, "ignore_eos": True}}, ("-N",))
    events = [json.loads(line[5:]) for line in out.splitlines() if line.startswith("data:")]
    assert len(events) >= 2 and all("error" not in e for e in events), out
    assert {e["num_input_tokens"] for e in events} == {expected}
    for e in events:  # each event its own tokens (what the OpenAI frontend adds up), not all so far
        assert e["num_output_tokens"] == len(e["text_output"].split()), e
    assert sum(e["num_output_tokens"] for e in events) == MAX_TOKENS


def test_a_request_that_asks_nothing_gets_only_its_text(served):
    answer = json.loads(post(served, "/v2/models/vllm_model/generate",
                             {"text_input": PROMPT, "parameters": {"max_tokens": 3}}))
    assert "num_input_tokens" not in answer and "num_output_tokens" not in answer and answer["text_output"]
