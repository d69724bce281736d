"""The health check of `tritonops status`: Triton's liveness and readiness, each model's readiness and
the metrics text, all read on the host itself at ADDRESS: loopback, or the address the replicas are bound to
(behind a balancer); tritonops/serving/status.py reads the answer.

    python3 -c SOURCE ADDRESS HTTP_PORT METRICS_PORT MODEL...    stdout: JSON {live, ready, models, metrics}
"""

import json, sys

from tritonops.host_programs.triton_client import triton_call


address = "127.0.0.1"  # set by main()


def get(port, path):
    return triton_call(port, path, timeout=5, address=address)


def main():
    global address
    address, http_port, metrics_port, models = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
    out = {"live": get(http_port, "/v2/health/live")[0] == 200, "ready": get(http_port, "/v2/health/ready")[0] == 200,
           "models": {m: get(http_port, "/v2/models/%s/ready" % m)[0] == 200 for m in models}}
    code, text = get(metrics_port, "/metrics")
    out["metrics"] = text if code == 200 else None
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
