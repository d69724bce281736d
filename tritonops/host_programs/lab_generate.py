"""The lab's generate request: one prompt to each replica of the host's current release, on the host itself
(tritonops/lab/generate.py), printing a line per replica: its index, GPUs and the answer's text.
The replicas (their ports) are read from the current release.json; a release made before replicas, or no
release, is the one Triton on PORT.

    python3 -c SOURCE RELEASE_JSON PORT MODEL PROMPT [ADDRESS]

ADDRESS: where the replicas answer on the host (default loopback; behind a balancer, the private address they
are bound to).
"""

import json, sys, urllib.request


def replicas(path, port):
    try:
        with open(path) as handle:
            found = json.load(handle).get("serve", {}).get("replicas")
    except (OSError, ValueError, AttributeError):
        found = None
    return found or [{"index": 0, "gpus": [], "ports": [port]}]


def main():
    path, port, model, prompt = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    address = sys.argv[5] if len(sys.argv) > 5 else "127.0.0.1"
    host = "[%s]" % address if ":" in address else address
    body = json.dumps({"text_input": prompt, "parameters": {"stream": False, "max_tokens": 12}}).encode()
    failed = 0
    for replica in replicas(path, port):
        request = urllib.request.Request("http://%s:%d/v2/models/%s/generate" % (host, replica["ports"][0], model),
                                         data=body, headers={"Content-Type": "application/json"})
        where = "replica %d (GPU %s)" % (replica["index"], ",".join(map(str, replica["gpus"])) or "?")
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                print("%s: %s" % (where, json.dumps(json.loads(response.read())["text_output"])))
        except Exception as err:  # every replica is asked; the exit status says whether all answered
            failed += 1
            print("%s: FAILED %s" % (where, err))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
