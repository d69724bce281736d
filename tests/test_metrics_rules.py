"""The alerting rules tritonops ships: valid for Prometheus (promtool check rules) and firing on the
series that mean each failure, not on a healthy fleet (promtool test rules: Prometheus' own evaluator)."""

import shutil
import subprocess
import textwrap

import pytest
import yaml

from tritonops.metrics.rules import LAB_TIMING, Timing, alert_rules, render_rules

promtool = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(promtool is None, reason="promtool (Debian's prometheus package) not installed; "
                                                               "scripts/bootstrap.sh installs it")


def test_one_rule_per_failure_users_care_about():
    rules = alert_rules()["groups"][0]["rules"]
    assert [rule["alert"] for rule in rules] == ["TritonDown", "TritonModelNotReady", "TritonQueueTimeRising",
                                                 "VllmKvCacheFull"]
    assert all('deployment!=""' in rule["expr"] for rule in rules)  # tritonops' targets, whatever the job
    assert yaml.safe_load(render_rules()) == alert_rules()


@needs_promtool
@pytest.mark.parametrize("timing", [Timing(), LAB_TIMING], ids=["shipped", "lab"])
def test_promtool_accepts_the_rules(tmp_path, timing):
    path = tmp_path / "tritonops.rules.yml"
    path.write_text(render_rules(timing))
    proc = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 4 rules found" in proc.stdout


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
