"""The vllm_env image's Triton backend (tritonops/image/assets/vllm_backend_model.py.txt) driven here
without Triton: a stand-in `triton_python_backend_utils` records responses and metrics, and the
engine is the lab's stand-in vllm (the wheel the lab's image build installs) for several versions
and simulated cards. The real proof against tritonserver is tests/lab/test_backend_lab.py."""

from __future__ import annotations

import hashlib
import io
import json
import sys
import threading
import time
import types
import zipfile

import pytest

from tritonops.image.build_script import backend_code
from tritonops.lab.hub.model import tiny_model
from tritonops.lab.profile_file import render_profile
from tritonops.lab.profiles import PROFILES
from tritonops.lab.wheelhouse import wheel_bytes
from tritonops.render import config_pbtxt

FINAL = 1


class _Array(list):
    def reshape(self, *shape):
        return self


def _numpy():
    """The real numpy where installed; else the little of it the backend uses (numpy is the Triton
    image's, not a tritonops dependency)."""
    try:
        import numpy
        return numpy
    except ImportError:
        shim = types.ModuleType("numpy")
        shim.object_ = object
        shim.uint32 = int
        shim.array = shim.asarray = lambda data, dtype=None: data if isinstance(data, _Array) else _Array(data)
        return shim


np = _numpy()


# -- a stand-in for Triton's Python stub -----------------------------------------------------
class TritonError(Exception):
    UNKNOWN, INTERNAL, NOT_FOUND, INVALID_ARG, UNAVAILABLE, UNSUPPORTED, ALREADY_EXISTS, CANCELLED = range(8)

    def __init__(self, message, code=INTERNAL):
        super().__init__(message)
        self._message, self._code = message, code

    def message(self):
        return self._message

    def code(self):
        return self._code


class Tensor:
    def __init__(self, name, data):
        self._name, self._data = name, np.asarray(data)

    def name(self):
        return self._name

    def as_numpy(self):
        return self._data


class InferenceResponse:
    def __init__(self, output_tensors=(), error=None):
        self.output_tensors, self.error = list(output_tensors), error

    def texts(self):
        return [b.decode() for b in self.output_tensors[0].as_numpy()] if self.output_tensors else []

    def names(self):
        return [t.name() for t in self.output_tensors]

    def output(self, name):
        """The named output's values as Python values (JSON text read), or None where the response has none."""
        found = next((t for t in self.output_tensors if t.name() == name), None)
        if found is None:
            return None
        values = list(found.as_numpy())
        return [json.loads(v) for v in values] if name == "logprobs" else [int(v) for v in values]


class Metric:
    def __init__(self, family, labels, buckets=None):
        self.family, self.labels, self.buckets = family, labels, buckets
        self.value, self.observed = 0.0, []

    def increment(self, v):
        self.value += v

    def set(self, v):
        self.value = v
        self.history = getattr(self, "history", []) + [v]

    def observe(self, v):
        self.observed.append(v)


class MetricFamily:
    COUNTER, GAUGE, HISTOGRAM = "counter", "gauge", "histogram"
    created: list = []

    def __init__(self, name, description, kind):
        self.name, self.kind, self.metrics = name, kind, []
        MetricFamily.created.append(self)

    def Metric(self, labels, buckets=None):  # noqa: N802 - Triton's name
        if (self.kind == self.HISTOGRAM) != (buckets is not None):
            raise ValueError("Failed to create metric. Missing required buckets.")
        metric = Metric(self, labels, buckets)
        self.metrics.append(metric)
        return metric


class Logger:
    lines: list = []

    @classmethod
    def log_info(cls, m):
        cls.lines.append(("INFO", m))

    @classmethod
    def log_warn(cls, m):
        cls.lines.append(("WARN", m))

    @classmethod
    def log_error(cls, m):
        cls.lines.append(("ERROR", m))


def _pb_utils():
    m = types.ModuleType("triton_python_backend_utils")
    m.TritonError, m.Tensor, m.InferenceResponse, m.MetricFamily, m.Logger = \
        TritonError, Tensor, InferenceResponse, MetricFamily, Logger
    m.TRITONSERVER_RESPONSE_COMPLETE_FINAL = FINAL
    m.get_input_tensor_by_name = lambda request, name: request.inputs.get(name)
    m.unloaded = []
    m.unload_model = m.unloaded.append
    m.using_decoupled_model_transaction_policy = \
        lambda config: config.get("model_transaction_policy", {}).get("decoupled", False)
    return m


