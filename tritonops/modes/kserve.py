"""The `kserve` serving mode: Triton's own `tritonserver` and its KServe v2 API (HTTP :8000, gRPC :8001,
metrics :8002 in the container). The routes are written once, in host_programs/triton_client.py, which the host
programs also ask when their input names no mode."""

from __future__ import annotations

from dataclasses import dataclass

from tritonops.host_programs import triton_client as routes
from tritonops.modes.base import Request, ServingMode

PORTS = (("http", 8000), ("grpc", 8001), ("metrics", 8002))
# Triton's KServe v2 HTTP paths that pass a balancer's door: health, server and model metadata, model readiness,
# inference and generation. Model names are the safe alphabet (values.names), versions are numbers.
DOOR_EXPOSED = (r"^/v2(/health/(live|ready)"
                r"|/models/[A-Za-z0-9][A-Za-z0-9_.-]*(/versions/[0-9]+)?(/(ready|infer|generate|generate_stream))?"
                r")?$")
# ... except that "/v2/models/stats" is every model's statistics, not the metadata of a model named "stats"
DOOR_REFUSED = (("all_models_stats", "/v2/models/stats"),)


@dataclass(frozen=True)
class KServe(ServingMode):
    name: str = "kserve"
    ports: tuple[tuple[str, int], ...] = PORTS
    check_path: str = routes.KSERVE_READY
    door_exposed: str = DOOR_EXPOSED
    door_open: tuple[str, ...] = (routes.KSERVE_LIVE, routes.KSERVE_READY)
    door_refused: tuple[tuple[str, str], ...] = DOOR_REFUSED

    def server_argv(self, model_repository: str, exit_timeout_s: int, extra: tuple[str, ...],
                    weights_dirs: tuple[str, ...] = ()) -> tuple[str, ...]:
        return ("tritonserver", f"--model-repository={model_repository}", "--log-format=ISO8601",
                f"--exit-timeout-secs={exit_timeout_s}", "--strict-readiness=true", *extra)

    def listen_argv(self, host_ports: tuple[int, ...], bind: str) -> tuple[str, ...]:
        http, grpc, metrics = host_ports
        return (f"--http-port={http}", f"--http-address={bind}", f"--grpc-port={grpc}", f"--grpc-address={bind}",
                f"--metrics-port={metrics}", f"--metrics-address={bind}")

    def live(self) -> Request:
        return Request("http", routes.KSERVE_LIVE)

    def ready(self) -> Request:
        return Request("http", routes.KSERVE_READY)

    def model_ready(self, model: str) -> Request | None:
        return Request("http", routes.kserve_model_ready(model))

    def generate(self, model: str, prompt: str, max_tokens: int) -> tuple[Request, ...]:
        return (Request("http", routes.kserve_generate(model), "POST", routes.kserve_generate_body(prompt, max_tokens),
                        tuple(routes.KSERVE_TEXT)),)

    def metrics(self) -> Request:
        return Request("metrics", routes.KSERVE_METRICS)


KSERVE = KServe()
