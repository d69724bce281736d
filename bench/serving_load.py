"""Closed-loop streaming load against one model, two ways, measured the same way (issue #21):

- `direct`: the vLLM engine driven in this process (`AsyncLLM`/`AsyncLLMEngine.from_engine_args` with the
  model.json tritonops rendered), every output timed as the engine hands it over: the reference;
- `triton`: `/v2/models/<m>/generate_stream` of a running tritonserver (tritonops' backend), every
  server-sent event timed as it arrives, from several client processes so the client is never the limit.

The workload: prompts of exactly PROMPT_TOKENS words of the model's stand-in word-level tokenizer (one token
each; every prompt starts differently, so no prefix-cache hits), OUTPUT_TOKENS tokens out (`ignore_eos`,
temperature 0), streamed. Per concurrency level: a warm-up round of `c` requests, then `requests` more with
`c` in flight at all times. Standard library only (runs in the stub's venv on the device and in the lab's
Triton image); no figure is printed here: `summarize` turns records into one level's figures.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import multiprocessing
import os
import random
import re
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass, field

PROMPT_TOKENS = 512
OUTPUT_TOKENS = 128
WORD = re.compile(r"^\w+$")  # one token under the Whitespace split (\w+|[^\w\s]+)


@dataclass(frozen=True)
class Workload:
    levels: tuple = (1, 16, 64, 128, 256, 512)
    prompt_tokens: int = PROMPT_TOKENS
    output_tokens: int = OUTPUT_TOKENS
    rounds: int = 3          # timed requests per level = max(min_requests, rounds * c)
    min_requests: int = 16
    seed: int = 0
    think_ms: float = 0.0    # a closed-loop client waits this long after a request ends before its next one

    def requests(self, concurrency: int) -> int:
        return max(self.min_requests, self.rounds * concurrency)


@dataclass
class Record:
    """One request as its client saw it (monotonic seconds)."""
    start: float
    end: float = 0.0
    first: float | None = None      # first event that carried text
    last: float | None = None       # last event that carried text
    events: int = 0                 # stream events that carried text
    tokens: int = 0
    prompt_tokens: int | None = None  # where the path can tell (direct)
    error: str | None = None
    key: str | None = None          # prompt_key(text): finds the request in a backend trace
    done: float | None = None       # direct: when vLLM's output handler handed over the final output
    ready: float | None = None      # when its closed-loop client could send it: the worker's previous request
                                    # done (direct) or ended (HTTP), or the round's start for its first request


@dataclass
class Level:
    concurrency: int
    records: list = field(default_factory=list)
    window: tuple = (0.0, 0.0)
    gpu_util: float | None = None
    counters: dict = field(default_factory=dict)   # triton: :8002 deltas over warm-up + timed requests
    sent: int = 0                                  # requests sent, warm-up included
    began: float = 0.0                             # monotonic, as the warm-up was sent


# -- prompts ------------------------------------------------------------------------------------
def vocabulary(tokenizer_dir: str) -> list:
    """The alphabetic words of a word-level tokenizer.json (each one token under its Whitespace split)."""
    with open(os.path.join(tokenizer_dir, "tokenizer.json")) as f:
        vocab = json.load(f)["model"]["vocab"]
    return sorted(w for w in vocab if WORD.match(w))


def prompts(words: list, count: int, length: int, seed: int) -> list:
    rng = random.Random(seed)
    return [" ".join(rng.choice(words) for _ in range(length)) for _ in range(count)]


# -- the figures ----------------------------------------------------------------------------------
def prompt_key(text: str) -> str:
    """What the backend's trace (TRACE_FILE) records of a prompt: the first 12 hex digits of its SHA-256."""
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:12]


def percentile(values, q: float):
    ordered = sorted(values)
    if not ordered:
        return None
    index = min(len(ordered) - 1, max(0, int(round(q / 100 * (len(ordered) - 1)))))
    return ordered[index]


