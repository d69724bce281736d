"""The lab's generate request: one prompt to each replica of the host's current release, on the host itself
(tritonops/lab/generate.py), printing a line per replica: its index, GPUs and the answer's text.
The replicas (their ports) and the release's serving mode are read from the current release.json; a release made
before replicas, or no release, is the one replica on PORT. What each mode asks is the controller's (MODES: JSON,
mode name -> {ports: the roles of a replica's ports in order, generate: one request document}); without it,
Triton's KServe generate.

    python3 -c SOURCE RELEASE_JSON PORT MODEL PROMPT [ADDRESS [MODES]]

ADDRESS: where the replicas answer on the host (default loopback; behind a balancer, the private address they
are bound to).
"""

import json, sys

from tritonops.host_programs.triton_client import answer_text, ask, kserve_requests


def release_serve(path):
    try:
        with open(path) as handle:
            found = json.load(handle).get("serve")
    except (OSError, ValueError, AttributeError):
        found = None
    return found if isinstance(found, dict) else {}


def main():
    path, port, model, prompt = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    address = sys.argv[5] if len(sys.argv) > 5 else "127.0.0.1"
    serve = release_serve(path)
    modes = json.loads(sys.argv[6]) if len(sys.argv) > 6 else {}
    mode = modes.get(serve.get("frontend") or "kserve") or {
        "ports": ["http"], "generate": kserve_requests([model], prompt, 12)["models"][model]["generate"][0]}
    replicas = serve.get("replicas") or [{"index": 0, "gpus": [], "ports": [port]}]
    failed = 0
    for replica in replicas:
        request = mode["generate"]
        where = "replica %d (GPU %s)" % (replica["index"], ",".join(map(str, replica["gpus"])) or "?")
        code, body = ask(request, dict(zip(mode["ports"], replica["ports"])), address, timeout=60)
        text = answer_text(request, code, body)
        if text is None:  # every replica is asked; the exit status says whether all answered
            failed += 1
            print("%s: FAILED %s %s" % (where, code, body[:200]))
        else:
            print("%s: %s" % (where, json.dumps(text)))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