class Sender:
    """Triton's response sender: `send_s` is how long a send takes (Triton's is a round trip to the server);
    the threads that sent and asked are recorded."""

    def __init__(self, cancel_after=None, gone_after_s=None, send_s=0.0):
        self.sent, self.done, self.cancel_after, self.send_s = [], False, cancel_after, send_s
        self.gone_at = None if gone_after_s is None else time.monotonic() + gone_after_s
        self.threads, self.cancel_checks, self.sending, self.unsafe_checks = set(), 0, 0, 0

    def send(self, response=None, flags=0):
        assert not self.done, "a response after the final one"
        self.threads.add(threading.current_thread().name)
        self.sending += 1
        if self.send_s:
            time.sleep(self.send_s)
        self.sent.append((response, flags))
        self.done = bool(flags & FINAL)
        self.sending -= 1

    def is_cancelled(self):
        self.threads.add(threading.current_thread().name)
        self.cancel_checks += 1
        if self.done or self.sending:  # tritonserver 2.51 crashes on either (its response factory is freed)
            self.unsafe_checks += 1
        if self.gone_at is not None and time.monotonic() >= self.gone_at:
            return True
        return self.cancel_after is not None and len(self.sent) >= self.cancel_after

    def texts(self):
        return [t for r, _ in self.sent if r is not None and r.error is None for t in r.texts()]

    def responses(self):
        return [r for r, _ in self.sent if r is not None and r.error is None]

    def error(self):
        return next((r.error for r, _ in self.sent if r is not None and r.error is not None), None)


class Request:
    def __init__(self, text, stream=None, exclude=None, sampling=None, parameters=None, cancel_after=None,
                 gone_after_s=None, send_s=0.0, asks=()):
        self.inputs = {"text_input": Tensor("text_input", np.array([text.encode()], dtype=object))}
        for flag in asks:  # e.g. return_num_input_tokens: a BOOL input set True
            self.inputs[flag] = Tensor(flag, np.array([True]))
        if stream is not None:
            self.inputs["stream"] = Tensor("stream", np.array([stream]))
        if exclude is not None:
            self.inputs["exclude_input_in_output"] = Tensor("exclude_input_in_output", np.array([exclude]))
        if sampling is not None:
            self.inputs["sampling_parameters"] = Tensor(
                "sampling_parameters", np.array([json.dumps(sampling).encode()], dtype=object))
        self._parameters = json.dumps(parameters or {})
        self.sender = Sender(cancel_after, gone_after_s, send_s)

    def get_response_sender(self):
        return self.sender

    def request_id(self):
        return ""

    def parameters(self):
        return self._parameters


# -- loading the backend over a chosen stand-in vllm -------------------------------------------
def _purge_vllm():
    for name in [n for n in sys.modules if n == "vllm" or n.startswith("vllm.")]:
        del sys.modules[name]


@pytest.fixture
def backend(tmp_path, monkeypatch):
    """make(version=..., profile=..., model_json=..., metrics=...) -> an initialized TritonPythonModel."""
    made = []
    model_dir = tmp_path / "tiny"
    model_dir.mkdir()
    for name, data in tiny_model().items():
        (model_dir / name).write_bytes(data)
    monkeypatch.setitem(sys.modules, "triton_python_backend_utils", _pb_utils())
    monkeypatch.setitem(sys.modules, "numpy", np)
    MetricFamily.created, Logger.lines = [], []

    def make(version="0.10.2", profile="2080ti", model_json=None, metrics=True, env=None, health_check=False,
             parameters=None):
        site = tmp_path / f"site-{version}"
        if not site.exists():
            zipfile.ZipFile(io.BytesIO(wheel_bytes(version))).extractall(site)
        profile_file = tmp_path / f"profile-{profile}"
        profile_file.write_text(render_profile(PROFILES[profile], "test-host"))
        monkeypatch.setenv("TRITONOPS_LAB_GPU_PROFILE", str(profile_file))
        monkeypatch.setenv("TRITONOPS_LAB_TOKENS_PER_S", "2000")
        monkeypatch.setenv("TRITONOPS_LAB_TTFT_S", "0")
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        _purge_vllm()
        monkeypatch.syspath_prepend(str(site))
        module = types.ModuleType("backend_model")
        exec(compile(backend_code().decode(), "vllm_backend_model.py", "exec"), module.__dict__)
        repo = tmp_path / "repo" / "m"
        (repo / "1").mkdir(parents=True, exist_ok=True)
        (repo / "1" / "model.json").write_text(json.dumps(model_json or {"model": str(model_dir)}))
        config = {"name": "m", "model_transaction_policy": {"decoupled": True},
                  "parameters": {"REPORT_CUSTOM_METRICS": {"string_value": "true" if metrics else "false"},
                                 "ENABLE_VLLM_HEALTH_CHECK": {"string_value": "True" if health_check else "false"},
                                 **{k: {"string_value": v} for k, v in (parameters or {}).items()}}}
        model = module.TritonPythonModel()
        made.append(model)
        model.initialize({"model_config": json.dumps(config), "model_repository": str(repo),
                          "model_version": "1", "model_name": "m"})
        return model

    make.model_dir = model_dir
    yield make
    for model in made:
        if getattr(model, "engine", None) is not None:
            model.finalize()
    _purge_vllm()


def run(model, *requests, timeout=10.0):
    model.execute(list(requests))
    deadline = time.monotonic() + timeout
    while not all(r.sender.done for r in requests):
        assert time.monotonic() < deadline, [r.sender.sent for r in requests]
        time.sleep(0.005)
    return requests


def _metrics():
    return {f.name: f for f in MetricFamily.created}


