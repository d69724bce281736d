"""The `vllm` serving mode (issue #43): vLLM's own OpenAI server (`python3 -m vllm.entrypoints.openai.api_server`,
in the `vllm` package every `vllm_env` image already has) instead of `tritonserver`. Triton is not started. The
server loads one model: the replica's weights folder, served under the model's inventory name, with the plan's
engine arguments as the pinned vLLM's own flags. It serves `/health`, `/v1/models`, `/v1/completions`,
`/v1/chat/completions` (server-sent events with `"stream": true`, usage with `stream_options.include_usage`) and
`/metrics` (vLLM's own `vllm:*` families, labelled `model_name`) on one port.

Not to be confused with the `openai` mode, Triton's own OpenAI frontend (NGC images only): the door treats both
alike (OpenAI's paths and error shape), which is why this mode is a kind of that one.

Which flags the server takes is not guessed: `vllm_server_args.json` beside this module is the argument list of
the pinned vLLM's OpenAI server, dumped from its argparse parser on the real GPU (bench/real_gpu_openai.py; the
same capture is kept under tests/fixtures/real/). An engine argument it does not take is a one-line error before
any host is touched. Pure: the argument list is read once from the package, nothing else.

A replica's ports, as release.json records them: [http, grpc, openai] like the `openai` mode, so that a release
switches modes without moving ports; the server listens on the third only.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from tritonops.modes.base import Request
from tritonops.modes.openai import DEFAULT_PORT, ERROR_TYPES, OpenAI

SERVER_MODULE = "vllm.entrypoints.openai.api_server"
ARGUMENTS_FILE = "vllm_server_args.json"
PORTS = (("http", 8000), ("grpc", 8001), ("openai", DEFAULT_PORT))
LISTEN_ALL = "0.0.0.0"   # inside the container; the placement's bind is where Docker publishes the port
HEALTH = "/health"
DOOR_EXPOSED = r"^(/health|/v1/(models(/[A-Za-z0-9][A-Za-z0-9_.-]*)?|completions|chat/completions))$"
# engine arguments tritonops sets itself from the placement and the inventory, never from the plan
OWN_ARGUMENTS = ("model", "served_model_name", "host", "port")
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class EngineArgumentError(ValueError):
    """An engine argument the pinned vLLM's OpenAI server would refuse: one line, naming it."""


@dataclass(frozen=True)
class ServerOption:
    """One option of the server's parser, as captured."""

    dest: str
    flags: tuple[str, ...]          # every option string, e.g. ("--enforce-eager", "--no-enforce-eager")
    takes_value: bool               # False: a switch (store_true, or --x/--no-x)
    many: bool = False              # takes several values (nargs + or *)
    choices: tuple[str, ...] | None = None

    @property
    def flag(self) -> str:
        """The option string that sets it: `--` + its name where it has that one."""
        own = "--" + self.dest.replace("_", "-")
        return own if own in self.flags else next(f for f in self.flags if not f.startswith("--no-"))

    @property
    def negation(self) -> str | None:
        negated = "--no-" + self.flag[2:]
        return negated if negated in self.flags else None


@dataclass(frozen=True)
class ServerArguments:
    """The argument list of one vLLM version's OpenAI server."""

    vllm_version: str
    options: tuple[ServerOption, ...]

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ServerArguments:
        options = []
        for item in doc["options"]:
            if not item.get("flags"):
                continue  # a positional (`vllm serve`'s model tag): set through its option instead
            choices = item.get("choices")
            options.append(ServerOption(item["dest"], tuple(item["flags"]), bool(item["takes_value"]),
                                        item.get("nargs") in ("+", "*"),
                                        tuple(str(c) for c in choices) if choices is not None else None))
        return cls(str(doc["vllm_version"]), tuple(options))

    @functools.cached_property
    def by_dest(self) -> dict[str, ServerOption]:
        return {option.dest: option for option in self.options}


