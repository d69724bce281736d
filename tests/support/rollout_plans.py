"""A rollout plan (serving.replica_rollout) as the JSON cases write it: tests/cases/serving/replica_rollout/ and the
serve and rollback operations' cases (tests/cases/operations/serve_release/, rollback_release/)."""

from tritonops.serving.replica_rollout import RolloutPlan


def on_standby(plan: RolloutPlan) -> tuple[int, ...]:
    """The replicas that run on their standby slot once the plan is carried out."""
    return tuple(p.index for p in plan.replicas if p.record is not None and p.record.ports != p.record.planned().ports)


def said(plan: RolloutPlan) -> dict:
    """The plan as the cases write it: each replica's non-empty fields, each step in one line."""
    replicas = []
    for replica in plan.replicas:
        shown = {"index": replica.index, "order": replica.order}
        for name in ("steps", "on_failure", "undo"):
            if getattr(replica, name):
                shown[name] = [step.said() for step in getattr(replica, name)]
        for name in ("previous", "refusal", "why_no_way_back"):
            if getattr(replica, name) is not None:
                shown[name] = getattr(replica, name)
        if replica.index in on_standby(plan):  # it runs on its standby slot once its steps are done
            shown["on_standby"] = True
        replicas.append(shown)
    return {"replicas": replicas, "surplus": [step.said() for step in plan.surplus],
            "switch_current": plan.switch_current, "refusals": list(plan.refusals)}