# -- tests ---------------------------------------------------------------------------------------
def test_generate_returns_the_prompt_and_the_text_in_one_final_response(backend):
    model = backend()
    (req,) = run(model, Request("hello world", parameters={"max_tokens": 4}))
    assert len(req.sender.sent) == 1 and req.sender.sent[0][1] == FINAL
    (text,) = req.sender.texts()
    assert text.startswith("hello world ") and len(text.split()) == 2 + 4


def test_exclude_input_in_output_leaves_only_the_generated_text(backend):
    model = backend()
    (a,) = run(model, Request("hello world", exclude=True, parameters={"max_tokens": 4}))
    (b,) = run(model, Request("hello world", parameters={"max_tokens": 4}))
    assert b.sender.texts() == ["hello world" + a.sender.texts()[0]]


def test_streaming_sends_the_pieces_then_final_and_they_add_up(backend):
    model = backend()
    (streamed,) = run(model, Request("a b c", stream=True, sampling={"max_tokens": 6}))
    (whole,) = run(model, Request("a b c", exclude=True, sampling={"max_tokens": 6}))
    flags = [f for _, f in streamed.sender.sent]
    assert len(flags) >= 5 and flags[-1] == FINAL and not any(flags[:-1])
    assert "".join(streamed.sender.texts()) == whole.sender.texts()[0]


def test_sampling_parameters_input_overrides_request_parameters_and_strings_are_coerced(backend):
    model = backend()
    (req,) = run(model, Request("x", exclude=True, parameters={"max_tokens": 9},
                                sampling={"max_tokens": "3", "ignore_eos": "true", "temperature": "0"}))
    assert len(req.sender.texts()[0].split()) == 3


def test_an_unknown_sampling_key_is_a_request_error_and_the_model_keeps_serving(backend):
    model = backend()
    (bad,) = run(model, Request("x", parameters={"max_tokenz": 3}))
    err = bad.sender.error()
    assert err.code() == TritonError.INVALID_ARG and "'max_tokenz'" in err.message() and "max_tokens" in err.message()
    (wrong,) = run(model, Request("x", sampling={"temperature": -1}))
    assert "temperature must be non-negative" in wrong.sender.error().message()
    (typed,) = run(model, Request("x", sampling={"max_tokens": "many"}))
    assert "'max_tokens'" in typed.sender.error().message()
    (notjson,) = run(model, Request("x", sampling="not an object"))
    assert notjson.sender.error().code() == TritonError.INVALID_ARG
    (good,) = run(model, Request("x", parameters={"max_tokens": 2}))
    assert good.sender.error() is None and good.sender.texts()


def test_a_client_that_went_away_is_aborted_in_the_engine(backend):
    model = backend(env={"TRITONOPS_LAB_TOKENS_PER_S": "50"})
    (req,) = run(model, Request("x", stream=True, sampling={"max_tokens": 200}, cancel_after=2))
    assert req.sender.error().code() == TritonError.CANCELLED
    # noticed by the client watch within a sweep (CANCEL_POLL_S, 0.5 s = 25 tokens here), not per token
    assert 2 <= len(req.sender.texts()) <= 2 + 2 * 25
    assert model.engine.lab_stats["requests_aborted"] == 1
    assert any("aborted in the engine" in m for _, m in Logger.lines)


def test_an_engine_error_reaches_the_client_as_a_triton_error(backend):
    model = backend()
    (req,) = run(model, Request("boom __lab_engine_error__", stream=True, sampling={"max_tokens": 8}))
    err = req.sender.error()
    assert err.code() == TritonError.INTERNAL and "injected failure" in err.message()
    (after,) = run(model, Request("fine", parameters={"max_tokens": 2}))
    assert after.sender.texts()


def test_metrics_use_vllm_names_and_count_tokens(backend):
    model = backend()
    run(model, Request("one two three", parameters={"max_tokens": 5}),
        Request("four five", stream=True, parameters={"max_tokens": 3}))
    m = _metrics()
    model.metrics.close()  # drains the update thread, then lets go of the metrics and families
    assert m["vllm:prompt_tokens_total"].metrics[0].value == 5
    assert m["vllm:generation_tokens_total"].metrics[0].value == 8
    assert m["vllm:prompt_tokens_total"].metrics[0].labels == {"model": "m", "version": "1"}
    assert len(m["vllm:time_to_first_token_seconds"].metrics[0].observed) == 2
    assert len(m["vllm:e2e_request_latency_seconds"].metrics[0].observed) == 2
    assert m["vllm:request_success_total"].metrics[0].labels["finished_reason"] == "length"
    assert m["vllm:num_requests_running"].metrics[0].value == 0
    assert not model.metrics.families and not model.metrics.metrics
    model.metrics = None  # closed above


def test_the_prefix_caches_hit_rate_is_counted_in_tokens_under_vllms_names(backend):
    """Issue #44: queries are the prompts' tokens, hits the tokens the engine found cached (num_cached_tokens);
    the stand-in's cache holds a prompt's full 16-token blocks, never its last token."""
    model = backend()
    prompt = " ".join(f"w{i}" for i in range(60))
    run(model, Request(prompt, parameters={"max_tokens": 2}))
    run(model, Request(prompt, parameters={"max_tokens": 2}), Request("a different prompt", parameters={"max_tokens": 2}))
    m = _metrics()
    model.metrics.close()
    prompt_tokens = model.engine.lab_stats["prompt_tokens"]
    cached = model.engine.lab_stats["prefix_cache_hits"]
    assert m["vllm:prefix_cache_queries_total"].metrics[0].value == prompt_tokens
    assert m["vllm:prefix_cache_hits_total"].metrics[0].value == cached
    single = len(model.engine._core.tokenizer.encode(prompt))
    assert cached == (single - 1) // 16 * 16 and cached >= 48, (single, cached)
    model.metrics = None