def summarize(level: Level) -> dict:
    """One level's figures from its timed records. Inter-token latency as aiperf and genai-perf define it:
    per request (last - first token) / (tokens - 1)."""
    ok = [r for r in level.records if r.error is None]
    failed = [r for r in level.records if r.error is not None]
    begin, end = level.window
    tokens = sum(r.tokens for r in ok)
    ttft = [r.first - r.start for r in ok if r.first is not None]
    ttft_ready = [r.first - r.ready for r in ok if r.first is not None and r.ready is not None]
    itl = [(r.last - r.first) / (r.tokens - 1) for r in ok if r.first is not None and r.tokens > 1]
    e2e = [r.end - r.start for r in ok]
    ms = lambda v: None if v is None else round(v * 1000, 2)  # noqa: E731
    return {
        "concurrency": level.concurrency, "requests_ok": len(ok), "requests_failed": len(failed),
        "errors": sorted({r.error for r in failed})[:5],
        "output_tokens": tokens, "seconds": round(end - begin, 3), "window": [begin, end],
        "output_tok_s": round(tokens / (end - begin), 1) if end > begin else None,
        "ttft_p50_ms": ms(percentile(ttft, 50)), "ttft_p99_ms": ms(percentile(ttft, 99)),
        # the first token from when the client could send the request (Record.ready)
        "ttft_ready_p50_ms": ms(percentile(ttft_ready, 50)), "ttft_ready_p99_ms": ms(percentile(ttft_ready, 99)),
        "itl_p50_ms": ms(percentile(itl, 50)), "itl_p99_ms": ms(percentile(itl, 99)),
        "e2e_p50_ms": ms(percentile(e2e, 50)),
        "events_per_request": round(sum(r.events for r in ok) / len(ok), 1) if ok else None,
        "tokens_per_request": sorted({r.tokens for r in ok}),
        "prompt_tokens": sorted({r.prompt_tokens for r in ok if r.prompt_tokens is not None}),
        "gpu_util_pct": level.gpu_util, "counters": level.counters, "sent": level.sent, "began": level.began,
        # each timed request: [start, first, last, end, tokens, prompt key, ready] (monotonic s; first/last None
        # without text)
        "records": [[round(r.start, 6), r.first and round(r.first, 6), r.last and round(r.last, 6),
                     round(r.end, 6), r.tokens, r.key, r.ready and round(r.ready, 6)] for r in level.records],
    }


# -- GPU utilisation while a level runs ------------------------------------------------------------
class GpuSampler:
    """The mean of NVML's utilisation every 0.1 s between start() and stop(); None without NVML."""

    def __init__(self):
        self.nvml = self.handle = None
        for name in ("pynvml", "vllm.third_party.pynvml"):
            try:
                module = __import__(name, fromlist=["nvmlInit"])
                module.nvmlInit()
                self.nvml, self.handle = module, module.nvmlDeviceGetHandleByIndex(0)
                break
            except Exception:
                continue
        self.samples, self._stop, self._thread = [], threading.Event(), None

    def start(self):
        self.samples, self._stop = [], threading.Event()
        if self.nvml is not None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()

    def _run(self):
        while not self._stop.wait(0.1):
            try:
                self.samples.append(self.nvml.nvmlDeviceGetUtilizationRates(self.handle).gpu)
            except Exception:
                return

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        return round(sum(self.samples) / len(self.samples), 1) if self.samples else None


