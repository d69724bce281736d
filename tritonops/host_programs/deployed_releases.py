"""The releases fact: what is deployed on a host (each release.json, `current`, the container), read
by tritonops/serving/releases.py's parse_releases.

    python3 -c SOURCE ROOT CONTAINER    stdout: JSON {releases, current, container}
"""

import json, os, subprocess, sys


def main():
    root, container = sys.argv[1], sys.argv[2]
    folder = os.path.join(root, "releases")
    releases = []
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if name.startswith("."):
            continue
        try:
            with open(os.path.join(folder, name, "release.json"), "rb") as handle:
                raw = handle.read(4 * 1024 * 1024 + 1)
            body = json.loads(raw.decode("utf-8")) if len(raw) <= 4 * 1024 * 1024 else None
        except (OSError, ValueError) as err:
            body, why = None, "%s: %s" % (type(err).__name__, err)
        else:
            why = "not a JSON object of at most 4 MiB"
        if not isinstance(body, dict):
            releases.append({"id": name, "damaged": why[:200]})
            continue
        gates = body.get("gates") if isinstance(body.get("gates"), list) else []
        models = body.get("models") if isinstance(body.get("models"), list) else []
        files = body.get("files") if isinstance(body.get("files"), dict) else {}
        releases.append({"id": name, "created": body.get("created"), "image_id": body.get("image_id"),
                         "serve": body.get("serve"), "who": body.get("who"),
                         "files": {p: s for p, s in files.items() if str(p).endswith("/model.json")},
                         "models": [m.get("name") for m in models if isinstance(m, dict)],
                         "max_num_seqs": [(m.get("engine") or {}).get("max_num_seqs") for m in models
                                          if isinstance(m, dict) and isinstance(m.get("engine"), dict)],
                         "gates": [{k: g.get(k) for k in ("at", "passed", "why", "ready_s", "kv_cache_tokens")}
                                   for g in gates if isinstance(g, dict)]})
    link = os.path.join(root, "current")
    current = os.readlink(link) if os.path.islink(link) else None
    done = subprocess.run(["docker", "inspect", container], capture_output=True, text=True)
    state = None
    if done.returncode == 0:
        info = json.loads(done.stdout)[0]
        s = info.get("State", {})
        state = {"status": s.get("Status"), "running": bool(s.get("Running")), "started_at": s.get("StartedAt"),
                 "restarts": int(info.get("RestartCount", 0)), "image": info.get("Image"),
                 "restart": (info.get("HostConfig", {}).get("RestartPolicy") or {}).get("Name"),
                 "release": (info.get("Config", {}).get("Labels") or {}).get("tritonops.release"),
                 "log_driver": (info.get("HostConfig", {}).get("LogConfig") or {}).get("Type"),
                 "logging": (info.get("Config", {}).get("Labels") or {}).get("tritonops.logging")}
    json.dump({"releases": releases, "current": current, "container": state}, sys.stdout)


if __name__ == "__main__":
    main()
