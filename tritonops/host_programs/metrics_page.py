"""The metrics fetch: Triton's metrics page read on the host itself (tritonops/metrics/fetch.py reads
the answer). Address and port are checked by the controller and passed as arguments.

    python3 -c SOURCE ADDRESS PORT LIMIT    stdout: JSON {status, page, error}
"""

import json, socket, sys, urllib.error, urllib.request

from tritonops.host_programs.triton_client import triton_url


def main():
    address, port, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    out = {"status": None, "page": None, "error": None}
    try:
        # its own request, not triton_call: it reads at most `limit` bytes and says why none came
        with urllib.request.urlopen(triton_url(address, port, "/metrics"), timeout=10) as response:
            out["status"] = response.status
            out["page"] = response.read(limit + 1).decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        out["status"] = err.code
    except urllib.error.URLError as err:
        reason = err.reason
        out["error"] = "closed (connection refused)" if isinstance(reason, ConnectionRefusedError) else \
            "did not answer within 10 s" if isinstance(reason, (socket.timeout, TimeoutError)) else str(reason)
    except (socket.timeout, TimeoutError):
        out["error"] = "did not answer within 10 s"
    except (OSError, ValueError) as err:
        out["error"] = "%s: %s" % (type(err).__name__, err)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