@functools.cache
def pinned_arguments() -> ServerArguments:
    """The pinned vLLM's server arguments, shipped with tritonops."""
    try:
        text = resources.files("tritonops.modes").joinpath(ARGUMENTS_FILE).read_text()
    except FileNotFoundError:
        raise EngineArgumentError(f"this tritonops ships no argument list of the pinned vLLM's OpenAI server "
                                  f"(tritonops/modes/{ARGUMENTS_FILE}; bench/real_gpu_openai.sh captures it): the "
                                  f"vllm mode cannot check engine arguments") from None
    return ServerArguments.from_json(json.loads(text))


def served_model_name(name: Any) -> str:
    """The model's inventory name as the server's model id: it is a path segment of `/v1/models/<id>`."""
    if not isinstance(name, str) or not _SAFE_NAME.fullmatch(name) or ".." in name:
        raise EngineArgumentError(f"served model name {name!r} is not a valid path segment: use 1 to 64 letters, "
                                  f"digits, '.', '_' and '-', starting with a letter or digit")
    return name


def engine_flags(engine_args: Mapping[str, Any], arguments: ServerArguments) -> tuple[str, ...]:
    """The plan's engine arguments (model.json's keys, vLLM's AsyncEngineArgs fields) as the server's own flags,
    each value one argv element (`--flag=value`, so a value can never be read as an option)."""
    argv: list[str] = []
    for key, value in engine_args.items():
        if key in OWN_ARGUMENTS:
            raise EngineArgumentError(f"engine argument {key!r} is set by tritonops in the vllm mode "
                                      f"(weights folder, inventory name, placement): remove it")
        option = arguments.by_dest.get(key)
        if option is None:
            raise EngineArgumentError(f"engine argument {key!r} is not an option of vLLM {arguments.vllm_version}'s "
                                      f"OpenAI server{_did_you_mean(key, arguments)}")
        argv += _option_argv(key, value, option)
    return tuple(argv)


def _option_argv(key: str, value: Any, option: ServerOption) -> list[str]:
    if value is None:
        return []  # vLLM's own default
    if not option.takes_value:
        if not isinstance(value, bool):
            raise EngineArgumentError(f"engine argument {key!r} is a switch: give true or false, not {value!r}")
        if value:
            return [option.flag]
        if option.negation is None:
            return []  # a store_true switch is off unless given
        return [option.negation]
    if isinstance(value, bool):
        raise EngineArgumentError(f"engine argument {key!r} takes a value ({option.flag} VALUE), not {value!r}")
    if isinstance(value, (list, tuple)):
        if not option.many:
            raise EngineArgumentError(f"engine argument {key!r} takes one value, not a list")
        texts = [_text(key, item) for item in value]
        _in_choices(key, texts, option)
        return [option.flag, *texts] if texts else []
    text = _text(key, value) if not isinstance(value, Mapping) else json.dumps(value, separators=(",", ":"))
    _in_choices(key, [text], option)
    return [f"{option.flag}={text}"]