# -- closed loop ------------------------------------------------------------------------------------
async def closed_loop(one, texts: list, concurrency: int, think_s: float = 0.0) -> list:
    """`concurrency` workers take the texts in order until none is left; each `await one(text)` -> Record, its
    `ready` the moment the worker could have sent it: the round's start, then its previous request's end as
    the engine handed it over (`done`, direct) or as its last event arrived (HTTP), plus `think_s`: how long a
    client waits before its next request (an in-process client sends at once; one over HTTP needs the answer to
    travel back and the next request to travel in, which this lets the direct path imitate)."""
    queue = list(reversed(texts))
    records = []
    begun = time.monotonic()

    async def worker():
        ready = begun
        while queue:
            text = queue.pop()
            if ready > begun and think_s > 0:
                await asyncio.sleep(max(ready + think_s - time.monotonic(), 0.0))
            record = await one(text)
            record.ready = ready if ready == begun else ready + think_s
            ready = record.done if record.done is not None else record.end
            records.append(record)

    await asyncio.gather(*(worker() for _ in range(min(concurrency, len(texts)))))
    return records


# -- direct: the engine in this process --------------------------------------------------------------
def engine_config(version_dir: str) -> dict:
    """model.json as the backend reads it: a relative model or tokenizer folder is the version folder's."""
    with open(os.path.join(version_dir, "model.json")) as f:
        config = json.load(f)
    for key in ("model", "tokenizer"):
        value = config.get(key)
        if isinstance(value, str) and not os.path.isabs(value) and os.path.isdir(os.path.join(version_dir, value)):
            config[key] = os.path.join(version_dir, value)
    return config


def hook_final_outputs(handed: dict):
    """Times, per request id, the moment vLLM's output handler puts a request's final output in its collector
    (vllm.v1.engine.output_processor.RequestOutputCollector.put): when an in-process client is told it is done,
    before its coroutine gets the loop back. Returns the undo (a no-op where that class is not there)."""
    try:
        from vllm.v1.engine.output_processor import RequestOutputCollector
    except ImportError:
        return lambda: None
    original = RequestOutputCollector.put

    def put(self, output, *args, **kwargs):
        if getattr(output, "finished", False):
            handed.setdefault(getattr(output, "request_id", None), time.monotonic())
        return original(self, output, *args, **kwargs)

    RequestOutputCollector.put = put
    return lambda: setattr(RequestOutputCollector, "put", original)


class DirectEngine:
    """vLLM's async engine in this process, built from the model.json tritonops rendered; `one(text)` streams
    one request through it and times every output as the engine hands it over."""

    def __init__(self, version_dir: str, workload: Workload, say=print):
        self.version_dir, self.workload, self.say = version_dir, workload, say

    async def __aenter__(self) -> "DirectEngine":
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.sampling_params import RequestOutputKind, SamplingParams
        try:
            from vllm.v1.engine.async_llm import AsyncLLM as Engine
        except ImportError:
            from vllm.engine.async_llm_engine import AsyncLLMEngine as Engine

        config = engine_config(self.version_dir)
        self.words = vocabulary(config["tokenizer"])
        started = time.monotonic()
        self.engine = Engine.from_engine_args(AsyncEngineArgs(**config))
        self.say(f"direct: {type(self.engine).__module__}.{type(self.engine).__name__} ready in "
                 f"{time.monotonic() - started:.1f} s")
        self.sampling = SamplingParams(max_tokens=self.workload.output_tokens, ignore_eos=True, temperature=0.0,
                                       output_kind=RequestOutputKind.DELTA)
        self.counter = iter(range(10 ** 9))
        self.handed, self.timed_done = {}, 0
        self.unhook = hook_final_outputs(self.handed)
        return self

    async def __aexit__(self, *exc) -> None:
        self.unhook()
        self.say(f"direct: {self.timed_done} requests' final outputs timed as vLLM's output handler put them")
        shutdown = getattr(self.engine, "shutdown", None) or getattr(self.engine, "shutdown_background_loop", None)
        if shutdown is not None:
            result = shutdown()
            if asyncio.iscoroutine(result):
                await result

    async def one(self, text: str) -> Record:
        record = Record(start=time.monotonic())
        request_id = f"direct-{next(self.counter)}"
        try:
            async for output in self.engine.generate(text, self.sampling, request_id):
                now = time.monotonic()
                if record.prompt_tokens is None and output.prompt_token_ids is not None:
                    record.prompt_tokens = len(output.prompt_token_ids)
                got = sum(len(c.token_ids or ()) for c in output.outputs)
                if got:
                    record.tokens += got
                    record.events += 1
                    record.first = record.first or now
                    record.last = now
        except Exception as err:
            record.error = f"{type(err).__name__}: {err}"[:200]
        record.end = time.monotonic()
        record.done = self.handed.pop(request_id, None)
        self.timed_done += record.done is not None
        return record