@pytest.mark.parametrize("version, profile, reported", [
    ("0.10.2", "2080ti", True),   # V0 engine: its add_logger
    ("0.11.0", "2080ti", True),   # V1-only version: AsyncLLM's stat_loggers
    ("0.10.2", "a100x4", False),  # V1 chosen by 0.10's AsyncLLMEngine: V0 would read stat_loggers as a mapping
])
def test_the_engines_kv_cache_usage_is_reported_under_both_names(backend, version, profile, reported):
    model = backend(version=version, profile=profile)
    run(model, Request("one two three", parameters={"max_tokens": 6}))
    m = _metrics()
    deadline = time.monotonic() + 5  # the engine frees the request's blocks just after its last output
    while reported and time.monotonic() < deadline and getattr(m["vllm:kv_cache_usage_perc"].metrics[0], "history",
                                                              [None])[-1] != 0:
        time.sleep(0.05)
    model.metrics.close()
    model.metrics = None
    for name in ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"):
        history = getattr(m[name].metrics[0], "history", [])
        if reported:
            assert history and max(history) > 0 and history[-1] == 0, (name, history)  # held, then freed
            assert all(0 <= value <= 1 for value in history)
        else:
            assert history == []


def test_no_metrics_without_report_custom_metrics(backend):
    model = backend(metrics=False)
    run(model, Request("x", parameters={"max_tokens": 2}))
    assert model.metrics is None and not _metrics()


@pytest.mark.parametrize("version, profile, engine_class, kind", [
    ("0.10.2", "2080ti", "vllm.engine.async_llm_engine.AsyncLLMEngine", "V0"),  # CC 7.5: 0.10 falls back to V0
    ("0.10.2", "a100x4", "vllm.v1.engine.async_llm.AsyncLLM", "V1"),
    ("0.11.0", "2080ti", "vllm.v1.engine.async_llm.AsyncLLM", "V1"),  # AsyncLLMEngine is only an alias
    ("0.6.3", "a100x4", "vllm.engine.async_llm_engine.AsyncLLMEngine", "V0"),  # no vllm.v1 at all
])
def test_the_engine_is_found_by_import_and_serves(backend, version, profile, engine_class, kind):
    model = backend(version=version, profile=profile)
    engine = type(model.engine)
    assert f"{engine.__module__}.{engine.__qualname__}" == engine_class and model.kind == kind
    (req,) = run(model, Request("x", stream=True, parameters={"max_tokens": 3}))
    assert len("".join(req.sender.texts()).split()) == 3


def test_vllm_use_v1_0_picks_v0_where_the_version_has_it(backend):
    model = backend(profile="a100x4", env={"VLLM_USE_V1": "0"})
    assert model.kind == "V0"


def test_an_unknown_engine_argument_fails_initialize_with_vllms_type_error(backend):
    with pytest.raises(TypeError, match=r"__init__\(\) got an unexpected keyword argument 'disable_log_requests'"):
        backend(model_json={"model": str(backend.model_dir), "disable_log_requests": True})


def test_a_context_larger_than_the_kv_cache_fails_initialize_with_vllms_message(backend):
    with pytest.raises(ValueError, match=r"The model's max seq len \(2048\) is larger than the maximum number of "
                                         r"tokens that can be stored in KV cache \(128\)"):
        backend(model_json={"model": str(backend.model_dir), "num_gpu_blocks_override": 8})


def test_finalize_stops_the_engine_and_the_loop(backend):
    model = backend()
    engine = model.engine
    model.finalize()
    assert not engine.is_running and not model._thread.is_alive()
    assert any("engine stopped (shutdown_background_loop)" in m for _, m in Logger.lines)


def test_auto_complete_declares_the_inputs_outputs_and_decoupled_policy(backend):
    model = backend()

    class Config:
        def __init__(self, batch=None):
            self.inputs, self.outputs, self.policy, self.batch = [], [], None, batch

        def as_dict(self):
            return {"input": [{"name": "text_input"}], **({"max_batch_size": self.batch} if self.batch else {})}

        def add_input(self, spec):
            self.inputs.append(spec)

        def add_output(self, spec):
            self.outputs.append(spec)

        def set_max_batch_size(self, n):
            self.batch = n

        def set_model_transaction_policy(self, policy):
            self.policy = policy

    config = type(model).auto_complete_config(Config())
    assert [i["name"] for i in config.inputs] == ["stream", "sampling_parameters", "exclude_input_in_output",
                                                  "return_num_input_tokens", "return_num_output_tokens",
                                                  "return_logprobs"]  # text_input was in the file already
    assert config.outputs[0] == {"name": "text_output", "data_type": "TYPE_STRING", "dims": [-1]}
    # what the rendered config.pbtxt declares, the same (so the file and the backend never disagree)
    assert [(i["name"], i["data_type"], tuple(i["dims"]), i["optional"]) for i in config.inputs] == \
        [i for i in config_pbtxt.INPUTS if i[0] != "text_input"]
    assert [(o["name"], o["data_type"], tuple(o["dims"])) for o in config.outputs] == list(config_pbtxt.OUTPUTS)
    assert config.policy == {"decoupled": True} and config.batch == 0
    batched = type(model).auto_complete_config(Config(batch=256))  # dynamic batching asked for: kept
    assert batched.batch == 256 and batched.policy == {"decoupled": True}


