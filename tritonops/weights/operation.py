"""The `model_weights` operation: put a model's weights in `<root>/<deployment>/models/<model-id>/`.

Its fact is a command (the weights FILES program's `fact`, the query an argument): the manifest,
each file's size and SHA-256, the staging folder, free disk. `steps()` plans from it (plan.py, pure)
and yields the transfer steps still needed: none when the model is verified, so the task is `ok`.
`ensure_weights` does the same over one open session and reports bytes moved; `plan_weights` only
plans. A controller folder is hashed on the controller (cached by size and mtime).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import ClassVar, Iterable, Literal, Sequence

from pydantic import model_validator

from tritonops.errors import InputError
from tritonops.facts.queries import CommandQuery, Facts, Query
from tritonops.operations.base import Args
from tritonops.results import GroupResult, HostResult
from tritonops.transport.base import Transport
from tritonops.transport.spec import ConnectionSpec
from tritonops.values.names import safe_name
from tritonops.weights_source import source as sources
from tritonops.weights.facts import Layout, WeightsFact, fact_query, parse_weights_fact, read_weights_fact
from tritonops.weights_source.local import local_manifest
from tritonops.weights.plan import WeightsPlan, WeightsRefused, plan_host_path, plan_hub, plan_push
from tritonops.weights.token import Secret, env_name, read_token
from tritonops.weights.programs import files_argv
from tritonops.weights.transfer import Runner, TransferStep, WeightsError

FACT_TIMEOUT_S = 110.0  # inside the engine's fact round trip (120 s); verify=full on a big model: ensure_weights
DEFAULT_TOKEN_ENV = {"huggingface": "HF_TOKEN", "modelscope": "MODELSCOPE_API_TOKEN"}
_URL = re.compile(r"https?://[^\s\"'<>\\]+")
_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@-]*")


class ModelWeightsArgs(Args):
    source: Literal["huggingface", "modelscope", "host_path", "controller_dir"]
    deployment: str
    repo: str | None = None  # hub sources: org/name
    revision: str | None = None  # hub sources: branch, tag or commit (default main / master)
    path: str | None = None  # host_path: on the host; controller_dir: on the controller
    include: tuple[str, ...] = ()  # hub sources: glob patterns of the files to fetch; empty: all
    root: str = "/opt/tritonops"
    model_id: str | None = None  # the folder name under models/; derived from the source by default
    token_env: str | None = None  # environment variable holding the hub token (HF_TOKEN / MODELSCOPE_API_TOKEN)
    token_file: str | None = None  # or a 0600 file on the controller holding it
    endpoint: str | None = None  # a hub mirror (HF_ENDPOINT / MODELSCOPE_DOMAIN); the host's own setting otherwise
    runner: Literal["image", "host"] = "image"  # where the hub library runs (see docs/weights.md)
    image: str = "tritonserver:vllm_env"
    verify: Literal["quick", "full"] = "quick"

    @model_validator(mode="after")
    def _checked(self) -> "ModelWeightsArgs":
        self.checked_source()
        safe_name(self.deployment, "deployment")
        sources.host_path(self.root, "root")
        if self.model_id is not None:
            sources.model_id(self.model_id)
        if self.token_env is not None:
            env_name(self.token_env)
        if self.endpoint is not None and not _URL.fullmatch(self.endpoint):
            raise InputError(f"endpoint {self.endpoint[:60]!r} is not an http(s) URL")
        if not _IMAGE.fullmatch(self.image):
            raise InputError(f"image {self.image[:60]!r} is not an image reference")
        return self

    def checked_source(self) -> sources.Source:
        return sources.source_of(self.source, repo=self.repo, revision_=self.revision, path=self.path,
                                 include=tuple(self.include))

    @property
    def models_dir(self) -> str:
        return f"{self.root.rstrip('/') or ''}/{self.deployment}/models"

    def read_token(self) -> Secret | None:
        if self.source not in DEFAULT_TOKEN_ENV:
            return None
        return read_token(self.token_env or DEFAULT_TOKEN_ENV[self.source], self.token_file)


@dataclass(frozen=True)
class WeightsOutcome:
    model_id: str
    final: str
    changed: bool
    bytes_moved: int
    reason: str
    steps: tuple[str, ...] = ()
    commit: str | None = None
    elapsed_s: float = 0.0


@dataclass(frozen=True)
class Prepared:
    layout: Layout
    plan: WeightsPlan


def _local(args: ModelWeightsArgs):
    return local_manifest(args.path, "path") if args.source == "controller_dir" else (None, None)


def layout_of(args: ModelWeightsArgs, local=None) -> Layout:
    source = args.checked_source()
    return Layout(args.models_dir, args.model_id or source.model_id(local.content_sha256() if local else None))


def fact_argv(args: ModelWeightsArgs, layout: Layout) -> tuple[str, ...]:
    """The weights fact as a command (its query an argument: paths only, nothing secret)."""
    host_path = args.path if args.source == "host_path" else None
    return files_argv("fact", fact_query(layout, verify=args.verify, host_path=host_path).decode())


def plan_from_fact(args: ModelWeightsArgs, layout: Layout, fact: WeightsFact, local=None, paths=None, *,
                   token: Secret | None = None) -> WeightsPlan:
    source = args.checked_source()
    if source.kind == "host_path":
        return plan_host_path(source, layout, fact)
    if source.kind == "controller_dir":
        return plan_push(source, layout, fact, local, paths)
    return plan_hub(source, layout, fact, runner=Runner(args.runner, args.image), token=token,
                    token_env=args.token_env or DEFAULT_TOKEN_ENV[source.kind], token_file=args.token_file,
                    endpoint=args.endpoint)


def plan_weights(transport: Transport, args: ModelWeightsArgs, *, token: Secret | None = None) -> Prepared:
    """Read the host's weights fact and plan (nothing is changed)."""
    local, paths = _local(args)
    layout = layout_of(args, local)
    fact = read_weights_fact(transport, layout, verify=args.verify,
                             host_path=args.path if args.source == "host_path" else None)
    return Prepared(layout, plan_from_fact(args, layout, fact, local, paths, token=token))


