"""Triton's HTTP API as the host programs call it, on the host itself (the metrics fetch, the status
health check, the serve program's gate). Not a program of its own: a program that needs it imports it
as `from tritonops.host_programs.triton_client import ...`, and the packer puts this file's text in
that line's place, since a host runs each program as one `python3 -c` source with nothing installed.
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
