"""`tritonops bench` (issue #24) as data: what is benched (the door of each balancer, or every replica the current
releases placed), the workload per concurrency level, and aiperf's command line for one level. Pure.

KServe mode drives `/v2/models/<model>/generate_stream` through aiperf's `template` endpoint: a payload template
file (`text_input`, `parameters.max_tokens`, `parameters.stream`, `ignore_eos` so every request generates the
asked tokens) and the response field `text_output`. OpenAI mode (issue #23) uses aiperf's own `chat` endpoint type
(`/v1/chat/completions`, streamed): `endpoint_args` is the one place that differs, and a replica is reached on the
port its mode sends a balancer's HTTP door to (`ServingMode.http_door_role`).

Every value reaching aiperf's argv is checked here (numbers in range, paths absolute) and passed as one argument.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tritonops.errors import InputError
from tritonops.planning.door import TLS_VAR, balancers_among, door, replica_address, _address
from tritonops.planning.deployment import deployment_of
from tritonops.planning.entries import host_where
from tritonops.planning.serve_record import ServeRecord

DOOR_ADDRESS_VAR = "tritonops_door_address"  # where clients reach a balancer's door (default: its ansible_host)
MODES = ("kserve", "openai", "vllm")  # the serving modes (tritonops/modes): read from the current release
THROUGH = ("balancer", "replicas")
DEFAULT_CONCURRENCY = (1, 8, 32, 128)
DEFAULT_INPUT_TOKENS = 128
DEFAULT_OUTPUT_TOKENS = 128
DEFAULT_REQUESTS_PER_STREAM = 8  # requests per level: this many per concurrent stream (at least MIN_REQUESTS)
MIN_REQUESTS = 16
MAX_REQUESTS = 100_000
MAX_DURATION_S = 3600
REQUEST_TIMEOUT_S = 300   # one request, streaming included
GRACE_S = 30              # after --duration: answers still counted

# The body of one KServe generate_stream request; aiperf renders it with Jinja2 (autoescape: tojson keeps JSON).
KSERVE_TEMPLATE = ('{"text_input": {{ text|tojson }}, "parameters": {"max_tokens": {{ max_tokens|tojson }}, '
                   '"stream": {{ stream|tojson }}, "ignore_eos": true}}\n')
KSERVE_RESPONSE_FIELD = "text_output"


@dataclass(frozen=True)
class Endpoint:
    """One URL aiperf sends requests to: a balancer's door or one replica."""
    name: str            # "door-1" (a balancer host) or "s1-r0" (a host's replica)
    host: str            # the inventory host it belongs to
    url: str             # http://address:port
    keys_file: str | None = None  # on a balancer: the file holding its API keys (read over SSH)


