"""What a serving mode says (Kamal's builder variants have the same shape: one class per variant, the callers
asking the one the configuration chose). Pure, tested by equality.

A host program gets the mode's requests as data (`Request.document`, `ServingMode.host_requests`), never by
import: each names the port it goes to by its role (`"http"`, `"metrics"`, ...), which the program reads from
the replica's `endpoints` (role -> port on the host).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Request:
    """One HTTP request to a replica, on the host."""

    port: str                        # the role of the replica's port it goes to: a name of ServingMode.ports
    path: str
    method: str = "GET"
    body: Any = None                 # a JSON body, None for none
    text: tuple[str | int, ...] = ()  # where the answer's text is (keys and indices into its JSON); () none
    stream: bool = False             # the answer is server-sent events: the text is every event's, joined
    usage: bool = False              # a stream whose events must include OpenAI's `usage` (completion tokens)

    def document(self) -> dict[str, Any]:
        """The request as a host program reads it (JSON)."""
        doc: dict[str, Any] = {"port": self.port, "method": self.method, "path": self.path}
        if self.body is not None:
            doc["body"] = self.body
        if self.text:
            doc["text"] = list(self.text)
        if self.stream:
            doc["stream"] = True
        if self.usage:
            doc["usage"] = True
        return doc


@dataclass(frozen=True)
class ServingMode:
    """A way to serve a release's models: subclasses say each part (modes/kserve.py)."""

    name: str
    ports: tuple[tuple[str, int], ...] = field(default=())  # (role, port in the container), in release.json's order
    check_path: str = ""  # what a balancer's health check asks on the HTTP door's port, expecting 200
    http_door_role: str = "http"  # the replica port a balancer's HTTP door sends requests to (and checks)
    restricts_apis: bool = True   # the server takes tritonops' restricted-API flags (the admin key)
    # what a balancer's HTTP door passes (a regular expression of paths), passes without a key, and refuses though
    # the expression matches ((acl name, path) pairs)
    door_exposed: str = ""
    door_open: tuple[str, ...] = ()
    door_refused: tuple[tuple[str, str], ...] = ()
    # the oldest NGC tritonserver release (yy.mm) and Triton version whose images have what the mode runs
    first_release: str | None = None
    first_triton: str | None = None
    runs: str = "tritonserver"

    def error_body(self, reason: str, status: int, message: str) -> dict[str, Any]:
        """The JSON body of an answer the door gives itself (a refusal) in this mode's clients' shape."""
        return {"error": message, "reason": reason}

    def server_argv(self, model_repository: str, exit_timeout_s: int, extra: tuple[str, ...],
                    weights_dirs: tuple[str, ...] = ()) -> tuple[str, ...]:
        """The server's command line in the container (after the container logger's)."""
        raise NotImplementedError

    def listen_argv(self, host_ports: tuple[int, ...], bind: str) -> tuple[str, ...] | None:
        """The server's flags to listen on the host's ports itself, at `bind` (a container on the host's network:
        a pipeline's head, which is a Ray driver); host_ports in release.json's order. None: the mode cannot."""
        return None

    def refuse_models(self, models: tuple[str, ...]) -> str | None:
        """Why this mode cannot serve these models on one host (one line), None when it can."""
        return None

    def plan_problem(self, models: tuple[tuple[str, dict[str, Any]], ...]) -> str | None:
        """What this mode refuses in a host's plan, (model name, its engine arguments as model.json has them)
        per model, before any host is touched: one line, None when nothing."""
        return None

    def live(self) -> Request:
        raise NotImplementedError

    def ready(self) -> Request:
        raise NotImplementedError

    def model_ready(self, model: str) -> Request | None:
        """A model's own readiness; None where the mode has none (the server's readiness covers it)."""
        raise NotImplementedError

    def generate(self, model: str, prompt: str, max_tokens: int) -> tuple[Request, ...]:
        """The gate's requests to a ready model, each of which must answer text."""
        raise NotImplementedError

    def metrics(self) -> Request:
        """The Prometheus page status and metrics read."""
        raise NotImplementedError

    @property
    def port_roles(self) -> tuple[str, ...]:
        return tuple(role for role, _ in self.ports)

    def container_port(self, role: str) -> int:
        return dict(self.ports)[role]

    def endpoints(self, host_ports: tuple[int, ...] | list[int]) -> dict[str, int]:
        """role -> port on the host, from a replica's ports as release.json records them (the mode's order)."""
        return dict(zip(self.port_roles, host_ports))

    def host_requests(self, models: tuple[str, ...] | list[str], prompt: str = "", max_tokens: int = 8) -> dict:
        """Every request the host programs (the gate, the health check) ask a replica, as JSON."""
        models_doc = {}
        for model in models:
            ready = self.model_ready(model)
            models_doc[model] = {"ready": ready.document() if ready else None,
                                 "generate": [r.document() for r in self.generate(model, prompt, max_tokens)]}
        return {"live": self.live().document(), "ready": self.ready().document(),
                "metrics": self.metrics().document(), "models": models_doc}