def test_health_check_refuses_requests_once_the_engine_died_and_unloads_the_model(backend):
    model = backend(health_check=True)
    (ok,) = run(model, Request("x", parameters={"max_tokens": 2}))
    assert ok.sender.texts()
    model.engine._core.shutdown("the engine process died")
    (refused,) = run(model, Request("x", parameters={"max_tokens": 2}))
    err = refused.sender.error()
    assert err.code() == TritonError.UNAVAILABLE and err.message() == "Model is unavailable due to unhealthy vLLM engine"
    assert sys.modules["triton_python_backend_utils"].unloaded == ["m"]


def test_without_the_health_check_a_dead_engine_is_an_engine_error_per_request(backend):
    model = backend()
    model.engine._core.shutdown("the engine process died")
    (req,) = run(model, Request("x", parameters={"max_tokens": 2}))
    err = req.sender.error()
    assert err.code() == TritonError.INTERNAL and "EngineDeadError: the engine process died" in err.message()


def test_a_queued_request_whose_client_left_is_aborted_before_its_first_output(backend):
    model = backend(model_json={"model": str(backend.model_dir), "max_num_seqs": 1},
                    env={"TRITONOPS_LAB_TOKENS_PER_S": "20"})
    first = Request("first", stream=True, sampling={"max_tokens": 40})  # ~2 s, holds the only slot
    queued = Request("second", stream=True, sampling={"max_tokens": 40}, gone_after_s=0.3)
    model.execute([first])
    started = time.monotonic()
    run(model, queued, timeout=5)
    assert time.monotonic() - started < 1.9  # before the first request let go of the slot
    assert queued.sender.error().code() == TritonError.CANCELLED and not queued.sender.texts()
    assert model.engine.lab_stats["requests_aborted"] == 1
    _until(lambda: first.sender.done, timeout=10)  # (executing it again would start a second generation)
    assert first.sender.error() is None and len("".join(first.sender.texts()).split()) == 40


def test_the_v1_kv_logger_takes_any_call_a_newer_vllm_makes(backend):
    model = backend(version="0.11.0")
    factory = type(model).initialize.__globals__["v1_kv_logger"](model.kv_sink)
    logger = factory(object(), 3)
    logger.record(types.SimpleNamespace(kv_cache_usage=0.25), None, None, 3)  # 0.11+: mm_cache_stats too
    logger.record_sleep_state(1, 1)  # a method this backend never heard of: a no-op
    logger.log_engine_initialized()
    model.metrics.close()
    assert _metrics()["vllm:kv_cache_usage_perc"].metrics[0].value == 0.25
    model.metrics = None


def _until(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.002)


def test_a_sender_that_keeps_up_gets_every_piece_at_once(backend):
    model = backend()
    sender = Sender()
    box = model.pump.open(sender, on_gone=lambda: None)
    for i, piece in enumerate(("one", " two", " three")):  # each posted once the previous one went out
        model.pump.post(box, [piece], final=piece == " three")
        _until(lambda: len(sender.sent) == i + 1)  # sent on its own: nothing waits for more text
    assert sender.texts() == ["one", " two", " three"] and [f for _, f in sender.sent] == [0, 0, FINAL]


def test_pieces_that_arrive_during_a_slow_send_go_together_in_the_next_one_in_order(backend):
    model = backend(env={"TRITONOPS_LAB_TOKENS_PER_S": "2000"})
    (slow,) = run(model, Request("slow client", stream=True, sampling={"max_tokens": 200}, send_s=0.02))
    (whole,) = run(model, Request("slow client", exclude=True, sampling={"max_tokens": 200}))
    flags = [f for _, f in slow.sender.sent]
    assert flags[-1] == FINAL and not any(flags[:-1])
    assert len(flags) < 50  # 200 tokens in 0.1 s, a send takes 0.02 s: merged, not queued one by one
    assert "".join(slow.sender.texts()) == whole.sender.texts()[0]  # nothing lost, nothing reordered


def test_the_engines_loop_never_waits_on_triton_and_cancellation_is_not_asked_per_token(backend):
    model = backend(env={"TRITONOPS_LAB_TOKENS_PER_S": "400"})
    requests = [Request(f"many {i}", stream=True, sampling={"max_tokens": 200}) for i in range(8)]
    started = time.monotonic()
    run(model, *requests)
    took = time.monotonic() - started
    threads = set().union(*(r.sender.threads for r in requests))
    assert "vllm-backend-loop" not in threads and threads  # sent and asked from the backend's own threads
    sweeps = took / 0.5 + 1
    for r in requests:  # 200 tokens each, 0.5 s between questions: a few, not 200
        assert len("".join(r.sender.texts()).split()) == 200, r.sender.texts()
        assert r.sender.cancel_checks <= sweeps, (r.sender.cancel_checks, took)


