"""Triton's HTTP API as the host programs call it, on the host itself (the metrics fetch, the status
health check, the replica gate, the lab's request). Not a program of its own: a program that needs it
imports it as `from tritonops.host_programs.triton_client import ...`, and the packer puts this file's text in
that line's place, since a host runs each program as one `python3 -c` source with nothing installed.

What a program asks a replica is its serving mode's (tritonops/modes): requests as JSON documents {port, method,
path, body?, text?} (modes/base.py `Request.document`), each port a role that the replica's `endpoints` (role ->
port on the host) resolve. Triton's KServe v2 routes are written here, once: the `kserve` mode builds its
requests from them, and a program whose input names no mode's requests (one written before modes) asks them.
"""

import json, urllib.error, urllib.request


def triton_url(address, port, path):
    """http://ADDRESS:PORT/PATH, an IPv6 address in brackets."""
    host = "[%s]" % address if ":" in address else address
    return "http://%s:%d%s" % (host, port, path)


def triton_call(port, path, method="GET", body=None, timeout=10, address="127.0.0.1"):
    """(HTTP status, the answer's text) of one request, a JSON body when given; status 0 and the reason
    when no answer came, so a caller polling readiness just looks at the status."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(triton_url(address, port, path), data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode("utf-8", "replace")
    except (OSError, ValueError) as err:
        return 0, str(err)


# --- Triton's KServe v2 routes -----------------------------------------------------------------------

KSERVE_LIVE = "/v2/health/live"
KSERVE_READY = "/v2/health/ready"
KSERVE_METRICS = "/metrics"


def kserve_model_ready(model):
    return "/v2/models/%s/ready" % model


def kserve_generate(model):
    return "/v2/models/%s/generate" % model


def kserve_generate_body(prompt, max_tokens):
    return {"text_input": prompt, "parameters": {"stream": False, "max_tokens": max_tokens}}


KSERVE_TEXT = ["text_output"]  # where the generate answer's text is


def kserve_requests(models, prompt="", max_tokens=8):
    """The request document (tritonops/modes/base.py `host_requests`) of a KServe replica."""
    get = lambda port, path: {"port": port, "method": "GET", "path": path}  # noqa: E731
    return {"live": get("http", KSERVE_LIVE), "ready": get("http", KSERVE_READY),
            "metrics": get("metrics", KSERVE_METRICS),
            "models": {m: {"ready": get("http", kserve_model_ready(m)),
                           "generate": [{"port": "http", "method": "POST", "path": kserve_generate(m),
                                         "body": kserve_generate_body(prompt, max_tokens), "text": KSERVE_TEXT}]}
                       for m in models}}


# --- a serving mode's requests ------------------------------------------------------------------------

def requests_or_kserve(doc, models, prompt="", max_tokens=8):
    """The requests an input names; an input written before serving modes names none: Triton's KServe ones."""
    return doc if doc else kserve_requests(models, prompt, max_tokens)


def ask(request, endpoints, address="127.0.0.1", timeout=10):
    """(HTTP status, the answer's text) of `request` at its port; status 0 when the role has no port."""
    port = endpoints.get(request["port"])
    if not port:
        return 0, "the replica has no %s port" % request["port"]
    return triton_call(int(port), request["path"], request.get("method", "GET"), request.get("body"), timeout,
                       address=address)


def answer_text(request, code, body):
    """The text a generate request's answer holds (at the request's `text` keys), None when none. A streamed
    answer (server-sent events, `data: {...}` lines up to `data: [DONE]`): every event's text, joined, None
    unless the stream ended with [DONE] (and, where the request says `usage`, one event gave OpenAI's usage)."""
    if code != 200:
        return None
    if request.get("stream"):
        events = [line[5:].strip() for line in body.splitlines() if line.startswith("data:")]
        if not events or events[-1] != "[DONE]":
            return None
        if request.get("usage") and not any(_completion_tokens(event) for event in events[:-1]):
            return None  # stream_options.include_usage asked for a usage event with the tokens it made
        pieces = [text_at(event, request.get("text")) for event in events[:-1]]
        text = "".join(piece for piece in pieces if piece)
        return text or None
    text = text_at(body, request.get("text"))
    return text or None


def _completion_tokens(event):
    """An OpenAI stream event's usage.completion_tokens (0 when it has none)."""
    try:
        tokens = json.loads(event)["usage"]["completion_tokens"]
    except (ValueError, KeyError, TypeError):
        return 0
    return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else 0


def text_at(body, keys):
    """The string at `keys` (keys and indices) in the JSON `body`; None when there is none."""
    try:
        found = json.loads(body)
        for key in keys or ():
            found = found[key]
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    return found if isinstance(found, str) else None
