"""Prometheus alerting rules for a tritonops fleet, rendered from data. Pure.

Every expression selects tritonops' targets by the `deployment` label the targets file gives them
(whatever the scrape job is called) and keeps host, deployment and instance on the alert:

  TritonDown              the target does not answer (up == 0)
  TritonModelNotReady     Triton answers but serves no model, or a model it served `lookback` ago is gone
                          (Triton drops a model's nv_inference_* series when it unloads or fails)
  TritonQueueTimeRising   average queue time per request over `window` above `queue_ms` and above twice
                          its average over `baseline`
  VllmKvCacheFull         the engine's KV-cache usage (vLLM's `vllm:kv_cache_usage_perc`, older
                          `vllm:gpu_cache_usage_perc`) above `kv_full` (a fraction)

The balancers' HAProxy exporters (their groups in the targets file: `role: balancer`, metrics/targets.py) get a
group of their own. Each alert names the deployment of the backend or frontend it is about: HAProxy calls them
`tritonops_<deployment>_http` / `_grpc` and `tritonops_<deployment>_http_door` / `_grpc_door`, and the deployment
is read back from that name, whatever the target's `deployment` label lists:

  DoorDown                Prometheus cannot scrape a balancer's exporter: its haproxy is not running
  DoorNoReplica           a deployment's backend has no server UP: the door answers 503 no_replica
  DoorQueueTimeHigh       HAProxy's average queue time (its last 1024 requests) above `queue_share` of the door's
                          tritonops_queue_timeout_ms: one rule per queue timeout the file's balancers carry. Not the
                          timeout itself: a request that would wait longer is refused (503 queue_timeout), never
                          admitted, so the admitted requests' average cannot reach it (DoorErrorRate sees those)
  DoorErrorRate           more than `error_share` of a door's answers over `window` are 5xx (the door's own 503s
                          and the replicas' errors)

`Timing()` is what tritonops ships (written next to the targets file by deploy); the lab renders the
same rules with seconds instead of minutes so its test is quick.
"""

from __future__ import annotations

from dataclasses import dataclass

RULES_FILE = "tritonops.rules.yml"  # next to the targets file
TARGETS = 'deployment!="", role!="balancer"'  # Triton's targets: a balancer's group (role balancer) is HAProxy's
BY = "instance, host, deployment"


@dataclass(frozen=True)
class Timing:
    down_for: str = "1m"
    not_ready_for: str = "2m"
    queue_for: str = "10m"
    kv_for: str = "5m"
    window: str = "5m"
    baseline: str = "1h"
    lookback: str = "10m"
    queue_ms: float = 500.0
    kv_full: float = 0.95
    door_down_for: str = "1m"
    no_replica_for: str = "1m"
    door_queue_for: str = "5m"
    errors_for: str = "5m"
    queue_share: float = 0.5   # of the door's queue timeout
    error_share: float = 0.05  # of its answers


LAB_TIMING = Timing(down_for="3s", not_ready_for="3s", queue_for="3s", kv_for="3s", window="30s", baseline="5m",
                    lookback="1m", door_down_for="3s", no_replica_for="3s", door_queue_for="3s", errors_for="3s")


def _queue_ms(window: str) -> str:
    return (f"sum by ({BY}, model) (rate(nv_inference_queue_duration_us{{{TARGETS}}}[{window}]))"
            f" / sum by ({BY}, model) (rate(nv_inference_request_success{{{TARGETS}}}[{window}])) / 1000")


def alert_rules(timing: Timing = Timing()) -> dict:
    return {"groups": [{"name": "tritonops", "rules": [
        {"alert": "TritonDown",
         "expr": f"up{{{TARGETS}}} == 0",
         "for": timing.down_for,
         "labels": {"severity": "critical"},
         "annotations": {"summary": "Triton on {{ $labels.host }} ({{ $labels.deployment }}) is down",
                         "description": "Prometheus cannot scrape {{ $labels.instance }}: the container stopped, "
                                        "the host is down or the metrics port is closed. "
                                        "`tritonops status --limit {{ $labels.host }}` says which."}},
        {"alert": "TritonModelNotReady",
         "expr": (f"((up{{{TARGETS}}} == 1) unless on (instance) nv_inference_count)"
                  f" or ((max by ({BY}, model) (nv_inference_count{{{TARGETS}}} offset {timing.lookback})"
                  f" unless on (instance, model) nv_inference_count) and on (instance) (up == 1))"),
         "for": timing.not_ready_for,
         "labels": {"severity": "critical"},
         "annotations": {"summary": "{{ $labels.host }} ({{ $labels.deployment }}) does not serve "
                                    "{{ with $labels.model }}model {{ . }}{{ else }}any model{{ end }}",
                         "description": "Triton answers on {{ $labels.instance }} but reports no metrics for the "
                                        "model: it is unloaded or failed to load (`tritonops status`)."}},
        {"alert": "TritonQueueTimeRising",
         "expr": f"({_queue_ms(timing.window)} > {timing.queue_ms:g}) and "
                 f"({_queue_ms(timing.window)} > 2 * {_queue_ms(timing.baseline)})",
         "for": timing.queue_for,
         "labels": {"severity": "warning"},
         "annotations": {"summary": "Requests to {{ $labels.model }} on {{ $labels.host }} wait "
                                    "{{ $value | humanize }} ms in Triton's queue",
                         "description": f"Average queue time per request over {timing.window} is above "
                                        f"{timing.queue_ms:g} ms and twice its {timing.baseline} average: "
                                        "the host is saturated (`tritonops metrics`)."}},
        {"alert": "VllmKvCacheFull",
         "expr": (f'max by ({BY}, model) ({{__name__=~"vllm:(kv|gpu)_cache_usage_perc", {TARGETS}}})'
                  f" > {timing.kv_full:g}"),
         "for": timing.kv_for,
         "labels": {"severity": "warning"},
         "annotations": {"summary": "vLLM's KV cache for {{ $labels.model }} on {{ $labels.host }} is "
                                    "{{ $value | humanizePercentage }} full",
                         "description": "New requests wait or earlier ones are preempted; lower max_num_seqs or "
                                        "add capacity."}},
    ]}]}