def test_the_number_of_sender_threads_is_a_config_parameter(backend):
    model = backend(parameters={"SENDER_THREADS": "2"})
    assert len(model.pump._threads) == 2
    (req,) = run(model, Request("x", parameters={"max_tokens": 2}))
    assert req.sender.texts()


def test_trace_file_records_each_requests_moments_in_order_once_its_final_response_is_sent(backend, tmp_path):
    trace = tmp_path / "trace.jsonl"
    model = backend(parameters={"TRACE_FILE": str(trace)})
    before = time.monotonic()
    requests = [Request(f"t {i}", stream=True, sampling={"max_tokens": 5}) for i in range(3)]
    run(model, *requests)
    (failed,) = run(model, Request("bad", sampling={"no_such_key": 1}))  # refused before it reached the engine
    model.finalize()
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    refused = [line for line in lines if line[1] is None]
    assert len(lines) == 4 and failed.sender.sent and len(refused) == 1  # the refused one never reached the engine
    executed, _, first_out, last_out, first_sent, final_sent, prompt = refused[0]
    assert first_out is None and last_out is None and prompt is None and executed <= first_sent == final_sent
    served = [m for m in lines if m[1] is not None]
    assert sorted(m[6] for m in served) == sorted(hashlib.sha256(f"t {i}".encode()).hexdigest()[:12] for i in range(3))
    for executed, handler, first_out, last_out, first_sent, final_sent, _ in served:
        assert before <= executed <= handler <= first_out <= last_out <= final_sent <= time.monotonic()
        assert first_out <= first_sent <= final_sent


def test_no_trace_is_kept_without_trace_file(backend):
    model = backend()
    (req,) = run(model, Request("x", parameters={"max_tokens": 2}))
    assert model.trace is None and req.sender.texts() and model.pump.trace is None


def test_whether_a_client_left_is_never_asked_during_a_send_or_after_the_final_one(backend):
    model = backend(env={"TRITONOPS_LAB_TOKENS_PER_S": "1000"})
    model.pump.poll_s = 0.001  # the watch sweeps all the time (once its first 0.5 s wait is over)
    time.sleep(0.6)
    # streams of 0.24 s each, so the sweeps have time to ask even when a busy machine starves the watch thread
    # (at 60 tokens CI machines saw 16 checks: one per request)
    requests = [Request(f"race {i}", stream=True, sampling={"max_tokens": 240}, send_s=0.001) for i in range(16)]
    run(model, *requests, timeout=30)
    time.sleep(0.05)  # sweeps after the last final response
    assert sum(r.sender.cancel_checks for r in requests) > 16  # asked a lot ...
    assert [r.sender.unsafe_checks for r in requests] == [0] * 16  # ... never at a moment that crashes Triton
    assert all(len("".join(r.sender.texts()).split()) == 240 for r in requests)


def test_first_and_last_responses_go_before_the_middle_of_other_streams(backend):
    model = backend()
    pump = type(model).initialize.__globals__["ResponsePump"](1, Logger)  # one sender: a strict order
    order, gate = [], threading.Event()

    class Recorded(Sender):
        def __init__(self, name):
            super().__init__()
            self.name = name

        def send(self, response=None, flags=0):
            if self.name == "busy":
                self.entered = True
                gate.wait(5)
            order.append((self.name, response.texts()[0], flags))
            super().send(response, flags)

    a, b, busy, c = (Recorded(n) for n in ("a", "b", "busy", "c"))
    boxes = {s.name: pump.open(s, on_gone=lambda: None) for s in (a, b, busy, c)}
    for name in ("a", "b"):  # two streams under way
        pump.post(boxes[name], [f"{name}1"])
        _until(lambda: len(order) == ("a", "b").index(name) + 1)
    pump.post(boxes["busy"], ["x"])  # holds the one sender
    _until(lambda: getattr(busy, "entered", False))
    pump.post(boxes["a"], ["a2"])
    pump.post(boxes["b"], ["b2"])
    pump.post(boxes["c"], ["c1"])  # a new stream's first token
    pump.post(boxes["a"], ["a3"], final=True)  # a's end: urgent now, merged with a2
    gate.set()
    _until(lambda: len(order) == 6)
    pump.close()
    # c's first token lined up before a's and b's middle; a's end, posted last, then jumped to the front
    assert order[2:] == [("busy", "x", 0), ("a", "a2a3", FINAL), ("c", "c1", 0), ("b", "b2", 0)]


