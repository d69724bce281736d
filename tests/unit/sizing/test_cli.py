"""`tritonops size` and `tritonops plan` end to end (no SSH: plan reads a saved probe report)."""

import json

from tests.support.facts import host_facts
from tests.support.paths import FIXTURES
from tritonops.cli.main import main
from tritonops.facts.model import HostProbe, ProbeReport, report_to_json
from tritonops.sizing.gpu_catalog import GPU_CATALOG

MODELS = FIXTURES / "models"


def run_json(capsys, *argv):
    code = main(list(argv) + ["--json"])
    return code, json.loads(capsys.readouterr().out)


def test_size_qwen25_7b_on_2080ti_does_not_fit(capsys):
    code, out = run_json(capsys, "size", "--model", str(MODELS / "Qwen2.5-7B-Instruct"), "--gpu", "2080ti")
    assert code == 2 and out["fits"] is False and out["dtype"] == "float16"
    assert {a["kind"] for a in out["alternatives"]} >= {"tensor_parallel", "quantized"}
    for key in ("tensor_parallel_size", "max_model_len", "gpu_memory_utilization", "enforce_eager",
                "max_num_seqs", "kv_cache_tokens", "kv_cache_bytes_per_gpu", "weights_bytes_per_gpu",
                "kv_bytes_per_token", "vllm_version", "reasons", "model_json"):
        assert key in out


def test_size_on_4_a100_and_hub_id_offline(capsys):
    code, out = run_json(capsys, "size", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "a100-80gb:4")
    assert code == 0 and (out["tensor_parallel_size"], out["max_model_len"]) == (1, 32768)


def test_size_with_gpus_sizes_that_many_of_the_named_card_as_plan_does_for_a_host_with_them(tmp_path, capsys):
    """`--gpus 4` was taken with --gpu-memory-gib only and silently ignored after --gpu (issue #45): a 70B
    model was sized on one A100 and did not fit."""
    model = "meta-llama/Llama-3.1-70B-Instruct"
    code, sized = run_json(capsys, "size", "--model", model, "--gpu", "a100-80gb", "--gpus", "4")
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n    a100x4:\n      ansible_host: 127.0.0.1\n")
    a100 = GPU_CATALOG["a100-80gb"]
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(report_to_json(ProbeReport(hosts=(HostProbe(
        host="a100x4", status="ok", facts=host_facts(4, a100.nvml_names[0], a100.memory_total_bytes,
                                                     a100.cuda_total_bytes, a100.compute_capability)),)))))
    _, planned = run_json(capsys, "plan", "-i", str(inventory), "--model", model, "--facts", str(facts))
    plan = planned["results"][0]["payload"]["plan"]
    assert code == 0 and sized["gpu_count"] == 4 and sized["tensor_parallel_size"] > 1
    assert {key: sized[key] for key in ("tensor_parallel_size", "max_model_len", "kv_cache_tokens")} == \
        {key: plan[key] for key in ("tensor_parallel_size", "max_model_len", "kv_cache_tokens")}


def test_size_refuses_two_different_counts_in_one_line(capsys):
    code = main(["size", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "a100-80gb:2", "--gpus", "4"])
    err = capsys.readouterr().err
    assert code == 5 and err.count("\n") == 1 and err.startswith("error: --gpus: ") and "a100-80gb:2" in err


def test_size_qwen15_on_2080ti(capsys):
    code, out = run_json(capsys, "size", "--model", str(MODELS / "Qwen1.5-1.8B-Chat"), "--gpu", "2080ti")
    assert code == 0 and out["dtype"] == "float16" and out["max_model_len"] > 0


def test_size_unknown_gpu_is_one_line(capsys):
    code = main(["size", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "gtx480"])
    err = capsys.readouterr().err
    assert code == 5 and "unknown GPU 'gtx480'" in err and "h200" in err


