"""plan_hosts: inventory hosts + probe facts -> HostDeployPlan (engines, errors, model repository)."""

import json
from pathlib import Path

import pytest

from tests.support.facts import host_facts
from tests.support.paths import FIXTURES
from tests.support.planning import TWO_MODELS, plan
from tritonops.inventory import load_inventory
from tritonops.planning import load_models_for, plan_hosts
from tritonops.sizing.engine_plan import SizingRequest

GIB = 2**30


def test_the_single_model_form_is_vllm_model_version_1(tmp_path):
    hp = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n")
    assert hp.ok and list(hp.files) == ["vllm_model/config.pbtxt", "vllm_model/1/model.json"]
    # vLLM loads the weights from where the deploy puts them on the host, so plan shows that folder
    assert json.loads(hp.files["vllm_model/1/model.json"])["model"] == \
        "/opt/tritonops/default/models/Qwen--Qwen2.5-7B-Instruct@main"
    assert hp.models[0].weights.args["repo"] == "Qwen/Qwen2.5-7B-Instruct"


def test_several_models_and_versions_share_the_gpus_when_their_utilisations_fit(tmp_path):
    hp = plan(tmp_path, TWO_MODELS)
    assert hp.ok, hp.errors
    assert list(hp.files) == ["chat/config.pbtxt", "chat/1/model.json", "small/config.pbtxt",
                              "small/1/model.json", "small/2/model.json"]
    assert "version_policy: { specific: { versions: [ 1, 2 ] } }" in hp.files["small/config.pbtxt"]
    assert "version_policy" not in hp.files["chat/config.pbtxt"]
    assert json.loads(hp.files["small/2/model.json"])["gpu_memory_utilization"] == 0.2
    assert [(m.name, m.version) for m in hp.models] == [("chat", 1), ("small", 1), ("small", 2)]


def test_engines_sharing_gpus_must_each_set_gpu_memory_utilization(tmp_path):
    hp = plan(tmp_path, """      tritonops_models:
        - {name: chat, model: Qwen/Qwen2.5-7B-Instruct, gpu_memory_utilization: 0.45}
        - {name: small, model: Qwen/Qwen1.5-1.8B-Chat}
""")
    assert not hp.ok and hp.files == {}
    assert "set gpu_memory_utilization for each (missing: small version 1)" in hp.error


def test_utilisations_summing_past_the_gpu_are_refused_with_the_numbers(tmp_path):
    hp = plan(tmp_path, """      tritonops_gpu_memory_utilization: 0.5
      tritonops_models:
        - {name: chat, model: Qwen/Qwen2.5-7B-Instruct}
        - {name: small, model: Qwen/Qwen1.5-1.8B-Chat}
""")
    assert not hp.ok and hp.files == {}
    assert "gpu_memory_utilization 0.5 + 0.5 = 1 is more than the 0.99" in hp.error


def test_both_model_forms_on_one_host_is_an_error_at_its_line(tmp_path):
    hp = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n" + TWO_MODELS)
    assert "hosts.yml:" in hp.error and "not both" in hp.error


@pytest.mark.parametrize("entry, message", [
    ("{name: chat, model: Qwen/Qwen2.5-7B-Instruct, verison: 1}", "unknown key 'verison'; did you mean version"),
    ("{name: ../x, model: Qwen/Qwen2.5-7B-Instruct}", "is not allowed"),
    ("{name: chat, model: Qwen/Qwen2.5-7B-Instruct, version: 0}", "version"),
    ("{name: chat, model: Qwen/Qwen2.5-7B-Instruct, version: '1'}", "version"),
    ("{name: chat, model: Qwen/Qwen2.5-7B-Instruct, versions: [1, 1]}", "twice"),
    ("{name: chat, model: Qwen/Qwen2.5-7B-Instruct, engine_args: {max_model_len: 4096}}",
     "'max_model_len' is chosen and checked by sizing; set it through max_model_len"),
    ("{name: chat, model: Qwen/Qwen2.5-7B-Instruct, gpu_memory_utilization: 2}", "at most 1"),
])
def test_bad_entries_are_one_line_errors_with_the_file_and_line(tmp_path, entry, message):
    hp = plan(tmp_path, f"      tritonops_models:\n        - {entry}\n")
    assert not hp.ok and "hosts.yml:" in hp.error and message in hp.error


