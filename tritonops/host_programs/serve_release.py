"""The serve program: serve a release on a host (stdlib only) — stop the running container, start the
release's, gate it, then switch `current`; or put the previous one back and gate that.

    python3 -c SOURCE    stdin: one JSON document (what `ServeStep` sends)   stdout: one JSON document (the outcome)

It runs on the host so the whole gate is one SSH command however long the model takes to load: it asks
the replica the serving mode's requests (in the input) on the host's loopback and polls `docker inspect` every
second or two until the deadline, and stops early when the container exits or restarts. The restricted APIs'
key is made here on the host the first time (0600) and read in the container by the container logger: it never
crosses the network, the controller's logs, a `docker run` command line or `docker inspect`.
"""

import json, os, re, subprocess, sys, time

from tritonops.host_programs.triton_client import answer_text, ask, requests_or_kserve

spec = started = None  # the request and when it came, set by main()

def docker(*args, timeout=120):
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout, done.stderr

def inspect(name):
    code, out, _ = docker("inspect", name)
    if code != 0:
        return None
    info = json.loads(out)[0]
    state = info.get("State", {})
    return {"running": bool(state.get("Running")), "status": state.get("Status"),
            "restarts": int(info.get("RestartCount", 0)), "exit_code": state.get("ExitCode"),
            "release": (info.get("Config", {}).get("Labels") or {}).get("tritonops.release"),
            "logging": (info.get("Config", {}).get("Labels") or {}).get("tritonops.logging"),
            "image": info.get("Image"), "started_at": state.get("StartedAt")}

TRITON_LEVELS = {"info": "I", "warn": "W", "error": "E", "debug": "V"}

def message(line):
    """A container logger line (one ECS JSON object) read back as the line it was: Triton's keep
    their time and level letter in front (the classifier passes over Triton's info and warning
    lines), vLLM's are their message."""
    if line.startswith("{"):
        try:
            doc = json.loads(line)
        except ValueError:
            return line
        if isinstance(doc, dict) and isinstance(doc.get("message"), str):
            level = TRITON_LEVELS.get(doc.get("log.level"))
            if doc.get("service.name") == "triton" and level and isinstance(doc.get("@timestamp"), str):
                return "%s %s %s" % (doc["@timestamp"], level, doc["message"])
            return doc["message"]
    return line

def logs(name, lines=400):
    code, out, err = docker("logs", "--tail", str(lines), name)
    return [message(line) for line in (out + err).splitlines()[-lines:]]

def install_logger(path, source):
    """The container logger, next to the releases: written when missing or different."""
    try:
        with open(path) as handle:
            if handle.read() == source:
                return
    except OSError:
        pass
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    tmp = path + ".tritonops-new"
    with open(tmp, "w") as handle:
        handle.write(source)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)

def logging_driver_failed(err):
    """docker run's error when the logging driver could not start (a collector down, unreachable)."""
    return "logging driver" in err or ("logger" in err.lower() and "failed" in err.lower())

def replica_ask(request, endpoints, timeout=10):
    # where the replicas answer on this host: loopback, or the one address they are bound to (behind a balancer)
    return ask(request, endpoints, spec.get("address") or "127.0.0.1", timeout)

def endpoints_of(replica):
    """role -> port on the host of the replica's serving mode (an input from before modes: its HTTP port)."""
    return replica.get("endpoints") or {"http": replica["http_port"]}

def gate(name, deadline_s, expected, replica):
    """(passed, why, seconds to ready, answers, when every model was seen ready) for the container
    `name` running release `expected`, answering at the replica's ports on the host, asked the serving mode's
    requests (spec["requests"]); the last is a Unix time, for measuring how soon the gate notices."""
    asked = requests_or_kserve(spec.get("requests"), spec["models"], spec["prompt"], spec["max_tokens"])
    endpoints = endpoints_of(replica)
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
        if stage == "live":
            if replica_ask(asked["live"], endpoints)[0] == 200:
                stage = "ready"
        if stage == "ready":
            if replica_ask(asked["ready"], endpoints)[0] == 200:
                stage, ready_s = "models", time.time() - begin
        if stage == "models":
            pending = [m for m in spec["models"] if asked["models"][m]["ready"]
                       and replica_ask(asked["models"][m]["ready"], endpoints)[0] != 200]
            if not pending:
                seen_ready, answers = time.time(), {}
                for model in spec["models"]:
                    for request in asked["models"][model]["generate"]:
                        code, body = replica_ask(request, endpoints,
                                                 timeout=max(10, deadline_s - (time.time() - begin)))
                        text = answer_text(request, code, body)
                        if not text:
                            what = request["path"].rsplit("/", 1)[-1] or request["path"]
                            return (False, "%s on %s answered %s: %s" % (what, model, code, body[:300]), ready_s,
                                    None, seen_ready)
                        answers.setdefault(model, text[:200])
                return True, "", ready_s, answers, seen_ready
        time.sleep(interval)
        interval = min(interval * 1.5, 0.5)  # a local HTTP request: cheap; Triton's readiness is noticed within 0.5 s
    return False, "not ready within %d s (waiting for %s)" % (deadline_s, stage), ready_s, None, None