def test_size_human_output(capsys):
    assert main(["size", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "h200"]) == 0
    assert "fits on 1 x NVIDIA H200" in capsys.readouterr().out


def test_plan_per_host_from_a_saved_report(tmp_path, capsys):
    inventory = tmp_path / "lab.yml"
    inventory.write_text("""all:
  hosts:
    small:
      ansible_host: 127.0.0.1
      tritonops_model: Qwen/Qwen1.5-1.8B-Chat
    a100:
      ansible_host: 127.0.0.2
    h200:
      ansible_host: 127.0.0.3
      tritonops_max_num_seqs: 256
""")
    report = ProbeReport(hosts=(
        HostProbe(host="small", status="ok", facts=host_facts(1, "NVIDIA GeForce RTX 2080 Ti", 11264 * 2**20,
                                                                  int(10.75 * 2**30), (7, 5), ram=32 * 2**30)),
        HostProbe(host="a100", status="ok", facts=host_facts(4, "NVIDIA A100-SXM4-80GB", 81920 * 2**20,
                                                                 int(79.14 * 2**30), (8, 0))),
        HostProbe(host="h200", status="ok", facts=host_facts(8)),
    ))
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(report_to_json(report)))
    code, out = run_json(capsys, "plan", "-i", str(inventory), "--model", "Qwen/Qwen2.5-7B-Instruct",
                         "--facts", str(facts))
    assert code == 0
    by_host = {row["host"]: row["payload"] for row in out["results"]}
    assert by_host["small"]["plan"]["dtype"] == "float16"
    assert by_host["a100"]["plan"]["tensor_parallel_size"] == 1
    assert by_host["h200"]["plan"]["max_num_seqs"] == 256
    assert 'backend: "vllm"' in by_host["h200"]["files"]["config.pbtxt"]
    assert json.loads(by_host["h200"]["files"]["1/model.json"])["max_num_seqs"] == 256


def test_plan_json_with_several_models_lists_every_engine_and_the_repository(tmp_path, capsys):
    inventory = tmp_path / "lab.yml"
    inventory.write_text("""all:
  hosts:
    h200:
      ansible_host: 127.0.0.3
      tritonops_engine_args: {enable_prefix_caching: true}
      tritonops_models:
        - {name: chat, model: Qwen/Qwen2.5-7B-Instruct, gpu_memory_utilization: 0.5}
        - {name: small, model: Qwen/Qwen1.5-1.8B-Chat, versions: [1, 2], gpu_memory_utilization: 0.2}
""")
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(report_to_json(ProbeReport(hosts=(HostProbe(host="h200", status="ok", facts=host_facts(8)),)))))
    code, out = run_json(capsys, "plan", "-i", str(inventory), "--facts", str(facts))
    out = [row["payload"] for row in out["results"]]
    assert code == 0 and out[0]["ok"] is True
    assert [(m["name"], m["version"]) for m in out[0]["models"]] == [("chat", 1), ("small", 1), ("small", 2)]
    assert sorted(out[0]["repository"]) == ["chat/1/model.json", "chat/config.pbtxt", "small/1/model.json",
                                            "small/2/model.json", "small/config.pbtxt"]
    assert json.loads(out[0]["repository"]["small/2/model.json"])["enable_prefix_caching"] is True
    assert out[0]["model"] == "Qwen/Qwen2.5-7B-Instruct" and set(out[0]["files"]) == {"config.pbtxt", "1/model.json"}


def test_plan_exits_2_when_a_host_asks_for_a_key_its_vllm_removed(tmp_path, capsys):
    inventory = tmp_path / "lab.yml"
    inventory.write_text("""all:
  hosts:
    h200:
      ansible_host: 127.0.0.3
      tritonops_engine_args: {disable_log_requests: true}
""")
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(report_to_json(ProbeReport(hosts=(HostProbe(host="h200", status="ok", facts=host_facts(1)),)))))
    code = main(["plan", "-i", str(inventory), "--model", "Qwen/Qwen2.5-7B-Instruct", "--facts", str(facts)])
    text = capsys.readouterr().out
    assert code == 2 and "does not accept engine argument 'disable_log_requests'" in text and "model.json" not in text