def test_a_key_the_pinned_vllm_removed_is_refused_naming_key_and_version(tmp_path):
    hp = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n"
                        "      tritonops_engine_args: {disable_log_requests: true}\n")
    assert not hp.ok and hp.files == {}
    assert "vLLM 0.25.0 does not accept engine argument 'disable_log_requests' (removed in 0.10.1; use " \
           "enable_log_requests)" in hp.errors[0]


def test_user_engine_args_reach_model_json_when_the_version_knows_them(tmp_path):
    hp = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n"
                        "      tritonops_engine_args: {enable_prefix_caching: true, enable_log_requests: false}\n")
    args = json.loads(hp.files["vllm_model/1/model.json"])
    assert args["enable_prefix_caching"] is True and list(args)[-2:] == ["enable_prefix_caching",
                                                                         "enable_log_requests"]


def test_a_typo_in_an_engine_argument_gets_a_did_you_mean(tmp_path):
    hp = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n"
                        "      tritonops_engine_args: {enable_prefix_cachin: true}\n")
    assert "vLLM 0.25.0 has no engine argument 'enable_prefix_cachin'; did you mean enable_prefix_caching?" \
        in hp.errors[0]


def test_swap_becomes_kv_offloading_on_the_pinned_version_and_is_checked_against_ram(tmp_path):
    hp = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n      tritonops_swap_space_gib: 16\n",
              facts={"h1": host_facts(2, ram=128 * GIB)})
    assert hp.ok, hp.errors
    args = json.loads(hp.files["vllm_model/1/model.json"])
    assert (args["kv_offloading_size"], args["kv_offloading_backend"]) == (16, "native")
    assert "swap_space" not in args
    assert hp.notes == ("CPU KV cache 16.00 GiB of 111.20 GiB available: the host has 128.00 GiB of RAM, "
                        "16.80 GiB kept for the OS, Triton and 1 vLLM worker(s) (max(8 GiB, 10 %) + 4 GiB each), "
                        "leaving 111.20 GiB", "spare GPU 1: a replica's new release boots there and passes its gate "
                        "before the old one stops (tritonops_boot_first)")


def test_swap_that_does_not_fit_the_host_ram_is_an_error_naming_the_numbers(tmp_path):
    hp = plan(tmp_path, TWO_MODELS + "      tritonops_swap_space_gib: 8\n", facts={"h1": host_facts(1, ram=32 * GIB)})
    assert not hp.ok and hp.files == {}
    assert hp.error == ("CPU KV cache (swap / offloading) 8.00 GiB (chat version 1) + 8.00 GiB (small version 1) + "
                        "8.00 GiB (small version 2) = 24.00 GiB does not fit: the host has 32.00 GiB of RAM, "
                        "20.00 GiB kept for the OS, Triton and 3 vLLM worker(s) (max(8 GiB, 10 %) + 4 GiB each), "
                        "leaving 12.00 GiB; lower tritonops_swap_space_gib (0: none)")


def test_swap_space_on_a_v0_version(tmp_path):
    hp = plan(tmp_path, "      tritonops_model: Qwen/Qwen1.5-1.8B-Chat\n      tritonops_vllm_version: '0.6.3'\n"
                        "      tritonops_swap_space_gib: 8\n",
              facts={"h1": host_facts(1, "NVIDIA GeForce RTX 2080 Ti", 11264 * 2**20, int(10.75 * GIB), (7, 5),
                                      ram=64 * GIB)})
    assert hp.ok, hp.errors
    args = json.loads(hp.files["vllm_model/1/model.json"])
    assert args["swap_space"] == 8 and "kv_offloading_size" not in args
    assert hp.models[0].plan.cpu_kv_cache_bytes == 8 * GIB


def test_a_host_without_facts_says_why_and_has_no_files(tmp_path):
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    h1:\n      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n")
    hosts = load_inventory([str(tmp_path / "hosts.yml")]).select(None)
    models, errors = load_models_for(hosts, None)
    hp = plan_hosts(hosts, {}, SizingRequest(), models, errors, why_no_facts={"h1": "unreachable: timed out"})[0]
    assert (hp.ok, hp.error, hp.files) == (False, "unreachable: timed out", {})


