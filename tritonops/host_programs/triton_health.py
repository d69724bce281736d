"""The health check of `tritonops status`: Triton's liveness and readiness, each model's readiness and
the metrics text, all read on the host's loopback (tritonops/serving/status.py reads the answer).

    python3 -c SOURCE HTTP_PORT METRICS_PORT MODEL...    stdout: JSON {live, ready, models, metrics}
"""

import json, sys, urllib.error, urllib.request


def get(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        return err.code, ""
    except (OSError, ValueError):
        return 0, ""


def main():
    http_port, metrics_port, models = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    out = {"live": get(http_port, "/v2/health/live")[0] == 200, "ready": get(http_port, "/v2/health/ready")[0] == 200,
           "models": {m: get(http_port, "/v2/models/%s/ready" % m)[0] == 200 for m in models}}
    code, text = get(metrics_port, "/metrics")
    out["metrics"] = text if code == 200 else None
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