def test_metric_updates_that_queue_up_go_out_together_and_add_up(backend, monkeypatch):
    calls = []

    def slow_increment(self, v):  # each update is a round trip to tritonserver
        calls.append(v)
        time.sleep(0.02)
        self.value += v

    monkeypatch.setattr(Metric, "increment", slow_increment)
    model = backend()
    requests = [Request(f"count {i}", parameters={"max_tokens": 4}) for i in range(20)]
    run(model, *requests)
    m = _metrics()
    model.metrics.close()  # applies what is still queued
    model.metrics = None
    assert m["vllm:generation_tokens_total"].metrics[0].value == 20 * 4
    assert m["vllm:prompt_tokens_total"].metrics[0].value == 20 * 2
    assert sum(metric.value for metric in m["vllm:request_success_total"].metrics) == 20
    assert len(calls) < 3 * 20  # 20 requests x 3 counters, merged while the thread was behind


# -- prompts tokenized off the engine's loop (issue #21) -----------------------------------------
def _record_tokenizing_threads(model) -> list:
    """Every call of the stand-in engine's tokenizer, by thread name (the renderer and the engine share it)."""
    tokenizer = model.engine._core.tokenizer
    calls, encode = [], tokenizer.encode

    def recorded(text):
        calls.append(threading.current_thread().name)
        return encode(text)

    tokenizer.encode = recorded
    return calls


def test_with_tokenize_on_renderer_prompts_are_tokenized_on_vllms_renderer_threads_not_on_the_loop(backend):
    model = backend(version="0.25.0", profile="a100x4", parameters={"TOKENIZE_ON_RENDERER": "true"})
    calls = _record_tokenizing_threads(model)
    requests = [Request(f"prompt number {i} with words", stream=i % 2 == 0, parameters={"max_tokens": 3})
                for i in range(6)]
    run(model, *requests)
    assert len(calls) == 6 and all(name.startswith("lab-renderer") for name in calls), calls
    (whole,) = run(model, Request("hello world", parameters={"max_tokens": 4}))
    assert whole.sender.texts()[0].startswith("hello world ")  # the prompt's text still leads the answer
    assert any("prompts tokenized on vLLM's renderer threads" in line for _, line in Logger.lines)


def test_by_default_the_engine_tokenizes_on_its_loop_and_the_answers_are_the_same_either_way(backend):
    off = backend(version="0.25.0", profile="a100x4", parameters={"TOKENIZE_ON_RENDERER": "true"})
    (a,) = run(off, Request("the same prompt", parameters={"max_tokens": 5, "temperature": 0}))
    off.finalize()
    on = backend(version="0.25.0", profile="a100x4")
    calls = _record_tokenizing_threads(on)
    (b,) = run(on, Request("the same prompt", parameters={"max_tokens": 5, "temperature": 0}))
    assert calls == ["vllm-backend-loop"]
    assert a.sender.texts() == b.sender.texts()
    assert any("prompts tokenized by the engine" in line for _, line in Logger.lines)


def test_a_vllm_without_a_renderer_is_given_the_text_even_when_the_renderer_is_asked_for(backend):
    model = backend(version="0.11.0", profile="a100x4", parameters={"TOKENIZE_ON_RENDERER": "true"})
    calls = _record_tokenizing_threads(model)
    (req,) = run(model, Request("older engine", parameters={"max_tokens": 2}))
    assert calls == ["vllm-backend-loop"] and req.sender.texts()[0].startswith("older engine ")


# -- token counts and log probabilities, as Triton's OpenAI frontend asks for them ------------------
USAGE = ("return_num_input_tokens", "return_num_output_tokens")
PROMPT = "count  these\twords please"  # 4 tokens for the lab's whitespace tokenizer


def _counts(responses) -> list:
    return [r.output("num_output_tokens")[0] for r in responses]


def test_without_the_return_inputs_a_response_carries_only_its_text(backend):
    model = backend()
    (whole,) = run(model, Request(PROMPT, sampling={"max_tokens": 3}))
    (streamed,) = run(model, Request(PROMPT, stream=True, sampling={"max_tokens": 3}))
    assert {tuple(r.names()) for r in whole.sender.responses() + streamed.sender.responses()} == {("text_output",)}


def test_a_whole_answer_counts_the_prompts_tokens_and_every_generated_one(backend):
    model = backend()
    prompt_tokens = len(model.engine._core.tokenizer.encode(PROMPT))
    (req,) = run(model, Request(PROMPT, exclude=True, sampling={"max_tokens": 7, "ignore_eos": True}, asks=USAGE))
    (response,) = req.sender.responses()
    assert response.names() == ["text_output", "num_input_tokens", "num_output_tokens"]
    assert response.output("num_input_tokens") == [prompt_tokens] == [4]
    assert response.output("num_output_tokens") == [7] and len(response.texts()[0].split()) == 7


@pytest.mark.parametrize("version, profile", [("0.10.2", "2080ti"), ("0.10.2", "a100x4"), ("0.6.3", "a100x4")])
def test_each_streamed_response_counts_the_tokens_it_brings_and_they_add_up(backend, version, profile):
    model = backend(version=version, profile=profile)
    (req,) = run(model, Request(PROMPT, stream=True, sampling={"max_tokens": 12, "ignore_eos": True}, asks=USAGE))
    responses = req.sender.responses()
    assert len(responses) >= 2
    for r in responses:  # the frontend takes the prompt's count from any and adds up the others
        assert r.output("num_input_tokens") == [4]
        assert r.output("num_output_tokens") == [len(r.texts()[0].split())]  # its own tokens, not all so far
    assert sum(_counts(responses)) == 12