def test_a_key_the_user_vouches_for_is_written_unchecked_and_only_that_key(tmp_path):
    hp = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n"
                        "      tritonops_engine_args: {brand_new_flag: 3}\n"
                        "      tritonops_engine_args_unchecked: [brand_new_flag]\n")
    assert hp.ok and json.loads(hp.files["vllm_model/1/model.json"])["brand_new_flag"] == 3
    other = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n"
                           "      tritonops_engine_args: {brand_new_flag: 3, other_flag: 1}\n"
                           "      tritonops_engine_args_unchecked: [brand_new_flag]\n")
    assert not other.ok and "other_flag" in other.errors[0]


def test_a_sized_key_is_forced_only_when_vouched_for_and_the_model_never(tmp_path):
    sized = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n")
    planned = json.loads(sized.files["vllm_model/1/model.json"])["max_model_len"]
    forced = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n"
                            f"      tritonops_engine_args: {{max_model_len: {planned * 4}}}\n"
                            "      tritonops_engine_args_unchecked: [max_model_len]\n")
    assert forced.ok and json.loads(forced.files["vllm_model/1/model.json"])["max_model_len"] == planned * 4
    refused = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n"
                             "      tritonops_engine_args: {max_model_len: 9}\n")
    assert not refused.ok and "or list it in tritonops_engine_args_unchecked" in refused.error
    model = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n"
                           "      tritonops_engine_args: {model: other/model}\n"
                           "      tritonops_engine_args_unchecked: [model]\n")
    assert not model.ok and "'model' is chosen and checked by sizing" in model.error


def test_a_controller_folder_is_named_on_the_host_by_its_content_as_deploy_writes_it(tmp_path):
    from tritonops.planning import controller_folders, model_refs
    from tritonops.weights_source.local import local_manifest

    model = tmp_path / "my-model"
    model.mkdir()
    (model / "config.json").write_text((FIXTURES / "models" / "Qwen2.5-0.5B-Instruct"
                                        / "config.json").read_text())
    (tmp_path / "hosts.yml").write_text(f"all:\n  hosts:\n    h1:\n      ansible_host: 127.0.0.1\n"
                                        f"      tritonops_model: {model}\n      tritonops_deployment: prod\n")
    hosts = load_inventory([str(tmp_path / "hosts.yml")]).select(None)
    models, errors = load_models_for(hosts, None)
    folders = controller_folders(hosts, model_refs(hosts, None))
    hp = plan_hosts(hosts, {"h1": host_facts(1)}, SizingRequest(), models, errors, folders=folders)[0]
    assert hp.ok, hp.errors
    digest = local_manifest(str(model))[0].content_sha256()
    folder = f"/opt/tritonops/prod/models/my-model@{digest[:12]}"
    assert json.loads(hp.files["vllm_model/1/model.json"])["model"] == folder
    assert hp.models[0].weights.args == {"source": "controller_dir", "deployment": "prod", "root": "/opt/tritonops",
                                         "path": str(model)}

    (model / "config.json").write_text("{}")  # other content, another folder on the host
    changed = plan_hosts(hosts, {"h1": host_facts(1)}, SizingRequest(), models, errors,
                         folders=controller_folders(hosts, model_refs(hosts, None)))[0]
    assert json.loads(changed.files["vllm_model/1/model.json"])["model"] != folder


def test_a_bad_deployment_root_is_that_hosts_plan_error(tmp_path):
    hp = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n      tritonops_root: relative/path\n")
    assert not hp.ok and "tritonops_root must be an absolute path" in hp.error and not hp.files


def test_behind_a_balancer_the_plan_binds_the_replicas_to_the_host_s_private_address(tmp_path):
    (tmp_path / "hosts.yml").write_text(
        "all:\n  hosts:\n    h1: {ansible_host: 10.0.0.11, tritonops_model: Qwen/Qwen2.5-7B-Instruct}\n"
        "    h2: {ansible_host: 34.120.5.8, tritonops_model: Qwen/Qwen2.5-7B-Instruct}\n")
    hosts = load_inventory([str(tmp_path / "hosts.yml")]).select(None)
    models, errors = load_models_for(hosts, None)
    facts = {"h1": host_facts(1), "h2": host_facts(1)}
    alone = plan_hosts(hosts, facts, SizingRequest(), models, errors)
    assert [(p.host, p.ok, p.bind) for p in alone] == [("h1", True, "0.0.0.0"), ("h2", True, "0.0.0.0")]
    behind = plan_hosts(hosts, facts, SizingRequest(), models, errors, behind_balancer=True)
    assert (behind[0].ok, behind[0].bind) == (True, "10.0.0.11")
    assert not behind[1].ok and behind[1].files == {}  # refused at plan time, that host only
    assert behind[1].errors == [f"{tmp_path / 'hosts.yml'}:4: h2: no private address to bind its replicas to behind "
                                "the balancer (ansible_host 34.120.5.8 is not a private or loopback IP address): set "
                                "tritonops_replica_address (the private IP the balancers reach it at) or "
                                "tritonops_bind_address (0.0.0.0 to stay public)"]


