"""The `kserve` serving mode: Triton's own `tritonserver` and its KServe v2 API (HTTP :8000, gRPC :8001,
metrics :8002 in the container). The routes are written once, in host_programs/triton_client.py, which the host
programs also ask when their input names no mode."""

from __future__ import annotations

from dataclasses import dataclass

from tritonops.host_programs import triton_client as routes
from tritonops.modes.base import Request, ServingMode

PORTS = (("http", 8000), ("grpc", 8001), ("metrics", 8002))


@dataclass(frozen=True)
class KServe(ServingMode):
    name: str = "kserve"
    ports: tuple[tuple[str, int], ...] = PORTS
    check_path: str = routes.KSERVE_READY

    def server_argv(self, model_repository: str, exit_timeout_s: int, extra: tuple[str, ...],
                    weights_dirs: tuple[str, ...] = ()) -> tuple[str, ...]:
        return ("tritonserver", f"--model-repository={model_repository}", "--log-format=ISO8601",
                f"--exit-timeout-secs={exit_timeout_s}", "--strict-readiness=true", *extra)

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
