"""The `openai` serving mode (issue #23): Triton's own OpenAI-compatible frontend
(`/opt/tritonserver/python/openai/openai_frontend/main.py`, in NGC `tritonserver` images since 24.11 / Triton
2.52) instead of `tritonserver`. It runs Triton in-process and serves `/v1/models`, `/v1/completions`,
`/v1/chat/completions` (SSE with `"stream": true`), `/health/ready` and `/metrics` (Triton's own figures, the
same `nv_inference_*` and `vllm:*` families as :8002) on its OpenAI port; `--enable-kserve-frontends` keeps the
KServe HTTP and gRPC ports. It starts no metrics port of its own: the metrics page is on the OpenAI port.

Its flags, as its main.py parses them (triton-inference-server/server, python/openai/openai_frontend/main.py):
`--model-repository` (required), `--tokenizer` (a hub id or a local folder: the model's weights folder here,
so nothing is fetched at run time; the tokenizer's own chat template is used), `--openai-port` (default 9000),
`--enable-kserve-frontends`, `--kserve-http-port` (8000), `--kserve-grpc-port` (8001). One tokenizer serves
every model of the repository (the frontend's own limit): the first weights folder's.

A replica's ports, as release.json records them: [http, grpc, openai] (the third is the metrics port in kserve).
"""

from __future__ import annotations

from dataclasses import dataclass

from tritonops.modes.base import Request, ServingMode

FRONTEND = "/opt/tritonserver/python/openai/openai_frontend/main.py"
DEFAULT_PORT = 9000
PORTS = (("http", 8000), ("grpc", 8001), ("openai", DEFAULT_PORT))
HEALTH = "/health/ready"
# what passes a balancer's HTTP door: the models, completions and chat completions (the vLLM backend serves no
# embeddings), and the health route (without a key, like KServe's)
DOOR_EXPOSED = r"^(/health/ready|/v1/(models(/[A-Za-z0-9][A-Za-z0-9_.-]*)?|completions|chat/completions))$"
# the `type` of the OpenAI error body per status (what the openai client reads into APIError.type)
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 429: "rate_limit_error", 503: "server_error"}
# the oldest NGC tritonserver release whose image ships the frontend, and its Triton version
FIRST_RELEASE = "24.11"
FIRST_TRITON = "2.52"


@dataclass(frozen=True)
class OpenAI(ServingMode):
    name: str = "openai"
    ports: tuple[tuple[str, int], ...] = PORTS
    check_path: str = HEALTH
    http_door_role: str = "openai"
    restricts_apis: bool = False  # main.py takes no KServe restricted-API flags (the door guards the replicas)
    door_exposed: str = DOOR_EXPOSED
    door_open: tuple[str, ...] = (HEALTH,)
    first_release: str | None = FIRST_RELEASE
    first_triton: str | None = FIRST_TRITON
    runs: str = "Triton's OpenAI frontend (" + FRONTEND + ")"

    def error_body(self, reason: str, status: int, message: str) -> dict:
        """OpenAI's shape, as the official client parses it: {"error": {message, type, param, code}}; the
        client raises AuthenticationError (401), PermissionDeniedError (403), InternalServerError (503)."""
        return {"error": {"message": message, "type": ERROR_TYPES.get(status, "server_error"), "param": None,
                          "code": reason}}

    def server_argv(self, model_repository: str, exit_timeout_s: int, extra: tuple[str, ...],
                    weights_dirs: tuple[str, ...] = ()) -> tuple[str, ...]:
        if not weights_dirs:
            raise ValueError("the OpenAI frontend needs the model's weights folder for its tokenizer")
        return ("python3", FRONTEND, "--model-repository", model_repository, "--tokenizer", weights_dirs[0],
                "--openai-port", str(self.container_port("openai")), "--enable-kserve-frontends",
                "--kserve-http-port", str(self.container_port("http")),
                "--kserve-grpc-port", str(self.container_port("grpc")), *extra)

    def live(self) -> Request:
        return Request("openai", HEALTH)  # the frontend listens once Triton and its models are up: no live route

    def ready(self) -> Request:
        return Request("openai", HEALTH)

    def model_ready(self, model: str) -> Request | None:
        return Request("openai", f"/v1/models/{model}")

    def generate(self, model: str, prompt: str, max_tokens: int) -> tuple[Request, ...]:
        body = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens}
        return (Request("openai", "/v1/chat/completions", "POST", body, ("choices", 0, "message", "content")),
                Request("openai", "/v1/chat/completions", "POST", {**body, "stream": True},
                        ("choices", 0, "delta", "content"), stream=True))

    def metrics(self) -> Request:
        return Request("openai", "/metrics")


OPENAI = OpenAI()
