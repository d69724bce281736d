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


LAB_TIMING = Timing(down_for="3s", not_ready_for="3s", queue_for="3s", kv_for="3s", window="30s", baseline="5m",
                    lookback="1m")


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


def render_rules(timing: Timing = Timing()) -> str:
    import yaml

    return ("# Prometheus alerting rules for tritonops fleets (written by `tritonops deploy`; "
            "tritonops/metrics/rules.py)\n" + yaml.safe_dump(alert_rules(timing), sort_keys=False, width=1000))
