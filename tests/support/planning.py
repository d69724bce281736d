"""Plans made the way `tritonops plan` makes them, over a small inventory written for the test: one host (h1), or
a pipeline cluster (g1, g2, g3 in group big, beside a solo host), with made-up H200 facts unless given."""

from pathlib import Path

from tests.support.facts import host_facts
from tritonops.inventory import load_inventory
from tritonops.planning import load_models_for, plan_hosts
from tritonops.sizing.engine_plan import SizingRequest


def plan(tmp_path: Path, host_yaml: str, facts=None, request=SizingRequest(), default_model=None):
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    h1:\n      ansible_host: 127.0.0.1\n" + host_yaml)
    hosts = load_inventory([str(tmp_path / "hosts.yml")]).select(None)
    models, errors = load_models_for(hosts, default_model)
    facts = facts or {"h1": host_facts(1)}
    return plan_hosts(hosts, facts, request, models, errors, default_model=default_model)[0]


TWO_MODELS = """      tritonops_models:
        - {name: chat, model: Qwen/Qwen2.5-7B-Instruct, version: 1, gpu_memory_utilization: 0.45}
        - {name: small, model: Qwen/Qwen1.5-1.8B-Chat, versions: [1, 2], gpu_memory_utilization: 0.2}
"""


LLAMA70 = "meta-llama/Llama-3.1-70B-Instruct"   # 131 GiB of bf16 weights: more than one H200 holds


def cluster_inventory(tmp_path: Path, group_vars: str = "", host_vars: dict | None = None,
                      extra_hosts: str = "") -> list:
    hosts = ""
    for i in (1, 2, 3):
        own = (host_vars or {}).get(f"g{i}", "")
        hosts += f"        g{i}:\n" + ("" if "ansible_host" in own else f"          ansible_host: 10.0.0.{i}\n") + own
    text = (f"all:\n  vars:\n    tritonops_model: {LLAMA70}\n  hosts:\n    solo:\n      ansible_host: 10.0.0.9\n"
            f"      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n{extra_hosts}"
            f"  children:\n    big:\n      vars:\n        tritonops_cluster: big\n{group_vars}      hosts:\n{hosts}")
    (tmp_path / "hosts.yml").write_text(text)
    return load_inventory([str(tmp_path / "hosts.yml")]).select(None)
