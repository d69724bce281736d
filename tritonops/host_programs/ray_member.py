"""The Ray member program: a pipeline member's Ray node as its release asks (stdlib only). On the head, the node up
and every member joined before Triton starts (the controller then starts the replicas); on a worker, its node up
and joined, a gate recorded and `current` switched: a worker runs no Triton of its own.

    python3 -c SOURCE    stdin: {root, release, keep, ray: serving/ray_member.py's program input}
                         stdout: {restarted, ...}; a worker's also {was, pruned, recorded}; {failed: why} when not
"""

import json, socket, subprocess, sys, time

from tritonops.host_programs.basic import answer, docker, inspect, logs
from tritonops.host_programs.release_files import current_release, gate_passed, prune, record_gate, switch_current


def ray_nodes(ray):
    """The live nodes as the member's Ray lists them ({ip, gpus}), or None while it does not answer."""
    try:
        code, out, _ = docker("exec", ray["container"], "python3", "-c", ray["nodes_script"], timeout=90)
    except subprocess.TimeoutExpired:
        return None
    if code != 0 or not out.strip():
        return None
    try:
        return json.loads(out.strip().splitlines()[-1])
    except ValueError:
        return None


def reachable(address, port, timeout=2.0):
    try:
        socket.create_connection((address, port), timeout=timeout).close()
        return True
    except OSError:
        return False


def node_running(ray):
    """Whether the member's Ray node container runs the node this release asks for (its digest label)."""
    code, out, _ = docker("inspect", "--format", "{{.State.Running}} {{index .Config.Labels \"%s\"}}" % ray["label"],
                          ray["container"])
    return code == 0 and out.split() == ["true", ray["digest"]]


def ensure_node(ray, end):
    """The node as the release asks (restarted when its digest differs or it is not running): a worker's only once
    the head's GCS answers, the head's until its GCS does. (restarted, why it failed or None)."""
    if node_running(ray):
        return False, None
    if inspect(ray["container"]) is not None:
        docker("rm", "--force", ray["container"])
    head, port = ray["gcs"]
    if ray["role"] == "worker":
        while not reachable(head, port):
            if time.time() > end:
                return True, "the head's Ray (%s:%d) did not answer within the deadline" % (head, port)
            time.sleep(1)
    code, _, err = docker(*ray["run_argv"][1:])
    if code != 0:
        return True, "docker run of the Ray node failed: " + err.strip()[-300:]
    while ray["role"] == "head" and not reachable(ray["node_ip"], port):
        state = inspect(ray["container"])
        if state is None or not state["running"] or time.time() > end:
            return True, "the Ray head did not start (%s): %s" % (
                "status %s" % state["status"] if state else "gone", " | ".join(logs(ray["container"], 5)))
        time.sleep(1)
    return True, None


def wait_members(ray, end, want):
    """Until Ray lists each address of `want` alive with its GPUs: None, or why not by the deadline."""
    while True:
        nodes = ray_nodes(ray)
        missing = list(want)
        if nodes is not None:
            alive = {n["ip"]: n["gpus"] for n in nodes}
            missing = [a for a in want if alive.get(a, 0) < ray["gpus_per_node"]]
            if not missing:
                return None
        state = inspect(ray["container"])
        if state is None or not state["running"]:
            return "the Ray node stopped: " + " | ".join(logs(ray["container"], 5))
        if time.time() > end:
            if nodes is None:
                return "Ray did not answer on this node within the deadline"
            return "the Ray cluster lists %d of %d members after the deadline; missing: %s" % (
                len(want) - len(missing), len(want), ", ".join(missing))
        time.sleep(2)


def main():
    spec = json.load(sys.stdin)
    ray, root, release = spec["ray"], spec["root"], spec["release"]
    end = time.time() + ray["deadline_s"]
    restarted, why = ensure_node(ray, end)
    if why is None:
        why = wait_members(ray, end, ray["addresses"] if ray["role"] == "head" else [ray["node_ip"]])
    if why is not None:
        answer({"restarted": restarted, "failed": "Ray %s node: %s" % (ray["role"], why)})
    if ray["role"] == "head":
        answer({"restarted": restarted})
    was = current_release(root)
    recorded = False
    if restarted or not gate_passed(root, release):
        recorded = record_gate(root, release, {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                               "passed": True, "why": "", "ray_node": ray["container"],
                                               "restarted": restarted})
    switch_current(root, release)
    pruned = [] if was == release else prune(root, int(spec.get("keep", 0)), release, was)
    answer({"restarted": restarted, "was": was, "pruned": pruned, "recorded": recorded})


if __name__ == "__main__":
    main()
