"""A deployment's containers on the host, every state (stdlib only): the replicas, the parked ones
(`<replica>--<release>`) and the ones kept aside (`...-failed`), each with what the rollout planner reads
(tritonops/serving/replica_rollout.py). One `docker ps` and one `docker inspect`.

    python3 -c SOURCE DEPLOYMENT    stdout: JSON {name: {release, running, image, restarts, logging, ports}}
    (ports: the host ports its `docker run` published, whether it runs or not)
"""

import json, sys

from tritonops.host_programs.basic import answer, docker, fail


def main():
    deployment = sys.argv[1]
    code, out, err = docker("ps", "--all", "--filter", "label=tritonops.deployment=%s" % deployment,
                            "--format", "{{.Names}}")
    if code != 0:
        fail("docker ps failed: %s" % err.strip()[-300:])
    names = out.split()
    found = {}
    if names:
        code, out, err = docker("inspect", *names)
        for info in json.loads(out or "[]"):  # a container removed meanwhile is missing (docker exits 1)
            state, labels = info.get("State") or {}, (info.get("Config") or {}).get("Labels") or {}
            bindings = (info.get("HostConfig") or {}).get("PortBindings") or {}
            ports = sorted({int(b["HostPort"]) for published in bindings.values() for b in published or ()
                            if str(b.get("HostPort") or "").isdigit()})
            found[info.get("Name", "").lstrip("/")] = {
                "release": labels.get("tritonops.release"), "running": bool(state.get("Running")),
                "image": info.get("Image"), "restarts": int(info.get("RestartCount") or 0),
                "logging": labels.get("tritonops.logging"), "ports": ports}
    answer(found)


if __name__ == "__main__":
    main()