def _text(key: str, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise EngineArgumentError(f"engine argument {key!r}: {value!r} is not a string or a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise EngineArgumentError(f"engine argument {key!r}: {value!r} is not a finite number")
    text = str(value)
    if any(ch in text for ch in "\0\n\r"):
        raise EngineArgumentError(f"engine argument {key!r}: a value holds a control character")
    return text


def _in_choices(key: str, texts: list[str], option: ServerOption) -> None:
    for text in texts:
        if option.choices is not None and text not in option.choices:
            raise EngineArgumentError(f"engine argument {key!r}: {text!r} is not one of {', '.join(option.choices)}")


def _did_you_mean(key: str, arguments: ServerArguments) -> str:
    import difflib  # only on the error path

    close = difflib.get_close_matches(key, list(arguments.by_dest), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def one_model(models: tuple[str, ...] | list[str]) -> str:
    """The one model a replica serves in this mode; several: a one-line refusal naming them."""
    if len(models) != 1:
        named = ", ".join(models) or "none"
        raise EngineArgumentError(f"the vllm mode serves one model per replica; this host's plan has {len(models)}: "
                                  f"{named} (serve each on its own hosts, or use tritonops_frontend: kserve)")
    return models[0]


def server_argv(model: str, weights_dir: str, engine_args: Mapping[str, Any], port: int,
                arguments: ServerArguments | None = None, host: str = LISTEN_ALL) -> tuple[str, ...]:
    """The server's command line: the weights folder, the inventory name, where it listens, the plan's engine
    arguments. Checked against `arguments` (default: the pinned vLLM's)."""
    arguments = arguments or pinned_arguments()
    if not weights_dir.startswith("/"):
        raise EngineArgumentError(f"the weights folder {weights_dir!r} must be an absolute path")
    if not 1 <= int(port) <= 65535:
        raise EngineArgumentError(f"port {port!r} is not a port number")
    return ("python3", "-m", SERVER_MODULE, "--model", weights_dir, "--served-model-name", served_model_name(model),
            "--host", host, "--port", str(int(port)), *engine_flags(engine_args, arguments))


@dataclass(frozen=True)
class VllmServer(OpenAI):
    name: str = "vllm"
    ports: tuple[tuple[str, int], ...] = PORTS
    check_path: str = HEALTH
    door_exposed: str = DOOR_EXPOSED
    door_open: tuple[str, ...] = (HEALTH,)
    first_release: str | None = None   # any vllm_env image: the server comes with the vllm package
    first_triton: str | None = None
    runs: str = "vLLM's OpenAI server (python3 -m " + SERVER_MODULE + ")"

    def server_argv(self, model_repository: str, exit_timeout_s: int, extra: tuple[str, ...],
                    weights_dirs: tuple[str, ...] = (), *, models: tuple[str, ...] = (),
                    engine_args: Mapping[str, Any] | None = None) -> tuple[str, ...]:
        model = one_model(models)
        if len(weights_dirs) != 1:
            raise EngineArgumentError(f"the vllm mode needs the model's one weights folder, not {len(weights_dirs)}")
        return (*server_argv(model, weights_dirs[0], engine_args or {}, self.container_port("openai")), *extra)

    def refuse_models(self, models: tuple[str, ...]) -> str | None:
        try:
            one_model(models)
        except EngineArgumentError as err:
            return str(err)
        return None

    def plan_problem(self, models: tuple[tuple[str, dict[str, Any]], ...]) -> str | None:
        """The one model's server command line, rendered and checked against the pinned vLLM's argument list
        (model.json's `model` is its weights folder)."""
        try:
            one_model(tuple(name for name, _ in models))
            ((name, engine_args),) = models
            engine_args = dict(engine_args)
            weights = engine_args.pop("model", None)
            if not isinstance(weights, str):
                raise EngineArgumentError(f"model {name!r} has no weights folder in its plan")
            server_argv(name, weights, engine_args, self.container_port("openai"))
        except EngineArgumentError as err:
            return str(err)
        return None

    def listen_argv(self, host_ports: tuple[int, ...], bind: str) -> tuple[str, ...] | None:
        return None  # a pipeline across hosts runs Triton as the Ray driver: not this mode

    def live(self) -> Request:
        return Request("openai", HEALTH)

    def ready(self) -> Request:
        return Request("openai", HEALTH)

    def model_ready(self, model: str) -> Request | None:
        return Request("openai", "/v1/models", text=("data", 0, "id"))

    def generate(self, model: str, prompt: str, max_tokens: int) -> tuple[Request, ...]:
        chat = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens}
        return (
            Request("openai", "/v1/completions", "POST", {"model": model, "prompt": prompt, "max_tokens": max_tokens},
                    ("choices", 0, "text")),
            Request("openai", "/v1/chat/completions", "POST", chat, ("choices", 0, "message", "content")),
            Request("openai", "/v1/chat/completions", "POST",
                    {**chat, "stream": True, "stream_options": {"include_usage": True}},
                    ("choices", 0, "delta", "content"), stream=True, usage=True),
        )

    def metrics(self) -> Request:
        return Request("openai", "/metrics")


VLLM = VllmServer()
__all__ = ["ERROR_TYPES", "VLLM", "EngineArgumentError", "ServerArguments", "engine_flags", "server_argv"]
