"""`deploy --bench-gate` (issue #24): a canary gate after the first batch whose release changed.

Once that batch's hosts have switched to the new release (each passed its health gate), a short bench
(bench.gate_plan: its workload and thresholds from `tritonops_bench_gate_*`) runs against their replicas
directly, is kept like any bench under the new release, and is compared with the previous release's recorded run.
When the new release is slower past the thresholds, or the bench itself cannot run, that batch goes back to the
release each of its hosts served before (the rollback playbook, on the deploy's own sessions and locks, drained
behind the balancers as a deploy is) and the rollout stops there: later batches and plays are not run.
Every static mistake (a threshold, aiperf missing, several deployments) is an error before any host is contacted.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from tritonops.bench import store
from tritonops.bench.flow import check_ready, measure, read_fleet, tokenizer_for
from tritonops.bench.runner import aiperf_command
from tritonops.deploy.run import Record
from tritonops.errors import InputError, TritonopsError, one_line
from tritonops.bench.plan import release_key
from tritonops.bench.gate_plan import GateSettings, GateVerdict, baseline, gate_settings, verdict
from tritonops.planning.deployment import deployment_of
from tritonops.playbook import BatchDone, RunInputs, compile_playbook, run_playbook
from tritonops.playbook.events import OnEvent
from tritonops.playbook.host_task import NO_HOOKS, RunHooks, TaskOutcome
from tritonops.results import HostResult
from tritonops.serving.outcome import ServeOutcome
from tritonops.transport.sessions import SessionPool

TASK = "bench gate"


@dataclass(frozen=True)
class BenchGatePlan:
    """What the gate needs, read before any host is contacted."""
    settings: GateSettings
    deployment: str
    rollback: RunInputs              # the rollback playbook over the same inventory and --limit
    aiperf: tuple[str, ...]
    root: Path                       # where benches are kept (bench.store)


def plan_bench_gate(inputs: RunInputs, rollback: RunInputs, root: Path | None = None) -> BenchGatePlan:
    hosts = list(inputs.hosts)
    if not hosts:
        raise InputError("no serving host selected (--limit): nothing to gate", "--bench-gate")
    deployments = sorted({deployment_of(host)[1] for host in hosts})
    if len(deployments) > 1:
        raise InputError(f"the hosts serve several deployments ({', '.join(deployments)}): the bench gate gates one "
                         "at a time (--limit)", "--bench-gate")
    settings = {host.name: gate_settings(host) for host in hosts}  # every host's values checked
    first = settings[hosts[0].name]
    for host in hosts[1:]:
        if settings[host.name] != first:
            raise InputError(f"{host.name}: its tritonops_bench_gate_* settings differ from {hosts[0].name}'s: the "
                             "gate has one workload and one set of thresholds per deployment", "--bench-gate")
    return BenchGatePlan(first, deployments[0], rollback, tuple(aiperf_command()), root or store.bench_root())


@dataclass(frozen=True)
class GateReport:
    """What the gate found, for the deploy's report."""
    hosts: tuple[str, ...]           # the batch it benched
    passed: bool
    said: str                        # one line: the verdict, or why the bench could not run
    verdict: GateVerdict | None      # None: the bench could not run
    kept: str | None                 # the bench's run folder
    rolled_back: str | None = None   # what became of the batch when it did not pass


@dataclass
class BenchGate:
    """The deploy's after_batch (playbook.runner): the gate on the first batch where a release switched."""
    plan: BenchGatePlan
    pool: SessionPool
    hosts: dict                      # inventory name -> Host, the run's serving hosts
    on_event: OnEvent                # the deploy's event stream: the rollback's tasks are heard there
    record: Record                   # the deploy's phase recorder
    hooks: RunHooks = NO_HOOKS       # the deploy's: its rollback drains each replica on the balancers first too
    report: GateReport | None = None
    kept: Path | None = None

    def __call__(self, batch: BatchDone) -> str | None:
        if self.report is not None:
            return None  # the first batch that switched was the canary
        switched = {result.host: outcome for result in batch.results
                    if result.status == "changed" and (outcome := _switched(result)) is not None}
        switched = {host: outcome for host, outcome in switched.items() if host in batch.hosts}
        if not switched:
            return None  # nothing changed in this batch: the next batch that switches is the canary
        names = sorted(switched)
        previous = {host: outcome.previous for host, outcome in switched.items()}
        found = None
        try:
            found = self._bench(names, previous)
            line, passed = found.line, found.passed
        except TritonopsError as err:
            line, passed = f"the bench could not run: {one_line(str(err))}", False
        kept = str(self.kept) if self.kept else None
        self.report = GateReport(tuple(names), passed, line, found, kept)
        for host in names:
            self.record(HostResult(host, "ok" if passed else "failed", line + (f" (kept: {kept})" if kept else ""),
                                   self.report, task=TASK))
        if passed:
            return None
        back = self._roll_back(previous)
        self.report = replace(self.report, rolled_back=back)
        return f"bench gate on batch {batch.number} of play '{batch.play}': {line}; {back}; later batches were not run"

    def _bench(self, names: list[str], previous: dict[str, str | None]) -> GateVerdict:
        hosts = [self.hosts[name] for name in names]
        fleet = read_fleet(self.pool, hosts, [], self.plan.deployment, "", "replicas")
        for endpoint in fleet.endpoints:
            check_ready(endpoint, fleet.mode)
        workload = replace(self.plan.settings.workload(fleet.model), mode=fleet.mode.name)
        tokenizer = tokenizer_for(self.pool, self.plan.root, hosts, fleet)
        summary, self.kept = measure(fleet, workload, tokenizer, self.plan.root, list(self.plan.aiperf))
        before = release_key(previous) if any(previous.values()) else None
        runs = [run for _, run in store.kept_runs(self.plan.root, self.plan.deployment)]
        against = baseline(runs, summary, before) if before else None
        return verdict(summary, self.plan.settings, before, against)

    def _roll_back(self, previous: dict[str, str | None]) -> str:
        """The switched hosts back on the release each served before; what became of them, one line."""
        from tritonops.deploy.rollback import rollback_facts

        targets = {host: release for host, release in previous.items() if release}
        first = [host for host, release in previous.items() if not release]
        said = [f"{', '.join(first)}: no earlier release to go back to"] if first else []
        if not targets:
            return "; ".join(said)
        inputs = self.plan.rollback
        facts = rollback_facts([self.hosts[name] for name in targets], inputs.behind_balancer, targets)
        compiled = compile_playbook(inputs, host_facts=facts, only_hosts=list(targets))
        run = run_playbook(compiled, self.pool, on_event=self.on_event, hooks=self.hooks)
        failed = sorted({result.host for result in run.results if result.failed})
        back = sorted(set(targets) - set(failed))
        if back:
            said.append(f"{', '.join(back)} back on " + ", ".join(sorted({targets[h] for h in back})))
        if failed:
            said.append(f"{', '.join(failed)} could not go back (see the rollback's results)")
        return "; ".join(said)


def _switched(result: HostResult) -> ServeOutcome | None:
    payload = result.payload
    outcome = payload.outcome(ServeOutcome) if isinstance(payload, TaskOutcome) else None
    return outcome if outcome is not None and outcome.status == "switched" else None
