"""A fabfile that deploys Triton + vLLM with tritonops (docs/python-api.md).

    pip install 'tritonops[fabric]'
    fab deploy                 # fabric.yaml beside this file says which hosts, and their variables
    fab deploy --check         # change nothing: what would be done
    fab status
    fab rollback

The hosts are fabric Connections made the usual way, so everything fabric knows about reaching them applies
(fabric's `user`, `port` and `connect_kwargs`, ~/.ssh/config or `fab -S FILE`, `fab -i KEY`); what tritonops
deploys there comes from the `tritonops` section of fabric's configuration (fabric.yaml, or `fab -f FILE`):

    tritonops:
      hosts: [gpu1, gpu2]               # ~/.ssh/config aliases, or user@host:port
      vars:                             # every host's variables, as an inventory's `all: vars:`
        tritonops_model: /srv/models/Qwen2.5-7B-Instruct
        tritonops_deployment: chat

tritonops checks each host's key against known_hosts (the host's UserKnownHostsFile, else ~/.ssh/known_hosts):
fabric's own default would trust an unknown key silently; tritonops refuses it and says how to trust it.
"""

from fabric import ThreadingGroup, task
from invoke.exceptions import Exit

from tritonops import api


def fleet(c):
    """The GPU hosts as one fabric group, each Connection made with this run's configuration."""
    return ThreadingGroup(*c.config.tritonops.hosts, config=c.config)


def fleet_vars(c) -> dict:
    return _plain(c.config.tritonops.get("vars") or {})


def _plain(value):
    """fabric's configuration values as plain dicts and lists (its mappings are proxies of the config)."""
    if hasattr(value, "items"):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _recap(report) -> None:
    for host, counts in report.recap.rows():
        print(host, " ".join(f"{status}={count}" for status, count in counts.items()))
    failed = [f"{r.host}: {r.task}: {r.msg}" for r in report.results if r.status in ("failed", "unreachable")]
    if failed or not report.ok:
        raise Exit("\n".join(failed) or (report.run.stopped_reason if report.run else "not ok"), code=report.exit_code)


@task
def deploy(c, check=False):
    """Deploy the model to every host (a rolling deploy with a health gate; --check changes nothing)."""
    report = api.deploy(hosts=fleet(c), vars=fleet_vars(c), options=api.DeployOptions(check=check))
    _recap(report)
    for host, plan in report.plans.items():
        for model in plan.models:
            print(f"{host}: {model.name} TP {model.plan.tensor_parallel_size}, "
                  f"max_model_len {model.plan.max_model_len}")


@task
def rollback(c, to=None):
    """Each host back to its previous release that served (or --to RELEASE)."""
    _recap(api.rollback(hosts=fleet(c), vars=fleet_vars(c), to=to))


@task
def status(c):
    """What each host serves: release, container, readiness."""
    results = api.status(hosts=fleet(c), vars=fleet_vars(c))
    for result in results:
        print(result.host, result.status, result.payload.current if result.payload else "-", result.msg)
    if not results.all_ok:
        raise Exit(code=2)
