"""Serve records for tests (planning.serve_record): one replica of one model unless told otherwise, read the way
release.json is read (its version 1 forms included), so a test names only the fields it is about."""

from typing import Any

from tritonops.planning.serve_record import ServeRecord

HOST_PORTS = {"http": 8000, "grpc": 8001, "metrics": 8002, "openai": 9000}
DEFAULTS: dict[str, Any] = {"models": ["m"], "weights_dirs": ["/opt/tritonops/d/models/m"], "deadline_s": 300,
                            "kv_cache_tokens": 0}


def serve_record(**fields: Any) -> ServeRecord:
    """A record from release.json's `serve` with these fields (any version's); one replica on GPU 0 at the host's
    default ports when neither `replicas` nor `gpus` is given."""
    data = {**DEFAULTS, **fields}
    if "replicas" not in data and "gpus" not in data:
        data["gpus"] = [0]
    return ServeRecord.from_release(data, host_ports=HOST_PORTS)