@dataclass(frozen=True)
class Workload:
    model: str
    concurrency: tuple[int, ...] = DEFAULT_CONCURRENCY
    request_rate: float | None = None
    input_tokens: int = DEFAULT_INPUT_TOKENS
    output_tokens: int = DEFAULT_OUTPUT_TOKENS
    requests: int | None = None       # per level; None: DEFAULT_REQUESTS_PER_STREAM x concurrency
    duration_s: float | None = None   # per level, instead of a count
    mode: str = "kserve"
    seed: int = 0
    # the shared-prefix workload (issue #44): `tenants` prompts of `prefix_tokens` each, one of them picked at random
    # before each request's own input_tokens (aiperf's --num-prefix-prompts / --prefix-prompt-length); 0: none
    tenants: int = 0
    prefix_tokens: int = 0

    def requests_at(self, concurrency: int) -> int:
        if self.requests is not None:
            return self.requests
        return min(max(MIN_REQUESTS, DEFAULT_REQUESTS_PER_STREAM * concurrency), MAX_REQUESTS)

    def time_bound_s(self, concurrency: int) -> float:
        """The longest one level may take before tritonops stops aiperf: the duration and its grace, or
        the requests' own bound (every stream's share of them at the request timeout, at most an hour)."""
        if self.duration_s is not None:
            return self.duration_s + GRACE_S + 60
        per_stream = -(-self.requests_at(concurrency) // concurrency)
        return min(per_stream * REQUEST_TIMEOUT_S, MAX_DURATION_S) + 60


def parse_levels(text: str, where: str = "--concurrency") -> tuple[int, ...]:
    """"1,8,32" -> (1, 8, 32): whole numbers 1..4096, each once, in the order given."""
    levels: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        if not part.isdigit() or not 1 <= int(part) <= 4096:
            raise InputError(f"concurrency levels are whole numbers 1..4096 separated by commas, not {text!r}", where)
        if int(part) in levels:
            raise InputError(f"concurrency {part} is given twice", where)
        levels.append(int(part))
    return tuple(levels)


def check_workload(workload: Workload) -> Workload:
    """The workload, or an InputError naming the flag."""
    if workload.mode not in MODES:
        raise InputError(f"mode {workload.mode!r} is not a serving mode ({', '.join(MODES)})")
    if not workload.concurrency:
        raise InputError("no concurrency level", "--concurrency")
    for flag, value, low, high in (("--input-tokens", workload.input_tokens, 1, 1_000_000),
                                   ("--output-tokens", workload.output_tokens, 1, 1_000_000)):
        if not low <= value <= high:
            raise InputError(f"{value} is not between {low} and {high:,}", flag)
    if workload.requests is not None and not 1 <= workload.requests <= MAX_REQUESTS:
        raise InputError(f"{workload.requests} is not between 1 and {MAX_REQUESTS:,}", "--requests")
    if workload.duration_s is not None and not 1 <= workload.duration_s <= MAX_DURATION_S:
        raise InputError(f"{workload.duration_s:g} s is not between 1 and {MAX_DURATION_S}", "--duration")
    if workload.requests is not None and workload.duration_s is not None:
        raise InputError("give --requests or --duration, not both", "--duration")
    if (workload.tenants > 0) != (workload.prefix_tokens > 0):
        raise InputError("the shared-prefix workload needs both --tenants and --prefix-tokens",
                         "--tenants" if not workload.tenants else "--prefix-tokens")
    for flag, value, high in (("--tenants", workload.tenants, 100_000), ("--prefix-tokens", workload.prefix_tokens,
                                                                         1_000_000)):
        if not 0 <= value <= high:
            raise InputError(f"{value} is not between 1 and {high:,}", flag)
    if workload.request_rate is not None and not 0 < workload.request_rate <= 100_000:
        raise InputError(f"{workload.request_rate:g} is not a rate above 0 and at most 100,000 per second",
                         "--request-rate")
    return workload


def door_endpoints(hosts: Iterable[Any], deployment: str) -> list[Endpoint]:
    """The doors of the inventory's balancers that front `deployment` (a balancer's tritonops_deployment)."""
    found = []
    for host in balancers_among(hosts):
        if deployment_of(host)[1] != deployment:
            continue
        settings = door(host)
        value = host.vars.get(DOOR_ADDRESS_VAR) or host.vars.get("ansible_host") or host.name
        where = host_where(host, DOOR_ADDRESS_VAR) if host.vars.get(DOOR_ADDRESS_VAR) else None
        address = _address(str(value), DOOR_ADDRESS_VAR if where else "the balancer's address", where)
        scheme = "https" if host.vars.get(TLS_VAR) else "http"
        found.append(Endpoint(host.name, host.name, f"{scheme}://{_url_host(address)}:{settings.http_port}",
                              settings.keys_file))
    return found


def replica_endpoints(host: Any, serve: ServeRecord | None, http_port: int) -> list[Endpoint]:
    """A serving host's replicas as its current release placed them, each at the port its serving mode serves
    requests on; a release that recorded no serve settings: the host's own HTTP port."""
    address = _url_host(replica_address(host))
    if serve is None or not serve.replicas:
        return [Endpoint(host.name, host.name, f"http://{address}:{http_port}")]
    mode = serve.mode
    return [Endpoint(f"{host.name}-r{r.index}", host.name,
                     f"http://{address}:{mode.endpoints(r.ports)[mode.http_door_role]}") for r in serve.replicas]


def _url_host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


def release_key(releases: Mapping[str, str | None]) -> str:
    """The release a bench is filed under: the one every serving host runs; hosts on different releases
    (a rollout stopped half way) file it under all of them joined by '+'."""
    found = sorted({release for release in releases.values() if release})
    if not found:
        raise InputError("no host of the deployment serves a release: deploy first")
    return "+".join(found)


def endpoint_args(workload: Workload, template_file: str) -> list[str]:
    """aiperf's endpoint flags of the serving mode."""
    if workload.mode == "kserve":
        return ["--endpoint-type", "template", "--custom-endpoint", f"/v2/models/{workload.model}/generate_stream",
                "--streaming", "--extra-inputs", f"payload_template:{template_file}",
                "--extra-inputs", f"response_field:{KSERVE_RESPONSE_FIELD}"]
    if workload.mode in ("openai", "vllm"):  # Triton's OpenAI frontend and vLLM's own server: the same API
        return ["--endpoint-type", "chat", "--streaming"]
    raise InputError(f"mode {workload.mode!r} is not a serving mode ({', '.join(MODES)})")


def aiperf_argv(aiperf: Sequence[str], urls: Iterable[str], workload: Workload, concurrency: int,
                tokenizer_dir: str, template_file: str, artifact_dir: str) -> list[str]:
    """`aiperf profile` for one concurrency level (`aiperf`: how aiperf is started), its exports under
    `artifact_dir`. The tokenizer is a local folder (never `builtin`, which downloads). aiperf's own server
    metrics and GPU telemetry are off: a door answers /metrics with 403 and replicas bind privately; tritonops
    reads each replica's :8002 on its host instead. An API key is never on this command line (bench/runner.py)."""
    for name, path in (("tokenizer folder", tokenizer_dir), ("template file", template_file),
                       ("artifact folder", artifact_dir)):
        if not posixpath.isabs(path):
            raise InputError(f"the {name} must be an absolute path, not {path!r}")
    argv = [*aiperf, "profile", "--model", workload.model, "--tokenizer", tokenizer_dir]
    for url in urls:
        argv += ["--url", url]
    argv += endpoint_args(workload, template_file)
    argv += ["--concurrency", str(concurrency)]
    if workload.request_rate is not None:
        argv += ["--request-rate", f"{workload.request_rate:g}", "--arrival-pattern", "constant"]
    if workload.duration_s is not None:
        argv += ["--benchmark-duration", f"{workload.duration_s:g}", "--benchmark-grace-period", str(GRACE_S)]
    else:
        argv += ["--request-count", str(workload.requests_at(concurrency))]
    if workload.tenants:
        argv += ["--num-prefix-prompts", str(workload.tenants), "--prefix-prompt-length", str(workload.prefix_tokens)]
    argv += ["--request-timeout-seconds", str(REQUEST_TIMEOUT_S),
             "--prompt-input-tokens-mean", str(workload.input_tokens), "--prompt-input-tokens-stddev", "0",
             "--prompt-output-tokens-mean", str(workload.output_tokens), "--prompt-output-tokens-stddev", "0",
             "--random-seed", str(workload.seed), "--output-artifact-dir", artifact_dir,
             "--export-level", "records", "--no-auto-plot", "--ui-type", "none", "--no-server-metrics",
             "--no-gpu-telemetry"]
    return argv
