"""The alerting rules tritonops ships: valid for Prometheus (promtool check rules) and firing on the
series that mean each failure, not on a healthy fleet (promtool test rules: Prometheus' own evaluator)."""

import shutil
import subprocess
import textwrap

import pytest
import yaml


from tests.support.paths import FIXTURES
from tritonops.metrics.exposition import parse_exposition
from tritonops.metrics.rules import LAB_TIMING, Timing, alert_rules, door_rules, render_rules

promtool = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(promtool is None, reason="promtool (Debian's prometheus package) not installed; "
                                                               "scripts/bootstrap.sh installs it")


def test_one_rule_per_failure_users_care_about():
    rules = alert_rules()["groups"][0]["rules"]
    assert [rule["alert"] for rule in rules] == ["TritonDown", "TritonModelNotReady", "TritonQueueTimeRising",
                                                 "VllmKvCacheFull"]
    assert all('deployment!=""' in rule["expr"] for rule in rules)  # tritonops' targets, whatever the job
    assert yaml.safe_load(render_rules())["groups"][0] == alert_rules()["groups"][0]


@needs_promtool
@pytest.mark.parametrize("timing", [Timing(), LAB_TIMING], ids=["shipped", "lab"])
def test_promtool_accepts_the_rules(tmp_path, timing):
    path = tmp_path / "tritonops.rules.yml"
    path.write_text(render_rules(timing, queue_timeouts_ms=(500, 2000)))
    proc = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 9 rules found" in proc.stdout  # Triton's 4, the door's 3 and a queue rule per timeout


TARGET = 'instance="10.0.0.1:8002", job="triton", host="gpu-01", deployment="prod"'
OTHER = 'instance="10.0.0.2:8002", job="triton", host="gpu-02", deployment="prod"'
UNMANAGED = 'instance="10.9.9.9:9100", job="node"'   # not a tritonops target: never alerted on

NOT_READY = "'Triton answers on {instance} but reports no metrics for the model: it is unloaded or failed to load (`tritonops status`).'"
CASES = f"""
tests:
  - interval: 1m
    input_series:
      - series: 'up{{{TARGET}}}'
        values: '1 1 0 0 0 0'
      - series: 'up{{{OTHER}}}'
        values: '1 1 1 1 1 1'
      - series: 'up{{{UNMANAGED}}}'
        values: '0 0 0 0 0 0'
      - series: 'nv_inference_count{{{TARGET}, model="chat", version="1"}}'
        values: '1 2 _ _ _ _'
      - series: 'nv_inference_count{{{OTHER}, model="chat", version="1"}}'
        values: '1 2 3 4 5 6'
    alert_rule_test:
      - eval_time: 1m
        alertname: TritonDown
        exp_alerts: []
      - eval_time: 4m
        alertname: TritonDown
        exp_alerts:
          - exp_labels: {{severity: critical, {TARGET.replace('="', ': "')}}}
            exp_annotations:
              summary: Triton on gpu-01 (prod) is down
              description: 'Prometheus cannot scrape 10.0.0.1:8002: the container stopped, the host is down or the metrics port is closed. `tritonops status --limit gpu-01` says which.'
      - eval_time: 4m
        alertname: TritonModelNotReady
        exp_alerts: []
  - interval: 1m
    input_series:
      - series: 'up{{{TARGET}}}'
        values: '1x20'
      - series: 'up{{{OTHER}}}'
        values: '1x20'
      - series: 'nv_inference_count{{{TARGET}, model="chat", version="1"}}'
        values: '1x20'
      - series: 'nv_inference_count{{{TARGET}, model="embed", version="1"}}'
        values: '1 1 1 _x17'   # gone after 2 minutes
    alert_rule_test:
      - eval_time: 8m
        alertname: TritonModelNotReady
        exp_alerts:
          - exp_labels: {{severity: critical, {OTHER.replace('="', ': "')}}}
            exp_annotations:
              summary: gpu-02 (prod) does not serve any model
              description: {NOT_READY.format(instance="10.0.0.2:8002")}
      - eval_time: 14m
        alertname: TritonModelNotReady
        exp_alerts:
          - exp_labels: {{severity: critical, {OTHER.replace('="', ': "')}}}
            exp_annotations:
              summary: gpu-02 (prod) does not serve any model
              description: {NOT_READY.format(instance="10.0.0.2:8002")}
          - exp_labels: {{severity: critical, model: embed, instance: "10.0.0.1:8002", host: gpu-01, deployment: prod}}
            exp_annotations:
              summary: gpu-01 (prod) does not serve model embed
              description: {NOT_READY.format(instance="10.0.0.1:8002")}
  - interval: 1m
    input_series:
      - series: 'vllm:kv_cache_usage_perc{{{TARGET}, model="chat", version="1"}}'
        values: '0.5 0.97 0.98 0.99 0.99 0.99 0.99 0.99'
      - series: 'vllm:gpu_cache_usage_perc{{{OTHER}, model="chat", version="1"}}'
        values: '0.5 0.5 0.5 0.5 0.5 0.5 0.5 0.5'
    alert_rule_test:
      - eval_time: 7m
        alertname: VllmKvCacheFull
        exp_alerts:
          - exp_labels: {{severity: warning, model: chat, instance: "10.0.0.1:8002", host: gpu-01, deployment: prod}}
            exp_annotations:
              summary: vLLM's KV cache for chat on gpu-01 is 99% full
              description: New requests wait or earlier ones are preempted; lower max_num_seqs or add capacity.
  - interval: 1m
    input_series:
      # an hour at 10 ms a request, then 2 s: 100 requests a minute throughout
      - series: 'nv_inference_request_success{{{TARGET}, model="chat", version="1"}}'
        values: '0+100x100'
      - series: 'nv_inference_queue_duration_us{{{TARGET}, model="chat", version="1"}}'
        values: '0+1000000x70 70000000+200000000x30'
      - series: 'nv_inference_request_success{{{OTHER}, model="chat", version="1"}}'
        values: '0+100x100'
      - series: 'nv_inference_queue_duration_us{{{OTHER}, model="chat", version="1"}}'
        values: '0+1000000x100'
    alert_rule_test:
      - eval_time: 70m
        alertname: TritonQueueTimeRising
        exp_alerts: []
      - eval_time: 90m
        alertname: TritonQueueTimeRising
        exp_alerts:
          - exp_labels: {{severity: warning, model: chat, instance: "10.0.0.1:8002", host: gpu-01, deployment: prod}}
            exp_annotations:
              summary: Requests to chat on gpu-01 wait 2k ms in Triton's queue
              description: 'Average queue time per request over 5m is above 500 ms and twice its 1h average: the host is saturated (`tritonops metrics`).'
"""