def test_max_model_len_auto_chooses_and_shows_vllms_own_auto_fit(capsys):
    _, auto = run_json(capsys, "size", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "h200",
                       "--vllm-version", "0.25.0", "--max-model-len", "auto")
    _, chosen = run_json(capsys, "size", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "h200",
                      "--vllm-version", "0.25.0")
    assert auto == chosen
    assert auto["vllm_auto_max_model_len"] == min(32768, auto["kv_cache_tokens"])
    _, old = run_json(capsys, "size", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "h200",
                   "--vllm-version", "0.12.0")
    assert old["vllm_auto_max_model_len"] is None   # no auto-fit before 0.14


def test_plan_behind_a_balancer_binds_each_host_privately_and_refuses_one_without_a_private_address(tmp_path,
                                                                                                      capsys):
    inventory = tmp_path / "lab.yml"
    inventory.write_text("""all:
  hosts:
    inside: {ansible_host: 10.0.0.3, tritonops_model: Qwen/Qwen1.5-1.8B-Chat}
    outside: {ansible_host: 34.120.5.8, tritonops_model: Qwen/Qwen1.5-1.8B-Chat}
  children:
    tritonops_balancers:
      hosts:
        door-1: {ansible_host: 10.0.0.2}
""")
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(report_to_json(ProbeReport(hosts=tuple(
        HostProbe(host=name, status="ok", facts=host_facts(8)) for name in ("inside", "outside"))))))
    # a missing address is bad input, refused before any host is contacted (planning.host_values)
    assert main(["plan", "-i", str(inventory), "--facts", str(facts)]) == 5
    err = capsys.readouterr().err
    assert err.startswith(f"error: {inventory}:4: outside: no private address to bind its replicas to behind the "
                          "balancer (ansible_host 34.120.5.8 is not a private or loopback IP address)")
    code, out = run_json(capsys, "plan", "-i", str(inventory), "--facts", str(facts), "--limit", "inside")
    assert code == 0 and [row["host"] for row in out["results"]] == ["inside"]  # the balancer serves nothing
    assert out["results"][0]["payload"]["bind"] == "10.0.0.3"
    assert main(["plan", "-i", str(inventory), "--facts", str(facts), "--limit", "inside"]) == 0
    assert "binds to: 10.0.0.3" in capsys.readouterr().out


def test_plan_names_the_files_and_shows_them_with_files_each_text_once(tmp_path, capsys):
    """Issue #45 item 1: `plan` printed the same config.pbtxt and model.json for every host (345 lines for the
    lab's three)."""
    inventory = tmp_path / "lab.yml"
    inventory.write_text("all:\n  hosts:\n    a: {ansible_host: 127.0.0.3}\n    b: {ansible_host: 127.0.0.4}\n"
                         "  vars: {tritonops_model: Qwen/Qwen2.5-7B-Instruct}\n")
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(report_to_json(ProbeReport(hosts=tuple(
        HostProbe(host=name, status="ok", facts=host_facts(8)) for name in ("a", "b"))))))
    assert main(["plan", "-i", str(inventory), "--facts", str(facts)]) == 0
    names = capsys.readouterr().out
    assert names.count("files: vllm_model/config.pbtxt, vllm_model/1/model.json (--files shows them)") == 2
    assert 'backend: "vllm"' not in names
    assert main(["plan", "-i", str(inventory), "--facts", str(facts), "--files"]) == 0
    shown = capsys.readouterr().out
    assert shown.count('backend: "vllm"') == 1 and shown.count('"max_num_seqs"') == 1  # the same text: once
    assert "--- vllm_model/config.pbtxt: the same as a's" in shown and "--- vllm_model/1/model.json: the same as a's" \
        in shown