def ensure_admin_key(path):
    """The restricted APIs' key: made here (0600, random) the first time, so it never travels."""
    if path and not os.path.exists(path):
        import secrets
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(24) + "\n")

def prune(keep, current, previous, containers):
    """Keep the newest `keep` releases (and always current and previous); their parked containers (of each of
    `containers`, the replicas') too."""
    folder = os.path.join(spec["root"], "releases")
    names = sorted(n for n in os.listdir(folder) if not n.startswith("."))
    doomed = [n for n in names[:-keep] if n not in (current, previous)] if keep > 0 else []
    for name in doomed:
        import shutil
        shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
        for container in containers:
            for suffix in ("", "-failed"):
                remove("%s--%s%s" % (container, name, suffix))
    return doomed

def switch_current(release):
    link = os.path.join(spec["root"], "current")
    tmp = link + ".tritonops-new"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(os.path.join("releases", release), tmp)
    os.replace(tmp, link)

def record_gate(release, gate):
    path = os.path.join(spec["root"], "releases", release, "release.json")
    try:
        with open(path) as handle:
            body = json.load(handle)
    except (OSError, ValueError):
        return
    if not isinstance(body, dict) or not isinstance(body.get("gates", []), list):
        return  # a damaged release.json is left as it is: that release is never gone back to
    body.setdefault("gates", []).append(gate)
    tmp = path + ".tritonops-new"
    with open(tmp, "w") as handle:
        json.dump(body, handle, indent=2)
        handle.write("\n")
    os.replace(tmp, path)

def reported_kv_tokens(lines):
    tokens_pattern, blocks_pattern = spec["kv_patterns"]
    found = None
    for line in lines:
        match = re.search(tokens_pattern, line)
        if match:
            found = int(match.group(1).replace(",", ""))
        elif found is None:
            match = re.search(blocks_pattern, line)
            if match:
                found = int(match.group(1)) * 16
    return found

def remove(name):
    if inspect(name) is not None:
        docker("rm", "--force", name)

def finish(outcome):
    outcome["seconds"] = round(time.time() - started, 2)
    json.dump(outcome, sys.stdout)
    sys.exit(0)

def one_at_a_time():
    """One serve program per deployment on the host at a time (flock, dropped by the kernel when the
    program ends): a run cut off from its controller (connection lost, controller killed: the next run
    takes its lock over) leaves its program working here until it is done; the next one waits for it."""
    import fcntl
    os.makedirs(spec["root"], exist_ok=True)
    fd = os.open(os.path.join(spec["root"], ".serve.flock"), os.O_WRONLY | os.O_CREAT, 0o600)
    end = time.time() + spec.get("wait_s", spec["deadline_s"] + 60)
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.time() > end:
                finish({"status": "refused", "why": "another serve program of this deployment is still running on "
                        "the host (a run cut off from its controller); try again when it is done"})
            time.sleep(0.5)

def gate_passed(release):
    try:
        with open(os.path.join(spec["root"], "releases", release, "release.json")) as handle:
            return any(isinstance(g, dict) and g.get("passed") for g in json.load(handle).get("gates") or [])
    except (OSError, ValueError, AttributeError):
        return False

def current_release():
    """The release `current` names, or None."""
    try:
        target = os.readlink(os.path.join(spec["root"], "current"))
    except OSError:
        return None
    return target[len("releases/"):] if target.startswith("releases/") else None