def plan_with(tmp_path: Path, host_yaml: str, extra_vars=None, defaults=None):
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    h1:\n      ansible_host: 127.0.0.1\n" + host_yaml)
    hosts = load_inventory([str(tmp_path / "hosts.yml")], extra_vars=extra_vars or {},
                           defaults=defaults or {}).select(None)
    models, errors = load_models_for(hosts, None)
    return plan_hosts(hosts, {"h1": host_facts(1)}, SizingRequest(), models, errors)[0]


def test_a_misspelt_engine_argument_given_with_e_is_blamed_on_e_not_the_models_line(tmp_path):
    hp = plan_with(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n",
                   extra_vars={"tritonops_engine_args": {"enable_prefx_caching": True}})
    assert not hp.ok
    assert hp.errors[0].startswith("-e: tritonops_engine_args: vLLM 0.25.0 has no engine argument "
                                   "'enable_prefx_caching'; did you mean enable_prefix_caching?"), hp.errors
    assert "hosts.yml" not in hp.errors[0]


def test_a_misspelt_engine_argument_names_the_file_and_line_that_set_it(tmp_path):
    hp = plan_with(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n"
                             "      tritonops_engine_args: {enable_prefx_caching: true}\n")
    assert hp.errors[0].startswith(f"{tmp_path / 'hosts.yml'}:6: tritonops_engine_args: vLLM 0.25.0 has no"), \
        hp.errors


def test_a_misspelt_engine_argument_of_a_models_entry_names_the_entry_and_a_host_one_its_own_origin(tmp_path):
    entry = ("      tritonops_models:\n"
             "        - {name: chat, model: Qwen/Qwen2.5-7B-Instruct, engine_args: {enable_prefx_caching: true}}\n")
    hp = plan_with(tmp_path, entry)
    assert hp.errors[0].startswith(f"{tmp_path / 'hosts.yml'}:5: tritonops_models[0] (chat).engine_args: vLLM"), \
        hp.errors
    hp = plan_with(tmp_path, "      tritonops_models:\n        - {name: chat, model: Qwen/Qwen2.5-7B-Instruct}\n",
                   extra_vars={"tritonops_engine_args": {"enable_prefx_caching": True}})
    assert hp.errors[0].startswith("-e: tritonops_engine_args: vLLM 0.25.0 has no"), hp.errors


def test_a_misspelt_engine_argument_from_a_role_default_names_the_role(tmp_path):
    from tritonops.inventory.model import Setting

    where = "roles/mine/defaults/main.yml:3"
    default = Setting({"enable_prefx_caching": True}, f"{where} (role mine defaults)", where, str(tmp_path))
    hp = plan_with(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n",
                   defaults={"tritonops_engine_args": default})
    assert hp.errors[0].startswith(f"{where} (role mine defaults): tritonops_engine_args: vLLM 0.25.0"), hp.errors


def test_a_model_that_does_not_fit_says_why_and_what_would_fit_as_size_does(tmp_path):
    from tritonops.deploy.flow import _plan_summary

    ti = host_facts(1, name="NVIDIA GeForce RTX 2080 Ti", total=11_811_160_064, cuda=11_543_379_968, cc=(7, 5))
    hp = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n", facts={"h1": ti})
    assert not hp.ok and hp.files == {}
    why = hp.errors[0]
    assert why.startswith("Qwen/Qwen2.5-7B-Instruct does not fit on 1 x NVIDIA GeForce RTX 2080 Ti (CC 7.5)")
    assert "does not fit in float16: 14.31 GiB of weights per GPU" in why
    assert "would fit: tensor_parallel_size 2 on a host with 2 x NVIDIA GeForce RTX 2080 Ti" in why
    assert "would fit: a 4-bit AWQ checkpoint of this model" in why
    # what deploy's plan line says of the host (it said "nothing to deploy")
    assert _plan_summary(hp) == why