def test_pieces_merged_behind_a_slow_send_carry_their_tokens_and_logprobs_together(backend):
    model = backend()
    asks = USAGE + ("return_logprobs",)
    (slow,) = run(model, Request(PROMPT, stream=True, sampling={"max_tokens": 200, "logprobs": 1}, send_s=0.02,
                                 asks=asks))
    (whole,) = run(model, Request(PROMPT, exclude=True, sampling={"max_tokens": 200, "logprobs": 1}, asks=asks))
    responses = slow.sender.responses()
    counts = _counts(responses)
    assert len(responses) < 50 and max(counts) > 1 and sum(counts) == 200  # merged, nothing lost
    for r, n in zip(responses, counts):
        assert len(r.texts()[0].split()) == n and len(r.output("logprobs")[0]) == n
    assert [p for r in responses for p in r.output("logprobs")[0]] == whole.sender.responses()[0].output("logprobs")[0]


def test_logprobs_come_per_generated_token_with_the_engines_candidates(backend):
    model = backend()
    (req,) = run(model, Request(PROMPT, exclude=True, sampling={"max_tokens": 5, "logprobs": 2},
                                asks=("return_logprobs",)))
    (response,) = req.sender.responses()
    assert response.names() == ["text_output", "logprobs"]
    (positions,) = response.output("logprobs")
    assert len(positions) == 5
    for position, word in zip(positions, response.texts()[0].split()):
        first, second = sorted(position.values(), key=lambda c: c["rank"])
        assert (first["rank"], second["rank"]) == (1, 2) and first["logprob"] > second["logprob"]
        assert first["decoded_token"] == " " + word  # the generated token is the most likely one here


def test_logprobs_are_null_where_the_engine_was_asked_for_none(backend):
    model = backend()
    (req,) = run(model, Request(PROMPT, stream=True, sampling={"max_tokens": 3}, asks=("return_logprobs",)))
    assert {json.dumps(r.output("logprobs")) for r in req.sender.responses()} == {"[null]"}


def test_text_sent_before_an_engine_error_still_counts_its_tokens(backend):
    model = backend()
    (req,) = run(model, Request("boom __lab_engine_error__", stream=True, sampling={"max_tokens": 8}, asks=USAGE))
    responses = req.sender.responses()
    assert req.sender.error().code() == TritonError.INTERNAL and responses
    assert sum(_counts(responses)) == len("".join(req.sender.texts()).split()) >= 1


def test_cumulative_outputs_count_only_what_is_new_and_pieces_go_by_sequence_index(backend):
    model = backend()
    collector_type = type(model).initialize.__globals__["TextCollector"]
    from vllm.outputs import CompletionOutput, RequestOutput  # the stand-in's (vLLM's shapes), loaded above
    from vllm.sequence import Logprob

    def out(*completions):
        return RequestOutput("r", "p", [1, 2, 3], None, list(completions), False)

    def seq(index, text, ids):
        return CompletionOutput(index, text, list(ids), logprobs=[{t: Logprob(-0.5, 1, f" w{t}")} for t in ids])

    def picked(logprobs):
        return [[token for position in positions for token in position] if positions else positions
                for positions in logprobs]

    c = collector_type(delta=False, logprobs=True)  # versions without RequestOutputKind: all so far, every time
    assert c.add(out(seq(0, " a", [10]))) == [" a"]
    assert c.add(out(seq(0, " a b", [10, 11]), seq(1, " x", [20]))) == [" b", " x"]
    prompt, tokens, logprobs = c.take()
    assert (prompt, tokens, picked(logprobs)) == (3, [2, 1], [[10, 11], [20]])
    assert logprobs[1] == [{20: {"logprob": -0.5, "rank": 1, "decoded_token": " w20"}}]
    # one sequence's output alone (vLLM V1 streams n > 1 that way): its piece at its own index
    assert c.add(out(seq(1, " x y", [20, 21]))) == ["", " y"]
    # a token whose text is not out yet (part of a character): counted with the next take, not lost
    assert c.add(out(seq(0, " a b", [10, 11, 12]))) == ["", ""]
    prompt, tokens, logprobs = c.take()
    assert (tokens, picked(logprobs)) == ([1, 1], [[12], [21]])
    assert c.take()[1:] == ([0, 0], [None, None])
    # a position a newer vLLM's flat logprobs holds as None: an empty one, so positions still match tokens
    c.add(out(CompletionOutput(0, " a b c", [10, 11, 12, 13], logprobs=[{}, {}, {}, None])))
    assert c.take()[1:] == ([1, 0], [[{}], None])


def test_usage_of_merged_responses_adds_the_counts_and_joins_the_logprobs(backend):
    merge = type(backend()).initialize.__globals__["merge_usage"]
    assert merge(None, (3, [1], None)) == (3, [1], None) == merge((3, [1], None), None)
    assert merge((3, [2, 1], [["p1"], None]), (3, [1, 0, 4], [["p2"], ["q1"], None])) == \
        (3, [3, 1, 4], [["p1", "p2"], ["q1"], None])
    assert merge((3, [2], None), (3, [1], [["p"]])) == (3, [3], [["p"]])