def descendants(root_pid):
    """Processes under `root_pid` (a container's), from /proc's parent links."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as handle:
                    ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = set(), [root_pid]
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo.extend(children.get(pid, ()))
    return found


def running_as_asked(state, release):
    return bool(state and state["running"] and state["release"] == release and state["image"] == spec["image_id"]
                and state["logging"] == spec["logging"])

def refusal(replica, release):
    """Why this replica cannot start (a GPU another process holds, a port bound by another), checked for
    every replica before any container is stopped; None when it can."""
    name = replica["container"]
    current = inspect(name)
    if running_as_asked(current, release):
        return None
    ours = set()
    if current and current["running"]:
        code, out, _ = docker("inspect", "--format", "{{.State.Pid}}", name)
        if code == 0 and out.strip().isdigit():
            ours = descendants(int(out.strip()))
    foreign = [p for p in replica.get("gpu_processes", []) if p["pid"] not in ours and os.path.exists("/proc/%d" % p["pid"])]
    if foreign:
        return "GPU busy: " + ", ".join(
            "GPU %d is held by pid %d (%.1f GiB)" % (p["gpu"], p["pid"], p["bytes"] / 2**30) for p in foreign)
    if not (current and current["running"]):
        import socket
        for port in replica["ports"]:
            probe = socket.socket(socket.AF_INET6 if ":" in spec["bind"] else socket.AF_INET)
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT leftovers are not listeners
            try:
                probe.bind((spec["bind"], port))
            except OSError:
                return "port in use: %s:%d is bound by another process" % (spec["bind"], port)
            finally:
                probe.close()
    return None

def gate_record(passed, why, ready_s, seen_ready, log, shipping, replica, **more):
    record = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "passed": passed, "why": why,
              "ready_s": ready_s, "models_ready_at": seen_ready, **more,
              "kv_cache_tokens": {"predicted": spec["predicted_kv_tokens"], "reported": reported_kv_tokens(log)},
              "shipping": shipping or "ok", "log_tail": log[-60:]}
    if replica.get("name") is not None:
        record["replica"] = replica["name"]
    return record

def serve_replica(replica, release):
    """One replica on `release`: found running it (gated again), or its container stopped and parked, the
    release's started and gated; on failure the parked one back and gated. A dict: status (unchanged,
    switched, failed, rolled_back) and what the outcome tells."""
    name = replica["container"]
    current = inspect(name)
    if running_as_asked(current, release):
        passed, why, ready_s, answers, seen_ready = gate(name, min(60, spec["deadline_s"]), release, replica)
        if passed:
            if not gate_passed(release):
                # found running without a passed gate on record (its run was cut off, or its container came
                # back after a restart of the engine): `current` only ever names a release that passed one
                record_gate(release, gate_record(True, "", ready_s, seen_ready, logs(name), "", replica,
                                                 found_running=True))
            return {"status": "unchanged", "restarts": current["restarts"], "answers": answers}
    previous = current["release"] if current else None
    parked = "%s--%s" % (name, previous) if previous else None
    if current is None and current_release() not in (None, release) and inspect("%s--%s" % (name, current_release())):
        # a run cut off after parking the previous container and before starting its own (connection lost,
        # dockerd gone): the release `current` names is the previous one, and comes back if this one fails
        previous = current_release()
        parked = "%s--%s" % (name, previous)
    if current:
        docker("stop", "--time", str(spec["stop_timeout_s"]), name)
        if parked:
            remove(parked)
            docker("rename", name, parked)
        else:
            remove(name)
    remove(name)
    argv, fallback = list(replica["run_argv"]), list(replica["fallback_run_argv"])
    shipping = ""
    code, out, err = docker(*argv[1:])
    if code != 0 and logging_driver_failed(err):
        # shipping never blocks serving: the host's rotated local logs instead, said in the result
        shipping = "%s to %s failed (%s); logs kept on the host (json-file) for this release" % (
            spec["log_driver"], spec.get("log_collector") or "the host", err.strip().splitlines()[-1][-200:] if err.strip() else "?")
        remove(name)
        code, out, err = docker(*fallback[1:])
    if code == 0:
        passed, why, ready_s, answers, seen_ready = gate(name, spec["deadline_s"], release, replica)
        log = logs(name)
    else:
        passed, why, ready_s, answers, seen_ready = False, "docker run failed: " + err.strip()[-300:], None, None, None
        log = err.splitlines()
    record = gate_record(passed, why, ready_s, seen_ready, log, shipping, replica)
    if passed:
        record_gate(release, record)
        return {"status": "switched", "previous": previous, "parked": parked, "ready_s": ready_s, "answers": answers,
                "log": log, "kv_cache_tokens": record["kv_cache_tokens"], "shipping": shipping}
    failed = "%s--%s-failed" % (name, release)
    remove(failed)
    if inspect(name) is not None:
        docker("stop", "--time", "10", name)
        docker("rename", name, failed)
    record_gate(release, record)
    outcome = {"status": "failed", "why": why, "log": log, "previous": previous, "kept_as": failed, "shipping": shipping}
    if parked and inspect(parked) is None:
        outcome.update(rolled_back=False, rollback_why="its container %s is gone" % parked)
    elif parked:
        outcome.update(back_to(replica, parked, previous))
    return outcome

def back_to(replica, parked, previous):
    """The replica's parked container (of release `previous`) serving again under its name, gated."""
    name = replica["container"]
    docker("rename", parked, name)
    docker("start", name)
    back, back_why, _, back_answers, _ = gate(name, spec["deadline_s"], previous, replica)
    return {"status": "rolled_back" if back else "failed", "rolled_back": back, "rollback_why": back_why,
            "answers": back_answers}