@needs_promtool
def test_each_alert_fires_on_its_failure_and_not_on_a_healthy_host(tmp_path):
    (tmp_path / "tritonops.rules.yml").write_text(render_rules())
    cases = yaml.safe_load(CASES)
    cases["rule_files"] = ["tritonops.rules.yml"]
    cases["evaluation_interval"] = "1m"
    (tmp_path / "cases.yml").write_text(yaml.safe_dump(cases, sort_keys=False))
    proc = subprocess.run([promtool, "test", "rules", "cases.yml"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, textwrap.shorten(proc.stdout + proc.stderr, 3000)


DOOR_PAGE = FIXTURES / "haproxy" / "door_metrics.txt"  # HAProxy 2.6.12's own exporter


def test_every_series_the_door_rules_read_is_on_haproxy_s_own_exporter_page_with_its_proxy_names():
    page = parse_exposition(DOOR_PAGE.read_text())
    assert not page.errors
    exprs = " ".join(rule["expr"] for rule in door_rules(queue_timeouts_ms=(2000,))["rules"])
    used = {name for name in page.types if name in exprs}
    assert used == {"haproxy_backend_active_servers", "haproxy_backend_queue_time_average_seconds",
                    "haproxy_frontend_http_responses_total", "haproxy_frontend_http_requests_total"}
    proxies = {sample.label("proxy") for name in used for sample in page.family(name)}
    assert {"tritonops_chat_http", "tritonops_chat_http_door"} <= proxies  # the renderer's names, as the rules read
    assert {s.label("code") for s in page.family("haproxy_frontend_http_responses_total")} >= {"5xx"}


def test_one_queue_rule_per_balancers_queue_timeout_at_its_share():
    rules = door_rules(queue_timeouts_ms=(2000, 500, 2000))["rules"]
    assert [rule["alert"] for rule in rules] == ["DoorDown", "DoorNoReplica", "DoorQueueTimeHigh", "DoorQueueTimeHigh",
                                                 "DoorErrorRate"]
    assert 'queue_timeout_ms="500"' in rules[2]["expr"] and rules[2]["expr"].split(" > ")[1].startswith("250,")
    assert [rule["alert"] for rule in door_rules()["rules"]] == ["DoorDown", "DoorNoReplica", "DoorErrorRate"]


DOOR = 'instance="10.0.0.2:8405", job="tritonops", host="door-1", role="balancer", deployment="chat,embed", ' \
       'queue_timeout_ms="2000"'
DOOR_2 = 'instance="10.0.0.3:8405", job="tritonops", host="door-2", role="balancer", deployment="chat", ' \
         'queue_timeout_ms="500"'
NO_REPLICA = "'HAProxy''s backend tritonops_chat_http has no server UP: the door answers 503 no_replica. `tritonops status` shows each replica''s state there.'"
QUEUE = "'HAProxy''s average queue time in tritonops_chat_http (its last 1024 requests) is above 50% of the door''s queue timeout, {ms} ms; a request that would wait longer gets 503 queue_timeout. Add replicas or lower the load (`tritonops metrics`).'"
DOOR_CASES = f"""
tests:
  - interval: 1m
    input_series:
      - series: 'up{{{DOOR}}}'
        values: '1 1 1 0 0 0'
      - series: 'haproxy_backend_active_servers{{{DOOR}, proxy="tritonops_chat_http"}}'
        values: '2 2 0 0 0 0'
      - series: 'haproxy_backend_active_servers{{{DOOR}, proxy="tritonops_embed_http"}}'
        values: '1 1 1 1 1 1'
    alert_rule_test:
      - eval_time: 2m
        alertname: TritonModelNotReady   # a balancer's target serves no model: not Triton's
        exp_alerts: []
      - eval_time: 4m
        alertname: DoorNoReplica
        exp_alerts:
          - exp_labels: {{severity: critical, instance: "10.0.0.2:8405", host: door-1, proxy: tritonops_chat_http,
                         deployment: chat}}
            exp_annotations:
              summary: No replica of chat is up behind door-1
              description: {NO_REPLICA}
      - eval_time: 5m
        alertname: TritonDown
        exp_alerts: []
      - eval_time: 5m
        alertname: DoorDown
        exp_alerts:
          - exp_labels: {{severity: critical, {DOOR.replace('="', ': "')}}}
            exp_annotations:
              summary: HAProxy on door-1 (chat,embed) is down
              description: 'Prometheus cannot scrape HAProxy''s exporter on 10.0.0.2:8405: haproxy is not running there or the balancer is down, and its doors answer nothing. `tritonops deploy` starts it again.'
  - interval: 1m
    input_series:
      - series: 'haproxy_backend_queue_time_average_seconds{{{DOOR}, proxy="tritonops_chat_http"}}'
        values: '0.1 0.1 1.2 1.2 1.2 1.2 1.2 1.2 1.2 1.2'
      - series: 'haproxy_backend_queue_time_average_seconds{{{DOOR}, proxy="tritonops_embed_http"}}'
        values: '0.9 0.9 0.9 0.9 0.9 0.9 0.9 0.9 0.9 0.9'
      - series: 'haproxy_backend_queue_time_average_seconds{{{DOOR_2}, proxy="tritonops_chat_http"}}'
        values: '0.3 0.3 0.3 0.3 0.3 0.3 0.3 0.3 0.3 0.3'
    alert_rule_test:
      - eval_time: 5m
        alertname: DoorQueueTimeHigh
        exp_alerts:
          - exp_labels: {{severity: warning, instance: "10.0.0.3:8405", host: door-2, proxy: tritonops_chat_http,
                         deployment: chat, queue_timeout_ms: "500"}}
            exp_annotations:
              summary: Requests to chat wait 300 ms for a replica at door-2
              description: {QUEUE.format(ms=500)}
      - eval_time: 8m
        alertname: DoorQueueTimeHigh
        exp_alerts:
          - exp_labels: {{severity: warning, instance: "10.0.0.2:8405", host: door-1, proxy: tritonops_chat_http,
                         deployment: chat, queue_timeout_ms: "2000"}}
            exp_annotations:
              summary: Requests to chat wait 1.2k ms for a replica at door-1
              description: {QUEUE.format(ms=2000)}
          - exp_labels: {{severity: warning, instance: "10.0.0.3:8405", host: door-2, proxy: tritonops_chat_http,
                         deployment: chat, queue_timeout_ms: "500"}}
            exp_annotations:
              summary: Requests to chat wait 300 ms for a replica at door-2
              description: {QUEUE.format(ms=500)}
  - interval: 1m
    input_series:
      - series: 'haproxy_frontend_http_requests_total{{{DOOR}, proxy="tritonops_chat_http_door"}}'
        values: '0+100x20'
      - series: 'haproxy_frontend_http_responses_total{{{DOOR}, proxy="tritonops_chat_http_door", code="5xx"}}'
        values: '0+1x5 5+10x15'
      - series: 'haproxy_frontend_http_requests_total{{{DOOR}, proxy="tritonops_embed_http_door"}}'
        values: '0+100x20'
      - series: 'haproxy_frontend_http_responses_total{{{DOOR}, proxy="tritonops_embed_http_door", code="5xx"}}'
        values: '0+1x20'
    alert_rule_test:
      - eval_time: 5m
        alertname: DoorErrorRate
        exp_alerts: []
      - eval_time: 20m
        alertname: DoorErrorRate
        exp_alerts:
          - exp_labels: {{severity: warning, instance: "10.0.0.2:8405", host: door-1, proxy: tritonops_chat_http_door,
                         deployment: chat}}
            exp_annotations:
              summary: 10% of the answers of chat's door on door-1 are 5xx
              description: 'Over the last 5m: the door''s own 503s (no_replica, queue_full, queue_timeout) and the replicas'' errors. `tritonops metrics` counts them by where they came from.'
"""


@needs_promtool
def test_each_door_alert_fires_on_its_failure_for_the_deployment_its_backend_serves(tmp_path):
    (tmp_path / "tritonops.rules.yml").write_text(render_rules(queue_timeouts_ms=(500, 2000)))
    cases = yaml.safe_load(DOOR_CASES)
    cases["rule_files"] = ["tritonops.rules.yml"]
    cases["evaluation_interval"] = "1m"
    (tmp_path / "cases.yml").write_text(yaml.safe_dump(cases, sort_keys=False))
    proc = subprocess.run([promtool, "test", "rules", "cases.yml"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, textwrap.shorten(proc.stdout + proc.stderr, 4000)
