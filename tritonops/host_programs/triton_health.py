"""The health check of `tritonops status`: the replica's liveness and readiness, each model's readiness and
the metrics text, all read on the host itself at ADDRESS: loopback, or the address the replicas are bound to
(behind a balancer); tritonops/serving/status.py reads the answer. What it asks is the serving mode's
(tritonops/modes): CHECK is one JSON document {endpoints: role -> port, requests, models}.

    python3 -c SOURCE ADDRESS CHECK                              stdout: JSON {live, ready, models, metrics}
    python3 -c SOURCE ADDRESS HTTP_PORT METRICS_PORT MODEL...    (Triton's KServe routes: from before modes)
"""

import json, sys

from tritonops.host_programs.triton_client import ask, requests_or_kserve


def main():
    address = sys.argv[1]
    if sys.argv[2].startswith("{"):
        check = json.loads(sys.argv[2])
        endpoints, models = check["endpoints"], check["models"]
        asked = requests_or_kserve(check.get("requests"), models)
    else:
        endpoints = {"http": int(sys.argv[2]), "metrics": int(sys.argv[3])}
        models = sys.argv[4:]
        asked = requests_or_kserve(None, models)

    def status(request):
        return ask(request, endpoints, address, timeout=5)[0] == 200 if request else True

    out = {"live": status(asked["live"]), "ready": status(asked["ready"]),
           "models": {m: status(asked["models"][m]["ready"]) for m in models}}
    code, text = ask(asked["metrics"], endpoints, address, timeout=5)
    out["metrics"] = text if code == 200 else None
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