def undo(replica, result, release):
    """A replica that switched to `release` while a later one failed: its new container is kept aside (as
    <container>--<release>) and its parked previous one serves again, gated. (back, why)"""
    name, parked, previous = replica["container"], result.get("parked"), result.get("previous")
    if not parked or inspect(parked) is None:
        return False, "its previous container is gone" if parked else "it had no previous release"
    docker("stop", "--time", str(spec["stop_timeout_s"]), name)
    remove("%s--%s" % (name, release))
    docker("rename", name, "%s--%s" % (name, release))
    back = back_to(replica, parked, previous)
    return back["rolled_back"], back["rollback_why"]


def ray_nodes(container):
    """The live nodes as the Ray of `container` lists them ({ip, gpus}), or None while it does not answer."""
    try:
        code, out, _ = docker("exec", container, "python3", "-c", spec["ray"]["nodes_script"], timeout=90)
    except subprocess.TimeoutExpired:
        return None
    if code != 0 or not out.strip():
        return None
    try:
        return json.loads(out.strip().splitlines()[-1])
    except ValueError:
        return None

def reachable(address, port, timeout=2.0):
    import socket
    try:
        socket.create_connection((address, port), timeout=timeout).close()
        return True
    except OSError:
        return False

def ray_node_running(ray):
    """Whether the member's Ray node container runs the node this release asks for (its digest label)."""
    code, out, _ = docker("inspect", "--format", "{{.State.Running}} {{index .Config.Labels \"%s\"}}" % ray["label"],
                          ray["container"])
    return code == 0 and out.split() == ["true", ray["digest"]]

def ensure_ray_node(ray, end):
    """The member's Ray node as its release asks (restarted when its digest differs or it is not running): a
    worker's only once the head's GCS answers, the head's until its GCS does. (restarted, why it failed)."""
    if ray_node_running(ray):
        return False, None
    remove(ray["container"])
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
    """Until Ray lists each address of `want` alive with its GPUs; None, or why not by the deadline."""
    nodes = None
    while True:
        nodes = ray_nodes(ray["container"])
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

def ray_member(release):
    """A pipeline's member: its Ray node first (head: every member joined before Triton starts); a worker ends
    here: its node joined, the release is current. Returns whether the node was restarted (the head goes on)."""
    ray = spec["ray"]
    end = time.time() + ray["deadline_s"]
    restarted, why = ensure_ray_node(ray, end)
    if why is None:
        why = wait_members(ray, end, ray["addresses"] if ray["role"] == "head" else [ray["node_ip"]])
    if why is not None:
        finish({"status": "failed", "why": "Ray %s node: %s" % (ray["role"], why)})
    if ray["role"] == "head":
        return restarted
    was = current_release()
    if restarted or not gate_passed(release):
        record_gate(release, {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "passed": True, "why": "",
                              "ray_node": ray["container"], "restarted": restarted})
    switch_current(release)
    said = {"role": "worker", "restarted": restarted}
    if not restarted and was == release:
        finish({"status": "unchanged", "found_serving": True, "ray": said})
    finish({"status": "switched", "previous": was if was != release else None, "ray": said,
            "pruned": prune(spec.get("keep", 0), release, was, []), "ready_s": None, "answers": {}, "log": [],
            "kv_cache_tokens": {"predicted": spec["predicted_kv_tokens"], "reported": None}, "shipping": ""})