async def run_direct(version_dir: str, workload: Workload, say=print) -> list:
    async with DirectEngine(version_dir, workload, say) as engine:
        think_s = workload.think_ms / 1000
        return await run_levels(lambda texts, c: closed_loop(engine.one, texts, c, think_s), engine.words, workload,
                                say, "direct", OwnLoopLag())


# -- replay: the engine alone, fed the arrivals another run's engine saw ------------------------------
async def open_loop(one, texts: list, offsets: list) -> list:
    """Each text sent `offsets[i]` seconds after the first, whatever is in flight; records in the texts' order."""
    begin = time.monotonic()

    async def at(text, offset):
        await asyncio.sleep(max(0.0, begin + offset - time.monotonic()))
        return await one(text)

    return list(await asyncio.gather(*(at(t, o) for t, o in zip(texts, offsets))))


async def replay_levels(engine: DirectEngine, schedules: list, workload: Workload, say=print) -> list:
    """Per level (concurrency, offsets): every request of that level of another run (warm-up included: the first
    `concurrency` offsets) sent at the same offsets; the rest are the level's timed records."""
    levels, seed = [], workload.seed + 1000  # prompts of their own: no prefix cache from an earlier run
    for concurrency, offsets in schedules:
        texts = prompts(engine.words, len(offsets), workload.prompt_tokens, seed)
        seed += 1
        level = Level(concurrency, sent=len(texts), began=time.monotonic())
        watch = OwnLoopLag()
        watch.timed()
        records = await open_loop(engine.one, texts, offsets)
        level.counters = watch.after()
        level.records = records[concurrency:]
        level.window = (min(r.start for r in level.records), max(r.end for r in level.records))
        levels.append(level)
        figures = summarize(level)
        say(f"replay c={concurrency}: {figures['requests_ok']} ok {figures['requests_failed']} failed, "
            f"{figures['output_tok_s']} tok/s, TTFT p50 {figures['ttft_p50_ms']} ms, "
            f"ITL p50 {figures['itl_p50_ms']} ms, loop lag {figures['counters']}")
    return levels


def trace_by_level(marks: list, levels: list) -> list:
    """A backend trace's requests (RequestTrace lines) per level of the run that made it ({"concurrency",
    "began"} each, in order): those whose handler started from the level's warm-up until the next level's,
    ordered by that start. Pure."""
    bounds = [level["began"] for level in levels[1:]] + [float("inf")]
    out = []
    for level, until in zip(levels, bounds):
        out.append((level["concurrency"], sorted((m for m in marks if m[1] is not None and
                                                  level["began"] <= m[1] < until), key=lambda m: m[1])))
    return out


def joined_pieces(marks: list, records: list) -> dict:
    """Each timed client record (with its prompt key) joined to its request in the backend's trace: how its
    first token's time split, in seconds per request: client sent -> execute (HTTP, Triton's queue), execute ->
    handler on the engine's loop, handler -> the engine's first output, that output -> its response sent, sent ->
    the client's first event (Triton's HTTP out). Pure."""
    by_key = {m[6]: m for m in marks if len(m) > 6 and m[6] is not None}
    pieces = {name: [] for name in ("in", "to_loop", "engine", "out", "http_out")}
    for start, first, _last, _end, _tokens, key in (r[:6] for r in records if len(r) > 5):
        m = by_key.get(key)
        if m is None or first is None or None in m[:3] or m[4] is None:
            continue
        for name, value in zip(pieces, (m[0] - start, m[1] - m[0], m[2] - m[1], m[4] - m[2], first - m[4])):
            pieces[name].append(value)
    return pieces