BALANCERS = 'role="balancer"'
BY_PROXY = "instance, host, proxy"
_BACKENDS = 'proxy=~"tritonops_.+_(http|grpc)"'
_FRONTENDS = 'proxy=~"tritonops_.+_(http|grpc)_door"'


def _of_deployment(expr: str, frontend: bool = False) -> str:
    """`expr` with its `deployment` label read from HAProxy's proxy name (the target's may list several)."""
    name = "tritonops_(.+)_(?:http|grpc)" + ("_door" if frontend else "")
    return f'label_replace({expr}, "deployment", "$1", "proxy", "{name}")'


def door_rules(timing: Timing = Timing(), queue_timeouts_ms: tuple[int, ...] = ()) -> dict:
    """The balancers' group; `queue_timeouts_ms`: the distinct tritonops_queue_timeout_ms of the balancers in the
    targets file (metrics.targets.queue_timeouts), one DoorQueueTimeHigh rule each."""
    def rate(metric: str, selector: str) -> str:
        return f"sum by ({BY_PROXY}) (rate({metric}{{{BALANCERS}, {selector}}}[{timing.window}]))"

    queue_rules = [
        {"alert": "DoorQueueTimeHigh",
         "expr": _of_deployment(f"max by ({BY_PROXY}) (haproxy_backend_queue_time_average_seconds{{{BALANCERS}, "
                                f'queue_timeout_ms="{timeout}", {_BACKENDS}}}) * 1000'
                                f" > {timeout * timing.queue_share:g}"),
         "for": timing.door_queue_for,
         "labels": {"severity": "warning", "queue_timeout_ms": str(timeout)},  # one alert name, distinct rules
         "annotations": {"summary": "Requests to {{ $labels.deployment }} wait {{ $value | humanize }} ms for a "
                                    "replica at {{ $labels.host }}",
                         "description": "HAProxy's average queue time in {{ $labels.proxy }} (its last 1024 "
                                        f"requests) is above {timing.queue_share:.0%} of the door's queue timeout, "
                                        f"{timeout} ms; a request that would wait longer gets 503 queue_timeout. "
                                        "Add replicas or lower the load (`tritonops metrics`)."}}
        for timeout in sorted(set(queue_timeouts_ms))]
    errors = rate("haproxy_frontend_http_responses_total", f'code="5xx", {_FRONTENDS}')
    answers = rate("haproxy_frontend_http_requests_total", _FRONTENDS)
    return {"name": "tritonops-door", "rules": [
        {"alert": "DoorDown",
         "expr": f"up{{{BALANCERS}}} == 0",
         "for": timing.door_down_for,
         "labels": {"severity": "critical"},
         "annotations": {"summary": "HAProxy on {{ $labels.host }} ({{ $labels.deployment }}) is down",
                         "description": "Prometheus cannot scrape HAProxy's exporter on {{ $labels.instance }}: "
                                        "haproxy is not running there or the balancer is down, and its doors "
                                        "answer nothing. `tritonops deploy` starts it again."}},
        {"alert": "DoorNoReplica",
         "expr": _of_deployment(f"min by ({BY_PROXY}) (haproxy_backend_active_servers{{{BALANCERS}, {_BACKENDS}}})"
                                " == 0"),
         "for": timing.no_replica_for,
         "labels": {"severity": "critical"},
         "annotations": {"summary": "No replica of {{ $labels.deployment }} is up behind {{ $labels.host }}",
                         "description": "HAProxy's backend {{ $labels.proxy }} has no server UP: the door answers "
                                        "503 no_replica. `tritonops status` shows each replica's state there."}},
        *queue_rules,
        {"alert": "DoorErrorRate",
         "expr": _of_deployment(f"{errors} / {answers} > {timing.error_share:g}", frontend=True),
         "for": timing.errors_for,
         "labels": {"severity": "warning"},
         "annotations": {"summary": "{{ $value | humanizePercentage }} of the answers of {{ $labels.deployment }}'s "
                                    "door on {{ $labels.host }} are 5xx",
                         "description": f"Over the last {timing.window}: the door's own 503s (no_replica, "
                                        "queue_full, queue_timeout) and the replicas' errors. `tritonops metrics` "
                                        "counts them by where they came from."}},
    ]}


def render_rules(timing: Timing = Timing(), queue_timeouts_ms: tuple[int, ...] = ()) -> str:
    import yaml

    rules = alert_rules(timing)
    rules["groups"].append(door_rules(timing, queue_timeouts_ms))
    return ("# Prometheus alerting rules for tritonops fleets (written by `tritonops deploy`; "
            "tritonops/metrics/rules.py)\n" + yaml.safe_dump(rules, sort_keys=False, width=1000))
