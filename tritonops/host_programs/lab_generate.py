"""The lab's generate request: one prompt to Triton on the host's loopback (tritonops/lab/generate.py),
printing the answer's text.

    python3 -c SOURCE PORT MODEL PROMPT
"""

import json, sys, urllib.request


def main():
    port, model, prompt = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    body = json.dumps({"text_input": prompt, "parameters": {"stream": False, "max_tokens": 12}}).encode()
    request = urllib.request.Request("http://127.0.0.1:%d/v2/models/%s/generate" % (port, model), data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        print(json.loads(response.read())["text_output"])


if __name__ == "__main__":
    main()
