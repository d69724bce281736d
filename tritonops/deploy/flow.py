"""deploy: inventory + playbook -> a release on every host, as data.

Phases over one SessionPool (each host dialled once), each host's outcome a result, a host that
fails a phase leaving the run while the others go on:
  1. load   the playbook, its roles and the inventory (with role defaults), read once by the caller
            (playbook.inputs.load_run_inputs): every static mistake is an error before any host is
            contacted, a bad serving value too (planning.host_values);
  2. facts  the probe on every host (read-only);
  3. plan   sizing and the rendered model repository per host (pure); a host where the model does
            not fit fails here, with the sizing reason;
  4. lock   each remaining host's deployment lock (not in --check);
  5. image  the vllm_env image built once and streamed to the hosts that lack it (in --check: the
            image each host already has);
     weights a controller folder that several hosts need, passed host to host so that it leaves the
            controller about once (deploy.weights_phase; not in --check);
  6. compile the playbook for the remaining hosts with what tritonops planned for each (the plan,
            the weights, the image, the release) as host facts (it is also compiled once right after
            the plan, before the lock: every template error comes before any write);
  7. run    the playbook (weights, model repository, release, Triton started and gated); with balancers,
            each replica drained on them before it restarts and ready again after (deploy.door_rollout);
  8. unlock;
  9. events  this run's events per host (deploy.events) to the controller's audit log and, where the
            host ships its Triton logs, the same way to the same collector (deploy.event_log);
 10. targets the Prometheus file_sd file, where the inventory names one (deploy.targets), read through
            the same sessions;
 11. door   every balancer (the hosts of `tritonops_balancers`, which serve nothing themselves) in front of
            the replicas the serving hosts' current releases placed (deploy.door).
With --bench-gate, the run's step 7 benches the first batch that switched and may send it back and stop the
rollout there (deploy.bench_gate).
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import time
from dataclasses import replace
from typing import Any, Callable, Sequence

from tritonops import __version__
from tritonops.deploy.bench_gate import BenchGate, BenchGatePlan
from tritonops.deploy.door import update_doors
from tritonops.deploy.door_rollout import door_rollout, said_drained
from tritonops.deploy.event_log import events_phase
from tritonops.deploy.ray_tokens import cluster_token
from tritonops.deploy.run import DeployOptions, DeployReport, locked, who
from tritonops.deploy.targets import write_targets
from tritonops.deploy.weights_phase import weights_phase
from tritonops.facts.probe import read_facts
from tritonops.image.ids import short_image_id
from tritonops.operations.serve import serve_release
from tritonops.planning import HostDeployPlan, controller_folders, load_models, model_refs, plan_hosts
from tritonops.planning.door import ServedHost, served_host, server_name
from tritonops.planning.cluster_plan import object_store_bytes
from tritonops.planning.cluster_rollout import (cluster_members, incomplete, mixed_images, outside_limit,
                                                split_by_batches)
from tritonops.planning.deployment import deployment_of
from tritonops.planning.serve_record import ClusterRecord, ReplicaRecord, ReplicaSlot, ServeRecord
from tritonops.planning.gpu_choice import describe
from tritonops.planning.host_values import check_host_values
from tritonops.playbook import RunInputs, compile_playbook, run_playbook
from tritonops.playbook.batches import batches
from tritonops.playbook.events import EventStream, OnEvent
from tritonops.playbook.host_task import RunHooks, TaskOutcome
from tritonops.results import HostResult
from tritonops.serving.ray_member import token_digest
from tritonops.serving.verdict import gate_deadline_s
from tritonops.transport.sessions import HostSession, SessionPool

NO_IMAGE = {"id": "", "reference": ""}  # before the image phase, and in --check on a host without one


def deploy(inputs: RunInputs, options: DeployOptions, *, on_event: OnEvent | None = None,
           clock: Callable[[], float] = time.time, gate: BenchGatePlan | None = None) -> DeployReport:
    """`on_event`: a subscriber of the run's one event stream (the controller's phases, the playbook's
    plays and tasks), beside the report itself. `gate`: the canary bench after the first batch that switched
    (deploy.bench_gate; not in --check)."""
    report = DeployReport(check=options.check)
    stream = EventStream([report.subscriber(clock), on_event])
    record = stream.phase
    started = clock()

    hosts, balancers = list(inputs.hosts), list(inputs.balancers)  # the balancers serve nothing: their doors last
    deployments = {host.name: deployment_of(host) for host in hosts}
    check_host_values(hosts, options.request, options.default_model, options.model_name, inputs.behind_balancer)
    # every balancer of the inventory, whatever --limit selects: drained for the replicas the run restarts, its
    # doors rendered from every host serving the run's deployments (those outside the limit read-only)
    doors = list(inputs.doors)
    fleet = list(inputs.fleet({name for _, name in deployments.values()} if hosts else None)) if doors else []
    refs = model_refs(hosts, options.default_model, options.model_name)
    models, model_errors = load_models(refs)
    folders = controller_folders(hosts, refs)
    created = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(clock()))

    # a build host --limit left out: asked only for hosts lacking the image (image/api.py), never deployed to
    builders = {name: host for name, host in _outside_builders(hosts, inputs, options).items()
                if name not in {h.name for h in hosts + balancers}}
    reached = {host.name: host for host in hosts + balancers + list(builders.values()) + doors + fleet}
    with SessionPool([host.connection for host in reached.values()], forks=options.forks,
                     accept_new_host_keys=options.accept_new_host_keys) as pool:
        probed = {}
        for result in pool.run(_facts_phase, [host.name for host in hosts], task="facts"):
            record(result)
            if result.ok:
                probed[result.host] = result.payload
        alive = [host for host in hosts if host.name in probed]
        plans = plan_hosts(alive, probed, options.request, models, model_errors, default_model=options.default_model,
                           default_name=options.model_name, metrics=options.metrics, folders=folders,
                           behind_balancer=inputs.behind_balancer)
        report.plans = {plan.host: plan for plan in plans}
        ready = []
        for plan in plans:
            record(HostResult(plan.host, "ok" if plan.ok else "failed", _plan_summary(plan), plan, task="plan"))
            if plan.ok:
                ready.append(plan.host)
        by_name = {host.name: host for host in hosts}
        digest = inventory_digest(inputs.paths)
        clusters = cluster_members(plans)   # pipelines across hosts: each deployed as one unit
        tokens = {name: cluster_token(deployments[members[0]][1], name) for name, members in clusters.items()
                  if not options.check}

        def compiled_for(names, images):
            facts = {name: _host_facts(by_name[name], report.plans[name], images.get(name, NO_IMAGE),
                                       deployments[name], created, options, digest, probed[name], tokens)
                     for name in names}
            return facts, compile_playbook(inputs, host_facts=facts, tags=options.tags, skip_tags=options.skip_tags,
                                           only_hosts=names, start_at_task=options.start_at_task)

        def leave(why_by_host: dict[str, str], names: list[str]) -> list[str]:
            for name, why in why_by_host.items():
                if name in names:
                    report.plans[name] = replace(report.plans[name], error=why, files={})
                    record(HostResult(name, "failed", why, report.plans[name], task="cluster"))
            return [name for name in names if name not in why_by_host]

        ready = leave(outside_limit(hosts, inputs.inventory.hosts), ready)
        _, checked = compiled_for(ready, {})  # every template rendered for every host before anything is written
        ready = leave(split_by_batches(clusters, [batch for play in checked.plays for batch in batches(
            [h for h in play.hosts if h in ready], play.play.serial)]), ready)
        try:
            with locked(pool, ready, deployments, options, record) as ready:
                ready = leave(incomplete(clusters, ready, "its lock"), ready)
                images = _image_phase(pool, [host for host in hosts if host.name in ready], options, record, report,
                                      builders)
                ready = leave(incomplete(clusters, images, "its image"), [name for name in ready if name in images])
                ready = leave(mixed_images(clusters, {name: images[name]["id"] for name in ready}), ready)
                if not options.check:  # a controller folder several hosts need: host to host
                    kept, report.weights_bytes = weights_phase(pool, hosts, ready, report.plans, record)
                    ready = leave(incomplete(clusters, kept, "its weights"), kept)
                report.host_facts, compiled = compiled_for(ready, images)
                rollout = door_rollout(pool, ready, doors, deployments, options)
                # a long step (a weights push) tells its bytes on the run's stream; serve steps roll behind the door
                hooks = RunHooks(step_runner=rollout, on_progress=stream)
                after = BenchGate(gate, pool, by_name, stream, record, hooks) if gate is not None \
                    and not options.check else None
                report.run = run_playbook(compiled, pool, check=options.check, diff=options.diff, on_event=stream,
                                          after_batch=after, confirm=options.step, hooks=hooks)
                said_drained(rollout, ready, record)
                report.bench_gate = after.report if after is not None else None
            if not options.check:
                events_phase(pool, hosts, deployments, report, options, who=who(), started=started,
                             finished=clock(), on_phase=record)
                write_targets(pool, hosts, report, record, balancers,  # Prometheus file_sd
                              behind_balancer=inputs.behind_balancer)
                update_doors(pool, doors, fleet, record)  # HAProxy on the balancers (tritonops_balancers)
            elif doors:  # what the doors would become, and which replicas the run would drain first
                planned, draining = _door_changes(report, by_name)
                update_doors(pool, doors, fleet, record, check=True, diff=options.diff, planned=planned,
                             draining=draining)
        finally:
            report.traffic = pool.traffic()
    return report


def _door_changes(report: DeployReport, by_name) -> tuple[dict[str, ServedHost], dict[str, list[str]]]:
    """In --check: each host whose serve task would run, as its new release would serve behind the doors, and the
    servers (one per replica) the run would drain first."""
    changed = [result.host for result in (report.run.results if report.run else ())
               if result.status == "changed" and isinstance(result.payload, TaskOutcome)
               and result.payload.operation == serve_release.name]
    planned, draining = {}, {}
    for name in dict.fromkeys(changed):
        plan = report.plans[name]
        serve = ServeRecord.from_release(report.host_facts[name]["tritonops_deploy"]["serve"], host_ports={})
        if not serve.replicas:
            continue  # a pipeline's worker: Triton runs on the head
        capacity = sum(model.plan.max_num_seqs for model in plan.models)
        planned[name] = served_host(by_name[name], serve, capacity)
        draining[name] = [server_name(name, replica.index) for replica in serve.replicas]
    return planned, draining


def _facts_phase(session: HostSession) -> HostResult:
    facts = session.facts = session.facts or read_facts(session.transport)
    gpus = len(facts.nvidia.gpus) if facts.nvidia and facts.nvidia.gpus else 0
    return HostResult(session.name, "ok", f"{gpus} GPU(s)", facts)


def _plan_summary(plan: HostDeployPlan) -> str:
    if not plan.ok:
        return "; ".join(plan.errors) or "nothing to deploy"
    parts = []
    for model in plan.models:
        engine = model.plan
        parts.append(f"{model.name} v{model.version}: {model.model} TP {engine.tensor_parallel_size}, "
                     f"max_model_len {engine.max_model_len}, KV {engine.kv_cache_tokens:,} tokens")
    return "; ".join(parts) + "".join(f"; {describe(r)}" for r in (plan.placement.replicas if plan.placement else ()))


def _outside_builders(hosts, inputs: RunInputs, options: DeployOptions) -> dict:
    if options.check:
        return {}
    from tritonops.image.settings import outside_build_hosts

    return outside_build_hosts(hosts, inputs.inventory)


def _image_phase(pool: SessionPool, hosts, options: DeployOptions, record, report, builders=None) -> dict[str, dict]:
    """host -> {"id", "reference"} of the image its release will run."""
    if not hosts:
        return {}
    from tritonops.image.api import build_images, image_status

    images = {}
    if options.check:
        for result in image_status(hosts, pool=pool):
            payload = result.payload or {}
            if result.ok and payload.get("image_id"):
                images[result.host] = {"id": payload["image_id"], "reference": payload.get("image", "")}
                record(replace(result, status="ok", msg=f"has {short_image_id(payload['image_id'])} "
                                                        "(a deploy builds or refreshes it first if its content changed)",
                               task="image"))
            else:
                images[result.host] = NO_IMAGE
                record(replace(result, status="changed", msg="would build or receive the vllm_env image", task="image"))
        return images
    built = build_images(hosts, forks=options.forks, pool=pool, builders=builders)
    report.image_bytes, report.image_relayed = built.bytes_out, dict(built.relayed_by_host)
    for result in built.results:
        payload = result.payload or {}
        # a host whose image preflight refused it ("skipped" for `image build`) cannot be deployed to
        record(replace(result, task="image", status="failed" if result.status == "skipped" else result.status))
        if result.ok and payload.get("image_id"):
            images[result.host] = {"id": payload["image_id"],
                                   "reference": payload.get("content_tag") or payload.get("image", "")}
    return images


def _host_facts(host, plan: HostDeployPlan, image: dict, deployment: tuple[str, str], created: str,
                options: DeployOptions, inventory: str, probed=None, tokens=None) -> dict[str, Any]:
    """What the roles see of tritonops' own planning for this host (like Ansible facts)."""
    root, name = deployment
    models = []
    for model in plan.models:
        weights = model.weights  # planned with the host's folders: plan.files names them
        models.append({"name": model.name, "version": model.version, "model": model.model,
                       "weights": weights.args, "model_id": weights.model_id, "weights_dir": weights.folder,
                       "manifest": weights.manifest, "engine": model.plan.to_dict()})
    files = plan.files
    engines = [model.plan for model in plan.models]
    weights_bytes = sum(engine.weights_bytes_per_gpu * engine.tensor_parallel_size for engine in engines)
    unique_weights = {json.dumps(m["weights"], sort_keys=True): m["weights"] for m in models}
    replicas = tuple(ReplicaRecord(index=r.index, gpus=tuple(r.gpus), ports=tuple(r.ports.all()),
                                   standby=ReplicaSlot(gpus=r.standby.gpus, ports=r.standby.ports.all())
                                   if r.standby is not None else None)
                     for r in plan.placement.replicas)
    gpus = sorted({gpu for r in replicas for gpu in (*r.gpus, *(r.standby.gpus if r.standby else ()))})
    token, cluster = "", None
    if plan.cluster is not None:  # a pipeline's member: its Ray node (serving.ray_member), Triton on the head only
        token = (tokens or {}).get(plan.cluster.name, "")
        cluster = ClusterRecord.from_json({**plan.cluster.to_release(), "host": host.name, "gpus": replicas[0].gpus,
                                           "token": token_digest(token), "object_store_bytes": object_store_bytes(host)})
        if cluster.worker:
            replicas = ()   # a worker serves through the head
    record = ServeRecord(  # what starting this release needs; kept in release.json too, so a rollback needs only the host
        models=tuple(sorted({m["name"] for m in models})),
        replicas=replicas,                # the placement: each replica's GPUs and host ports
        bind=plan.bind,                   # the address those ports bind to (private behind a balancer)
        weights_dirs=tuple(sorted({m["weights_dir"] for m in models})),
        deadline_s=float(gate_deadline_s(weights_bytes)),
        kv_cache_tokens=min(engine.kv_cache_tokens for engine in engines),
        frontend=plan.frontend,
        cluster=cluster)
    serve = record.to_release()
    held = [{"gpu": gpu.index, "pid": process.pid, "bytes": process.used_memory_bytes or 0}
            for gpu in (probed.nvidia.gpus if probed is not None and probed.nvidia else ()) if gpu.index in gpus
            for process in gpu.processes]
    return {
        "tritonops_deploy": {
            "root": posixpath.join(root, name),
            "ray_token": token,  # a pipeline member's (deploy.ray_tokens): written 0600 on the host, never shown
            "gpu_processes": held,  # what the probe saw on the release's GPUs: the serve step refuses foreign ones
            "models": models,
            "weights": list(unique_weights.values()),
            "manifests": sorted({m["manifest"] for m in models}),
            "files": files,
            "image": image,
            "serve": serve,
            "release": {"created": created, "metadata": {
                "tritonops_version": __version__, "inventory_digest": inventory,
                "who": who(), "serve": serve,
                "models": [{"name": m["name"], "version": m["version"], "model": m["model"], "engine": m["engine"]}
                           for m in models]}},
        },
        "ansible_check_mode": options.check,
    }


def inventory_digest(paths: Sequence[str]) -> str:
    """A digest of the inventory files as given (recorded in release.json, not part of its identity)."""
    digest = hashlib.sha256()
    for path in sorted(paths):
        for folder, _, names in (os.walk(path) if os.path.isdir(path) else [(os.path.dirname(path), [], [os.path.basename(path)])]):
            for name in sorted(names):
                full = os.path.join(folder, name)
                try:
                    with open(full, "rb") as handle:
                        digest.update(full.encode() + b"\0" + hashlib.sha256(handle.read()).digest())
                except OSError:
                    continue
    return digest.hexdigest()
