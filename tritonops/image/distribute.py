"""Move an image between hosts: `docker save <id>` on the source streamed through the controller
into `docker load` on the target, counted; verified by ID before any tag is set.

An interrupted or failed load leaves at most untagged layers: tags are set only after the
target reports the exact image ID, so no host ever holds a half-tagged image, and the next run
finds the hosts that still lack the ID and sends to them again.
"""

from __future__ import annotations

import threading

from docker.errors import APIError, DockerException
from requests.exceptions import RequestException

from tritonops.image.engine import ByteCounter, Cancelled, EngineError, HostEngine, StreamFilter, counted


def stream_image(source: HostEngine, target: HostEngine, image_id: str, counter: ByteCounter,
                 cancel: threading.Event, stream_filter: StreamFilter | None = None) -> None:
    chunks = counted(source.save(image_id), target.name, counter, cancel)
    if stream_filter is not None:
        chunks = stream_filter(target.name, chunks)
    try:
        target.load(chunks)
    except Cancelled:
        raise
    except EngineError:
        raise
    except (APIError, DockerException, RequestException, OSError, EOFError) as exc:
        if cancel.is_set():
            raise Cancelled("interrupted") from exc
        explanation = getattr(exc, "explanation", None) or str(exc) or type(exc).__name__
        raise EngineError(f"docker load on {target.name} failed: {explanation}") from exc
    if target.tag_id(image_id) != image_id:
        raise EngineError(f"after docker load, {target.name} does not hold {image_id[:19]}")