def retire_surplus(replicas):
    """Once every replica serves: the deployment's other running containers (replicas a smaller placement no
    longer has) stopped and removed; a rollback to a release that had them starts them again."""
    if not spec.get("deployment"):
        return []
    keep = {r["container"] for r in replicas}
    code, out, _ = docker("ps", "--filter", "label=tritonops.deployment=%s" % spec["deployment"], "--format",
                          "{{.Names}}")
    retired = [name for name in (out.split() if code == 0 else []) if name not in keep and "--" not in name]
    for name in retired:
        docker("stop", "--time", str(spec["stop_timeout_s"]), name)
        remove(name)
    return retired


def main():
    global spec, started
    spec = json.load(sys.stdin)
    started = time.time()
    serving_fd = one_at_a_time()  # noqa: F841 -- the flock lasts as long as this program
    release = spec["release"]
    replicas = spec["replicas"]  # in rollout order; one for a host of one container
    # a rollout the controller paces (a balancer drains each replica first): this run serves the replica at
    # position `step` only; `earlier` holds what the runs before it answered for the replicas before it
    step = spec.get("step")
    earlier = spec.get("earlier") or []
    ray_restarted = ray_member(release) if spec.get("ray") and not step else False
    was = current_release()
    if step is None or step == 0:
        for replica in replicas:  # every replica checked before any container is stopped
            why = refusal(replica, release)
            if why:
                prefix = "replica %s: " % replica["name"] if replica.get("name") is not None else ""
                finish({"status": "refused", "why": prefix + why})
        ensure_admin_key(spec.get("admin_key_file"))  # read in the container by the container logger
        if spec.get("logger_path"):
            install_logger(spec["logger_path"], spec["logger_source"])
    done = [(replicas[i], result) for i, result in earlier]
    for replica in (replicas if step is None else [replicas[step]]):
        result = serve_replica(replica, release)
        if result["status"] in ("unchanged", "switched"):
            done.append((replica, result))
            if step is not None and step < len(replicas) - 1:
                finish({"status": "stepped", "step": step, "result": result})
            continue
        if replica.get("name") is not None:
            result["replica"] = replica["name"]
        undone = [(r["name"], undo(r, res, release)) for r, res in done if res["status"] == "switched"]
        if undone:
            result["replicas_back"] = [{"replica": n, "back": back, "why": why} for n, (back, why) in undone]
            if not all(back for _, (back, _) in undone):
                result.update(status="failed", rolled_back=False, rollback_why="; ".join(
                    "replica %s: %s" % (n, why) for n, (back, why) in undone if not back))
        finish(result)
    switched = [res for _, res in done if res["status"] == "switched"]
    switch_current(release)
    retired = retire_surplus(replicas)
    if not switched:
        first = done[0][1]
        found = bool(spec.get("ray")) and not ray_restarted and was == release and not retired
        finish({"status": "unchanged", "restarts": sum(res.get("restarts", 0) for _, res in done),
                "answers": first.get("answers"), **({"retired": retired} if retired else {}),
                **({"found_serving": True} if found else {})})
    previous = next((res["previous"] for res in switched if res.get("previous")), None)
    pruned = prune(spec.get("keep", 0), release, previous, [r["container"] for r in replicas])
    first = switched[0]
    outcome = {"status": "switched", "pruned": pruned, "previous": previous, "ready_s": max(
        (res["ready_s"] for res in switched if res.get("ready_s") is not None), default=None),
        "answers": first["answers"], "log": first["log"], "kv_cache_tokens": first["kv_cache_tokens"],
        "shipping": "; ".join(sorted({res["shipping"] for res in switched if res.get("shipping")}))}
    if spec.get("ray"):
        outcome["ray"] = {"role": "head", "restarted": ray_restarted}
    if len(replicas) > 1:
        outcome["replicas"] = [{"replica": r["name"], "status": res["status"]} for r, res in done]
    if retired:
        outcome["retired"] = retired
    finish(outcome)


if __name__ == "__main__":
    main()
