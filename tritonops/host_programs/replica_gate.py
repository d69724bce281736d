"""The gate of one replica (stdlib only): does the container `container`, running release `release`, answer its
serving mode's requests (live, ready, each model ready, each model's generate requests answering text) on the
host, within the deadline? It runs on the host so the gate is one SSH command however long the model takes to
load: it asks the replica on ADDRESS (loopback, or the one address the replicas are bound to behind a balancer) and
reads `docker inspect` every second or two, and stops early when the container exits, restarts or is replaced.

    python3 -c SOURCE    stdin: {container, release, deadline_s, endpoints, address, requests, models}
                         stdout: {passed, why, ready_s, models_ready_at, answers, log}
"""

import json, sys, time

from tritonops.host_programs.basic import answer, inspect, logs
from tritonops.host_programs.triton_client import answer_text, ask


def gate(spec):
    """(passed, why, seconds to ready, answers, when every model was seen ready: a Unix time)."""
    name, expected, deadline_s = spec["container"], spec["release"], spec["deadline_s"]
    asked, endpoints, address = spec["requests"], spec["endpoints"], spec.get("address") or "127.0.0.1"
    begin = time.time()
    stage, ready_s, interval = "live", None, 0.25
    while time.time() - begin < deadline_s:
        state = inspect(name)
        if state is None:
            return False, "the container is gone", None, None, None
        if state["release"] != expected:  # another run put its own container under the name
            return False, "the container runs release %s, not %s" % (state["release"], expected), None, None, None
        if not state["running"] or state["restarts"] > 0 or state["status"] == "restarting":
            return False, "the container stopped (status %s, exit code %s, restarts %d)" % (
                state["status"], state["exit_code"], state["restarts"]), None, None, None
        if stage == "live" and ask(asked["live"], endpoints, address)[0] == 200:
            stage = "ready"
        if stage == "ready" and ask(asked["ready"], endpoints, address)[0] == 200:
            stage, ready_s = "models", time.time() - begin
        if stage == "models":
            pending = [m for m in spec["models"] if asked["models"][m]["ready"]
                       and ask(asked["models"][m]["ready"], endpoints, address)[0] != 200]
            if not pending:
                seen_ready, answers = time.time(), {}
                for model in spec["models"]:
                    for request in asked["models"][model]["generate"]:
                        code, body = ask(request, endpoints, address,
                                         timeout=max(10, deadline_s - (time.time() - begin)))
                        text = answer_text(request, code, body)
                        if not text:
                            what = request["path"].rsplit("/", 1)[-1] or request["path"]
                            return (False, "%s on %s answered %s: %s" % (what, model, code, body[:300]), ready_s,
                                    None, seen_ready)
                        answers.setdefault(model, text[:200])
                return True, "", ready_s, answers, seen_ready
        time.sleep(interval)
        interval = min(interval * 1.5, 0.5)  # a local HTTP request: cheap; readiness is noticed within 0.5 s
    return False, "not ready within %d s (waiting for %s)" % (deadline_s, stage), ready_s, None, None


def main():
    spec = json.load(sys.stdin)
    passed, why, ready_s, answers, seen_ready = gate(spec)
    answer({"passed": passed, "why": why, "ready_s": ready_s, "models_ready_at": seen_ready, "answers": answers,
            "log": logs(spec["container"], int(spec.get("log_lines", 400)))})


if __name__ == "__main__":
    main()