def replay_schedules(by_level: list) -> list:
    """(concurrency, offsets from the level's first handler start) per level. Pure."""
    return [(c, [round(m[1] - marks[0][1], 6) for m in marks]) for c, marks in by_level if marks]


async def loop_lag(lags: list, tick_s: float = 0.05) -> None:
    """The worst lateness of a `tick_s` timer on this event loop, each second, into `lags`."""
    worst, window_end = 0.0, time.monotonic() + 1.0
    while True:
        asked = time.monotonic()
        await asyncio.sleep(tick_s)
        now = time.monotonic()
        worst = max(worst, now - asked - tick_s)
        if now >= window_end:
            lags.append(worst)
            worst, window_end = 0.0, now + 1.0


def lag_figures(lags: list) -> dict:
    """The worst-of-each-second lags of a level as its median and maximum, in ms (nothing when none was read)."""
    if not lags:
        return {}
    return {"loop_lag_ms_median_max": [round(sorted(lags)[len(lags) // 2] * 1000, 1), round(max(lags) * 1000, 1)]}


class OwnLoopLag:
    """What the direct path measures around a level: this process's loop lag, as the backend measures the
    engine's loop under Triton (tritonops_backend_loop_lag_seconds)."""

    def before(self) -> None:
        pass

    def timed(self) -> None:
        self.lags = []
        self.task = asyncio.ensure_future(loop_lag(self.lags))

    def after(self) -> dict:
        self.task.cancel()
        return lag_figures(self.lags)


async def run_levels(batch, words: list, workload: Workload, say, label: str, watch) -> list:
    """Each level: a warm-up round, then the timed requests, `c` in flight (`await batch(texts, c)` -> records);
    `watch` is told before the warm-up and the timed part, and gives the level's counters after."""
    levels, sampler = [], GpuSampler()
    seed = workload.seed
    for concurrency in workload.levels:
        count = workload.requests(concurrency)
        texts = prompts(words, concurrency + count, workload.prompt_tokens, seed)
        seed += 1
        level = Level(concurrency, sent=len(texts), began=time.monotonic())
        watch.before()
        await batch(texts[:concurrency], concurrency)  # warm-up round, not timed
        sampler.start()
        watch.timed()
        level.records = await batch(texts[concurrency:], concurrency)
        level.window = (min(r.start for r in level.records), max(r.end for r in level.records))
        level.gpu_util = sampler.stop()
        level.counters = watch.after()
        levels.append(level)
        figures = summarize(level)
        say(f"{label} c={concurrency}: {figures['requests_ok']} ok {figures['requests_failed']} failed, "
            f"{figures['output_tok_s']} tok/s, TTFT p50 {figures['ttft_p50_ms']} ms, ITL p50 {figures['itl_p50_ms']} ms, "
            f"{figures['events_per_request']} events/request, GPU {figures['gpu_util_pct']} %, "
            f"counters {figures['counters']}")
    return levels


# -- triton: generate_stream over HTTP, from several processes ----------------------------------------
async def stream_once(host: str, port: int, path: str, body: bytes, conn: dict) -> Record:
    """One POST to generate_stream on a kept-alive connection (conn holds it); each SSE `data:` event timed."""
    record = Record(start=time.monotonic())
    try:
        if conn.get("writer") is None:
            conn["reader"], conn["writer"] = await asyncio.open_connection(host, port)
        reader, writer = conn["reader"], conn["writer"]
        writer.write(b"POST " + path.encode() + b" HTTP/1.1\r\nHost: " + host.encode() +
                     b"\r\nContent-Type: application/json\r\nContent-Length: " + str(len(body)).encode() +
                     b"\r\n\r\n" + body)
        await writer.drain()
        status = await reader.readline()
        headers = {}
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            key, _, value = line.decode("latin-1").partition(":")
            headers[key.strip().lower()] = value.strip().lower()
        if b" 200 " not in status:
            raise RuntimeError(f"HTTP {status.decode(errors='replace').strip()}")
        buffer = b""
        async for chunk in _body_chunks(reader, headers):
            buffer += chunk
            while b"\n\n" in buffer:
                event, buffer = buffer.split(b"\n\n", 1)
                now = time.monotonic()
                if not event.startswith(b"data:"):
                    continue
                payload = event[5:].strip()
                if payload == b"[DONE]":  # OpenAI's end of stream
                    continue
                data = json.loads(payload)
                if "error" in data:
                    raise RuntimeError(str(data["error"])[:200])
                if isinstance(data.get("usage"), dict):  # OpenAI's usage event (stream_options.include_usage)
                    record.prompt_tokens = data["usage"].get("prompt_tokens")
                words = len(event_text(data).split())
                if words:
                    record.tokens += words
                    record.events += 1
                    record.first = record.first or now
                    record.last = now
        if headers.get("connection") == "close":
            writer.close()
            conn["writer"] = None
    except Exception as err:
        record.error = f"{type(err).__name__}: {err}"[:200]
        if conn.get("writer") is not None:
            conn["writer"].close()
        conn["writer"] = None
    record.end = time.monotonic()
    return record


def event_text(data: dict) -> str:
    """The text one streamed event carries: Triton's `text_output`, or an OpenAI completion chunk's
    `choices[0].text` (its usage-only last chunk has no choices)."""
    if "text_output" in data:
        return str(data["text_output"])
    choices = data.get("choices") or [{}]
    return str(choices[0].get("text") or "")


async def _body_chunks(reader, headers: dict):
    if headers.get("transfer-encoding") == "chunked":
        while True:
            size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await reader.readline()
                return
            yield await reader.readexactly(size)
            await reader.readexactly(2)
    elif "content-length" in headers:
        yield await reader.readexactly(int(headers["content-length"]))
    else:
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                return
            yield chunk


def _client_process(args) -> list:
    """A client process: `streams` connections, its share of the texts, started at `go` (monotonic)."""
    host, port, path, bodies, streams, go = args
    time.sleep(max(0.0, go - time.monotonic()))

    async def main():
        conns = [{} for _ in range(streams)]
        free = list(conns)

        async def one(body):
            conn = free.pop()
            try:
                record = await stream_once(host, port, path, body, conn)
            finally:
                free.append(conn)
            sent = json.loads(body)
            record.key = prompt_key(sent.get("text_input") or sent.get("prompt"))  # after the request: not timed
            return record

        records = await closed_loop(one, bodies, streams)
        for conn in conns:
            if conn.get("writer") is not None:
                conn["writer"].close()
        return records

    return [asdict(r) for r in asyncio.run(main())]


def triton_body(text: str, workload: Workload) -> bytes:
    return json.dumps({"text_input": text, "parameters": {
        "stream": True, "max_tokens": workload.output_tokens, "ignore_eos": True, "temperature": 0}}).encode()


def openai_body(text: str, workload: Workload, model: str) -> bytes:
    """The same request as an OpenAI completion to vLLM's OpenAI server (`ignore_eos` is its own extra field)."""
    return json.dumps({"model": model, "prompt": text, "max_tokens": workload.output_tokens, "ignore_eos": True,
                       "temperature": 0, "stream": True, "stream_options": {"include_usage": True}}).encode()


def fan_out(pool, host: str, port: int, path: str, bodies: list, concurrency: int) -> list:
    """`concurrency` streams over the pool's processes (each with its slice of the streams and the bodies)."""
    procs = min(pool._processes, concurrency)  # noqa: SLF001 - the pool's size
    shares = [concurrency // procs + (1 if i < concurrency % procs else 0) for i in range(procs)]
    parts, start = [], 0
    for streams in shares:  # bodies dealt in proportion to streams
        take = round(len(bodies) * streams / concurrency)
        parts.append(bodies[start:start + take])
        start += take
    parts[-1].extend(bodies[start:])
    go = time.monotonic() + 0.2
    results = pool.map(_client_process, [(host, port, path, part, streams, go)
                                         for part, streams in zip(parts, shares) if part])
    return [Record(**r) for result in results for r in result]


def metric_values(text: str, model: str, label: str = "model") -> dict:
    """The :8002 counters the check needs, for one model (vLLM's own server labels it `model_name`)."""
    wanted = ("nv_inference_request_success", "nv_inference_request_failure", "vllm:generation_tokens_total",
              "vllm:request_success_total",
              "vllm:prompt_tokens_total", "nv_inference_queue_duration_us", "nv_inference_compute_infer_duration_us",
              "vllm:time_to_first_token_seconds_sum", "vllm:time_to_first_token_seconds_count",
              "tritonops_backend_loop_lag_seconds")
    found = {}
    for line in text.splitlines():
        for name in wanted:
            if line.startswith(name + "{") and f'{label}="{model}"' in line:
                found[name] = found.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
    return found


class ServerCounters:
    """What the Triton path measures around a level: :8002's counters from before the warm-up to after the
    timed requests (warm-up included, as `sent` counts it), and the backend's loop-lag gauge read every second
    while the timed requests run."""

    def __init__(self, metrics_url: str, model: str, label: str = "model"):
        self.metrics_url, self.model, self.label = metrics_url, model, label

    def read(self) -> dict:
        with urllib.request.urlopen(self.metrics_url, timeout=10) as reply:
            return metric_values(reply.read().decode(), self.model, self.label)

    def before(self) -> None:
        self.start = self.read()

    def timed(self) -> None:
        self.lags, self.done = [], threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while not self.done.wait(1.0):
            try:
                value = self.read().get("tritonops_backend_loop_lag_seconds")
            except OSError:
                continue
            if value is not None:
                self.lags.append(value)

    def after(self) -> dict:
        self.done.set()
        self.thread.join()
        time.sleep(1.0)  # the backend's metrics thread drains its updates
        end = self.read()
        counters = {k: end.get(k, 0.0) - self.start.get(k, 0.0) for k in end}
        counters.pop("tritonops_backend_loop_lag_seconds", None)  # a gauge: sampled instead
        return {**counters, **lag_figures(self.lags)}


def run_triton(url: str, metrics_url: str, model: str, tokenizer_dir: str, workload: Workload, processes: int,
               say=print) -> list:
    host, _, port = url.split("//", 1)[1].rstrip("/").partition(":")
    path = f"/v2/models/{model}/generate_stream"
    words = vocabulary(tokenizer_dir)
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        async def batch(texts, concurrency):
            bodies = [triton_body(t, workload) for t in texts]
            return await asyncio.get_running_loop().run_in_executor(
                None, fan_out, pool, host, int(port or 80), path, bodies, concurrency)

        return asyncio.run(run_levels(batch, words, workload, say, "triton", ServerCounters(metrics_url, model)))


def run_openai(url: str, metrics_url: str, model: str, tokenizer_dir: str, workload: Workload, processes: int,
               say=print) -> list:
    """The same closed loop against vLLM's OpenAI server: streamed `/v1/completions`, its `/metrics`."""
    host, _, port = url.split("//", 1)[1].rstrip("/").partition(":")
    words = vocabulary(tokenizer_dir)
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        async def batch(texts, concurrency):
            bodies = [openai_body(t, workload, model) for t in texts]
            return await asyncio.get_running_loop().run_in_executor(
                None, fan_out, pool, host, int(port or 80), "/v1/completions", bodies, concurrency)

        return asyncio.run(run_levels(batch, words, workload, say, "openai",
                                      ServerCounters(metrics_url, model, "model_name")))