def ensure_weights(transport: Transport, args: ModelWeightsArgs) -> WeightsOutcome:
    """Plan and run until the model is verified in place (a second round only when a staged file failed
    verification and was discarded)."""
    started = time.monotonic()
    token = args.read_token()
    done, moved, commit, reason = [], 0, None, ""
    for attempt in (1, 2):
        prepared = plan_weights(transport, args, token=token)
        reason = reason or prepared.plan.reason
        try:
            for step in prepared.plan.steps:
                out = json.loads(step.run_on(transport).stdout or "{}")
                moved += int(out.get("bytes") or 0)
                commit = out.get("commit") or commit
                done.append(step.describe())
            break
        except WeightsError as exc:
            if attempt == 2 or "verification failed" not in exc.what:
                raise
    return WeightsOutcome(prepared.layout.model_id, prepared.layout.final, bool(done), moved, reason, tuple(done),
                          commit, round(time.monotonic() - started, 3))


class ModelWeightsOperation:
    """facts: the weights fact as a command; steps: the transfer steps still needed (none when verified)."""

    name: ClassVar[str] = "model_weights"
    Args: ClassVar[type[Args]] = ModelWeightsArgs

    def facts(self, args: ModelWeightsArgs) -> Iterable[Query]:
        local, _ = _local(args)
        return [CommandQuery(fact_argv(args, layout_of(args, local)), timeout_s=FACT_TIMEOUT_S)]

    def steps(self, args: ModelWeightsArgs, facts: Facts) -> Iterable[TransferStep]:
        local, paths = _local(args)
        layout = layout_of(args, local)
        answer = facts.command(fact_argv(args, layout))
        if not answer.ok:
            raise WeightsError("host", f"reading the weights at {layout.final} failed: "
                                       f"{(answer.stderr or answer.stdout).strip()[-300:]}")
        return plan_from_fact(args, layout, parse_weights_fact(answer.stdout), local, paths).steps


def ensure_weights_on_hosts(specs: Sequence[ConnectionSpec], args: ModelWeightsArgs, *,
                            forks: int = 10) -> GroupResult[WeightsOutcome]:
    """One result per host: changed (bytes moved), ok (verified, nothing moved) or failed (the reason);
    a host refused or failing stops no other."""
    from tritonops.transport.pool import run_on_hosts

    def task(transport: Transport, spec: ConnectionSpec) -> HostResult[WeightsOutcome]:
        started = time.monotonic()
        try:
            outcome = ensure_weights(transport, args)
        except (WeightsRefused, InputError) as exc:
            return HostResult(spec.name, "failed", str(exc), elapsed_s=time.monotonic() - started)
        status = "changed" if outcome.changed else "ok"
        msg = f"{outcome.model_id}: {outcome.bytes_moved:,} bytes moved" if outcome.changed else \
            f"{outcome.model_id}: verified, nothing moved"
        return HostResult(spec.name, status, msg, outcome, elapsed_s=outcome.elapsed_s)

    return run_on_hosts(specs, task, forks=forks)


model_weights = ModelWeightsOperation()
